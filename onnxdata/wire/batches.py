"""A field's occurrences a batch at a time, as arrays, where ``walk.scan`` keeps too many
to hold (past COMPACT_PIECES): a sequence's elements, which the engine then groups by
layout a batch at a time (engine/by_layout.py), a merged message's occurrences, which the
compiled loop takes a batch a call, and a number field's pieces, as ``Compact`` batches
for ``field_values``; instead of a Python step per occurrence."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from onnxdata.wire.fields import RUN, Where, occurrences, walk_fields
from onnxdata.wire.format import LEN, VARINT
from onnxdata.wire.occurrences import Compact, range_bounds
from onnxdata.wire.source import Source

__all__ = ["BATCH", "occurrence_batches", "piece_batches"]

#: Occurrences per batch (16 bytes each in the two arrays).
BATCH: Final = 1 << 20

Batch = tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]


def occurrence_batches(src: Source, where: Where, size: int | None = None) -> Iterator[Batch]:
    """The occurrences of ``where`` in wire order, as ``(starts, ends)`` arrays of at most
    ``size`` (BATCH) each: those kept, or found again by walking the parent (runs of the
    field's one-byte tag split by numpy, as ``walk.scan`` splits them)."""
    size = size or BATCH
    if where.ranges is not None:
        starts, ends = range_bounds(where.ranges)
        for at in range(0, int(starts.size), size):
            yield starts[at:at + size], ends[at:at + size]
        return
    assert where.parent is not None

    def occurrence(wt: int, a: int, b: int) -> tuple[int, ...] | None:
        return (a, b) if wt == LEN else None

    for held in _found(src, where.parent, where.number, occurrence,
                       lambda a, b: (_u64(a), _u64(b)), (np.uint64, np.uint64), size):
        s, e = _joined(held)
        for at in range(0, int(s.size), size):
            yield s[at:at + size], e[at:at + size]


def piece_batches(src: Source, parent: Where, number: int, want: int,
                  size: int | None = None) -> Iterator[Compact]:
    """The pieces of number field ``number`` (of wire type ``want``, or packed) of the
    message at ``parent``, as ``walk.Fields`` keeps them, in ``Compact`` batches of about
    ``size`` (BATCH): runs of packed pieces with a one-byte tag split by numpy."""

    def piece(wt: int, a: int, b: int) -> tuple[int, ...] | None:
        if wt == VARINT == want:
            return VARINT, a, 0
        return (wt, a, b) if wt in (want, LEN) else None

    for held in _found(src, parent, number, piece,
                       lambda a, b: (np.full(a.size, LEN, np.int8), _u64(a), _u64(b)),
                       (np.int8, np.uint64, np.uint64), size or BATCH):
        out = Compact([])
        out.add_run(*_joined(held))
        out.settle()  # payloads reads the arrays
        yield out


Columns = tuple[npt.NDArray[Any], ...]


def _found(src: Source, parent: Where, number: int,
           single: Callable[[int, Any, Any], tuple[int, ...] | None],
           run: Callable[[Any, Any], Columns], dtypes: tuple[Any, ...], size: int
           ) -> Iterator[list[Columns]]:
    """Field ``number`` of the message at ``parent``, walked again: its runs (``run``'s
    columns) and single fields (``single``'s row, None to skip one) held as columns and
    given out about ``size`` at a time; a run of a quarter of that or more alone, not
    joined with others."""
    tag = number << 3 | LEN
    runs = frozenset({tag}) if tag < 0x80 else frozenset()
    held: list[Columns] = []
    rows: list[tuple[int, ...]] = []
    count = 0
    for n, wt, _at, a, b in walk_fields(src, occurrences(src, parent), runs):
        if n != number:
            continue
        if wt == RUN:
            if count and (count + int(a.size) > size or 4 * int(a.size) >= size):
                yield _with_rows(held, rows, dtypes)
                held, rows, count = [], [], 0
            _with_rows(held, rows, dtypes)  # (the rows before the run, first)
            held.append(run(a, b))
            count += int(a.size)
        else:
            row = single(wt, a, b)
            if row is None:
                continue
            rows.append(row)
            count += 1
        if count >= size:
            yield _with_rows(held, rows, dtypes)
            held, rows, count = [], [], 0
    if count:
        yield _with_rows(held, rows, dtypes)


def _with_rows(held: list[Columns], rows: list[tuple[int, ...]], dtypes: tuple[Any, ...]
               ) -> list[Columns]:
    """``held`` with the single rows after it added as columns (``rows`` then emptied)."""
    if rows:
        held.append(tuple(np.array(column, dtype)
                          for column, dtype in zip(zip(*rows, strict=True), dtypes,
                                                   strict=True)))
        rows.clear()
    return held


def _joined(held: list[Columns]) -> Columns:
    """The held columns one after another (a lone run's as they are)."""
    if len(held) == 1:
        return held[0]
    return tuple(np.concatenate([h[k] for h in held]) for k in range(len(held[0])))


def _u64(bounds: npt.NDArray[Any]) -> npt.NDArray[np.uint64]:
    """A run's bounds (``split_strings``' intp, never negative) as uint64, not copied."""
    if bounds.dtype == np.int64 and bounds.flags.c_contiguous:
        return bounds.view(np.uint64)
    return np.asarray(bounds, np.uint64)
