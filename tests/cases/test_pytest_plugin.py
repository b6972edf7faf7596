"""The pytest plugin, in real pytest runs (``pytester``): ids, failures with paths, known
failures and skips from the expectations file, -k, --lf, JUnit XML and pytest-xdist; a
backend that cannot load is an error, a crash or a hang fails its item only, unreadable
case folders are collection errors, the user's own tests stay, odd folder names."""

from __future__ import annotations

import gc
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
# imported here, before pytester's snapshot of sys.modules: imported again after an
# in-process run, onnx's C++ module aborts the process
onnx = pytest.importorskip("onnx")
pytest_plugins = ["pytester"]
DATA = Path(__file__).parents[1] / "data"
PASSING = ["test_abs", "test_sequence_insert_at_back", "test_string_concat",
           "test_cast_FLOAT_to_FLOAT8E4M3FN"]
EXPECT = """
[[xfail]]
case = "test_dft_axis"
reason = "ORT's DFT leaves 1e-5 in the imaginary part"

[[skip]]
case = "test_string_concat"
reason = "not this time"
"""


#: A plugin (``-p gcprobe``) that writes, as each item's setup starts (in the process that
#: runs it), whether the garbage collector is on (the plugin pauses it in an xdist worker
#: until collected) and how many objects are frozen.
GC_PROBE = """
import gc
def pytest_runtest_setup(item):
    with open("gc-states", "a") as f:
        f.write(f"{gc.isenabled()},{gc.get_freeze_count()}\\n")
"""


def _gc_probe(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(gcprobe=GC_PROBE)
    pytester.syspathinsert()


def _gc_states(pytester: pytest.Pytester) -> set[tuple[str, int]]:
    lines = (pytester.path / "gc-states").read_text().split()
    return {(on, int(n)) for on, n in (line.split(",") for line in lines)}


@pytest.fixture
def cases(pytester: pytest.Pytester) -> Path:
    root = pytester.path / "cases"
    for name in PASSING:
        shutil.copytree(DATA / "onnx-node" / name, root / "node" / name)
    for name in ("test_dft", "test_dft_axis"):
        shutil.copytree(DATA / "ort-known" / name, root / "known" / name)
    (pytester.path / "expect.toml").write_text(EXPECT)
    return root


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--onnx-cases", "cases", "--onnx-expectations", "expect.toml",
                              "-p", "no:randomly", *args)


def test_one_item_per_set_failures_with_paths_and_junit_xml(pytester: pytest.Pytester,
                                                            cases: Path) -> None:
    result = _run(pytester, "--junitxml", "out.xml", "-rs")
    result.assert_outcomes(passed=3, failed=1, xfailed=1, skipped=1)
    out = result.stdout.str()
    assert "test_dft[test_data_set_0]: fail" in out
    assert "output 0 'y': (top): 20 of 200 values differ" in out and "[0, 0, 0, 1]" in out
    assert "Traceback" not in out and "assert_allclose" not in out
    assert "not this time" in out  # the skip's reason
    suite = ET.parse(pytester.path / "out.xml").getroot()
    names = sorted(tc.get("name", "") for tc in suite.iter("testcase"))
    assert names == sorted(f"{n}[test_data_set_0]" for n in
                           [*PASSING, "test_dft", "test_dft_axis"])
    failed = [tc.get("name") for tc in suite.iter("testcase") if tc.find("failure") is not None]
    assert failed == ["test_dft[test_data_set_0]"]


def test_a_known_failure_that_passes_fails_strictly(pytester: pytest.Pytester,
                                                   cases: Path) -> None:
    (pytester.path / "expect.toml").write_text(
        '[[xfail]]\ncase = "test_abs"\nreason = "thought broken"\n')
    result = _run(pytester, "-k", "test_abs")
    result.assert_outcomes(failed=1)
    assert "XPASS(strict)" in result.stdout.str()


