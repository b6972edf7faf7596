"""from_numpy/write with a declared type: plain Python values (ZipMap's output) as declared."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import onnxdata
from onnxdata import MapProto, SequenceProto, TensorProto
from onnxdata.convert.declared import parse_type
from onnxdata.core.messages import kind_name

ZIPMAP = [{"a": 0.25, "b": 0.75}, {"a": 1.0, "b": 0.0}]  # what onnxruntime returns


def test_zipmap_output_saves_as_the_model_declares_it(tmp_path: Path) -> None:
    declared = "seq(map(string, tensor(float)))"
    message = onnxdata.from_numpy(ZIPMAP, declared=declared)
    assert message.elem_type == SequenceProto.MAP
    first = message.map_values[0]
    assert first.key_type == TensorProto.STRING and list(first.string_keys) == [b"a", b"b"]
    assert first.values.tensor_values[0].data_type == TensorProto.FLOAT
    assert list(first.values.tensor_values[0].dims) == []
    onnxdata.validate(message)
    back = onnxdata.to_numpy(message, strings="str")
    assert back == [{k: np.float32(v) for k, v in d.items()} for d in ZIPMAP]
    onnxdata.write(ZIPMAP, tmp_path / "w.pb", declared=declared)
    assert (tmp_path / "w.pb").read_bytes() == message.SerializeToString()


@pytest.mark.parametrize(("declared", "value", "expected"), [
    ("tensor(int32)", [[1, 2], [3, 4]], np.array([[1, 2], [3, 4]], np.int32)),
    ("tensor(string)", ["x", b"y"], np.array([b"x", b"y"], dtype=object)),
    ("map(int64, tensor(double))", {1: 2.5}, {1: np.array(2.5)}),
    ("map(int32, seq(tensor(int64)))", {7: [1, 2]}, {7: [np.array(1), np.array(2)]}),
    ("optional(seq(tensor(float)))", None, None),
    ("optional(seq(tensor(float)))", [1.0], [np.array(1.0, np.float32)]),
    ("seq(optional(tensor(double)))", [None, 1.0], [None, np.array(1.0)]),
    ("sequence(map(string, tensor(float)))", [], []),
    ("map(string, seq(tensor(float)))", {"k": []}, {b"k": []}),
])
def test_declared_types_build_python_values(declared: str, value: object,
                                            expected: object) -> None:
    message = onnxdata.from_numpy(value, declared=declared)
    onnxdata.validate(message)
    back = onnxdata.to_numpy(message)
    np.testing.assert_equal(back, expected)
    assert kind_name(message) == parse_type(declared).kind


def test_map_keys_take_the_declared_key_type() -> None:
    m = onnxdata.from_numpy({1: 0.5}, declared="map(int32, tensor(float))")
    assert isinstance(m, MapProto) and m.key_type == TensorProto.INT32


def test_elem_type_gives_a_tensor_its_data_type() -> None:
    t = onnxdata.from_numpy(3.5, "tensor", elem_type="float")
    assert t.data_type == TensorProto.FLOAT and onnxdata.to_numpy(t) == np.float32(3.5)
    t = onnxdata.from_numpy([1, 2], "tensor", elem_type=TensorProto.INT8)
    assert onnxdata.to_numpy(t).dtype == np.int8


@pytest.mark.parametrize(("declared", "value", "message"), [
    ("seq(tensr(float))", [1.0], "'tensr' is not tensor"),
    ("map(float, tensor(float))", {}, "float is not a map key type"),
    ("seq(tensor(float)", [], r"expected \), found the end"),
    ("seq(map(string, tensor(float)))", [{"a": "x"}], r"value\[0\]\['a'\]: cannot make"),
    ("seq(tensor(float))", {"a": 1.0}, "declared seq"),
    ("map(int8, tensor(float))", {1000: 1.0}, "key 1000 is not a int8"),
])
def test_bad_declared_types_and_values_are_our_errors(declared: str, value: object,
                                                      message: str) -> None:
    with pytest.raises(onnxdata.OnnxDataError, match=message):
        onnxdata.from_numpy(value, declared=declared)


# A value is converted to the declared element type only when that loses nothing of its
# kind (onnxdata.convert.exact_cast): before, an int64 array stayed INT64 where float was
# declared and 1.5 became 1 where int64 was.

def test_an_array_of_another_type_is_converted_to_the_declared_one() -> None:
    t = onnxdata.from_numpy(np.arange(2, dtype=np.int64), declared="tensor(float)")
    assert t.data_type == TensorProto.FLOAT
    np.testing.assert_array_equal(onnxdata.to_numpy(t), np.array([0.0, 1.0], np.float32))
    half = onnxdata.from_numpy(np.array([0.1, 2.5], np.float32), declared="tensor(bfloat16)")
    assert half.data_type == TensorProto.BFLOAT16
    t = onnxdata.from_numpy(np.array([1, 2]), "tensor", elem_type="uint8")
    assert t.data_type == TensorProto.UINT8
    seq = onnxdata.from_numpy([np.zeros(2, np.float64)], declared="seq(tensor(float16))")
    assert seq.tensor_values[0].data_type == TensorProto.FLOAT16
    assert onnxdata.to_numpy(onnxdata.from_numpy(2.0, declared="tensor(int64)")) == 2


@pytest.mark.parametrize(("value", "declared", "message"), [
    (np.zeros(2, np.float32), "optional(tensor(int64))",
     "value: cannot make a tensor(int64) of float32 values without losing their fraction"),
    (1.5, "tensor(int64)",
     "value: cannot make a tensor(int64) of float values without losing their fraction"),
    ({"a": 1.9}, "map(string, tensor(int64))", "value['a']: cannot make a tensor(int64) "
                                              "of float values without losing"),
    ([np.ones(1), np.array([1 + 1j])], "seq(tensor(double))",
     "value[1]: cannot make a tensor(double) of complex128 values without losing"),
    (np.array([300]), "tensor(int8)", "300 is outside its range [-128, 127]"),
    (300, "tensor(int8)", "value: cannot make a tensor(int8) of int values: 300 is outside"),
    (np.array(["1"]), "tensor(float)", "value: cannot make a tensor(float) of string"),
    (onnxdata.SparseParts(np.array([0.5]), np.array([1]), (4,)), "sparse_tensor(int32)",
     "value: cannot make a tensor(int32) of float64 values without losing their fraction"),
])
def test_a_lossy_value_for_a_declared_type_is_refused(value: object, declared: str,
                                                      message: str, tmp_path: Path) -> None:
    with pytest.raises(onnxdata.OnnxDataError) as info:
        onnxdata.from_numpy(value, declared=declared)
    assert message in str(info.value)
    with pytest.raises(onnxdata.OnnxDataError) as info:
        onnxdata.write(value, tmp_path / "w.pb", declared=declared)
    assert message in str(info.value)
    assert list(tmp_path.iterdir()) == []


def test_as_declared_refuses_what_it_would_truncate_and_keeps_arrays_for_compare() -> None:
    with pytest.raises(onnxdata.OnnxDataError, match=r"value: cannot make a tensor\(int64\) "
                                                     "of float values without losing"):
        onnxdata.as_declared(1.5, "tensor(int64)")
    with pytest.raises(onnxdata.OnnxDataError, match=r"value\[0\]\['a'\]: .* of float"):
        onnxdata.as_declared([{"a": 0.5}], "seq(map(string, tensor(int32)))")
    assert onnxdata.as_declared(2.0, "tensor(int64)").dtype == np.int64
    # an array of another type is the runtime's answer: compare reports it, unconverted
    got = np.array([1.5])
    assert onnxdata.as_declared(got, "tensor(int64)") is got
    assert onnxdata.compare(got, np.array([1]), declared="tensor(int64)")
