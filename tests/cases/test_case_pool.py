"""Many cases at once: worker processes that crash or hang lose one case only, --against,
--shard, the expectations file, a real Dask LocalCluster, and the command's summary."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from onnxdata.cases.case_pool import run_cases
from onnxdata.cases.case_run import CaseTask, find_cases, shard
from onnxdata.cases.expectations import ExpectationsError, read_expectations
from onnxdata.cases.save import as_model
from onnxdata.cli.main import main

pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
pytest.importorskip("onnx", reason="the module:attr backends are onnx Backends")
NODE = Path(__file__).parents[1] / "data" / "onnx-node"
FAULTY = "tests.fault_backends:faulty"


def _copy(name: str, to: Path, doc: str = "") -> Path:
    shutil.copytree(NODE / "test_abs", to / name)
    if doc:
        model = as_model(to / name / "model.onnx")
        model.doc_string = doc
        (to / name / "model.onnx").write_bytes(model.SerializeToString())
    return to / name


@pytest.mark.slow
def test_a_segfault_and_a_hang_are_errors_of_their_case_and_the_others_run(
        tmp_path: Path) -> None:
    cases = [_copy("test_ok_1", tmp_path), _copy("test_segfault", tmp_path, "segfault"),
             _copy("test_hang", tmp_path, "hang"), _copy("test_ok_2", tmp_path)]
    tasks = [CaseTask(str(c), FAULTY) for c in cases]
    results = {r.case: r for r in run_cases(tasks, jobs=2, timeout=15)}
    assert {k: r.status for k, r in results.items()} == {
        "test_ok_1": "pass", "test_segfault": "error", "test_hang": "error",
        "test_ok_2": "pass"}
    assert "died" in results["test_segfault"].message and "signal 11" in \
        results["test_segfault"].message
    assert results["test_hang"].message == "timed out after 15 s"


def test_against_names_an_injected_difference_and_identical_backends_agree(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = NODE / "test_sequence_insert_at_back"
    (r,) = run_cases([CaseTask(str(case), "ort", against="tests.fault_backends:shifted")])
    assert r.status == "fail" and r.outputs[0].differences == ()
    (d,) = r.outputs[0].against
    assert d.path == "[3]" and d.mismatches[0].index == (2,)  # the last element, bumped
    (same,) = run_cases([CaseTask(str(case), "ort", against="ort")])
    assert same.status == "pass" and same.outputs[0].against == ()
    assert main(["run", str(case), "--against", "tests.fault_backends:shifted"]) == 1
    assert "against: [3]" in capsys.readouterr().out
    assert main(["run", str(case), "--against", "reference", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["against"] == []


def test_shards_split_the_cases_once_each_and_stay_put() -> None:
    cases = find_cases([NODE])
    assert len(cases) == len([p for p in NODE.iterdir() if (p / "model.onnx").exists()])
    parts = [shard(cases, f"{i}/3") for i in (1, 2, 3)]
    assert sorted(c for p in parts for c in p) == sorted(cases)
    assert all(parts) and parts[0] == shard(cases, "1/3")
    assert shard(cases[:10], "2/3") == [c for c in parts[1] if c in cases[:10]]
    with pytest.raises(ValueError, match="I/N"):
        shard(cases, "0/3")


def test_the_expectations_file_in_toml_and_json(tmp_path: Path) -> None:
    toml = tmp_path / "e.toml"
    toml.write_text('atol = 1e-5\n[[tolerance]]\ncase = "test_dft*"\natol = 1e-3\n'
                    '[[tolerance]]\ncase = "test_dft"\noutput = "y"\nrtol = 0.5\n'
                    '[[xfail]]\ncase = "test_x*"\nset = "test_data_set_1"\nreason = "r"\n')
    e = read_expectations(toml)
    assert e.lookup("test_dft").tolerance("y") == (0.5, 1e-3)
    assert e.lookup("test_dft_axis").tolerance("y") == (1e-3, 1e-3)
    assert e.lookup("test_abs").tolerance("y") == (1e-3, 1e-5)
    assert e.lookup("test_xy", "test_data_set_1").xfail == "r"
    assert e.lookup("test_xy", "test_data_set_0").xfail is None
    js = tmp_path / "e.json"
    js.write_text(json.dumps({"skip": [{"case": "*", "reason": "all"}]}))
    assert read_expectations(js).lookup("anything").skip == "all"
    for bad, match in (({"skip": [{"case": "x"}]}, "needs a reason"),
                       ({"xfail": [{"case": "x", "reason": "r", "why": 1}]}, "unknown key"),
                       ({"rtol": "big"}, "rtol must be a number"), ([], "top level")):
        js.write_text(json.dumps(bad))
        with pytest.raises(ExpectationsError, match=match):
            read_expectations(js)


@pytest.mark.slow
def test_the_command_over_a_folder_of_cases_with_jobs_and_a_summary(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("test_abs", "test_identity_opt", "test_if_opt"):
        shutil.copytree(NODE / name, tmp_path / "cases" / name)
    expect = tmp_path / "e.toml"
    expect.write_text('[[skip]]\ncase = "test_if_opt"\nreason = "later"\n')
    assert main(["run", str(tmp_path / "cases"), "--jobs", "2", "--expectations",
                 str(expect), "--report", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "test_abs[test_data_set_0]: pass" in out
    assert "3 sets in 3 cases: 2 pass, 1 skip" in out and "skipped 1: later" in out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["counts"]["pass"] == 2
    assert report["header"]["backend"] == "ort" and "onnxruntime" in report["header"]
    assert main(["run", str(tmp_path / "cases"), "--shard", "1/1", "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["sets"]) == 3


@pytest.mark.slow
def test_a_dask_local_cluster_runs_the_cases() -> None:
    distributed = pytest.importorskip("distributed", reason="the [dask] extra")
    cases = [NODE / "test_abs", NODE / "test_sequence_insert_at_back"]
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        results = run_cases([CaseTask(str(c)) for c in cases], executor="dask",
                            scheduler=cluster.scheduler_address)
    assert sorted((r.case, r.status) for r in results) == [
        ("test_abs", "pass"), ("test_sequence_insert_at_back", "pass")]
    with pytest.raises(ValueError, match="--scheduler"):
        run_cases([CaseTask(str(cases[0]))], executor="dask")


def test_a_missing_provider_skips_every_case_saying_why(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(NODE / "test_abs"), "--providers", "NoSuchExecutionProvider"]) == 0
    out = capsys.readouterr().out
    assert "test_data_set_0: skip: execution provider NoSuchExecutionProvider is not " \
        "available here" in out
    assert main(["run", str(NODE / "test_abs"), "--backend", "nonsense"]) == 2
    assert "'ort', 'reference' or 'module:attr'" in capsys.readouterr().err
    assert main(["run", str(NODE / "test_abs"), "--backend", "reference"]) == 0
    assert capsys.readouterr().out.strip() == "test_data_set_0 output 0 'y': pass"


@pytest.mark.slow
def test_on_a_terminal_a_progress_bar_runs_and_the_lines_and_summary_print() -> None:
    # rich's Live wrapped sys.stdout, which onnxdata's console writes to: an endless loop
    import os
    import pty
    import subprocess
    import sys

    primary, secondary = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "onnxdata", "run",
                             str(NODE.parent / "ort-known")], stdin=secondary,
                            stdout=secondary, stderr=secondary, close_fds=True,
                            env={**os.environ, "COLUMNS": "200"})
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 1 << 16)
        except OSError:  # the other side closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    assert proc.wait(timeout=300) == 1
    os.close(primary)
    out = b"".join(chunks).decode("utf-8", "replace")
    assert "2 sets in 2 cases: 2 fail" in out and "test_dft[test_data_set_0]" in out


def _case_with_sets(name: str, to: Path, sets: int, model: bytes | None = None) -> Path:
    case = _copy(name, to)
    for k in range(1, sets):
        shutil.copytree(case / "test_data_set_0", case / f"test_data_set_{k}")
    if model is not None:
        (case / "model.onnx").write_bytes(model)
    return case


def test_every_outcome_is_one_record_per_set_and_the_summary_counts_cases_right(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from onnxdata.cases.scoreboard import render_page, summarize

    root = tmp_path / "cases"
    cases = [_case_with_sets("test_pass", root, 2),
             _case_with_sets("test_load_error", root, 3, b"not a model"),
             _case_with_sets("test_load_xfail", root, 2, b"not a model"),
             _case_with_sets("test_skipped", root, 2),
             _case_with_sets("test_crash", root, 2)]
    _copy("test_crash", tmp_path / "doc", "segfault")
    shutil.copy(tmp_path / "doc" / "test_crash" / "model.onnx", cases[-1] / "model.onnx")
    expect = tmp_path / "e.toml"
    expect.write_text('[[skip]]\ncase = "test_skipped"\nreason = "later"\n'
                      '[[xfail]]\ncase = "test_load_xfail"\nreason = "known"\n')
    results = run_cases([CaseTask(str(c), FAULTY, expectations=read_expectations(expect))
                         for c in cases], jobs=2, timeout=60)
    assert sorted((r.case, r.set, r.status) for r in results) == sorted(
        [("test_pass", f"test_data_set_{k}", "pass") for k in range(2)]
        + [("test_load_error", f"test_data_set_{k}", "error") for k in range(3)]
        + [("test_load_xfail", f"test_data_set_{k}", "xfail") for k in range(2)]
        + [("test_skipped", f"test_data_set_{k}", "skip") for k in range(2)]
        + [("test_crash", f"test_data_set_{k}", "error") for k in range(2)])
    # each record's folder is its set's, whatever the outcome (they were the case's)
    assert all(Path(r.folder) == root / r.case / r.set for r in results)
    summary = summarize(results)
    assert (summary["sets"], summary["cases"]) == (11, 5)
    assert "11 sets in 5 cases" in render_page(results, {})
    assert main(["run", str(root), "--backend", FAULTY, "--jobs", "2", "--expectations",
                 str(expect)]) == 2  # an error
    assert "11 sets in 5 cases: 2 pass, 2 xfail, 2 skip, 5 error" in capsys.readouterr().out
    main(["run", str(root), "--backend", FAULTY, "--jobs", "2", "--expectations", str(expect),
          "--json"])
    report = json.loads(capsys.readouterr().out)
    assert (report["summary"]["sets"], report["summary"]["cases"]) == (11, 5)


def test_the_documented_xfail_example_is_a_real_ort_limit(tmp_path: Path) -> None:
    import textwrap

    import onnxdata.cases.expectations as documented

    doc = documented.__doc__ or ""
    example = textwrap.dedent(doc[doc.index("::\n") + 3:doc.index("\nLater entries")])
    (tmp_path / "e.toml").write_text(example)
    e = read_expectations(tmp_path / "e.toml")
    case = _gru_layout_1(tmp_path)  # what ONNX's test_gru_batchwise holds: layout 1
    (r,) = run_cases([CaseTask(str(case), expectations=e)])
    assert r.status == "xfail" and "layout" in r.message  # ORT refuses it, as it says


def _gru_layout_1(where: Path) -> Path:
    """A case ORT refuses to load (layout 1), logging an error line of its own as it does."""
    import onnx

    from onnxdata.cases.make import make_test_data_sets

    h, FLOAT = onnx.helper, onnx.TensorProto.FLOAT
    graph = h.make_graph(
        [h.make_node("GRU", ["X", "W", "R"], ["Y"], hidden_size=2, layout=1)], "g",
        [h.make_tensor_value_info("X", FLOAT, [1, 2, 3]),
         h.make_tensor_value_info("W", FLOAT, [1, 6, 3]),
         h.make_tensor_value_info("R", FLOAT, [1, 6, 2])],
        [h.make_tensor_value_info("Y", FLOAT, [1, 2, 1, 2])])
    case = where / "test_gru_batchwise"
    case.mkdir()
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 22)]), case / "model.onnx")
    make_test_data_sets(case, 1, inputs_only=True)
    return case


def test_ort_log_lines_are_quiet_unless_verbose(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    case = _gru_layout_1(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "ONNXDATA_ORT_LOG_LEVEL"}
    for extra, env_level, logged in (([], None, False), (["--jobs", "1"], None, False),
                                     (["--verbose"], None, True), ([], "3", True)):
        run = subprocess.run([sys.executable, "-m", "onnxdata", "run", str(case), *extra],
                             capture_output=True, text=True, check=False,
                             env=env if env_level is None else
                             {**env, "ONNXDATA_ORT_LOG_LEVEL": env_level})
        assert run.returncode == 2, run.stderr
        assert "layout" in run.stdout  # the set's message says why, either way
        assert ("[E:onnxruntime" in run.stderr) is logged, (extra, env_level, run.stderr)


def test_against_a_nested_list_where_a_tensor_is_declared_is_a_type_difference(
        capsys: pytest.CaptureFixture[str]) -> None:
    (r,) = run_cases([CaseTask(str(NODE / "test_abs"), "ort",
                               against="tests.fault_backends:nested")])
    assert r.status == "fail" and r.outputs[0].differences == ()
    (d,) = r.outputs[0].against
    # was "actual dtype float32, expected float64": np.asarray made the list an array
    assert (d.what, d.message) == ("kind", "actual is an array float32 (3, 4, 5), expected "
                                           "a list of 3")
    assert main(["run", str(NODE / "test_abs"), "--against", "tests.fault_backends:nested"]) \
        == 1
    assert "against: (top): actual is an array float32 (3, 4, 5), expected a list of 3" in \
        capsys.readouterr().out
