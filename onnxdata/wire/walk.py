"""The one wire walk: the fields of a message, read from a ``Source``, and where they are.

``fields(src, start, end)`` yields every field of one message in wire order as
``(number, wire_type, tag_at, a, b)``: for VARINT ``a`` is the value and ``b``
the position after it, else
``[a, b)`` is the value's bytes (a LEN payload without its length prefix).
Tags, lengths and varints come through ``Source.window`` (pread, never a
mapping); payloads are skipped by length. Every consumer walks with it: the
engine's validation and ``read``, the byte table, summaries.

``scan`` gathers one message's fields by a schema (:data:`TENSOR`, ...). A
message given several times is merged (as protobuf merges it), so a message's
place is a :class:`Where`: its occurrences. Repeated and message fields keep
their occurrences compactly (16 bytes each, number fields' pieces 17) up to
:data:`COMPACT_PIECES`; past that the ``Where`` re-walks the parent when asked,
so memory stays bounded (by depth and that constant), not by the file's size.
A run of string values (``string_data``, ``string_keys``) or of a sequence's
tensors is split by numpy (``decode.split_strings``) over a pread window of
:data:`RUN_BYTES` and kept as arrays, not one Python step per value.
"""

from __future__ import annotations

from array import array
from collections.abc import Container, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from onnxdata.wire.decode import split_strings
from onnxdata.wire.format import (
    EGROUP,
    I32,
    I64,
    LEN,
    SGROUP,
    VARINT,
    WireError,
    read_varint,
    skip_field,
)
from onnxdata.wire.schema import (
    FIXED32S,
    FIXED64S,
    LAST,
    MANY,
    SCALAR,
    VARINTS,
    Schema,
    walk_schema,
)
from onnxdata.wire.source import Source
from onnxdata.wire.stores import Compact, Piece, RangeStore
from onnxdata.wire.walk_compiled import COMPILED, compiled_scan, short_runs

__all__ = ["KEEP", "Compact", "Fields", "Piece", "RangeStore", "Where", "fields", "occurrences",
           "scan"]

#: Occurrences of one repeated or message field kept as a list by ``scan``; more go into
#: a RangeStore (16 bytes each) up to COMPACT_PIECES, and past that are re-walked.
KEEP: Final = 64
#: Pieces (packed runs, single values) of one number field kept as tuples; more go into
#: a compact store (17 bytes each) up to COMPACT_PIECES, and past that are re-walked.
KEEP_PIECES: Final = 1024
COMPACT_PIECES: Final = 1 << 22
#: Bytes a field's header can need (tag of 5 bytes + varint of 10), with room.
_HEAD: Final = 32
_MAX_FIELD: Final = 0x1FFFFFFF
#: Bytes of a pread window split in one pass by ``_run`` (a run of strings).
RUN_BYTES: Final = 1 << 20
#: The pseudo wire type of a run of LEN fields given as arrays (never on the wire).
RUN: Final = 8

_WIRE_OF: Final = {SCALAR: VARINT, VARINTS: VARINT, LAST: LEN, MANY: LEN, FIXED32S: I32,
                   FIXED64S: I64}

# The walk's schemas, from the one schema (``schema.py``); a sequence's (and an
# optional's) element fields go by their kind's name.
_ELEMENT_NAMES: Final = {f"{kind}_values": kind for kind in
                         ("tensor", "sparse_tensor", "sequence", "map", "optional")}
TENSOR: Final[Schema] = walk_schema("TensorProto")
SPARSE: Final[Schema] = walk_schema("SparseTensorProto")
SEQUENCE: Final[Schema] = walk_schema("SequenceProto", _ELEMENT_NAMES)
#: The same fields as a sequence's, singular: one schema object, so the compiled walk's
#: tables and the runs below serve both.
OPTIONAL: Final[Schema] = SEQUENCE
MAP: Final[Schema] = walk_schema("MapProto")
ENTRY: Final[Schema] = walk_schema("StringStringEntryProto")
SEGMENT: Final[Schema] = walk_schema("Segment")
#: One-byte tags of the fields ``scan`` takes a run at a time (``_run``): strings, and a
#: sequence's (or optional's) tensors.
_RUNS: Final = {id(TENSOR): frozenset({0x32}), id(MAP): frozenset({0x22}),
                id(SEQUENCE): frozenset({0x1A})}
