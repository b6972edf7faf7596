"""The reproducers of issue 10's P4, P11, P13 and P14: each now gives our error with a
path, or a TypeError with a clear message for a wrong Python type."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
import onnxdata.cases
from onnxdata import (
    MapProto,
    OnnxDataError,
    OptionalProto,
    SequenceProto,
    SparseParts,
    TensorProto,
    ValidationError,
)
from onnxdata.core.dtypes import DATA_TYPES
from tests.conftest import CORPUS

SUB_BYTE = sorted(code for code, dt in DATA_TYPES.items() if dt.sub_byte)
F32 = np.arange(4, dtype=np.float32)


def _write(path: Path, value: Any, **kw: Any) -> None:
    """onnxdata.write in one place, so its argument order is fixed here alone."""
    onnxdata.write(value, path, **kw)


# --------------------------------------------------------------------------- P4, P14 dims

@pytest.mark.parametrize("code", SUB_BYTE, ids=lambda c: DATA_TYPES[c].name)
@pytest.mark.parametrize("dims", [[-1, 0], [0, 2**40, 2**40], [0] * 65],
                         ids=["negative", "huge-empty", "65-zeros"])
def test_p4_empty_sub_byte_tensor_with_odd_dims_is_a_validation_error(
    code: int, dims: list[int], tmp_path: Path
) -> None:
    t = TensorProto(data_type=code, dims=dims)
    assert onnxdata.problems(t)
    with pytest.raises(ValidationError, match="dims"):
        onnxdata.to_numpy(t)
    onnxdata.save(t, tmp_path / "t.pb")
    with pytest.raises(ValidationError, match="dims"):
        onnxdata.read(tmp_path / "t.pb", "tensor")


@pytest.mark.parametrize("dims", [[0, 2**31, 2**31, 2**31], [0] * 65, [1] * 65])
def test_p14_validate_refuses_the_dims_to_numpy_and_read_refuse(dims: list[int],
                                                                tmp_path: Path) -> None:
    t = TensorProto(data_type=TensorProto.FLOAT, dims=dims,
                    raw_data=b"" if 0 in dims else bytes(4))
    found = onnxdata.problems(t)
    assert [p.path for p in found] == ["dims"] and "numpy" in found[0].message
    with pytest.raises(ValidationError, match="numpy"):
        onnxdata.to_numpy(t)
    onnxdata.save(t, tmp_path / "t.pb")
    with pytest.raises(ValidationError, match="numpy"):
        onnxdata.read(tmp_path / "t.pb", "tensor")


def test_p14_empty_tensors_numpy_can_make_stay_valid() -> None:
    most = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32  # numpy's own limit
    for dims in ([0], [0, 5], [2**20, 0, 2**20], [0] * most):
        t = TensorProto(data_type=TensorProto.FLOAT, dims=dims)
        assert onnxdata.problems(t) == [], dims
        assert onnxdata.to_numpy(t).shape == tuple(dims)


def test_p14_sparse_parts_shape_is_checked() -> None:
    one = np.ones(1, np.float32)
    with pytest.raises(OnnxDataError, match=r"shape \(-3,\) has a negative dimension"):
        onnxdata.from_numpy(SparseParts(one, np.array([0]), (-3,)))
    with pytest.raises(TypeError, match="shape must be a tuple of ints, not str '12'"):
        onnxdata.from_numpy(SparseParts(one, np.array([0]), "12"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"shape\[1\] must be an int"):
        onnxdata.from_numpy(SparseParts(one, np.array([0]), (2, 1.5)))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- P11 nested types

def _seq(elem_type: int, field: str, elements: list[Any]) -> SequenceProto:
    s = SequenceProto(elem_type=elem_type)
    getattr(s, field).extend(elements)
    return s


def _mixed_sequences() -> dict[str, SequenceProto]:
    floats = onnxdata.from_numpy([F32], "sequence")
    ints = onnxdata.from_numpy([np.arange(2)], "sequence")
    opt_tensor = onnxdata.from_numpy(F32, "optional")
    opt_seq = OptionalProto(elem_type=OptionalProto.SEQUENCE)
    opt_seq.sequence_value.CopyFrom(floats)
    int_keys = onnxdata.from_numpy({1: F32})
    str_keys = onnxdata.from_numpy({b"a": F32})
    return {
        "seq(seq) of float32 and int64": _seq(3, "sequence_values", [floats, ints]),
        "seq(optional) of tensor and of sequence": _seq(5, "optional_values",
                                                        [opt_tensor, opt_seq]),
        "seq(map) with int and string keys": _seq(4, "map_values", [int_keys, str_keys]),
    }


MIXED = _mixed_sequences()
MIXED_PATHS = {"seq(seq) of float32 and int64": "sequence_values[1]",
               "seq(optional) of tensor and of sequence": "optional_values[1]",
               "seq(map) with int and string keys": "map_values[1]"}


@pytest.mark.parametrize("case", sorted(MIXED))
def test_p11_mixed_nested_sequences_are_refused_with_paths(case: str) -> None:
    found = onnxdata.problems(MIXED[case])
    assert [p.path for p in found] == [MIXED_PATHS[case]]
    assert "share one type all the way down" in found[0].message
    with pytest.raises(ValidationError, match=MIXED_PATHS[case].replace("[", r"\[")):
        onnxdata.to_numpy(MIXED[case])
    by_kind = {r.kind: r for r in onnxdata.readings(MIXED[case].SerializeToString())}
    assert not by_kind["SequenceProto"].valid
    assert [p.path for p in by_kind["SequenceProto"].problems] == [MIXED_PATHS[case]]


@pytest.mark.parametrize("case", sorted(MIXED))
def test_p11_read_refuses_mixed_nested_sequences(case: str, tmp_path: Path) -> None:
    onnxdata.save(MIXED[case], tmp_path / "s.pb")
    with pytest.raises(ValidationError):
        onnxdata.read(tmp_path / "s.pb", "sequence")


def test_p11_map_values_share_one_type_too() -> None:
    m = onnxdata.from_numpy({1: [F32]})
    assert isinstance(m, MapProto)
    m.values.sequence_values.append(onnxdata.from_numpy([np.arange(2)], "sequence"))
    m.keys.append(2)
    assert [p.path for p in onnxdata.problems(m)] == ["values.sequence_values[1]"]


@pytest.mark.parametrize("value, where", [
    ([[F32], [np.arange(2)]], r"value\[1\]: sequence\(tensor\(INT64\)\)"),
    ([{1: F32}, {b"a": F32}], r"value\[1\]: map\(STRING"),
    ([[[F32]], [[np.arange(2)]]], r"value\[1\]: sequence\(sequence\(tensor\(INT64"),
])
def test_p11_from_numpy_refuses_mixed_nested_values(value: Any, where: str,
                                                    tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=where):
        onnxdata.from_numpy(value)
    with pytest.raises(ValidationError, match=where):
        _write(tmp_path / "v.pb", value)


def test_p11_empties_and_absent_values_agree_with_anything() -> None:
    empty_opt = OptionalProto(elem_type=OptionalProto.TENSOR)
    undefined = OptionalProto(elem_type=OptionalProto.UNDEFINED)
    s = _seq(5, "optional_values", [empty_opt, onnxdata.from_numpy(F32, "optional"), undefined])
    assert onnxdata.problems(s) == []
    empty = SequenceProto(elem_type=SequenceProto.TENSOR)
    nested = _seq(3, "sequence_values", [empty, onnxdata.from_numpy([F32], "sequence")])
    assert onnxdata.problems(nested) == []
    got = onnxdata.to_numpy(nested)
    assert got[0] == [] and np.array_equal(got[1][0], F32)


# --------------------------------------------------------------------------- P13 escapes

def test_p13_save_and_serialize_of_a_non_message_are_type_errors(tmp_path: Path) -> None:
    for bad in (None, b"bytes", F32):
        with pytest.raises(TypeError, match="protobuf message"):
            onnxdata.serialize(bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="protobuf message"):
            onnxdata.save(bad, tmp_path / "x.pb")  # type: ignore[arg-type]


def test_p13_more_input_files_than_model_inputs_names_the_file(tmp_path: Path) -> None:
    source = CORPUS / "test_abs"
    shutil.copy(source / "model.onnx", tmp_path / "model.onnx")
    folder = tmp_path / "test_data_set_0"
    shutil.copytree(source / "test_data_set_0", folder)
    shutil.copy(folder / "input_0.pb", folder / "input_1.pb")
    with pytest.raises(ValidationError, match=r"input_1\.pb: the model declares 1 input, but "):
        onnxdata.cases.load_test_data_set(folder)


def test_p13_explore_with_a_bad_io_or_index_is_not_an_index_error() -> None:
    model = CORPUS / "test_abs" / "model.onnx"
    data = (CORPUS / "test_abs" / "test_data_set_0" / "input_0.pb").read_bytes()
    with pytest.raises(ValueError, match="io must be 'input' or 'output', not 'sideways'"):
        onnxdata.explore(data, model=model, io="sideways", index=0)  # type: ignore[arg-type]
    with pytest.raises(onnxdata.OnnxDataError, match=r"model\.onnx has 1 input, no input 5"):
        onnxdata.explore(data, model=model, io="input", index=5)


def test_p13_readings_and_byte_table_take_any_contiguous_buffer() -> None:
    data = (CORPUS / "test_abs" / "test_data_set_0" / "input_0.pb").read_bytes()
    expected = [(r.kind, r.valid) for r in onnxdata.readings(data)]
    as_array = np.frombuffer(data, np.uint8)
    two_d = memoryview(data[: len(data) // 2 * 2]).cast("B", (2, len(data) // 2))
    for other in (as_array, memoryview(as_array), as_array.view(np.int8)):
        assert [(r.kind, r.valid) for r in onnxdata.readings(other)] == expected
        assert onnxdata.byte_table(other, "tensor") == onnxdata.byte_table(data, "tensor")
    assert onnxdata.readings(two_d)  # read as its bytes, not NotImplementedError
    with pytest.raises(TypeError, match="not contiguous"):
        onnxdata.readings(as_array[::2])
    with pytest.raises(TypeError, match="not contiguous"):
        onnxdata.readings(memoryview(data)[::2])


def test_p13_a_memoryview_of_signed_bytes_or_chars_is_read_as_its_bytes(tmp_path: Path) -> None:
    """Formats "b" and "c" were taken as they were, and the compiled walk (which a sequence
    of long tensors takes at its root) refused them with a bare ValueError or TypeError."""
    path = tmp_path / "seq.pb"
    onnxdata.write([np.full(1000, i, np.float32) for i in range(10)], path)
    data = path.read_bytes()
    expected = [r.as_json() for r in onnxdata.readings(data)]
    for fmt in ("b", "c"):
        view = memoryview(data).cast(fmt)
        assert [r.as_json() for r in onnxdata.readings(view)] == expected
        assert onnxdata.explore(view).as_json() == onnxdata.explore(data).as_json()
    with pytest.raises(TypeError, match="byte_table takes bytes"):
        onnxdata.byte_table(12345, "tensor")  # type: ignore[arg-type]


@pytest.mark.parametrize("build", [
    lambda: onnxdata.from_numpy(F32, name="a\udc80"),
    lambda: onnxdata.from_numpy({"k\udc80": F32}),
    lambda: onnxdata.from_numpy(np.array(["s\udc80"], dtype=object)),
    lambda: onnxdata.from_numpy([np.array(["ok", "s\udc80"])]),
], ids=["name", "key", "string", "string-in-sequence"])
def test_p13_lone_surrogates_are_our_error_with_the_path(build: Any) -> None:
    with pytest.raises(OnnxDataError, match=r"cannot be written as UTF-8 \(surrogates not"):
        build()


def test_p13_lone_surrogate_paths() -> None:
    with pytest.raises(OnnxDataError, match=r"^value\[1\]: the string"):
        onnxdata.from_numpy(np.array(["ok", "s\udc80"], dtype=object))
    with pytest.raises(OnnxDataError, match=r"^name: the name"):
        onnxdata.from_numpy(F32, name="a\udc80")


def test_p13_write_of_a_large_masked_array_is_what_save_writes(tmp_path: Path) -> None:
    masked = np.ma.masked_array(np.arange(70000, dtype=np.float64),
                                mask=np.zeros(70000, bool))
    _write(tmp_path / "w.pb", masked)
    onnxdata.save(onnxdata.from_numpy(masked), tmp_path / "s.pb")
    assert (tmp_path / "w.pb").read_bytes() == (tmp_path / "s.pb").read_bytes()


def test_p13_rank_0_sparse_parts_is_a_clear_error() -> None:
    with pytest.raises(OnnxDataError, match=r"shape \(\) \(a scalar\) take linear indices"):
        onnxdata.from_numpy(SparseParts(np.ones(1), np.zeros((1, 0), np.int64), ()))
    scalar = onnxdata.from_numpy(SparseParts(np.ones(1), np.zeros(1, np.int64), ()))
    assert onnxdata.to_numpy(scalar) == 1.0


def test_p13_a_name_that_is_not_a_str_is_a_clear_type_error(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"name must be a str, not int \(5\)"):
        onnxdata.from_numpy(F32, name=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"name must be a str, not int \(5\)"):
        _write(tmp_path / "x.pb", F32, name=5)
