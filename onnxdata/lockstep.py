"""Many small occurrences of one message walked together: numpy steps, not Python per field.

A bogus reading can merge a million small messages into one (a sequence's
tensors read as one OptionalProto's ``tensor_value``, or as one TensorProto's
``segment``), and ``walk.scan`` would then take their fields one by one in
Python. ``fields_many`` walks a batch of occurrences in lockstep instead: each
numpy step reads the next field of every occurrence still open (one-byte tags,
varints of up to 10 bytes, lengths checked against the occurrence's end), and
gives the batch's fields as arrays in wire order, which ``keep`` adds to a
``Fields`` as ``scan`` adds them one at a time. Anything unusual (a long tag, a
group, bytes that break the wire format, an occurrence with many fields) sends
the batch to the ordinary walk, which says what is wrong exactly as before.

Most such batches are alike (a sequence's tensors of one shape differ only in
their payloads and varint values): ``_uniform`` reads the first occurrence's
layout and checks in two gathers that every other has the same length, tags,
length prefixes and varint lengths, and ``keep`` then takes each field as one
column, with no mask per field number.
"""

from __future__ import annotations

from array import array
from collections.abc import Container, Iterator
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from onnxdata.source import Source
from onnxdata.walk import (
    _WIRE_OF,
    BULK,
    COMPACT_PIECES,
    FIXED32S,
    FIXED64S,
    KEEP_PIECES,
    LAST,
    MANY,
    SCALAR,
    VARINTS,
    Compact,
    Fields,
    RangeStore,
    Schema,
    _many_run,
    _walk,
)
from onnxdata.wire import I32, I64, LEN, VARINT

__all__ = ["BULK", "fields_many", "keep"]

#: Occurrences, and bytes spanned, per batch: the arrays made stay a few MiB.
_BATCH: Final = 1 << 14
_SPAN: Final = 1 << 20
#: Occurrences at least this long have only their heads read (``_uniform_heads``), at
#: most _HEAD_BYTES of the first and as much of the others as holds its fields' heads.
_LONG: Final = 1 << 12
_HEAD_BYTES: Final = 1 << 10
#: Fields per occurrence walked in lockstep; one with more goes to the ordinary walk.
_STEPS: Final = 32
_U64: Final = np.dtype(np.uint64)

#: One occurrence's fields, and where its tags, lengths and varint values are (``_layout``).
Layout = tuple[list[tuple[int, int, int, int, int]], list[int], list[int]]
Bulk = tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.uint64],
             npt.NDArray[np.int64]]


def fields_many(src: Source, ranges: RangeStore, runs: Container[int]
                ) -> Iterator[tuple[int, int, int, Any, Any]]:
    """``walk.fields_in`` of many ranges: a batch walked in lockstep comes as one
    ``(0, BULK, 0, (numbers, wire types, a, b), None)``, else field by field."""
    starts = np.frombuffer(ranges.starts, np.uint64).astype(np.int64)
    ends = np.frombuffer(ranges.ends, np.uint64).astype(np.int64)
    n = int(starts.size)
    first = 0
    while first < n:
        stop = min(n, first + _BATCH)
        lo = int(starts[first])
        if int(ends[first] - lo) >= _LONG:  # long ones: their heads alone
            s, e = starts[first:stop], ends[first:stop]
            got = _uniform_heads(src, s, e)
            if got is not None:
                yield 0, BULK, 0, got, None
                first = stop
                continue
        stop = max(first + 1, int(np.searchsorted(ends[first:stop], lo + _SPAN,
                                                  side="right")) + first)
        s, e = starts[first:stop], ends[first:stop]
        got = _lockstep(src.u8(lo, int(e[-1])), lo, s, e) if int(e[-1]) - lo <= _SPAN \
            else None
        if got is None:
            yield from _walk(src, zip(s.tolist(), e.tolist(), strict=True), runs)
        else:
            yield 0, BULK, 0, got, None
        first = stop


def _varints_at(w: npt.NDArray[np.uint8], at: npt.NDArray[np.int64],
                lim: npt.NDArray[np.int64]
                ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]] | None:
    """The varints starting at ``at`` (each to end before ``lim``) and where each ends;
    None when one runs past its limit or over 10 bytes."""
    if not bool((at < lim).all()):
        return None
    first = w[at]
    if not bool((first & 0x80).any()):
        return first.astype(_U64), at + 1
    value = np.zeros(at.size, _U64)
    length = np.zeros(at.size, np.int64)
    open_ = np.ones(at.size, bool)
    top = int(w.size) - 1
    for k in range(10):
        p = at + k
        if not bool((p[open_] < lim[open_]).all()):
            return None
        b = w[np.minimum(p, top)].astype(_U64)
        value[open_] |= (b[open_] & np.uint64(0x7F)) << np.uint64(7 * k)
        last = open_ & (b < 0x80)
        length[last] = k + 1
        open_ &= ~last
        if not open_.any():
            return value, at + length
    return None


