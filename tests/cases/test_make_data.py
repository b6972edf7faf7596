"""``onnxdata make`` / ``make_test_data_sets``: sets drawn for a model's declared inputs, outputs
from onnx's ReferenceEvaluator, then run on ONNX Runtime (a fast slice of
tools/make_sweep.py, which takes every bundled case)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import onnxdata
import onnxdata.cases
from onnxdata.cases.draw import GenerationError
from onnxdata.cases.make import RECORD, make_test_data_sets
from onnxdata.cli.main import main
from tests.conftest import import_onnx

onnx = import_onnx()
ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
ort.set_default_logger_severity(4)

NODE = Path(__file__).parents[1] / "data" / "onnx-node"

# One of each: float, string, float8, optional(sequence), a loop over an optional sequence,
# a symbolic dim shared by a tensor and a sequence's elements, no inputs at all.
FAST = ["test_abs", "test_string_concat", "test_cast_FLOAT8E4M3FNUZ_to_FLOAT16",
        "test_identity_opt", "test_loop16_seq_none", "test_sequence_map_add_1_sequence_1_tensor",
        "test_constant", "test_cast_INT4_to_INT8"]


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


@pytest.mark.parametrize("case", FAST)
def test_generated_sets_pass_on_onnx_runtime(case: str, tmp_path: Path) -> None:
    sets = make_test_data_sets(NODE / case / "model.onnx", 3, seed=1, out=tmp_path / case)
    assert [s.name for s in sets] == ["test_data_set_0", "test_data_set_1", "test_data_set_2"]
    for s in sets:
        results = onnxdata.cases.run_test_data_set(tmp_path / case / "model.onnx", s)
        assert results and all(r.status == "pass" for r in results), [str(r) for r in results]
        assert json.loads((s / RECORD).read_text())["seed"] == 1


def test_the_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    model = NODE / "test_sequence_map_add_1_sequence_1_tensor" / "model.onnx"
    make_test_data_sets(model, 2, seed=7, out=tmp_path / "a")
    make_test_data_sets(model, 2, seed=7, out=tmp_path / "b")
    make_test_data_sets(model, 2, seed=8, out=tmp_path / "c")
    assert _files(tmp_path / "a") == _files(tmp_path / "b")
    assert _files(tmp_path / "a") != _files(tmp_path / "c")
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b")]) == 0  # record ignored


def test_a_symbolic_dim_takes_one_size_per_set_shared_by_the_inputs(tmp_path: Path) -> None:
    # x0: seq(tensor(float) [N]), x1: tensor(float) [N]
    model = NODE / "test_sequence_map_add_1_sequence_1_tensor" / "model.onnx"
    sizes = set()
    for s in make_test_data_sets(model, 6, seed=3, out=tmp_path / "c", length=2):
        (x0, x1), _ = onnxdata.cases.load_test_data_set(s)
        n = json.loads((s / RECORD).read_text())["dims"]["N"]
        assert x1.shape == (n,) and all(x.shape == (n,) for x in x0)
        sizes.add(n)
    assert len(sizes) > 1  # drawn per set, not fixed


def test_an_input_whose_rank_is_not_declared_is_refused_by_name_until_given(
        tmp_path: Path) -> None:
    model = NODE / "test_sequence_insert_at_back" / "model.onnx"
    with pytest.raises(GenerationError, match=r"input 0 'sequence' \(sequence\(tensor\(int64\)"
                                              r"\)\).*not declared \(no rank\).*--shape"):
        make_test_data_sets(model, 1, out=tmp_path / "x")
    assert not (tmp_path / "x").exists()
    sets = make_test_data_sets(model, 2, out=tmp_path / "y", shapes={"sequence": (3,)},
                               length=2)
    (seq, _), (out,) = onnxdata.cases.load_test_data_set(sets[0])
    assert [x.shape for x in seq] == [(3,), (3,)] and len(out) == 3
    assert all(r.status == "pass" for r in onnxdata.cases.run_test_data_set(
        tmp_path / "y" / "model.onnx", sets[1]))


def _model(tmp_path: Path, value_type: Any) -> Path:
    h = onnx.helper
    graph = h.make_graph([h.make_node("Identity", ["x"], ["y"])], "g",
                         [h.make_value_info("x", value_type)],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)])
    path = tmp_path / "m" / "model.onnx"
    path.parent.mkdir()
    onnx.save(h.make_model(graph), path)
    return path


def test_an_opaque_input_and_an_unnamed_dim_are_refused_by_name(tmp_path: Path) -> None:
    opaque = onnx.TypeProto()
    opaque.opaque_type.domain = "com.example"
    with pytest.raises(GenerationError, match=r"input 0 'x': cannot be generated: type "
                                              r"opaque_type"):
        make_test_data_sets(_model(tmp_path, opaque), 1)
    shutil.rmtree(tmp_path / "m")
    open_dim = onnx.helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, [2, None])
    with pytest.raises(GenerationError, match=r"input 0 'x'.*axis 1 .* neither a size nor a "
                                              r"name"):
        make_test_data_sets(_model(tmp_path, open_dim), 1)
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["model.onnx"]


def test_a_reference_output_that_breaks_the_declared_type_is_not_written(tmp_path: Path
                                                                        ) -> None:
    # the reference's If returns a list of one [5] tensor where the model declares a tensor
    # (np.asarray made it a [1, 5] tensor, refused for its shape)
    with pytest.raises(onnxdata.OnnxDataError,
                       match=r"reference backend's outputs do not fit (?s:.)*output_0 "
                             r"(?s:.)*a tensor is declared but the value is a list"):
        make_test_data_sets(NODE / "test_if_opt" / "model.onnx", 2, out=tmp_path / "c")
    assert list(tmp_path.iterdir()) == []


def test_sets_beside_the_model_inputs_only_and_no_silent_replacing(tmp_path: Path) -> None:
    case = tmp_path / "case"
    case.mkdir()
    shutil.copy(NODE / "test_abs" / "model.onnx", case)
    sets = make_test_data_sets(case / "model.onnx", 2, inputs_only=True)
    assert sorted(p.name for p in sets[0].iterdir()) == ["input_0.pb", RECORD]
    with pytest.raises(onnxdata.OnnxDataError, match=r"test_data_set_0 exists.*--overwrite"):
        make_test_data_sets(case, 2, seed=5)
    make_test_data_sets(case, 2, seed=5, overwrite=True)
    assert sorted(p.name for p in sets[0].iterdir()) == ["input_0.pb", RECORD, "output_0.pb"]
    assert main(["run", str(case)]) == 0
    assert [p.name for p in case.iterdir() if p.name.startswith(".")] == []


def test_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "new"
    assert main(["make", str(NODE / "test_sequence_map_add_2_sequences"), "-n", "2",
                 "--seed", "4", "--length", "2", "--dim", "N=3", "--out", str(out)]) == 0
    assert capsys.readouterr().out.split() == ["wrote", str(out / "test_data_set_0"),
                                               "wrote", str(out / "test_data_set_1")]
    (x0, x1), _ = onnxdata.cases.load_test_data_set(out / "test_data_set_1")
    assert [x.shape for x in x0 + x1] == [(3,)] * 4
    assert main(["run", str(out)]) == 0
    capsys.readouterr()
    assert main(["make", str(NODE / "test_identity_sequence"), "--out",
                 str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "input 0 'x'" in err and "not declared (no rank)" in err
    assert main(["make", str(NODE / "test_abs"), "--out", str(tmp_path / "y"),
                 "--backend", "ort", "--budget", "10"]) == 2
    assert "[3, 4, 5] needs 60 elements, over the budget of 10" in capsys.readouterr().err


def _graph_model(tmp_path: Path, name: str, graph: Any) -> Path:
    h = onnx.helper
    path = tmp_path / name / "model.onnx"
    path.parent.mkdir()
    onnx.save(h.make_model(graph, ir_version=8, opset_imports=[
        h.make_opsetid("", 17), h.make_opsetid("ai.onnx.ml", 3)]), path)
    return path


def test_an_unnamed_dim_takes_shape_and_dim_and_ort_passes_the_sets(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    h, FLOAT = onnx.helper, onnx.TensorProto.FLOAT
    # [None, 4]: what skl2onnx writes for the batch dim and onnx.helper for None
    graph = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g",
                         [h.make_tensor_value_info("x", FLOAT, [None, 4])],
                         [h.make_tensor_value_info("y", FLOAT, [None, 4])])
    model = _graph_model(tmp_path, "m", graph)
    assert main(["make", str(model), "--out", str(tmp_path / "a")]) == 2
    assert "axis 0" in (err := capsys.readouterr().err) and "(--shape x=2,4 " in err
    assert main(["make", str(model), "--shape", "x=2,4", "--backend", "ort",
                 "--out", str(tmp_path / "b")]) == 0
    (x,), _ = onnxdata.cases.load_test_data_set(tmp_path / "b" / "test_data_set_2")
    assert x.shape == (2, 4)
    assert main(["run", str(tmp_path / "b")]) == 0
    assert main(["make", str(model), "--shape", "x=N,4", "--dim", "N=3",
                 "--out", str(tmp_path / "c")]) == 0
    (x,), _ = onnxdata.cases.load_test_data_set(tmp_path / "c" / "test_data_set_0")
    assert x.shape == (3, 4)
    capsys.readouterr()
    for given, says in (("x=2,5", "gives axis 1 size 5, but the model declares [?, 4]"),
                        ("x=2", "gives 1 dims, but the model declares [?, 4]")):
        assert main(["make", str(model), "--shape", given, "--out", str(tmp_path / "d")]) == 2
        assert says in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


def test_a_map_input_is_told_the_scalar_shape_and_ort_refuses_an_array_in_our_words(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    h = onnx.helper
    values = h.make_map_type_proto(onnx.TensorProto.STRING,
                                   h.make_tensor_type_proto(onnx.TensorProto.FLOAT, None))
    graph = h.make_graph([h.make_node("DictVectorizer", ["input"], ["y"], domain="ai.onnx.ml",
                                      string_vocabulary=["a", "b", "c"])], "g",
                         [h.make_value_info("input", values)],
                         [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [None, 3])])
    model = _graph_model(tmp_path, "m", graph)
    assert main(["make", str(model), "--backend", "ort", "--out", str(tmp_path / "a")]) == 2
    assert "give --shape input= (a scalar" in capsys.readouterr().err
    assert main(["make", str(model), "--backend", "ort", "--shape", "input=1",
                 "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "TypeError" not in err and "a map value of shape [1]; ONNX Runtime's maps hold " \
        "one number per value" in err
    assert main(["make", str(model), "--backend", "ort", "--shape", "input=", "--length", "2",
                 "--out", str(tmp_path / "c")]) == 0
    assert main(["run", str(tmp_path / "c")]) == 0


def test_an_output_without_a_type_is_told_how_to_give_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    h = onnx.helper
    graph = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "g",  # as onnxscript leaves it
                         [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])],
                         [h.make_value_info("y", onnx.TypeProto())])
    model = _graph_model(tmp_path, "m", graph)
    assert main(["make", str(model)]) == 2
    err = capsys.readouterr().err
    assert "output 0 'y': the model declares no type for it" in err
    assert "onnx.shape_inference.infer_shapes" in err and "--inputs-only" in err
    assert main(["make", str(model), "--inputs-only"]) == 0
    onnx.save(onnx.shape_inference.infer_shapes(onnx.load(model)), model)  # as it says
    assert main(["make", str(model), "--overwrite"]) == 0
    assert main(["run", str(model.parent)]) == 0


@pytest.mark.parametrize(("kw", "said"), [
    ({"n": 0}, "n must be >= 1 (a call that makes no set), not 0"),
    ({"seed": -1}, "seed must be >= 0, not -1"),
    ({"length": -1}, "length must be >= 0 or None, not -1"),
    ({"budget": -5}, "budget must be >= 0, not -5"),
])
def test_arguments_out_of_range_are_refused_before_anything_is_written(
        kw: dict[str, Any], said: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=said.replace("(", r"\(").replace(")", r"\)")):
        make_test_data_sets(NODE / "test_abs", out=tmp_path / "new", **kw)
    assert not (tmp_path / "new").exists()


def test_a_tensor_over_the_budget_says_what_is_left_of_it(tmp_path: Path) -> None:
    with pytest.raises(GenerationError) as info:
        make_test_data_sets(NODE / "test_abs", out=tmp_path / "a", budget=1)
    assert str(info.value) == "input 0 'x': its declared shape [3, 4, 5] needs 60 elements, " \
        "over the budget of 1 element a set; raise the budget (--budget, budget=)"
    with pytest.raises(GenerationError) as info:  # x [3] is drawn first, then y [3]
        make_test_data_sets(NODE / "test_bitshift_left_uint32", out=tmp_path / "b", budget=4)
    assert str(info.value) == "input 1 'y': its declared shape [3] needs 3 elements, over " \
        "the 1 left of the budget of 4 elements a set (the values drawn before it took 3); " \
        "raise the budget (--budget, budget=)"


def test_make_on_a_folder_without_a_model_says_it_is_no_case_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "adir").mkdir()
    assert main(["make", str(tmp_path / "adir")]) == 2
    assert capsys.readouterr().err == f"onnxdata: no model.onnx in {tmp_path / 'adir'}, so " \
        "no case folder (model.onnx beside test_data_set_N) to make sets for\n"