#: Field numbers by name, per schema, for re-walks.
NUMBERS: Final = {id(s): {name: n for n, (name, _) in s.items()}
                  for s in (TENSOR, SPARSE, SEQUENCE, MAP, ENTRY, SEGMENT)}



@dataclass
class Where:
    """The occurrences of one message: ``ranges``, or (when there were too many to keep)
    the field ``number`` of the message at ``parent``, found again by walking it."""

    ranges: list[tuple[int, int]] | RangeStore | None
    parent: Where | None = None
    number: int = 0

    @property
    def first(self) -> int:
        return self.ranges[0][0] if self.ranges else 0


def whole(start: int, end: int) -> Where:
    return Where([(start, end)])


@dataclass
class Fields:
    """One message's fields as scanned: scalars by value, the rest by where they are.

    ``unknown`` holds the ``(number, wire_type)`` of fields the schema refuses,
    at most ``limit`` of them (``unknown_more`` counts the rest). ``bad_enum``
    is the last out-of-range value of TensorProto.data_location (protobuf keeps
    it aside as an unknown field and validate reads that one).
    """

    scalars: dict[str, int] = field(default_factory=dict)
    bad_enum: int | None = None
    last: dict[str, tuple[int, int]] = field(default_factory=dict)
    many: dict[str, list[tuple[int, int]] | RangeStore | None] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    pieces: dict[str, list[Piece] | Compact] = field(default_factory=dict)
    unknown: list[tuple[int, int]] = field(default_factory=list)
    unknown_more: int = 0
    over: set[str] = field(default_factory=set)

    def pieces_of(self, name: str, parent: Where, schema: Schema,
                  src: Source) -> Iterable[Piece]:
        """The pieces of number field ``name``: those kept (the list or Compact itself, which
        ``payloads.joined`` takes whole), or (past COMPACT_PIECES) the message walked
        again for them."""
        if name not in self.over:
            return self.pieces.get(name, ())
        return self._rewalk(name, parent, schema, src)

    def _rewalk(self, name: str, parent: Where, schema: Schema,
                src: Source) -> Iterator[Piece]:
        number = NUMBERS[id(schema)][name]
        want = _WIRE_OF[schema[number][1]]
        for n, wt, _at, a, b in fields_in(src, occurrences(src, parent)):
            if n != number:
                continue
            if wt == VARINT == want:
                yield VARINT, array("Q", [a]), 0
            elif wt in (want, LEN):
                yield wt, a, b

    def where(self, name: str, parent: Where, schema: Schema) -> Where | None:
        """The occurrences of message field ``name`` (None when absent)."""
        if name not in self.counts:
            return None
        kept = self.many.get(name)
        if kept is not None:
            return Where(kept)
        return Where(None, parent, NUMBERS[id(schema)][name])


class _Bytes:
    """A Source seen as indexable bytes, for the rare walks (groups) that need any byte."""

    def __init__(self, src: Source) -> None:
        self.src = src

    def __getitem__(self, i: int) -> int:
        buf, at = self.src.window(i, i + 1)
        return int(buf[i - at])


def fields(src: Source, start: int, end: int) -> Iterator[tuple[int, int, int, int, int]]:
    """``(number, wire_type, tag_at, a, b)`` for each field of the message at [start, end)."""
    return fields_in(src, ((start, end),))