def _lockstep(w: npt.NDArray[np.uint8], lo: int, s: npt.NDArray[np.int64],
              e: npt.NDArray[np.int64]) -> Bulk | None:
    """The fields of the ranges ``[s, e)`` (bytes ``w`` from ``lo``) in wire order, or None
    to leave them to the ordinary walk."""
    same = _uniform(w, lo, s, e)
    return same if same is not None else _stepwise(w, lo, s, e)


def _layout(w: npt.NDArray[np.uint8], at: int, end: int) -> Layout | None:
    """One occurrence's fields as ``(number, wire type, start, end, varint bytes)`` (offsets
    from ``at``; a VARINT field's start and end are those of its value bytes), with the
    offsets of its structural bytes (tags, length prefixes) and of its varint values' bytes;
    None for what ``_stepwise`` leaves to the ordinary walk."""
    fields: list[tuple[int, int, int, int, int]] = []
    exact: list[int] = []
    varint: list[int] = []
    p = at
    known = int(w.size)  # bytes given: a field starting past them sends the batch away
    while p < end:
        if p >= known or len(fields) == _STEPS or w[p] >= 0x80 or not w[p] >> 3:
            return None
        number, wt = int(w[p]) >> 3, int(w[p]) & 7
        exact.append(p - at)
        p += 1
        if wt in (VARINT, LEN):
            q = p
            while q < end and q < known and q - p < 10 and w[q] >= 0x80:
                q += 1
            if q == end or q >= known or w[q] >= 0x80:
                return None
            q += 1
            if wt == VARINT:
                varint.extend(range(p - at, q - at))
                fields.append((number, wt, p - at, q - at, q - p))
                p = q
                continue
            exact.extend(range(p - at, q - at))
            size = sum((int(w[k]) & 0x7F) << (7 * (k - p)) for k in range(p, q))
        elif wt in (I32, I64):
            q, size = p, 4 if wt == I32 else 8
        else:
            return None
        if size > end - q:
            return None
        fields.append((number, wt, q - at, q - at + size, 0))
        p = q + size
    return fields, exact, varint


def _uniform(w: npt.NDArray[np.uint8], lo: int, s: npt.NDArray[np.int64],
             e: npt.NDArray[np.int64]) -> Bulk | None:
    """A batch whose occurrences all have the first's length and layout (the same tags
    and length prefixes, varints of the same lengths: a sequence's like tensors seen as
    one merged message) read from the first alone, checked in a few numpy passes; None
    when they differ."""
    size = int(e[0] - s[0])
    if size == 0 or not bool((e - s == size).all()):
        return None
    pos = s - lo
    first = int(pos[0])
    found = _layout(w[first:first + size], 0, size)
    if found is None:
        return None
    width = _head_width(found)
    return _from_heads(w[pos[:, None] + np.arange(width)], found, s)


def _uniform_heads(src: Source, s: npt.NDArray[np.int64], e: npt.NDArray[np.int64]
                   ) -> Bulk | None:
    """``_uniform`` of long occurrences whose fields all start in their first bytes (big
    tensors, raw_data last): only each one's head is read, one small read each, not
    their payloads."""
    size = int(e[0] - s[0])
    if not bool((e - s == size).all()):
        return None
    a0 = int(s[0])
    found = _layout(np.frombuffer(src.peek(a0, a0 + min(size, _HEAD_BYTES)), np.uint8),
                    0, size)
    if found is None:
        return None
    width = _head_width(found)
    heads = np.frombuffer(b"".join(src.peek(a, a + width) for a in s.tolist()), np.uint8)
    return _from_heads(heads.reshape(int(s.size), width), found, s)


def _head_width(found: Layout) -> int:
    """How many first bytes of an occurrence hold its tags, lengths and varint values."""
    _fields, exact, varint = found
    return max(exact + varint) + 1


