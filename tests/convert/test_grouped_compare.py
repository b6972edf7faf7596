"""compare's lists of small arrays are compared a group at a time (issue 39): the grouped
walk finds the same differences, in the same order, with the same counts as the walk
one element at a time (``GROUP_ELEMENTS = 0`` groups nothing)."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnxdata.convert import compare as compare_module
from onnxdata.convert.compare import collect

DTYPES = [np.float32, np.float64, np.int8, np.int64, np.bool_, np.float16,
          ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn]
SPECIALS = [0.0, -0.0, 1.0, 1.0005, np.nan, np.inf, -np.inf, 1e-8, 3.0]


@st.composite
def _element(draw: st.DrawFn) -> tuple[Any, Any]:
    """A pair (actual, expected): mostly small arrays alike or slightly different, some odd."""
    form = draw(st.sampled_from(["same", "near", "shape", "dtype", "none", "list", "str"]))
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = draw(st.sampled_from([(), (1,), (2,), (2, 3), (0,), (70,)]))
    size = int(np.prod(shape))
    values = draw(st.lists(st.sampled_from(SPECIALS), min_size=size, max_size=size))
    with np.errstate(invalid="ignore"):  # NaN and inf into the integer dtypes
        a = np.array(values, dtype=np.float64).reshape(shape).astype(dtype)
        b = np.array(draw(st.lists(st.sampled_from(SPECIALS), min_size=size, max_size=size)),
                     dtype=np.float64).reshape(shape).astype(dtype)
    if form == "same":
        return a, a.copy()
    if form == "near":
        return a, b
    if form == "shape":
        return a, np.zeros((size + 1,), dtype)
    if form == "dtype":
        return a, a.astype(np.float32 if dtype != np.float32 else np.float64)
    if form == "none":
        return None, a
    if form == "str":
        return np.array(["x", "y"]), np.array([b"x", b"z"], dtype=object)
    return [a], [a.copy()]


@given(st.lists(_element(), max_size=40), st.sampled_from([None, 0, 1, 3]),
       st.sampled_from([(1e-3, 1e-7), (0.0, 0.0)]), st.booleans(), st.integers(0, 2))
@settings(max_examples=300, deadline=None)
def test_grouped_walk_equals_one_by_one(pairs: list[tuple[Any, Any]], keep: int | None,
                                        tolerance: tuple[float, float], equal_nan: bool,
                                        extra: int) -> None:
    actual = [a for a, _ in pairs] + [np.zeros(2, np.float32)] * extra
    expected = [e for _, e in pairs]
    rtol, atol = tolerance
    grouped = collect(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, keep=keep)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(compare_module, "GROUP_ELEMENTS", 0)
        single = collect(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                         keep=keep)
    assert [d.as_json() for d in grouped.kept] == [d.as_json() for d in single.kept]
    assert (grouped.count, grouped.left_out) == (single.count, single.left_out)


def test_many_tiny_elements_differing_everywhere() -> None:
    """300 elements of one dtype and shape, every one different: all counted, the first
    kept with their paths, as one by one."""
    a = list(np.arange(600, dtype=np.float32).reshape(300, 2))
    e = [x + 1 for x in a]
    found = collect(a, e, keep=10)
    assert found.count == 300 and found.left_out == {"values": 290}
    assert [d.path for d in found.kept] == [f"[{i}]" for i in range(10)]