def fields_in(src: Source, ranges: Iterable[tuple[int, int]]
              ) -> Iterator[tuple[int, int, int, int, int]]:
    """The fields of several ranges (one message given several times), in order: one
    walk, its window kept from one range to the next."""
    return walk_fields(src, ranges, ())


def _run(src: Source, buf: Any, base: int, pos: int, end: int, key: int
         ) -> tuple[Any, Any, int, Any, int] | None:
    """The run of LEN fields with the one-byte tag ``key`` at ``pos``, split in one numpy
    pass (``decode.split_strings``) over at most RUN_BYTES (a pread window, or the
    buffer in memory):
    ``(starts, ends, stop, window, window's offset)``, or None when the first value is
    long or does not fit the window (the walk then takes it alone, and says what is
    wrong with it)."""
    i = pos - base
    if i + 1 < len(buf) and buf[i + 1] >= 0x80 and (i + 2 >= len(buf) or buf[i + 2] >= 0x20):
        return None  # a value of 4 KiB or more: one field is cheap enough
    stop = min(end, pos + RUN_BYTES)  # bounds the arrays made per call, in memory too
    if not (base == 0 and len(buf) == src.size):  # not the whole buffer: read a window
        buf, base = src.window(pos, stop)
    arr = np.frombuffer(buf, dtype=np.uint8)
    got = split_strings(arr, pos - base, min(stop, base + len(buf)) - base, key, partial=True)
    if got is None:
        return None
    starts, ends, stop = got
    if base:
        starts += base
        ends += base
    return starts, ends, stop + base, buf, base


def _repeats(buf: Any, i: int, lim: int, key: int) -> bool:
    """The LEN field at ``i`` has a one-byte length and the same tag follows it."""
    if i + 1 >= lim:
        return False
    n = buf[i + 1]
    j = i + 2 + n
    return bool(n < 0x80 and j < lim and buf[j] == key)


def walk_fields(src: Source, ranges: Iterable[tuple[int, int]], runs: Container[int],
          repeats: bool = False) -> Iterator[tuple[int, int, int, Any, Any]]:
    """``fields_in``; a run of fields whose one-byte tag is in ``runs`` comes as one
    ``(number, RUN, tag_at, starts, ends)`` with the values' bounds as arrays, and with
    ``repeats`` (the root, read once for all five kinds) so does any run of short LEN
    fields whose one-byte tag repeats at once."""
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
                got = _run(src, buf, base, pos, end, key)
                if got is not None:
                    starts, ends, pos, buf, base = got
                    hi = base + len(buf)
                    yield key >> 3, RUN, tag_at, starts, ends
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
                    length, i = read_varint(buf, i, lim, base)
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
                b = skip_field(_Bytes(src), a, end, number, wt)  # type: ignore[arg-type]
                yield number, wt, pos, a, b
                pos = b
                buf, base = src.window(pos, min(end, pos + _HEAD)) if pos < end else (buf, base)
                hi = base + len(buf)
            else:
                assert wt == EGROUP
                raise WireError(f"unexpected end-group tag for field {number}", pos)




def occurrences(src: Source, where: Where) -> Iterator[tuple[int, int]]:
    """The byte ranges of one (possibly merged) message, in wire order."""
    if where.ranges is not None:
        yield from where.ranges
        return
    assert where.parent is not None
    number = where.number
    for n, wt, _at, a, b in fields_in(src, occurrences(src, where.parent)):
        if n == number and wt == LEN:
            yield a, b


def scan(src: Source, where: Where, schema: Schema, limit: int = 1000) -> Fields:
    """One message's fields by ``schema``, its occurrences merged in order (as protobuf):
    by the compiled loop where it is built, else (or where it meets bytes it does not
    take: a group, bad wire) by ``python_scan``, the reference."""
    ranges = where.ranges
    root = ranges is not None and len(ranges) == 1 and ranges[0] == (0, src.size)
    # the root: the Python walk's record and runs measured faster, but for fields that
    # change at every step or so (an optional written 70,000 times: 7 s, compiled 0.3 s)
    if COMPILED and (not root or short_runs(src)):
        out = Fields()
        if compiled_scan(src, where.ranges, lambda: occurrences(src, where), schema, out, limit):
            return out
    return python_scan(src, where, schema, limit)