def _from_heads(heads: npt.NDArray[np.uint8], found: Layout, s: npt.NDArray[np.int64]
                ) -> Bulk | None:
    """The batch's fields from each occurrence's first bytes (a row each), when every row
    has the first row's tags and lengths and varints of its varints' lengths; else None."""
    fields, exact, varint = found
    if exact:
        cols = np.array(exact, np.int64)
        if not bool((heads[:, cols] == heads[0, cols]).all()):
            return None
    if varint:
        cols = np.array(varint, np.int64)
        if not bool(((heads[:, cols] ^ heads[0, cols]) & 0x80 == 0).all()):
            return None
    n, width = int(s.size), len(fields)
    a = np.empty((n, width), _U64)
    b = np.empty((n, width), np.int64)
    for i, (_number, _wt, start, stop, nbytes) in enumerate(fields):
        b[:, i] = s + stop
        if nbytes:
            value = np.zeros(n, _U64)
            for k in range(nbytes):
                byte = heads[:, start + k].astype(_U64) & np.uint64(0x7F)
                value |= byte << np.uint64(7 * k)
            a[:, i] = value
        else:
            a[:, i] = (s + start).astype(_U64)
    numbers = np.tile(np.array([f[0] for f in fields], np.int64), n)
    wts = np.tile(np.array([f[1] for f in fields], np.int64), n)
    return numbers, wts, a.ravel(), b.ravel()


def _stepwise(w: npt.NDArray[np.uint8], lo: int, s: npt.NDArray[np.int64],
              e: npt.NDArray[np.int64]) -> Bulk | None:
    """``_lockstep`` one field of every open occurrence per numpy step."""
    idx = np.arange(s.size)
    pos, end = s - lo, e - lo
    live = pos < end
    idx, pos, end = idx[live], pos[live], end[live]
    out: list[tuple[npt.NDArray[Any], ...]] = []
    step = 0
    while idx.size:
        if step == _STEPS:
            return None
        tag = w[pos]
        if bool((tag >= 0x80).any()):
            return None
        number = (tag >> 3).astype(np.int64)
        wt = (tag & 7).astype(np.int64)
        if not bool((number > 0).all()):
            return None
        a = np.empty(idx.size, _U64)
        b = np.empty(idx.size, np.int64)
        nxt = np.empty(idx.size, np.int64)
        known = np.zeros(idx.size, bool)
        m = wt == VARINT
        if m.any():
            got = _varints_at(w, pos[m] + 1, end[m])
            if got is None:
                return None
            a[m], nxt[m] = got
            b[m] = nxt[m] + lo
            known |= m
        m = wt == LEN
        if m.any():
            got = _varints_at(w, pos[m] + 1, end[m])
            if got is None:
                return None
            length, at = got
            if bool((length > (end[m] - at).astype(_U64)).any()):
                return None
            a[m] = (at + lo).astype(_U64)
            nxt[m] = at + length.astype(np.int64)
            b[m] = nxt[m] + lo
            known |= m
        for kind, size in ((I32, 4), (I64, 8)):
            m = wt == kind
            if m.any():
                at = pos[m] + 1
                if bool((end[m] - at < size).any()):
                    return None
                a[m] = (at + lo).astype(_U64)
                nxt[m] = at + size
                b[m] = nxt[m] + lo
                known |= m
        if not bool(known.all()):
            return None  # groups and bad wire types: the ordinary walk
        out.append((idx, np.full(idx.size, step), number, wt, a, b))
        live = nxt < end
        idx, pos, end = idx[live], nxt[live], end[live]
        step += 1
    if not out:
        empty = np.zeros(0, np.int64)
        return empty, empty, np.zeros(0, _U64), empty
    cols = [np.concatenate(c) for c in zip(*out, strict=True)]
    order = np.lexsort((cols[1], cols[0]))
    return cols[2][order], cols[3][order], cols[4][order], cols[5][order]


def keep(out: Fields, schema: Schema, bulk: Bulk, limit: int) -> None:
    """Add a batch of fields to ``out`` as ``walk.scan`` adds them one at a time."""
    width = _period(bulk[0], bulk[1])
    if width:
        _keep_columns(out, schema, bulk, width, limit)
    else:
        _keep_masks(out, schema, bulk, limit)


def _keep_masks(out: Fields, schema: Schema, bulk: Bulk, limit: int) -> None:
    """``keep`` of any batch: each field number's entries picked out by a mask."""
    numbers, wts, a, b = bulk
    unknown = np.ones(numbers.size, bool)
    present = np.bincount(numbers, minlength=16)  # one-byte tags: numbers 1 to 15
    for number, (name, kind) in schema.items():
        if number >= 16 or not present[number]:
            continue
        of = numbers == number
        want = _WIRE_OF[kind]
        taken = of & (wts == want)
        if kind in (VARINTS, FIXED32S, FIXED64S):
            taken |= of & (wts == LEN)
        unknown &= ~taken
        if taken.any():
            _take(out, name, kind, wts[taken], a[taken], b[taken])
    if unknown.any():
        found = np.flatnonzero(unknown)
        take = min(int(found.size), limit - len(out.unknown))
        out.unknown.extend(zip(numbers[found[:take]].tolist(), wts[found[:take]].tolist(),
                               strict=True))
        out.unknown_more += int(found.size) - take


