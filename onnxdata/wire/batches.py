"""A message field's occurrences a batch at a time, as arrays: for a sequence of more
elements than ``walk.scan`` keeps (COMPACT_PIECES), which the engine then groups by
layout a batch at a time (engine/groups.py) instead of walking each in Python."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import numpy as np
import numpy.typing as npt

from onnxdata.wire.format import LEN
from onnxdata.wire.source import Source
from onnxdata.wire.walk import RUN, RangeStore, Where, occurrences, walk_fields

__all__ = ["BATCH", "occurrence_batches"]

#: Occurrences per batch (16 bytes each in the two arrays).
BATCH: Final = 1 << 20

Batch = tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]


def occurrence_batches(src: Source, where: Where, size: int | None = None) -> Iterator[Batch]:
    """The occurrences of ``where`` in wire order, as ``(starts, ends)`` arrays of at most
    ``size`` (BATCH) each: those kept, or found again by walking the parent (runs of the
    field's one-byte tag split by numpy, as ``walk.scan`` splits them)."""
    size = size or BATCH
    if where.ranges is not None:
        if isinstance(where.ranges, RangeStore):
            starts = np.frombuffer(where.ranges.starts, np.uint64)
            ends = np.frombuffer(where.ranges.ends, np.uint64)
        else:
            starts = np.array([a for a, _ in where.ranges], np.uint64)
            ends = np.array([b for _, b in where.ranges], np.uint64)
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
            if singles:
                held_starts.append(np.array([s for s, _ in singles], np.uint64))
                held_ends.append(np.array([e for _, e in singles], np.uint64))
                singles = []
            held_starts.append(np.asarray(a, np.uint64))
            held_ends.append(np.asarray(b, np.uint64))
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
    s, e = np.concatenate(starts), np.concatenate(ends)
    for at in range(0, int(s.size), size):
        yield s[at:at + size], e[at:at + size]
