"""The test loop's load checks each value against the model's declared type over the
walk a layout group at a time (``model.type_walk``) and reads it; where the value is
not read without a problem it says what it always said, in the same order: the field
tree's misfit first, then the declared type's problems, then the value's (issue 39)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
from onnxdata.cases import load, load_test_data_set
from onnxdata.errors import DecodeError, ValidationError
from onnxdata.generated.onnx_ml_pb2 import ModelProto

N = 40


def _set(tmp_path: Path, data: bytes, elem_type: int = 1, shaped: bool = True) -> Path:
    model = ModelProto()
    vi = model.graph.input.add()
    vi.name = "x"
    seq = vi.type.sequence_type.elem_type.sequence_type.elem_type.tensor_type
    seq.elem_type = elem_type
    if shaped:
        seq.shape.dim.add().dim_value = 2
    (tmp_path / "model.onnx").write_bytes(model.SerializeToString())
    folder = tmp_path / "test_data_set_0"
    folder.mkdir()
    (folder / "input_0.pb").write_bytes(data)
    return folder


def _value() -> list[Any]:
    return [[np.full(2, i, np.float32)] * 4 for i in range(N)]


def test_a_value_of_the_declared_type_is_checked_without_the_field_tree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(load, "field_tree", None)  # (called, it would raise)
    folder = _set(tmp_path, onnxdata.serialize(onnxdata.from_numpy(_value())))
    (got,), _ = load_test_data_set(folder)
    assert [a.tolist() for a in got[7]] == [[7.0, 7.0]] * 4


def test_another_element_type_is_the_declared_type_s_problem(tmp_path: Path) -> None:
    folder = _set(tmp_path, onnxdata.serialize(onnxdata.from_numpy(_value())), elem_type=7)
    with pytest.raises(ValidationError) as info:
        load_test_data_set(folder)
    assert len(info.value.problems) == N * 4
    assert info.value.problems[5].path == "sequence_values[1].tensor_values[1].data_type"


def test_a_field_the_message_lacks_is_the_field_tree_s_misfit(tmp_path: Path) -> None:
    """Before the declared type's problems (another element type) and the value's own."""
    data = onnxdata.serialize(onnxdata.from_numpy(_value())) + b"\xa0\x06\x00"  # field 100
    folder = _set(tmp_path, data, elem_type=7)
    with pytest.raises(DecodeError, match="SequenceProto has no field 100"):
        load_test_data_set(folder)


def test_a_value_s_own_problem_comes_after_the_declared_type_s(tmp_path: Path) -> None:
    seq = onnxdata.from_numpy(_value())
    seq.sequence_values[3].tensor_values[2].dims[0] = 3  # its data does not fill it
    data = onnxdata.serialize(seq)
    (tmp_path / "a").mkdir()
    with pytest.raises(ValidationError) as info:
        load_test_data_set(_set(tmp_path / "a", data))
    assert [(p.path, p.message) for p in info.value.problems] == [
        ("sequence_values[3].tensor_values[2].dims",
         "declared shape [2] but dims are [3] (axis 0)")]
    (tmp_path / "b").mkdir()
    with pytest.raises(ValidationError) as info:
        load_test_data_set(_set(tmp_path / "b", data, shaped=False))
    assert [p.path for p in info.value.problems] == [
        "sequence_values[3].tensor_values[2].raw_data"]