def test_k_and_lf_select_as_for_any_item(pytester: pytest.Pytester, cases: Path) -> None:
    _run(pytester, "-k", "sequence or dft and not axis").assert_outcomes(passed=1, failed=1)
    result = _run(pytester, "--lf")
    result.assert_outcomes(failed=1)
    assert "test_dft[test_data_set_0]" in result.stdout.str()


@pytest.mark.slow
def test_xdist_runs_the_items_on_two_workers(pytester: pytest.Pytester, cases: Path) -> None:
    pytest.importorskip("xdist")
    _gc_probe(pytester)
    result = pytester.runpytest_subprocess("--onnx-cases", "cases", "--onnx-expectations",
                                           "expect.toml", "-n", "2", "-p", "gcprobe")
    result.assert_outcomes(passed=3, failed=1, xfailed=1, skipped=1)
    assert "2 workers" in result.stdout.str()
    # a worker ends after its session: what it collected is frozen, the collector on
    states = _gc_states(pytester)
    assert {on for on, _ in states} == {"True"} and min(n for _, n in states) > 0


def test_in_process_the_collector_stays_on_and_nothing_is_frozen(
        pytester: pytest.Pytester, cases: Path) -> None:
    _gc_probe(pytester)
    frozen = gc.get_freeze_count()
    _run(pytester, "-k", "abs or sequence", "-p", "gcprobe").assert_outcomes(passed=2)
    assert _gc_states(pytester) == {("True", frozen)}
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    pytester.runpytest("--onnx-cases", "cases", "--collect-only")
    assert gc.isenabled() and gc.get_freeze_count() == frozen


def test_a_missing_provider_skips_with_the_reason(pytester: pytest.Pytester,
                                                  cases: Path) -> None:
    result = pytester.runpytest("--onnx-cases", "cases/node", "--onnx-providers",
                                "NoSuchExecutionProvider", "-rs")
    result.assert_outcomes(skipped=len(PASSING))
    assert "NoSuchExecutionProvider is not available" in result.stdout.str()


def test_the_reference_backend_and_against(pytester: pytest.Pytester, cases: Path) -> None:
    pytest.importorskip("onnx.reference")
    result = pytester.runpytest("--onnx-cases", "cases/node", "--onnx-backend", "reference",
                                "--onnx-against", "ort")
    result.assert_outcomes(passed=len(PASSING))


def test_without_the_option_the_plugin_collects_nothing(pytester: pytest.Pytester,
                                                        cases: Path) -> None:
    result = pytester.runpytest("cases")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def _case(root: Path, name: str | bytes, doc: str | None = None, op: str | None = None
          ) -> Path:
    """test_abs copied to root/name; its model's doc_string ``doc`` (tests.fault_backends
    crashes on "segfault", sleeps on "hang") or its node's op_type ``op``."""
    target = root / os.fsdecode(name)  # a byte that is not UTF-8 as a lone surrogate
    shutil.copytree(DATA / "onnx-node" / "test_abs", target)
    if doc is not None or op is not None:
        model = onnx.load_model_from_string((target / "model.onnx").read_bytes())
        if doc is not None:
            model.doc_string = doc
        if op is not None:
            model.graph.node[0].op_type = op
        (target / "model.onnx").write_bytes(model.SerializeToString())
    return target


def _junit(path: Path) -> tuple[ET.Element, dict[str, str]]:
    suite = ET.parse(path).getroot()
    suite = suite if suite.tag == "testsuite" else suite[0]
    outcome = {}
    for tc in suite.iter("testcase"):
        kind = [c.tag for c in tc if c.tag in ("failure", "error", "skipped")]
        outcome[tc.get("name", "")] = kind[0] if kind else "passed"
    return suite, outcome


