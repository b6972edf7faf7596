"""save_test_data_set: ONNX's own sets round trip byte for byte, and onnx's runner reads ours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
from onnxdata import OnnxDataError, compare
from onnxdata.cases import load_test_data_set, save_test_data_set
from onnxdata.cases.save import as_model as load_model
from onnxdata.generated.onnx_ml_pb2 import ModelProto

NODE = Path(__file__).parents[1] / "data" / "onnx-node"
SETS = sorted(p for p in NODE.glob("test_*/test_data_set_*"))

# ONNX wrote these tensors in a typed field (int32_data for float8, no raw_data for an
# empty tensor); save_test_data_set always writes raw_data (from_numpy's contract), so
# their bytes differ while their values are the same.
TYPED_FIELD_FILES = {
    "test_castlike_FLOAT16_to_FLOAT4E2M1_expanded/test_data_set_0/input_1.pb",
    "test_castlike_INT4_to_INT8/test_data_set_0/input_1.pb",
    "test_castlike_INT4_to_INT8_expanded/test_data_set_0/input_1.pb",
    "test_castlike_UINT4_to_UINT8/test_data_set_0/input_1.pb",
    "test_castlike_UINT4_to_UINT8_expanded/test_data_set_0/input_1.pb",
    "test_dequantizelinear_e4m3fn/test_data_set_0/input_0.pb",
    "test_dequantizelinear_e4m3fn_float16/test_data_set_0/input_0.pb",
    "test_dequantizelinear_e5m2/test_data_set_0/input_0.pb",
}


def _rel(p: Path) -> str:
    return p.relative_to(NODE).as_posix()


@pytest.mark.parametrize("folder", SETS, ids=lambda p: p.parent.name)
def test_bundled_sets_round_trip_byte_for_byte(folder: Path, tmp_path: Path) -> None:
    inputs, outputs = load_test_data_set(folder)
    out = save_test_data_set(tmp_path / folder.name, inputs, outputs,
                             model=folder.parent / "model.onnx")
    originals = sorted(folder.glob("*.pb"))
    assert sorted(p.name for p in out.iterdir()) == [p.name for p in originals]
    for p in originals:
        written = (out / p.name).read_bytes()
        if _rel(p) in TYPED_FIELD_FILES:
            assert written != p.read_bytes()
        else:
            assert written == p.read_bytes(), _rel(p)
    again_in, again_out = load_test_data_set(out, model=folder.parent / "model.onnx")
    assert compare(again_in + again_out, inputs + outputs, rtol=0, atol=0) == []


def test_sets_we_write_pass_onnx_backend_test_loader(tmp_path: Path) -> None:
    runner = pytest.importorskip("onnx.backend.test.runner")
    onnx = pytest.importorskip("onnx")
    kinds: set[str] = set()
    for folder in SETS:
        model_path = folder.parent / "model.onnx"
        inputs, outputs = load_test_data_set(folder)
        out = save_test_data_set(tmp_path / folder.parent.name, inputs, outputs,
                                 model=model_path)
        model = onnx.load(str(model_path))
        for io, ours, declared in (("input", inputs, model.graph.input),
                                   ("output", outputs, model.graph.output)):
            loaded: list[Any] = []
            for i in range(len(ours)):
                # the very function onnx's backend test runner reads each file with
                runner.Runner._load_proto(None, str(out / f"{io}_{i}.pb"), loaded,
                                          declared[i].type)
                kinds.add(declared[i].type.WhichOneof("value"))
            assert compare(loaded, ours, rtol=0, atol=0) == [], f"{folder} {io}s"
    assert kinds >= {"tensor_type", "sequence_type", "optional_type"}


def test_dicts_by_name_declared_types_and_names(tmp_path: Path) -> None:
    case = NODE / "test_loop16_seq_none"
    model = load_model(case / "model.onnx")
    names = [i.name for i in model.graph.input]
    inputs, outputs = load_test_data_set(case / "test_data_set_0")
    # given by name, in another order, and as float64 where float32 is declared
    by_name = dict(reversed(list(zip(names, inputs, strict=True))))
    out = save_test_data_set(tmp_path / "s", by_name, outputs, model=model)
    for i, name in enumerate(names):
        assert (out / f"input_{i}.pb").read_bytes() == \
            (case / "test_data_set_0" / f"input_{i}.pb").read_bytes(), name
    cast_in = [np.asarray(v, np.float64) if isinstance(v, np.ndarray) and v.dtype == np.float32
               else v for v in inputs]
    out = save_test_data_set(tmp_path / "t", cast_in, outputs, model=case / "model.onnx")
    back, _ = load_test_data_set(out, model=case / "model.onnx")
    assert compare(back, inputs, rtol=0, atol=0) == []


def test_declared_kind_wins_over_the_value_kind(tmp_path: Path) -> None:
    # a list declared sequence(optional(tensor)) holds optionals even with no None in it
    model = ModelProto()
    vi = model.graph.input.add()
    vi.name = "x"
    vi.type.sequence_type.elem_type.optional_type.elem_type.tensor_type.elem_type = 1
    model.graph.output.add().CopyFrom(vi)
    model.graph.output[0].name = "y"
    value = [np.ones(2, np.float64), None]
    out = save_test_data_set(tmp_path / "s", [value], {"y": []}, model=model)
    seq = onnxdata.load(out / "input_0.pb", onnxdata.SequenceProto)
    assert seq.name == "x" and seq.elem_type == onnxdata.SequenceProto.OPTIONAL
    assert seq.optional_values[0].tensor_value.data_type == onnxdata.TensorProto.FLOAT
    assert onnxdata.load(out / "output_0.pb", onnxdata.SequenceProto).elem_type == \
        onnxdata.SequenceProto.OPTIONAL
    with pytest.raises(OnnxDataError, match=r"input_0 \('x'\): declared sequence"):
        save_test_data_set(tmp_path / "bad", [np.ones(2)], [], model=model)
    with pytest.raises(OnnxDataError, match="no input named 'z'"):
        save_test_data_set(tmp_path / "bad", {"z": []}, [], model=model)


def test_without_a_model_the_kind_is_inferred_and_dict_keys_name_values(
        tmp_path: Path) -> None:
    out = save_test_data_set(tmp_path / "s", {"a": [np.zeros(1, np.int8)], "b": None},
                             [np.arange(3)])
    assert onnxdata.load(out / "input_0.pb", onnxdata.SequenceProto).name == "a"
    assert onnxdata.load(out / "input_1.pb", onnxdata.OptionalProto).name == "b"
    assert onnxdata.read(out / "output_0.pb", "tensor").tolist() == [0, 1, 2]


def test_a_failure_leaves_no_half_written_set(tmp_path: Path) -> None:
    target = tmp_path / "test_data_set_0"
    with pytest.raises(OnnxDataError):
        # the second output cannot be written: a Python object has no ONNX type
        save_test_data_set(target, [np.zeros(1)], [np.zeros(1), np.array([object()])])
    assert list(tmp_path.iterdir()) == []
    save_test_data_set(target, [np.zeros(1)], [])
    with pytest.raises(OnnxDataError, match="exists and is not empty"):
        save_test_data_set(target, [np.ones(1)], [])
    with pytest.raises(OnnxDataError):
        save_test_data_set(target, [np.array([object()])], [], overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["test_data_set_0"]
    assert onnxdata.read(target / "input_0.pb", "tensor").tolist() == [0.0]
    save_test_data_set(target, [np.ones(1)], [], overwrite=True)
    assert onnxdata.read(target / "input_0.pb", "tensor").tolist() == [1.0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["test_data_set_0"]


def test_a_set_saved_away_from_its_model_loads_with_model_and_says_so_without(
        tmp_path: Path) -> None:
    case = NODE / "test_sequence_insert_at_back"
    inputs, outputs = load_test_data_set(case / "test_data_set_0")
    target = tmp_path / "sets" / "test_data_set_0"
    target.parent.mkdir()
    save_test_data_set(target, inputs, outputs, model=case / "model.onnx")
    with pytest.raises(FileNotFoundError) as info:
        load_test_data_set(target)
    text = str(info.value)
    assert str(target) in text and "pass model=" in text
    assert str(target.parent / "model.onnx") in text
    loaded, _ = load_test_data_set(target, model=case / "model.onnx")
    assert not compare(loaded, inputs)


# Save refuses what load would then refuse, or what it would truncate, and writes nothing:
# before, a [2] tensor for a declared [3] saved (and failed to load), and float64 inputs
# for int64 ones saved as their truncated ints.

@pytest.mark.parametrize(("inputs", "message"), [
    ([[np.zeros(2, np.int64)], np.zeros(2, np.int64)],
     "input_1 ('tensor'): declared shape [3] but dims are [2] (axis 0)"),
    ([[np.zeros(2, np.int64)], np.zeros((3, 1), np.int64)],
     "input_1 ('tensor'): declared shape [3] has rank 1 but dims are [3, 1]"),
    ([[np.array([1.7, 2.9])], np.array([0, 1, 2])],
     "input_0 ('sequence')[0]: cannot make a tensor(int64) of float64 values without "
     "losing their fraction"),
    ([[np.zeros(2, np.int64)], np.array([0.5, 1.5, 2.5])],
     "input_1 ('tensor'): cannot make a tensor(int64) of float64 values without losing"),
    ([[np.zeros(2, np.float32)], np.zeros(2, np.int64)],
     "input_0 ('sequence')[0]: cannot make a tensor(int64) of float32 values"),
    ([[np.array([2**40])], np.array([0, 1, 2], np.uint64)], None),  # exact: saved
])
def test_a_value_load_would_refuse_or_save_would_truncate_is_refused_first(
        inputs: list[Any], message: str | None, tmp_path: Path) -> None:
    case = NODE / "test_sequence_insert_at_back"
    target = tmp_path / "test_data_set_1"
    outputs = [[np.zeros(2, np.int64)]]
    if message is None:
        save_test_data_set(target, inputs, outputs, model=case / "model.onnx")
        back, _ = load_test_data_set(target, model=case / "model.onnx")
        assert back[1].dtype == np.int64 and back[0][0].tolist() == [2**40]
        return
    with pytest.raises(OnnxDataError) as info:
        save_test_data_set(target, inputs, outputs, model=case / "model.onnx")
    assert message in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_a_named_dim_fits_any_size_and_a_sparse_shape_is_checked(tmp_path: Path) -> None:
    model = ModelProto()
    x = model.graph.input.add()
    x.name = "x"
    x.type.tensor_type.elem_type = onnxdata.TensorProto.FLOAT
    for d in ("N", 2):
        dim = x.type.tensor_type.shape.dim.add()
        if isinstance(d, str):
            dim.dim_param = d
        else:
            dim.dim_value = d
    s = model.graph.input.add()
    s.name = "s"
    s.type.sparse_tensor_type.elem_type = onnxdata.TensorProto.FLOAT
    s.type.sparse_tensor_type.shape.dim.add().dim_value = 4
    parts = onnxdata.SparseParts(np.array([1.0]), np.array([1]), (4,))
    save_test_data_set(tmp_path / "a", [np.zeros((5, 2)), parts], [], model=model)
    with pytest.raises(OnnxDataError,
                       match=r"input_0 \('x'\): declared shape \[N, 2\] but dims are \[5, 3\]"):
        save_test_data_set(tmp_path / "b", [np.zeros((5, 3)), parts], [], model=model)
    with pytest.raises(OnnxDataError, match=r"input_1 \('s'\): declared shape \[4\] but"):
        save_test_data_set(tmp_path / "c", [np.zeros((5, 2)), parts._replace(shape=(5,))],
                           [], model=model)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]
