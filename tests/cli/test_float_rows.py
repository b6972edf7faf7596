"""show's text of float32 rows by the compiled loop (``core/_float_rows.pyx``) against
its references: numpy's repr of each row, and ``array_text._floats`` (the numpy route,
which prints the rows the loop declines)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from onnxdata.cli import array_text
from onnxdata.wire.loops import float_rows_loop

pytestmark = [
    pytest.mark.skipif(float_rows_loop is None, reason="the compiled loops are off"),
    # numpy 1.26 prints float32 1e-4 as "1.e-04" and has no np.strings: show prints numpy's
    # repr of each array there (array_text.batch_print_options), never these rows
    pytest.mark.skipif(int(np.__version__.split(".")[0]) < 2, reason="numpy 1: not used")]

F32 = np.dtype(np.float32)
SUFFIX = b", dtype=float32)"
#: float32's bits from below 1e-4 to above 1e6 (numpy's positional range), and beyond
LOW, HIGH = 0x38800000, 0x49C00000  # 2**-14, 2**20 * 1.5


def _compiled(rows: np.ndarray) -> list[str | None]:
    assert float_rows_loop is not None
    return float_rows_loop.float32_rows(np.ascontiguousarray(rows, F32), SUFFIX, 70)


def _agrees(rows: np.ndarray) -> int:
    """The loop's text of ``rows`` is numpy's repr where it gives one, and it declines
    just the rows the numpy route declines: how many rows it printed."""
    got = _compiled(rows)
    reference = array_text._floats(F32, rows)
    with np.printoptions(threshold=64, edgeitems=3):
        for row, text, ref in zip(rows, got, reference, strict=True):
            assert text == ref, (row.view(np.uint32).tolist(), text, ref)
            if text is not None:
                assert text == repr(row)
    return sum(text is not None for text in got)


def _from_bits(bits: np.ndarray) -> np.ndarray:
    return bits.astype(np.uint32).view(np.float32)


@given(hnp.arrays(np.uint32, st.tuples(st.integers(1, 40), st.integers(1, 8)),
                  elements=st.integers(LOW - 0x200000, HIGH) | st.sampled_from(
                      [0, 0x80000000, 0x7F800000, 0x7FC00000, 0xFF800000, 1, 0x3F800000])),
       st.booleans())
@settings(max_examples=500, deadline=None)
def test_rows_of_any_float32_bits_are_numpys_text(bits: np.ndarray, negative: bool) -> None:
    rows = _from_bits(bits | (np.uint32(0x80000000) if negative else np.uint32(0)))
    _agrees(rows)


@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 40), st.integers(1, 4)),
                  elements=st.floats(-1e6, 1e6) | st.sampled_from(
                      [0.1, 0.5, 1e-4, 0.25, 1 / 3, 12.5, 1e5 + 0.5])))
@settings(max_examples=300, deadline=None)
def test_rows_of_short_decimals_are_numpys_text(values: np.ndarray) -> None:
    _agrees(values.astype(np.float32))


def test_the_loop_prints_most_rows_of_each_kind_and_numpys_text() -> None:
    """Many rows of every kind show prints (values of [0, 1), of every magnitude of the
    positional range, exact halves and ties of the last digit, powers of two, negative
    and signed zeros): each is numpy's text, and the loop prints nearly all of them."""
    rng = np.random.default_rng(39)
    kinds = {
        "uniform": rng.random((20000, 2)),
        "magnitudes": rng.random((20000, 3)) * 10.0 ** rng.integers(-3, 6, (20000, 1)),
        "normal": rng.standard_normal((20000, 4)) * 100,
        "bits": _from_bits(rng.integers(0x38D1B717, 0x49742400, (20000, 2))),
        # x * 10**k exactly halfway between two candidates: rounded to the even one
        "halves": (rng.integers(0, 2**19, (20000, 2)) + rng.integers(0, 64, (20000, 2)) / 64),
        "powers": np.array([[2.0 ** k, -(2.0 ** (k - 1))] for k in range(-12, 20)]),
        "short": rng.integers(-1000, 1000, (20000, 2)) / 10.0 ** rng.integers(0, 5, (20000, 1)),
        "zeros": np.array([[0.0, -0.0], [-0.0, 1.5], [0.0, 0.0]]),
    }
    for name, values in kinds.items():
        rows = values.astype(np.float32)
        printed = _agrees(rows)
        assert printed >= 0.2 * len(rows), name


def test_a_line_too_long_and_rows_outside_the_range_are_declined() -> None:
    rows = np.array([[1e-5, 1.0], [1e6, 1.0], [0.001, 2.0], [np.nan, 1.0], [np.inf, 0.0]],
                    dtype=np.float32)
    assert _compiled(rows) == [None] * 5
    wide = np.full((1, 8), 123.45678, dtype=np.float32)
    assert _compiled(wide) == [None]
    assert float_rows_loop is not None
    # (numpy wraps that line at 75 characters; given room, the loop's is one line)
    assert float_rows_loop.float32_rows(np.ascontiguousarray(wide), SUFFIX, 200) == \
        [repr(wide[0]).replace(",\n       ", ", ")]