def python_scan(src: Source, where: Where, schema: Schema, limit: int = 1000) -> Fields:
    """``scan`` in Python: the reference the compiled loop is checked against."""
    out = Fields()
    scalars, counts, many, pieces, last = out.scalars, out.counts, out.many, out.pieces, out.last
    ranges = where.ranges
    record: tuple[array[int], ...] | None = None
    segments: list[Any] = []  # the root's record: field arrays and runs, in wire order
    room = COMPACT_PIECES  # fields the record may still take
    walked: Iterable[tuple[int, int, int, Any, Any]]
    runs = _RUNS.get(id(schema), frozenset())
    if ranges is not None and len(ranges) == 1 and ranges[0] == (0, src.size):
        # the root: walked once per Source, then replayed from its record (five arrays,
        # 21 bytes a field, and the runs' arrays; up to COMPACT_PIECES fields): the
        # explorer reads one root as five kinds
        if src.root_cache:
            cache = src.root_cache
            walked = zip(*cache[0], strict=True) if len(cache) == 1 else _replay(cache)
        else:
            if src.root_cache is None:  # (False: too many fields to keep)
                record = _arrays()
                segments.append(record)
            walked = walk_fields(src, ((0, src.size),), runs, repeats=True)
    else:
        walked = walk_fields(src, occurrences(src, where), runs)
    for number, wt, _at, a, b in walked:
        if record is not None:
            if wt == RUN:
                room -= len(record[1]) + int(a.size)
                if room < 0:
                    record = None
                    src.root_cache = False
                else:
                    segments.append((number, _at, a, b))
                    record = _arrays()
                    segments.append(record)
            elif len(record[1]) < room:
                record[0].append(number)
                record[1].append(wt)
                record[2].append(_at)
                record[3].append(a)
                record[4].append(b)
            else:
                record = None
                src.root_cache = False
        spec = schema.get(number)
        if spec is not None:
            name, kind = spec
            want = _WIRE_OF[kind]
            if wt == want:
                if kind == SCALAR:
                    if name == "data_location" and (a & 0xFFFFFFFF) not in (0, 1):
                        out.bad_enum = a  # a closed enum reads the low 32 bits
                    else:
                        scalars[name] = a
                    continue
                if kind == LAST:
                    last[name] = (a, b)
                    counts[name] = counts.get(name, 0) + 1
                    continue
                if kind == MANY:
                    n = counts.get(name, 0)
                    counts[name] = n + 1
                    if n == 0:
                        many[name] = [(a, b)]
                    elif n < KEEP:
                        many[name].append((a, b))  # type: ignore[union-attr]
                    elif n < COMPACT_PIECES:
                        kept = many[name]
                        if n == KEEP:
                            many[name] = kept = RangeStore(kept)  # type: ignore[arg-type]
                        kept.append((a, b))  # type: ignore[union-attr]
                    else:
                        many[name] = None
                    continue
                run = pieces.setdefault(name, [])
                if isinstance(run, list):
                    if wt == VARINT and run and run[-1][0] == VARINT:
                        run[-1][1].append(a)
                    elif len(run) < KEEP_PIECES:
                        run.append((VARINT, array("Q", [a]), 0) if wt == VARINT
                                   else (wt, a, b))
                    else:
                        pieces[name] = run = Compact(run)
                if isinstance(run, Compact):
                    if len(run) < COMPACT_PIECES:
                        run.append(wt, a, b)
                    else:
                        out.over.add(name)
                continue
            if wt == LEN and kind in (VARINTS, FIXED32S, FIXED64S):  # packed
                run = pieces.setdefault(name, [])
                if isinstance(run, list) and len(run) >= KEEP_PIECES:
                    pieces[name] = run = Compact(run)
                if isinstance(run, list):
                    run.append((LEN, a, b))
                elif len(run) < COMPACT_PIECES:
                    run.append(LEN, a, b)
                else:
                    out.over.add(name)
                continue
        if wt == RUN:  # (no field's wire type: checked last, off the common path)
            _bulk(out, spec, number, a, b, limit)
            continue
        if len(out.unknown) < limit:
            out.unknown.append((number, wt))
        else:
            out.unknown_more += 1
    if record is not None:
        src.root_cache = segments
    for store in (*many.values(), *pieces.values()):
        if isinstance(store, (RangeStore, Compact)):
            store.settle()  # the runs added by _bulk, copied once
    return out


