"""compare / assert_close: differences named by path, for every nesting and data type."""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import onnxdata
import onnxdata.cases
from onnxdata import Difference, assert_close, compare

NODE = Path(__file__).parents[1] / "data" / "onnx-node"


def _nested() -> dict[Any, Any]:
    return {
        b"k": [np.arange(6, dtype=np.float32).reshape(2, 3), None,
               {7: np.array([b"a", b"b"], dtype=object)}],
        b"other": [np.ones(3, np.int64)],
    }


def test_equal_values_have_no_differences() -> None:
    v = _nested()
    assert compare(v, copy.deepcopy(v)) == []
    assert_close(v, copy.deepcopy(v))


def test_one_element_deep_inside_is_named_by_path_and_index_with_both_values() -> None:
    expected = _nested()
    actual = copy.deepcopy(expected)
    actual[b"k"][0][1, 2] = 0.3984
    expected[b"k"][0][1, 2] = np.float32(0.3979)
    found = compare(actual, expected)
    assert len(found) == 1
    d = found[0]
    assert (d.path, d.what, d.count, d.total) == ("['k'][0]", "values", 1, 6)
    (m,) = d.mismatches
    assert m.index == (1, 2)
    assert m.actual == pytest.approx(0.3984) and m.expected == pytest.approx(0.3979)
    assert "['k'][0]: 1 of 6 values differ" in str(d)
    assert "['k'][0][1, 2]: actual 0.3984 vs expected 0.3979" in str(d)
    assert d.max_abs == pytest.approx(0.0005, rel=1e-3)
    with pytest.raises(AssertionError, match=r"\['k'\]\[0\]: 1 of 6 values differ"):
        assert_close(actual, expected)


def test_within_tolerance_is_equal_and_rtol_atol_are_used() -> None:
    e = np.array([1.0, 100.0], np.float32)
    a = e * np.float32(1 + 5e-4)
    assert compare(a, e) == []
    assert [d.what for d in compare(a, e, rtol=1e-5)] == ["values"]
    assert compare(np.array([1e-8]), np.array([0.0])) == []
    assert compare(np.array([1e-6]), np.array([0.0]))[0].count == 1
    assert compare(np.array([1e-6]), np.array([0.0]), atol=1e-5) == []


def test_nan_and_inf() -> None:
    a = np.array([np.nan, np.inf, -np.inf, 1.0])
    assert compare(a, a.copy()) == []
    found = compare(a, a.copy(), equal_nan=False)
    assert found[0].count == 1 and found[0].mismatches[0].index == (0,)
    (d,) = compare(np.array([np.inf, 1.0]), np.array([-np.inf, np.nan]))
    assert d.count == 2
    assert math.isnan(d.max_abs or 0.0) or d.max_abs == math.inf


def test_kind_length_keys_dtype_shape() -> None:
    assert [d.what for d in compare([1], None)] == ["kind"]
    assert str(compare(np.zeros(2), [np.zeros(2)])[0]) == \
        "(top): actual is an array float64 (2,), expected a list of 1"
    found = compare([np.zeros(1), np.ones(1)], [np.zeros(1)])
    assert [(d.path, d.what) for d in found] == [("", "length")]
    found = compare({1: np.zeros(1), 2: np.zeros(1)}, {1: np.ones(1), 3: np.zeros(1)})
    assert [(d.path, d.what) for d in found] == [("", "keys"), ("[1]", "values")]
    assert "missing keys 3; unexpected keys 2" in found[0].message
    assert compare(np.zeros(2, np.float32), np.zeros(2))[0].what == "dtype"
    assert compare(np.zeros((2, 1)), np.zeros(2))[0].what == "shape"


def test_integers_bools_and_strings_are_exact() -> None:
    big = np.array([2**62, 5], np.int64)
    (d,) = compare(big + np.array([1, 0]), big)
    assert d.count == 1 and d.max_rel is None and d.mismatches[0].actual == 2**62 + 1
    assert compare(np.array([True, False]), np.array([True, True]))[0].count == 1
    s = np.array([b"abc", b"d"], dtype=object)
    assert compare(s, s.copy()) == []
    assert compare(np.array(["abc", "d"], dtype=object), s) == []  # ORT gives str
    assert compare(np.array(["abc", "d"]), s) == []
    (d,) = compare(np.array([b"abc", b"e"], dtype=object), s)
    assert (d.count, d.mismatches[0].index, d.mismatches[0].actual) == (1, (1,), b"e")
    assert compare({"k": np.zeros(1)}, {b"k": np.zeros(1)}) == []


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                                   ml_dtypes.float8_e5m2, ml_dtypes.float4_e2m1fn,
                                   ml_dtypes.float8_e8m0fnu])
def test_special_floats_compare_through_float_values(dtype: Any) -> None:
    e = np.array([1.0, 2.0, 4.0], dtype)
    assert compare(e, e.copy()) == []
    a = e.copy()
    a[2] = np.array(2.0, dtype)
    (d,) = compare(a, e)
    assert d.mismatches[0].index == (2,)
    assert (d.mismatches[0].actual, d.mismatches[0].expected) == (2.0, 4.0)
    assert d.max_abs == 2.0


@pytest.mark.parametrize("dtype", [ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2,
                                   ml_dtypes.uint2])
def test_sub_byte_integers_compare_exactly(dtype: Any) -> None:
    e = np.array([1, 0, 1], dtype)
    a = np.array([1, 1, 1], dtype)
    (d,) = compare(a, e)
    assert (d.count, d.mismatches[0].actual, d.mismatches[0].expected) == (1, 1, 0)
    assert d.max_rel is None


