"""exact_array: a value for a declared element type converts when that loses nothing of its
kind (float64 to bfloat16 rounds, as declared) and is refused when it would (1.5 to int64)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

from onnxdata import OnnxDataError, TensorProto
from onnxdata.convert.exact_cast import exact_array
from onnxdata.core.dtypes import DATA_TYPES

T = TensorProto


@pytest.mark.parametrize(("value", "code"), [
    (np.arange(3, dtype=np.int64), T.FLOAT),            # int to float: same_kind
    (np.array([0.1, 2.5]), T.FLOAT),                    # float64 to float32 rounds
    (np.array([0.1, 2.5], np.float32), T.FLOAT16),
    (np.array([0.1, 2.5], np.float32), T.BFLOAT16),     # ml_dtypes floats are floats
    (np.array([0.5, 2.0], np.float32), T.FLOAT8E4M3FN),
    (np.array([1.0], ml_dtypes.bfloat16), T.DOUBLE),
    (np.array([True, False]), T.INT8),                  # bool to any number
    (np.array([1, 2], np.int64), T.UINT8),              # ints in range, whatever the sign
    (np.array([-8, 7], np.int64), T.INT4),
    (np.array([1, 3], ml_dtypes.uint2), T.INT64),
    (np.array([1.5], np.float32), T.COMPLEX64),
    (np.float64(0.25), T.FLOAT),                        # a numpy scalar is an array
    (np.zeros((0, 3)), T.FLOAT16),
    (2.0, T.INT64),                                     # a whole Python float is an int
    ([1.0, -3.0], T.INT8),
    (7, T.DOUBLE),                                      # a Python int into a float type
    (True, T.BOOL),
    ([[1, 2], [3, 4]], T.UINT16),
    (2**70, T.FLOAT),                                   # past int64: an object array's route
])
def test_exact_conversions_give_the_declared_dtype(value: Any, code: int) -> None:
    got = exact_array(value, code, "v")
    want = DATA_TYPES[code].dtype
    assert got.dtype == want
    np.testing.assert_array_equal(got, np.asarray(value).astype(want))


def test_strings_stay_strings() -> None:
    got = exact_array(["x", b"y"], T.STRING, "v")
    assert got.dtype == object and got.tolist() == ["x", b"y"]
    arr = np.array(["a", "b"])
    assert exact_array(arr, T.STRING, "v") is arr


@pytest.mark.parametrize(("value", "code", "message"), [
    (np.array([1.5, 2.0]), T.INT64,
     "v: cannot make a tensor(int64) of float64 values without losing their fraction"),
    (np.array([1.0], np.float32), T.INT32, "float32 values without losing their fraction"),
    (np.array([1.0], ml_dtypes.bfloat16), T.INT4, "bfloat16 values without losing their f"),
    (np.array([1.0], np.float32), T.INT4, "float32 values without losing their fraction"),
    (np.array([1 + 2j]), T.DOUBLE, "complex128 values without losing their imaginary part"),
    (np.array([1 + 0j], np.complex64), T.BFLOAT16, "without losing their imaginary part"),
    (np.array([0, 1]), T.BOOL, "tensor(bool) of int64 values: only bools make one"),
    (np.array([300]), T.INT8, "int64 values: 300 is outside its range [-128, 127]"),
    (np.array([-1, 5]), T.UINT64, "-1 is outside its range [0, 18446744073709551615]"),
    (np.array([8], np.int16), T.INT4, "8 is outside its range [-8, 7]"),
    (np.array(["1"]), T.FLOAT, "tensor(float) of string values"),
    (np.array([1.0]), T.STRING, "tensor(string) of float64 values"),
    (np.array(["2020-01-01"], "datetime64[D]"), T.INT64, "of datetime64"),
    (np.array([1], object), T.INT64, "tensor(int64) of object values"),
    (1.5, T.INT64, "v: cannot make a tensor(int64) of float values without losing their"),
    ([1.0, float("nan")], T.INT32, "float values without losing their fraction"),
    (float("inf"), T.INT64, "float values without losing their fraction"),
    (2.0**63, T.INT64, "of float values: 9223372036854775808 is outside its range"),
    (300, T.INT8, "v: cannot make a tensor(int8) of int values: 300 is outside"),
    (-1, T.UINT8, "of int values: -1 is outside"),
    (1, T.BOOL, "tensor(bool) of int values: only bools make one"),
    (1j, T.FLOAT, "complex values without losing their imaginary part"),
    ("1", T.FLOAT, "tensor(float) of str values"),
    ([1, "a"], T.INT64, "tensor(int64) of str values"),
    ([1, None], T.INT64, "cannot make a tensor(int64) of list"),
    (2**70, T.INT64, "cannot make a tensor(int64) of int"),
    ([[1], [2, 3]], T.INT64, "cannot make a tensor(int64) of list"),
    ([b"x", 1], T.STRING, "tensor(string) of int values"),
    (None, T.STRING, "tensor(string) of NoneType values"),
])
def test_lossy_conversions_are_refused_naming_path_and_types(value: Any, code: int,
                                                             message: str) -> None:
    with pytest.raises(OnnxDataError) as info:
        exact_array(value, code, "v")
    assert message in str(info.value)
