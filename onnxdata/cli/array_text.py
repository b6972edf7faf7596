"""numpy's repr of many arrays at once, for ``onnxdata show``: the same text as ``repr(a)``
for each, with the many alike small arrays of a nested value (same dtype, one dimension
of at most 8 floats, integers or bools) formatted a batch at a time.

numpy's repr costs ~15 µs an array, most of it set-up (print options, a formatter per
array); ``show --limit all`` of a 1 MB set of tensors of 2 floats prints 58,000 of
them. Here a batch of N alike arrays is one (N, k) array and each step of numpy's
FloatingFormat / IntegerFormat / BoolFormat is one numpy operation over all of it: the
shortest digits of every value (``astype(str)``), the widest integer and fraction part
of each row, the padding, the joining. A row numpy would print otherwise (exponents,
nan, a line it wraps) is left to numpy's own repr.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any, Final, cast

import numpy as np
import numpy.typing as npt

from onnxdata.wire.loops import float_rows_loop

__all__ = ["alike_reprs", "batch_print_options", "batch_reprs"]

#: numpy's print options under which the batches are numpy's repr (show's threshold and
#: edgeitems aside: they do not touch arrays of at most 8 values).
_DEFAULTS: Final = {"floatmode": "maxprec", "precision": 8, "suppress": False,
                    "linewidth": 75, "sign": "-", "formatter": None, "legacy": False,
                    "override_repr": None}
#: The rules followed here are numpy 2's (numpy 1.26 prints float32 1e-4 as "1.e-04").
_NUMPY_MAJOR: Final = int(np.__version__.split(".")[0])
#: numpy prints exponents when a nonzero value is below the first (0.0001 in the dtype)
#: or at or above the second (10 ** min(8, finfo.precision)), or when the largest is
#: over 1000 times the smallest.
_POSITIONAL: Final = {np.dtype(np.float32): (float(np.float32(1e-4)), 1e6),
                      np.dtype(np.float64): (1e-4, 1e8)}
#: Arrays batched: one dimension of 1 to ``_MOST`` values, lines of at most ``_WIDTH``
#: characters (numpy wraps lines longer than 75; shorter ones are certainly whole).
_MOST: Final = 8
_WIDTH: Final = 70
_FLOAT32: Final = np.dtype(np.float32)


def batch_print_options() -> bool:
    """Whether numpy's print options are those under which the batches are numpy's repr."""
    if _NUMPY_MAJOR < 2:
        return False
    options = np.get_printoptions()
    return all(options.get(k) == v for k, v in _DEFAULTS.items()) and \
        options["threshold"] >= _MOST


def alike_reprs(arrays: Sequence[npt.NDArray[Any]]) -> list[str]:
    """``repr(a)`` of each of ``arrays`` under the current print options, for arrays of one
    type, dtype and shape (the first's): small ones made as one batch."""
    return batch_reprs(arrays)[0]


def batch_reprs(arrays: Sequence[npt.NDArray[Any]]) -> tuple[list[str], list[int]]:
    """``alike_reprs(arrays)``, and which of them are numpy's own repr (text of any kind,
    of several lines, say): the others are one line of printable ASCII ending in ")"."""
    texts: list[str | None] = []
    if arrays and batch_print_options():
        first = arrays[0]
        shape = first.shape
        if type(first) is np.ndarray and len(shape) == 1 and 0 < shape[0] <= _MOST and \
                _batched(first.dtype):
            # (one concatenate: half the time of np.array over the list)
            texts = _batch(first.dtype, np.concatenate(arrays, dtype=first.dtype).reshape(
                len(arrays), shape[0]))
    if not texts:
        return [repr(a) for a in arrays], list(range(len(arrays)))
    own = [i for i, text in enumerate(texts) if text is None]
    for i in own:
        texts[i] = repr(arrays[i])
    return cast("list[str]", texts), own


def _batched(dtype: np.dtype[Any]) -> bool:
    """Whether arrays of ``dtype`` are made a batch at a time."""
    return dtype.isnative and (dtype.kind in "biu" or dtype in _POSITIONAL)


def _batch(dtype: np.dtype[Any], rows: npt.NDArray[Any]) -> list[str | None]:
    """The repr of each row of ``rows`` (N arrays of k values, of a ``_batched`` dtype),
    None where numpy prints it otherwise than this batch does."""
    if dtype.kind == "b":
        return _joined(np.where(rows, " True", "False"), dtype)
    if dtype.kind in "iu":
        digits = rows.astype(str)
        lengths = np.strings.str_len(digits)
        return _joined(np.strings.rjust(digits, lengths.max(axis=1, keepdims=True)),
                       dtype)
    if float_rows_loop is not None and dtype == _FLOAT32:
        return _compiled_floats(dtype, rows)
    return _floats(dtype, rows)


def _compiled_floats(dtype: np.dtype[Any], rows: npt.NDArray[Any]) -> list[str | None]:
    """``_floats`` by the compiled loop (``core/_float_rows.pyx``, float32 only); the rows
    it declines (exponents, a tie) by ``_floats`` itself."""
    assert float_rows_loop is not None
    texts: list[str | None] = float_rows_loop.float32_rows(
        np.ascontiguousarray(rows), _suffix(dtype).encode(), _WIDTH)
    declined = [i for i, text in enumerate(texts) if text is None]
    if declined:
        for i, text in zip(declined, _floats(dtype, rows[declined]), strict=True):
            texts[i] = text
    return texts


def _floats(dtype: np.dtype[Any], rows: npt.NDArray[Any]) -> list[str | None]:
    """As numpy's FloatingFormat (floatmode "maxprec") prints rows in positional notation:
    each value's shortest digits (at most 8 after the point), the integer parts padded
    left and the fractions right to the widest of the row."""
    small, large = _POSITIONAL[dtype]
    exact = rows.astype(np.float64)  # numpy's tests below, done on the exact values
    with np.errstate(all="ignore"):
        size = np.abs(exact)
        high = size.max(axis=1)
        low = np.where(size > 0, size, np.inf).min(axis=1)  # inf: a row of zeros
        # high / low rounded to float32 may be 1000 where the float64 quotient is just
        # above: then the row is left to numpy, never a wrong text given
        positional = np.isfinite(exact).all(axis=1) & (high < large) & (low >= small) & \
            (high / low <= 1000.)
    chosen = np.flatnonzero(positional)
    out: list[str | None] = [None] * len(rows)
    if not len(chosen):
        return out
    values = rows[chosen]
    digits = values.astype(str)  # numpy's shortest digits of each (dragon4, unique)
    point = np.strings.find(digits, ".")
    lengths = np.strings.str_len(digits)
    # more than 8 digits after the point, or exponents (float32's 1e-4 is "1e-04"):
    # numpy rounds the exact value to 8 places, as "%.8f" does, and trims the zeros
    odd = (lengths - point > 9) | (np.strings.find(digits, "e") >= 0)
    if odd.any():
        digits[odd] = [f"{x:.8f}".rstrip("0") for x in values[odd].tolist()]
    whole = np.strings.endswith(digits, ".0")  # numpy prints 1.0 as "1."
    if whole.any():
        digits = np.where(whole, np.strings.replace(digits, ".0", "."), digits)
    if odd.any() or whole.any():
        point = np.strings.find(digits, ".")
        lengths = np.strings.str_len(digits)
    fraction = lengths - point - 1
    left = point.max(axis=1, keepdims=True)
    right = fraction.max(axis=1, keepdims=True)
    padded = np.strings.ljust(np.strings.rjust(digits, left - point + lengths),
                              left + 1 + right)
    for i, text in zip(chosen.tolist(), _joined(padded, dtype), strict=True):
        out[i] = text
    return out


def _joined(cells: npt.NDArray[Any], dtype: np.dtype[Any]) -> list[str | None]:
    """Each row of ``cells`` (padded values) as numpy's repr of a 1-D array; None where
    the line is longer than ``_WIDTH``."""
    line = np.strings.add("array([", cells[:, 0])
    for j in range(1, cells.shape[1]):
        line = np.strings.add(np.strings.add(line, ", "), cells[:, j])
    line = np.strings.add(line, "]" + _suffix(dtype))
    fits = (np.strings.str_len(line) <= _WIDTH).tolist()
    return [text if ok else None for text, ok in zip(line.tolist(), fits, strict=True)]


@functools.lru_cache(maxsize=64)
def _suffix(dtype: np.dtype[Any]) -> str:
    """What numpy's repr of a 1-D ``dtype`` array prints after its values: ")" where the
    dtype is implied (float64, int64, bool), else ", dtype=float32)"."""
    text = repr(np.zeros(1, dtype))
    return text[text.rindex("]") + 1:]