def _period(numbers: npt.NDArray[np.int64], wts: npt.NDArray[np.int64]) -> int:
    """The fields per occurrence when the batch repeats one layout of distinct field
    numbers (``_uniform``'s batches), else 0."""
    n = int(numbers.size)
    if not n:
        return 0
    again = np.flatnonzero(numbers[1:] == numbers[0])
    width = int(again[0]) + 1 if again.size else n
    if n % width or len(set(numbers[:width].tolist())) != width:
        return 0
    rows = numbers.reshape(-1, width), wts.reshape(-1, width)
    if not all(bool((r == r[0]).all()) for r in rows):
        return 0
    return width


def _keep_columns(out: Fields, schema: Schema, bulk: Bulk, width: int, limit: int) -> None:
    """``keep`` of a batch of ``width`` fields per occurrence in one layout, whose field
    numbers differ: each field's values are one column, in wire order."""
    numbers, wts, a, b = bulk
    a2, b2 = a.reshape(-1, width), b.reshape(-1, width)
    unknown: list[tuple[int, int]] = []
    for j, (number, wt) in enumerate(zip(numbers[:width].tolist(), wts[:width].tolist(),
                                         strict=True)):
        spec = schema.get(number)
        if spec is None or not (wt == _WIRE_OF[spec[1]] or (
                wt == LEN and spec[1] in (VARINTS, FIXED32S, FIXED64S))):
            unknown.append((number, wt))
            continue
        column = np.full(a2.shape[0], wt, np.int64)
        _take(out, spec[0], spec[1], column, a2[:, j], b2[:, j])
    if unknown:
        found = a2.shape[0] * len(unknown)
        take = max(0, min(found, limit - len(out.unknown)))
        out.unknown.extend((unknown * (take // len(unknown) + 1))[:take])
        out.unknown_more += found - take


def _take(out: Fields, name: str, kind: int, wts: npt.NDArray[np.int64],
          a: npt.NDArray[np.uint64], b: npt.NDArray[np.int64]) -> None:
    """One field's entries of a batch (all of its wire type, or packed) added to ``out``."""
    if kind == SCALAR:
        if name == "data_location":
            low = a & np.uint64(0xFFFFFFFF)
            good = (low == 0) | (low == 1)
            if not good.all():
                out.bad_enum = int(a[~good][-1])
            if good.any():
                out.scalars[name] = int(a[good][-1])
        else:
            out.scalars[name] = int(a[-1])
    elif kind == LAST:
        out.last[name] = (int(a[-1]), int(b[-1]))
        out.counts[name] = out.counts.get(name, 0) + int(a.size)
    elif kind == MANY:
        _many_run(out, name, a.astype(np.int64), b)
    else:
        _pieces(out, name, wts, a, b)


def _pieces(out: Fields, name: str, wts: npt.NDArray[np.int64], a: npt.NDArray[np.uint64],
            b: npt.NDArray[np.int64]) -> None:
    """A number field's entries (single values and packed runs, in order) added as
    ``scan`` adds them: runs of single VARINT values at once, the rest one by one."""
    cuts = np.flatnonzero(np.diff(wts)) + 1
    for i, j in zip([0, *cuts.tolist()], [*cuts.tolist(), int(wts.size)], strict=True):
        if wts[i] == VARINT:
            _singles(out, name, a[i:j])
            continue
        for wt, x, y in zip(wts[i:j].tolist(), a[i:j].tolist(), b[i:j].tolist(), strict=True):
            _piece(out, name, wt, x, y)


def _singles(out: Fields, name: str, values: npt.NDArray[np.uint64]) -> None:
    run = out.pieces.setdefault(name, [])
    if isinstance(run, list):
        if run and run[-1][0] == VARINT:
            run[-1][1].frombytes(values.tobytes())
            return
        if len(run) < KEEP_PIECES:
            run.append((VARINT, array("Q", values.tobytes()), 0))
            return
        out.pieces[name] = run = Compact(run)
    take = max(0, min(int(values.size), COMPACT_PIECES - len(run.wts)))
    run.wts.frombytes(bytes([VARINT]) * take)
    run.starts.frombytes(values[:take].tobytes())
    run.ends.frombytes(bytes(8 * take))
    if take < int(values.size):
        out.over.add(name)


def _piece(out: Fields, name: str, wt: int, a: int, b: int) -> None:
    run = out.pieces.setdefault(name, [])
    if isinstance(run, list) and len(run) >= KEEP_PIECES:
        out.pieces[name] = run = Compact(run)
    if isinstance(run, list):
        run.append((wt, a, b))
    elif len(run.wts) < COMPACT_PIECES:
        run.append(wt, a, b)
    else:
        out.over.add(name)
