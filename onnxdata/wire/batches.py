"""A field's occurrences a batch at a time, as arrays, where ``walk.scan`` keeps too many
to hold (past COMPACT_PIECES): a sequence's elements, which the engine then groups by
layout a batch at a time (engine/groups.py), a merged message's occurrences, which the
compiled loop takes a batch a call, and a number field's pieces, as ``Compact`` batches
for ``payloads``; instead of a Python step per occurrence."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from onnxdata.wire.field_walk import RUN, Where, occurrences, walk_fields
from onnxdata.wire.format import LEN, VARINT
from onnxdata.wire.source import Source
from onnxdata.wire.stores import Compact, range_bounds

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
    number = where.number
    tag = number << 3 | LEN
    runs = frozenset({tag}) if tag < 0x80 else frozenset()
    held_starts: list[npt.NDArray[np.uint64]] = []
    held_ends: list[npt.NDArray[np.uint64]] = []
    singles: list[tuple[int, int]] = []
    held = 0
    for n, wt, _at, a, b in walk_fields(src, occurrences(src, where.parent), runs):
        if n != number:
            continue
        if wt == RUN:
            if held and (held + int(a.size) > size or 4 * int(a.size) >= size):
                yield from _flush(held_starts, held_ends, singles, size)  # a run: no join
                held_starts, held_ends, singles, held = [], [], [], 0
            if singles:
                held_starts.append(np.array([s for s, _ in singles], np.uint64))
                held_ends.append(np.array([e for _, e in singles], np.uint64))
                singles = []
            held_starts.append(_u64(a))
            held_ends.append(_u64(b))
            held += int(a.size)
        elif wt == LEN:
            singles.append((a, b))
            held += 1
        if held >= size:
            yield from _flush(held_starts, held_ends, singles, size)
            held_starts, held_ends, singles, held = [], [], [], 0
    if held:
        yield from _flush(held_starts, held_ends, singles, size)


def _flush(starts: list[npt.NDArray[np.uint64]], ends: list[npt.NDArray[np.uint64]],
           singles: list[tuple[int, int]], size: int) -> Iterator[Batch]:
    if singles:
        starts.append(np.array([s for s, _ in singles], np.uint64))
        ends.append(np.array([e for _, e in singles], np.uint64))
    s, e = (starts[0], ends[0]) if len(starts) == 1 else (np.concatenate(starts),
                                                            np.concatenate(ends))
    for at in range(0, int(s.size), size):
        yield s[at:at + size], e[at:at + size]


def piece_batches(src: Source, parent: Where, number: int, want: int,
                  size: int | None = None) -> Iterator[Compact]:
    """The pieces of number field ``number`` (of wire type ``want``, or packed) of the
    message at ``parent``, as ``walk.Fields`` keeps them, in ``Compact`` batches of about
    ``size`` (BATCH): runs of packed pieces with a one-byte tag split by numpy."""
    size = size or BATCH
    tag = number << 3 | LEN
    runs = frozenset({tag}) if tag < 0x80 else frozenset()
    held: list[tuple[npt.NDArray[Any], ...]] = []
    singles: list[tuple[int, int, int]] = []
    count = 0
    for n, wt, _at, a, b in walk_fields(src, occurrences(src, parent), runs):
        if n != number:
            continue
        if wt == RUN:
            if count and (count + int(a.size) > size or 4 * int(a.size) >= size):
                _hold_singles(held, singles)
                yield _compact(held)  # a run alone: no join
                held, count = [], 0
            _hold_singles(held, singles)
            held.append((np.full(a.size, LEN, np.int8), _u64(a), _u64(b)))
            count += int(a.size)
        elif wt == VARINT == want:
            singles.append((VARINT, a, 0))
            count += 1
        elif wt in (want, LEN):
            singles.append((wt, a, b))
            count += 1
        else:
            continue
        if count >= size:
            _hold_singles(held, singles)
            yield _compact(held)
            held, count = [], 0
    _hold_singles(held, singles)
    if held:
        yield _compact(held)


def _hold_singles(held: list[tuple[npt.NDArray[Any], ...]],
                  singles: list[tuple[int, int, int]]) -> None:
    if singles:
        held.append((np.array([w for w, _, _ in singles], np.int8),
                     np.array([a for _, a, _ in singles], np.uint64),
                     np.array([b for _, _, b in singles], np.uint64)))
        singles.clear()


def _compact(held: list[tuple[npt.NDArray[Any], ...]]) -> Compact:
    out = Compact([])
    out.add_run(*(held[0] if len(held) == 1 else
                  [np.concatenate([h[k] for h in held]) for k in range(3)]))
    out.settle()  # payloads reads the arrays
    return out


def _u64(bounds: npt.NDArray[Any]) -> npt.NDArray[np.uint64]:
    """A run's bounds (``split_strings``' intp, never negative) as uint64, not copied."""
    if bounds.dtype == np.int64 and bounds.flags.c_contiguous:
        return bounds.view(np.uint64)
    return np.asarray(bounds, np.uint64)
