"""``onnxdata run`` / ``run_test_data_set`` on ONNX Runtime, over ONNX's own node cases."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
import onnxdata.cases
from onnxdata import OnnxDataError, compare
from onnxdata.cases import run_test_data_set
from onnxdata.cases.case_run import test_data_sets
from onnxdata.cases.save import as_model as load_model
from onnxdata.cli.main import main

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
ort.set_default_logger_severity(4)  # a failing locale prints to stderr otherwise

DATA = Path(__file__).parents[1] / "data"
NODE = DATA / "onnx-node"
CASES = sorted(NODE.glob("test_*"))
KNOWN = DATA / "ort-known"

# Where ONNX Runtime itself is wrong (onnx's reference evaluator gives the expected
# values): output, path, first index, ORT's value (about), the expected value.
KNOWN_ORT_DIFFERENCES: dict[str, tuple[int, str, tuple[int, ...], float, float]] = {
    "test_dft": (0, "", (0, 0, 0, 1), -1.1e-4, 0.0),
    "test_dft_axis": (0, "", (0, 0, 0, 1), -1.3e-5, 0.0),
}


def _session_or_skip(case: Path) -> None:
    try:
        ort.InferenceSession(str(case / "model.onnx"), providers=["CPUExecutionProvider"])
    except Exception as exc:
        pytest.skip(f"ONNX Runtime {ort.__version__} cannot load it: "
                    f"{str(exc).splitlines()[0][-160:]}")


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_every_bundled_case_ort_loads_passes(case: Path) -> None:
    _session_or_skip(case)
    for folder in test_data_sets(case):
        results = run_test_data_set(case / "model.onnx", folder)
        assert results and [r.status for r in results] == ["pass"] * len(results), \
            [str(d) for r in results for d in r.differences] or [r.error for r in results]


def test_ort_loads_the_cases_with_sequences_optionals_strings_and_int4() -> None:
    loaded = set()
    for case in CASES:
        try:
            ort.InferenceSession(str(case / "model.onnx"), providers=["CPUExecutionProvider"])
            loaded.add(case.name)
        except Exception:
            pass
    # so the parametrized test above covers each conversion to ORT's API
    assert {"test_loop16_seq_none", "test_if_opt", "test_identity_opt", "test_string_concat",
            "test_sequence_map_extract_shapes", "test_castlike_INT4_to_INT8",
            "test_castlike_UINT4_to_UINT8"} <= loaded
    assert len(loaded) >= 50


@pytest.mark.parametrize("name", sorted(KNOWN_ORT_DIFFERENCES))
def test_known_ort_differences_are_failures_with_path_and_values(name: str) -> None:
    reference = pytest.importorskip("onnx.reference")
    onnx = pytest.importorskip("onnx")
    case = KNOWN / name
    folder = case / "test_data_set_0"
    inputs, expected = onnxdata.cases.load_test_data_set(folder)
    model = onnx.load(str(case / "model.onnx"))
    got = reference.ReferenceEvaluator(model).run(
        None, {v.name: x for v, x in zip(model.graph.input, inputs, strict=True)})
    assert compare(got, expected) == [], "onnx's reference disagrees: the data is wrong"
    output, path, index, ort_value, want = KNOWN_ORT_DIFFERENCES[name]
    results = run_test_data_set(case / "model.onnx", folder)
    assert [r.status for r in results] == ["fail"]
    d = results[output].differences[0]
    assert (d.path, d.what, d.mismatches[0].index) == (path, "values", index)
    assert d.mismatches[0].actual == pytest.approx(ort_value, abs=2e-4)
    assert d.mismatches[0].expected == want


def test_the_command_prints_one_line_per_set_and_output(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(NODE / "test_loop16_seq_none")]) == 0
    assert capsys.readouterr().out.strip() == "test_data_set_0 output 0 'seq_res': pass"
    assert main(["run", str(NODE / "test_if_opt" / "model.onnx"), "--set", "0",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is True
    assert [(r["set"], r["output"], r["status"]) for r in report["results"]] == [
        ("test_data_set_0", 0, "pass")]
    assert main(["run", str(KNOWN / "test_dft")]) == 1
    out = capsys.readouterr().out
    assert "test_data_set_0 output 0 'y': fail, 1 difference" in out
    assert "[0, 0, 0, 1]: actual -0.000" in out and " vs expected 0" in out
    assert main(["run", str(KNOWN / "test_dft"), "--atol", "1e-3"]) == 0
    capsys.readouterr()
    assert main(["run", str(NODE / "test_if_opt"), "--set", "7"]) == 2
    assert "no test_data_set_7" in capsys.readouterr().err
    assert main(["run", str(KNOWN)]) == 1  # a folder of cases: each is run
    out = capsys.readouterr().out
    assert "test_dft[test_data_set_0]: fail" in out and "2 sets in 2 cases: 2 fail" in out
    assert main(["run", str(KNOWN / "no_such_case")]) == 2
    assert f"{KNOWN / 'no_such_case'}: no such file or folder" in capsys.readouterr().err


def test_a_model_ort_cannot_load_exits_2_with_its_message(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = tmp_path / "case"
    shutil.copytree(NODE / "test_abs", case)
    (case / "model.onnx").write_bytes(b"not a model")
    assert main(["run", str(case)]) == 2
    out = capsys.readouterr().out  # read for its declared types before ORT sees it
    assert f"test_data_set_0: error: cannot read {case / 'model.onnx'} as ModelProto" in out
    model = load_model(NODE / "test_abs" / "model.onnx")
    model.graph.node[0].op_type = "NoSuchOp"
    (case / "model.onnx").write_bytes(model.SerializeToString())
    assert main(["run", str(case)]) == 2
    out = capsys.readouterr().out
    assert "test_data_set_0: error: ONNX Runtime cannot load" in out and "NoSuchOp" in out
    assert main(["run", str(case), "--json"]) == 2  # JSON on stdout all the same
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is False and "NoSuchOp" in report["error"]
    assert [(r["set"], r["status"]) for r in report["results"]] == [("test_data_set_0",
                                                                     "error")]
    shutil.rmtree(case / "test_data_set_0")
    assert main(["run", str(case)]) == 2
    assert "no test_data_set_N folder" in capsys.readouterr().err
    assert main(["run", str(case), "--json"]) == 2
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is False and "no test_data_set_N folder" in report["error"]
    with pytest.raises(OnnxDataError, match="ONNX Runtime cannot load"):
        run_test_data_set(case / "model.onnx", case / "test_data_set_0")


def test_without_onnxruntime_run_says_how_to_get_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    assert main(["run", str(NODE / "test_abs")]) == 2
    assert "pip install 'onnxdata[ort]'" in capsys.readouterr().err
    with pytest.raises(ImportError, match=r"onnxdata\[ort\]"):
        run_test_data_set(NODE / "test_abs" / "model.onnx", NODE / "test_abs" /
                          "test_data_set_0")


def test_a_set_that_cannot_be_read_is_an_error_result(tmp_path: Path) -> None:
    case = tmp_path / "case"
    shutil.copytree(NODE / "test_abs", case)
    (case / "test_data_set_0" / "input_0.pb").write_bytes(b"\xff\xff")
    (r,) = run_test_data_set(case / "model.onnx", case / "test_data_set_0")
    assert (r.status, r.index) == ("error", -1) and "cannot read the set" in r.error
    assert main(["run", str(case)]) == 2


def test_write_outputs_to_a_folder_makes_a_new_case_that_passes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = tmp_path / "test_loop16_seq_none"
    shutil.copytree(NODE / "test_loop16_seq_none", case)
    new = tmp_path / "new"
    assert main(["run", str(case), "--write-outputs", str(new)]) == 0
    assert f"wrote {new / 'test_data_set_0'}" in capsys.readouterr().out
    for name in ("input_0.pb", "input_1.pb", "input_2.pb", "output_0.pb"):
        assert (new / "test_data_set_0" / name).read_bytes() == \
            (case / "test_data_set_0" / name).read_bytes(), name
    assert main(["run", str(new)]) == 0
    assert sorted(p.name for p in case.iterdir()) == ["model.onnx", "test_data_set_0"]
    assert main(["run", str(case), "--write-outputs", str(new)]) == 2  # never replaced
    assert "exists" in capsys.readouterr().err


def test_write_outputs_fills_in_the_sets_without_expected_outputs_only(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # it added a new set for every set on every call, so runs grew duplicates
    case = tmp_path / "test_loop16_seq_none"
    shutil.copytree(NODE / "test_loop16_seq_none", case)
    expected = (case / "test_data_set_0" / "output_0.pb").read_bytes()
    shutil.copytree(case / "test_data_set_0", case / "test_data_set_1")
    (case / "test_data_set_1" / "output_0.pb").unlink()  # inputs only, as users begin
    for _ in range(2):
        assert main(["run", str(case), "--write-outputs"]) == 0
    out = capsys.readouterr().out
    assert f"wrote {case / 'test_data_set_1'}" in out and "not written: test_data_set_0" in out
    assert (case / "test_data_set_1" / "output_0.pb").read_bytes() == expected
    assert sorted(p.name for p in case.iterdir()) == ["model.onnx", "test_data_set_0",
                                                      "test_data_set_1"]


def _ml_model(nodes: list[Any], inputs: list[Any], outputs: list[Any]) -> Any:
    helper = pytest.importorskip("onnx.helper")
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    return helper.make_model(graph, ir_version=10, opset_imports=[
        helper.make_opsetid("", 21), helper.make_opsetid("ai.onnx.ml", 3)])


def test_maps_go_to_ort_with_str_keys_and_come_back_typed(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    h = onnx.helper
    f = onnx.TensorProto.FLOAT
    # DictVectorizer takes map(string, float); ZipMap gives seq(map(string, float))
    model = _ml_model(
        [h.make_node("DictVectorizer", ["m"], ["v"], domain="ai.onnx.ml",
                     string_vocabulary=["a", "b", "c"]),
         h.make_node("ZipMap", ["v"], ["z"], domain="ai.onnx.ml",
                     classlabels_strings=["a", "b", "c"])],
        [h.make_value_info("m", h.make_map_type_proto(onnx.TensorProto.STRING,
                                                      h.make_tensor_type_proto(f, [])))],
        [h.make_tensor_value_info("v", f, [1, 3]),
         h.make_value_info("z", h.make_sequence_type_proto(
             h.make_map_type_proto(onnx.TensorProto.STRING, h.make_tensor_type_proto(f, []))))])
    onnx.save(model, tmp_path / "model.onnx")
    value = {b"a": np.float32(1.5), b"c": np.float32(-2.0)}
    expected_z = [{b"a": np.float32(1.5), b"b": np.float32(0.0), b"c": np.float32(-2.0)}]
    onnxdata.cases.save_test_data_set(tmp_path / "test_data_set_0", [value],
                                [np.array([[1.5, 0.0, -2.0]], np.float32), expected_z],
                                model=tmp_path / "model.onnx")
    results = run_test_data_set(tmp_path, tmp_path / "test_data_set_0")
    assert [r.status for r in results] == ["pass", "pass"]
    # back as onnxdata has maps: string keys as bytes, values as the declared type
    assert results[1].actual == [{b"a": np.float32(1.5), b"b": np.float32(0.0),
                                  b"c": np.float32(-2.0)}]
    assert results[1].actual[0][b"a"].dtype == np.float32
