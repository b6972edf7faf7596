"""show's preview of a small float array is numpy's repr, made without numpy's per-call
set-up (issue 39): the fast path gives numpy's text for every array it takes, and leaves
to numpy those numpy prints otherwise (exponents, nan, wrapping)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from onnxdata.cli.show import _default_print_options, _small_float_repr

SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-4, 9.99e-5, 1e6, 999999.0, 1e8, 99999999.0,
            1000.0, 0.001, 1 / 3, -7.25, 12345678.9, np.nan, np.inf]


@given(st.sampled_from([np.float32, np.float64]), st.integers(1, 9), st.data())
@settings(max_examples=500, deadline=None)
def test_small_float_repr_is_numpys(dtype: type, size: int, data: st.DataObject) -> None:
    specials = [float(dtype(x)) for x in SPECIALS]  # as the dtype holds them (1e-4 in float32)
    elements = st.one_of(st.sampled_from(specials),
                         st.floats(-1e9, 1e9, width=32 if dtype is np.float32 else 64))
    a = data.draw(hnp.arrays(dtype, size, elements=elements))
    with np.printoptions(threshold=64, edgeitems=3):
        text = _small_float_repr(a) if _default_print_options() else None
        if text is not None:
            assert text == repr(a)


NUMPY_2 = int(np.__version__.split(".")[0]) >= 2


def test_numpy_1_always_prints_with_numpys_repr() -> None:
    """The fast path follows numpy 2's rules (numpy 1.26 prints float32 1e-4 as 1.e-04)."""
    assert _default_print_options() == NUMPY_2


@pytest.mark.skipif(not NUMPY_2, reason="the fast path is numpy 2's repr")
def test_small_float_repr_takes_the_usual_and_leaves_the_rest() -> None:
    with np.printoptions(threshold=64, edgeitems=3):
        assert _small_float_repr(np.array([0.5, 1.0], np.float32)) == \
            "array([0.5, 1. ], dtype=float32)"
        assert _small_float_repr(np.array([-0.0, 2.25])) == "array([-0.  ,  2.25])"
        for other in (np.array([1e-9, 1.0]), np.array([np.nan]), np.zeros((2, 2)),
                      np.arange(3), np.zeros(20), np.array([2e6], np.float32)):
            assert _small_float_repr(other) is None
    assert _default_print_options()
    with np.printoptions(precision=3):
        assert not _default_print_options()


class _Out:
    """A console stand-in, piped: what _Lines writes goes to write_text (patched)."""

    is_terminal = False


def test_show_prints_its_lines_in_batches_of_a_bounded_size(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch is printed when it holds CHARS characters, not only BATCH lines: the batch
    lives beside the whole value, so its size adds to show's peak memory."""
    from onnxdata.cli import show

    written: list[str] = []
    monkeypatch.setattr(show, "write_text", written.append)
    lines = show._Lines(_Out())  # type: ignore[arg-type]
    line = "x" * 100
    for _ in range(1000):
        lines.add(line)
    lines.flush()
    assert "".join(written) == (line + "\n") * 1000
    assert len(written) > 1 and all(len(w) <= show._Lines.CHARS + 101 for w in written)