def test_a_model_ort_cannot_load_is_an_error_in_junit(pytester: pytest.Pytester) -> None:
    _case(pytester.path / "cases", "test_abs")
    _case(pytester.path / "cases", "test_no_such_op", op="NoSuchOp")
    result = pytester.runpytest("--onnx-cases", "cases", "--junitxml", "out.xml")
    result.assert_outcomes(passed=1, errors=1)
    assert "ONNX Runtime cannot load" in result.stdout.str()
    suite, outcome = _junit(pytester.path / "out.xml")
    assert (suite.get("errors"), suite.get("failures")) == ("1", "0")
    assert outcome == {"test_abs[test_data_set_0]": "passed",
                       "test_no_such_op[test_data_set_0]": "error"}


def _fault_cases(pytester: pytest.Pytester, doc: str) -> None:
    shutil.copy(Path(__file__).parents[1] / "fault_backends.py", pytester.path)
    for name in ("test_a", "test_c"):
        _case(pytester.path / "cases", name)
    _case(pytester.path / "cases", "test_b", doc=doc)


def test_a_segfault_without_xdist_fails_that_item_only(pytester: pytest.Pytester) -> None:
    _fault_cases(pytester, "segfault")
    # a subprocess: before, the segfault took the pytest process with it
    result = pytester.runpytest_subprocess("--onnx-cases", "cases", "-p", "no:xdist",
                                           "--onnx-backend", "fault_backends:faulty",
                                           "--junitxml", "out.xml", timeout=600)
    result.assert_outcomes(passed=2, errors=1)
    assert "test_b[test_data_set_0]: error: the backend's process died (exit code -11, " \
        "signal 11)" in result.stdout.str()
    _, outcome = _junit(pytester.path / "out.xml")
    assert outcome == {"test_a[test_data_set_0]": "passed", "test_b[test_data_set_0]": "error",
                       "test_c[test_data_set_0]": "passed"}


def test_onnx_timeout_fails_a_hanging_set(pytester: pytest.Pytester) -> None:
    _fault_cases(pytester, "hang")
    result = pytester.runpytest_subprocess("--onnx-cases", "cases", "-p", "no:xdist",
                                           "--onnx-backend", "fault_backends:faulty",
                                           "--onnx-timeout", "10", timeout=600)
    result.assert_outcomes(passed=2, errors=1)
    assert "test_b[test_data_set_0]: error: timed out after 10 s" in result.stdout.str()