def test_messages_compare_through_to_numpy() -> None:
    seq = onnxdata.from_numpy([np.zeros(3, np.float32)], "sequence")
    assert compare(seq, [np.zeros(3, np.float32)]) == []
    other = onnxdata.from_numpy([np.ones(3, np.float32)], "sequence")
    (d,) = compare(seq, other)
    assert (d.path, d.count) == ("[0]", 3)
    assert compare(onnxdata.from_numpy(None, "optional"), None) == []


def test_large_arrays_are_compared_in_chunks_with_right_indices() -> None:
    from onnxdata.convert.compare import CHUNK_ELEMENTS

    e = np.zeros((3, CHUNK_ELEMENTS), np.float32)
    a = e.copy()
    a[2, 5] = 1.0
    a[1, CHUNK_ELEMENTS - 1] = 2.0
    (d,) = compare(a, e)
    assert [m.index for m in d.mismatches] == [(1, CHUNK_ELEMENTS - 1), (2, 5)]
    assert d.max_abs == 2.0 and d.count == 2
    # the same through non-contiguous views (sliced along axis 0, then flattened)
    (d,) = compare(a[:, 1::2], e[:, 1::2])
    assert [m.index for m in d.mismatches] == [(1, CHUNK_ELEMENTS // 2 - 1), (2, 2)]
    # rows longer than a chunk, strided: each row is split on its own
    (d,) = compare(a.T[::-1].T, e.T[::-1].T)
    assert [m.index for m in d.mismatches] == [(1, 0), (2, CHUNK_ELEMENTS - 6)]
    wide = np.zeros((2, 2, 3 * CHUNK_ELEMENTS), np.float32)
    other = wide.copy()
    other[1, 1, 2 * CHUNK_ELEMENTS + 8] = 1.0
    (d,) = compare(wide[:, :, ::2], other[:, :, ::2])
    assert (d.count, d.mismatches[0].index) == (1, (1, 1, CHUNK_ELEMENTS + 4))


def test_every_bundled_output_equals_itself_and_its_copy() -> None:
    for case in sorted(NODE.glob("test_*")):
        for folder in case.glob("test_data_set_*"):
            inputs, outputs = onnxdata.cases.load_test_data_set(folder)
            assert compare(inputs + outputs, copy.deepcopy(inputs + outputs)) == [], case.name


def test_as_json_and_bad_tolerances() -> None:
    (d,) = compare(np.array([1.0, np.nan]), np.array([2.0, 1.0]))
    j = d.as_json()
    assert j["count"] == 2 and j["mismatches"][1] == {"index": [1], "actual": "nan",
                                                      "expected": 1.0}
    assert isinstance(d, Difference)
    with pytest.raises(ValueError, match="rtol"):
        compare(1.0, 1.0, rtol=-1)


@pytest.mark.parametrize("atol", [0.0, 0.1, 1.0, math.inf])
@pytest.mark.parametrize("rtol", [0.0, 1e-3, math.inf])
def test_closeness_is_numpys_isclose_with_any_tolerance_even_infinite(atol: float,
                                                                      rtol: float) -> None:
    # an infinite atol made every differing pair "differ" (the check meant for an infinite
    # expected value fired on the infinite bound). The rule: numpy.isclose for finite
    # pairs; an infinity or NaN is close only to itself (numpy 2 also calls inf close to a
    # finite value when atol is infinite, which hides an overflow)
    values = [0.0, 1.0, -1.0, 2.5, 1e300, math.inf, -math.inf, math.nan]
    a = np.array([x for x in values for _ in values])
    e = np.array([y for _ in values for y in values])
    finite = np.isfinite(a) & np.isfinite(e)
    with np.errstate(invalid="ignore", over="ignore"):
        # (equal values are close whatever the tolerance: numpy 1.x's isclose called 0
        # and 0 apart with rtol inf, 0 * inf being NaN; numpy 2 adds x == y)
        close = np.where(finite, np.isclose(a, e, rtol=rtol, atol=atol) | (a == e),
                         (a == e) | (np.isnan(a) & np.isnan(e)))
    for x, y, want in zip(a, e, close, strict=True):
        got = compare(np.array([x]), np.array([y]), rtol=rtol, atol=atol)
        assert (got == []) == bool(want), (x, y, rtol, atol)


def test_a_0d_value_is_named_by_its_path_alone() -> None:
    """diff printed [2]['dog'][]: 0.5 vs 0.7; a 0-d value has no index to print."""
    a = [{b"dog": np.array(0.5, np.float32)}]
    b = [{b"dog": np.array(0.7, np.float32)}]
    (d,) = onnxdata.compare(a, b)
    assert str(d).endswith("; [0]['dog']: actual 0.5 vs expected 0.7") and "[]" not in str(d)
    (top,) = onnxdata.compare(np.float32(1), np.float32(2))
    assert str(top).endswith("; value: actual 1 vs expected 2")
    (arr,) = onnxdata.compare(np.float32([1, 3]), np.float32([2, 3]))
    assert str(arr).endswith("; [0]: actual 1 vs expected 2")
    word = "日本".encode()
    (key,) = onnxdata.compare({word: np.float32([1])}, {word: np.float32([2])})
    assert str(key).startswith("['日本']: ")  # a UTF-8 string key prints as text