def _arrays() -> tuple[array[int], ...]:
    """A segment of the root's record: (number, wire type, tag_at, a, b) per field."""
    return array("l"), array("b"), array("Q"), array("Q"), array("Q")


def _replay(segments: list[Any]) -> Iterator[tuple[int, int, int, Any, Any]]:
    """The root's fields again from its record; a run comes as one RUN (``scan`` keeps it
    whole whatever the schema: ``_bulk``)."""
    for segment in segments:
        if len(segment) == 5:
            yield from zip(*segment, strict=True)
            continue
        number, tag_at, starts, ends = segment
        yield number, RUN, tag_at, starts, ends  # scan takes it whole, whatever the schema


def _bulk(out: Fields, spec: tuple[str, int] | None, number: int, starts: Any, ends: Any,
          limit: int) -> None:
    """Keep a run of LEN values of field ``number`` (``spec`` in the schema) as ``scan``
    keeps them one by one: a message field's ranges, the last of a bytes field, a packed
    number field's pieces, or unknown fields."""
    k = int(starts.size)
    if spec is not None and spec[1] == MANY:
        _many_run(out, spec[0], starts, ends)
    elif spec is not None and spec[1] == LAST:
        out.last[spec[0]] = (int(starts[-1]), int(ends[-1]))
        out.counts[spec[0]] = out.counts.get(spec[0], 0) + k
    elif spec is not None and spec[1] in (VARINTS, FIXED32S, FIXED64S):
        _packed_run(out, spec[0], starts, ends)
    else:
        take = min(k, limit - len(out.unknown))
        out.unknown.extend([(number, LEN)] * take)
        out.unknown_more += k - take


def _packed_run(out: Fields, name: str, starts: Any, ends: Any) -> None:
    """Keep a run of packed pieces of number field ``name``, as ``scan`` keeps them one by one."""
    run = out.pieces.setdefault(name, [])
    k = int(starts.size)
    if isinstance(run, list) and len(run) + k <= KEEP_PIECES:
        run.extend((LEN, a, b) for a, b in zip(starts.tolist(), ends.tolist(), strict=True))
        return
    if isinstance(run, list):
        out.pieces[name] = run = Compact(run)
    take = max(0, min(k, COMPACT_PIECES - len(run)))
    run.add_run(np.full(take, LEN, np.int8), starts[:take], ends[:take])
    if take < k:
        out.over.add(name)


def _many_run(out: Fields, name: str, starts: Any, ends: Any) -> None:
    """Keep a run of values of MANY field ``name``, as ``scan`` keeps them one by one."""
    k = int(starts.size)
    n = out.counts.get(name, 0)
    out.counts[name] = n + k
    many = out.many
    if n + k <= KEEP:
        kept = many.setdefault(name, [])
        kept.extend(zip(starts.tolist(), ends.tolist(), strict=True))  # type: ignore[union-attr]
    elif n + k <= COMPACT_PIECES:
        kept = many.get(name)
        if not isinstance(kept, RangeStore):
            many[name] = kept = RangeStore(kept or [])
        kept.add_run(starts, ends)
    else:
        many[name] = None

