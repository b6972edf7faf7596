"""The field walk under ``walk.scan``: the fields of a message's byte ranges in wire order,
one at a time or (a run of LEN fields with one one-byte tag) as arrays, and where a
message is (``Occurrences``: its occurrences kept, or found again by walking its parent).

``fields(src, start, end)`` yields every field of one message in wire order as
``(number, wire_type, tag_at, a, b)``: for VARINT ``a`` is the value and ``b`` the
position after it, else ``[a, b)`` is the value's bytes (a LEN payload without its
length prefix). Tags, lengths and varints come through ``Source.window`` (pread, never
a mapping); payloads are skipped by length. A run of string values or of a sequence's
small elements is split by numpy (``decode.split_strings``) over a pread window of
:data:`RUN_BYTES`, not one Python step per value.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from onnxdata.wire.decode import count_strings, split_strings
from onnxdata.wire.format import (
    EGROUP,
    I32,
    I64,
    LEN,
    SGROUP,
    VARINT,
    WireError,
    read_length,
    read_varint,
    skip_field,
)
from onnxdata.wire.occurrences import Compact, RangeStore, range_bounds
from onnxdata.wire.source import Source

__all__ = ["BATCH", "COUNT", "RUN", "RUN_BYTES", "Occurrences", "fields", "fields_in",
           "occurrence_batches", "occurrences", "piece_batches", "walk_fields", "whole"]

#: Bytes a field's header can need (tag of 5 bytes + varint of 10), with room.
_HEAD: Final = 32
_MAX_FIELD: Final = 0x1FFFFFFF
#: Bytes of a pread window split in one pass by ``_run`` (a run of strings).
RUN_BYTES: Final = 1 << 20
#: The pseudo wire type of a run of LEN fields given as arrays (never on the wire).
RUN: Final = 8
#: ... and of such a run only counted: ``(number, COUNT, tag_at, count, None)``.
COUNT: Final = 9


@dataclass
class Occurrences:
    """The occurrences of one message: ``ranges``, or (when there were too many to keep)
    the field ``number`` of the message at ``parent``, found again by walking it."""

    ranges: list[tuple[int, int]] | RangeStore | None
    parent: Occurrences | None = None
    number: int = 0

    @property
    def first(self) -> int:
        return self.ranges[0][0] if self.ranges else 0


def whole(start: int, end: int) -> Occurrences:
    return Occurrences([(start, end)])


class _Bytes:
    """A Source seen as indexable bytes, for the rare walks (groups) that need any byte."""

    def __init__(self, src: Source) -> None:
        self.src = src

    def __getitem__(self, i: int) -> int:
        buf, at = self.src.window(i, i + 1)
        return int(buf[i - at])


def fields(src: Source, start: int, end: int, depth: int = 0
           ) -> Iterator[tuple[int, int, int, int, int]]:
    """``(number, wire_type, tag_at, a, b)`` for each field of the message at [start, end)
    (at ``depth``: see ``walk_fields``)."""
    return fields_in(src, ((start, end),), depth)


def fields_in(src: Source, ranges: Iterable[tuple[int, int]], depth: int = 0
              ) -> Iterator[tuple[int, int, int, int, int]]:
    """The fields of several ranges (one message given several times), in order: one
    walk, its window kept from one range to the next."""
    return walk_fields(src, ranges, (), depth=depth)


def _run(src: Source, buf: Any, base: int, pos: int, end: int, key: int, count: bool = False
         ) -> tuple[Any, Any, int, Any, int] | None:
    """The run of LEN fields with the one-byte tag ``key`` at ``pos``, split in one numpy
    pass (``decode.split_strings``) over at most RUN_BYTES (a pread window, or the
    buffer in memory):
    ``(starts, ends, stop, window, window's offset)`` (with ``count``: ``(count, None,
    ...)``), or None when the first value is
    long or does not fit the window (the walk then takes it alone, and says what is
    wrong with it)."""
    i = pos - base
    if i + 1 < len(buf) and buf[i + 1] >= 0x80 and (i + 2 >= len(buf) or buf[i + 2] >= 0x20):
        return None  # a value of 4 KiB or more: one field is cheap enough
    stop = min(end, pos + RUN_BYTES)  # bounds the arrays made per call, in memory too
    if not (base == 0 and len(buf) == src.size):  # not the whole buffer: read a window
        buf, base = src.window(pos, stop)
    arr = np.frombuffer(buf, dtype=np.uint8)
    if count:  # (count, None, ...): only how many
        counted = count_strings(arr, pos - base, min(stop, base + len(buf)) - base, key)
        return None if counted is None else (counted[0], None, counted[1] + base, buf, base)
    got = split_strings(arr, pos - base, min(stop, base + len(buf)) - base, key, partial=True,
                        offset=base)
    if got is None:
        return None
    starts, ends, stop = got
    return starts, ends, stop + base, buf, base


def _repeats(buf: Any, i: int, lim: int, key: int) -> bool:
    """The LEN field at ``i`` has a one-byte length and the same tag follows it."""
    if i + 1 >= lim:
        return False
    n = buf[i + 1]
    j = i + 2 + n
    return bool(n < 0x80 and j < lim and buf[j] == key)


def walk_fields(src: Source, ranges: Iterable[tuple[int, int]], runs: Container[int],
                repeats: bool = False, counted: Container[int] = (), depth: int = 0
                ) -> Iterator[tuple[int, int, int, Any, Any]]:
    """``fields_in``; a run of fields whose one-byte tag is in ``runs`` comes as one
    ``(number, RUN, tag_at, starts, ends)`` with the values' bounds as arrays, and with
    ``repeats`` (the root, read once for all five kinds) so does any run of short LEN
    fields whose one-byte tag repeats at once. A run whose tag is in ``counted`` (which
    the caller may add to as it goes) comes as ``(number, COUNT, tag_at, count, None)``.
    ``depth`` is the message's (the root's 0): a group in it nests at most 100 - depth
    deep, as upb counts them (a walk again of a message walked before may leave it 0).
    """
    buf: Any = b""
    base = hi = 0
    for start, end in ranges:
        if start < base or (hi < end and start + _HEAD > hi):
            buf, base = src.window(start, min(end, start + _HEAD))
            hi = base + len(buf)
        pos = start
        while pos < end:
            if pos + _HEAD > hi and hi < end:
                buf, base = src.window(pos, min(end, pos + _HEAD))
                hi = base + len(buf)
            lim = (end if end < hi else hi) - base
            tag_at = pos
            i = pos - base
            key = buf[i]
            if key in runs or (repeats and key & 7 == LEN and 8 <= key < 0x80  # field >= 1
                               and _repeats(buf, i, lim, key)):
                got = _run(src, buf, base, pos, end, key, key in counted)
                if got is not None:
                    starts, ends, pos, buf, base = got
                    hi = base + len(buf)
                    yield key >> 3, RUN if ends is not None else COUNT, tag_at, starts, ends
                    continue
            if key < 0x80:
                i += 1
            else:
                key, i = read_varint(buf, i, lim, base)
                if i - (pos - base) > 5:
                    raise WireError("tag longer than 5 bytes", pos)
            number, wt = key >> 3, key & 7
            if number == 0 or number > _MAX_FIELD or wt > 5:
                raise WireError(f"invalid tag {key} (field {number}, wire type {wt})", pos)
            if wt == VARINT:
                if i < lim and buf[i] < 0x80:
                    value = buf[i]
                    i += 1
                else:
                    value, i = read_varint(buf, i, lim, base)
                pos = i + base
                yield number, VARINT, tag_at, value, pos
            elif wt == LEN:
                if i < lim and buf[i] < 0x80:
                    length = buf[i]
                    i += 1
                else:
                    length, i = read_length(buf, i, lim, base)
                a = i + base
                if length > end - a:
                    raise WireError(f"field {number}: length {length} runs past the end "
                                    f"({end - a} bytes left)", pos)
                yield number, LEN, pos, a, a + length
                pos = a + length
            elif wt in (I32, I64):
                a = i + base
                size = 4 if wt == I32 else 8
                if end - a < size:
                    raise WireError(f"truncated {size * 8}-bit value", a)
                yield number, wt, pos, a, a + size
                pos = a + size
            elif wt == SGROUP:
                a = i + base
                b = skip_field(_Bytes(src), a, end, number, wt,  # type: ignore[arg-type]
                               depth)
                yield number, wt, pos, a, b
                pos = b
                buf, base = src.window(pos, min(end, pos + _HEAD)) if pos < end else (buf, base)
                hi = base + len(buf)
            else:
                assert wt == EGROUP
                raise WireError(f"unexpected end-group tag for field {number}", pos)




def occurrences(src: Source, where: Occurrences) -> Iterator[tuple[int, int]]:
    """The byte ranges of one (possibly merged) message, in wire order."""
    if where.ranges is not None:
        yield from where.ranges
        return
    assert where.parent is not None
    number = where.number
    for n, wt, _at, a, b in fields_in(src, occurrences(src, where.parent)):
        if n == number and wt == LEN:
            yield a, b

# A field's occurrences a batch at a time, as arrays, where ``walk.scan`` keeps too many to
# hold (past COMPACT_PIECES): a sequence's elements (grouped by layout a batch at a time),
# a merged message's occurrences (the compiled loop takes a batch a call), and a number
# field's pieces, as ``Compact`` batches for ``field_values``; not a Python step each.
#: Occurrences per batch (16 bytes each in the two arrays).
BATCH: Final = 1 << 20

Batch = tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]


def occurrence_batches(src: Source, where: Occurrences, size: int | None = None) -> Iterator[Batch]:
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


def piece_batches(src: Source, parent: Occurrences, number: int, want: int,
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


def _found(src: Source, parent: Occurrences, number: int,
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