def test_case_folders_that_cannot_be_read_are_collection_errors(
        pytester: pytest.Pytester) -> None:
    root = pytester.path / "cases"
    _case(root, "test_good")
    bad = {"test_fifo": "it is a FIFO, not a regular file",
           "test_zero": "it is a device (/dev/zero), not a regular file",
           "test_dangling": "cannot open it: No such file or directory"}
    for name in bad:
        (root / name / "test_data_set_0").mkdir(parents=True)
    os.mkfifo(root / "test_fifo" / "model.onnx")
    (root / "test_zero" / "model.onnx").symlink_to("/dev/zero")
    (root / "test_dangling" / "model.onnx").symlink_to(root / "nowhere")
    result = pytester.runpytest("--onnx-cases", "cases")
    result.assert_outcomes(errors=3)  # as pytest does any collection error: none run
    assert result.ret == pytest.ExitCode.INTERRUPTED
    out = result.stdout.str()
    for name, why in bad.items():
        assert f"{root / name / 'model.onnx'}: {why}" in out
    result = pytester.runpytest("--onnx-cases", "cases", "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=3)
    # alone, the bad cases are still errors, not "no tests ran"
    shutil.rmtree(root / "test_good")
    result = pytester.runpytest("--onnx-cases", "cases")
    result.assert_outcomes(errors=3)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000")
def test_an_unreadable_model_is_a_collection_error(pytester: pytest.Pytester) -> None:
    model = _case(pytester.path / "cases", "test_abs") / "model.onnx"
    model.chmod(0)
    result = pytester.runpytest("--onnx-cases", "cases")
    result.assert_outcomes(errors=1)
    assert f"{model}: cannot open it: Permission denied" in result.stdout.str()


def test_a_root_with_no_case_folder_says_so(pytester: pytest.Pytester) -> None:
    (pytester.path / "empty" / "test_x").mkdir(parents=True)
    result = pytester.runpytest("--onnx-cases", "empty")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"no case folder (model.onnx beside test_data_set_N) at or under " \
        f"{pytester.path / 'empty'}" in result.stderr.str()


def test_the_users_own_tests_stay_beside_the_cases(pytester: pytest.Pytester,
                                                   cases: Path) -> None:
    pytester.makepyfile(test_mine="def test_mine():\n    pass\n")
    # no test path: what pytest collects anyway (here the current folder) and the cases
    result = pytester.runpytest("--onnx-cases", "cases/node", "-v")
    result.assert_outcomes(passed=len(PASSING) + 1)
    assert "test_mine.py::test_mine PASSED" in result.stdout.str()
    # a test path after the option is a test path, not a second case folder
    result = pytester.runpytest("--onnx-cases", "cases/node", "test_mine.py", "-v")
    result.assert_outcomes(passed=len(PASSING) + 1)
    result = pytester.runpytest("test_mine.py", "--onnx-cases", "cases/node/test_abs")
    result.assert_outcomes(passed=2)


def test_an_expectations_file_it_cannot_read_is_a_usage_error(
        pytester: pytest.Pytester, cases: Path) -> None:
    (pytester.path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    result = pytester.runpytest("--onnx-cases", "cases/node", "--onnx-expectations",
                                "deep.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert "--onnx-expectations:" in result.stderr.str()


def test_odd_folder_names_end_to_end_with_junit_xml(pytester: pytest.Pytester) -> None:
    root = pytester.path / "cases"
    _case(root, b"test_abs_\xff")
    _case(root, "test_abs_new\nline")
    _case(root, "test_no_such_op_\udcfe", op="NoSuchOp")
    result = pytester.runpytest("--onnx-cases", "cases", "--junitxml", "out.xml", "-rA")
    result.assert_outcomes(passed=2, errors=1)
    suite, outcome = _junit(pytester.path / "out.xml")
    assert outcome == {"test_abs_\\xff[test_data_set_0]": "passed",
                       "test_abs_new\\nline[test_data_set_0]": "passed",
                       "test_no_such_op_\\xfe[test_data_set_0]": "error"}
    error = next(tc for tc in suite.iter("testcase") if tc.find("error") is not None)
    assert "NoSuchOp" in ET.tostring(error, encoding="unicode")


def test_case_folders_are_ignored_as_pytest_ignores_folders(pytester: pytest.Pytester) -> None:
    """--ignore, --ignore-glob, a conftest's collect_ignore, norecursedirs and a venv
    inside still drop a case folder (the plugin skips pytest's check when none applies)."""
    root = pytester.path / "cases"
    for name in ("test_a", "test_b", "test_c"):
        _case(root, name)

    def collected(*args: str) -> list[str]:
        result = pytester.runpytest("--onnx-cases", "cases", "--co", "-q", *args)
        return sorted(line.split("/")[1] for line in result.outlines if "::" in line)

    assert collected() == ["test_a", "test_b", "test_c"]
    assert collected("--ignore", "cases/test_b") == ["test_a", "test_c"]
    assert collected("--ignore-glob", "*/test_[bc]") == ["test_a"]
    pytester.makeconftest('collect_ignore = ["cases/test_a"]')
    assert collected() == ["test_b", "test_c"]
    (pytester.path / "conftest.py").unlink()
    (pytester.path / "pytest.ini").write_text("[pytest]\nnorecursedirs = test_c\n")
    assert collected() == ["test_a", "test_b"]
    (pytester.path / "pytest.ini").unlink()
    (root / "test_a" / "pyvenv.cfg").write_text("home = /usr\n")
    assert collected() == ["test_b", "test_c"]
