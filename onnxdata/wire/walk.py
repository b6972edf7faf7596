"""The one wire walk: a message's fields gathered by a schema, and where they are.

Every consumer walks with it: the engine's validation and ``read``, the byte table,
summaries. The fields themselves come from ``fields`` (``fields``, ``walk_fields``):
tags, lengths and varints through ``Source.window``, payloads skipped by length.

``scan`` gathers one message's fields by a schema (:data:`TENSOR`, ...). A
message given several times is merged (as protobuf merges it), so a message's
place is a :class:`Occurrences`: its occurrences. Repeated and message fields keep
their occurrences compactly (16 bytes each, number fields' pieces 17) up to
:data:`COMPACT_PIECES`; past that the ``Occurrences`` re-walks the parent when asked
(``fields.occurrence_batches``: a batch of arrays at a time), so memory stays bounded (by
depth and that constant), not by the file's size. A run of string values (``string_data``,
``string_keys``) or of a sequence's tensors is split by numpy (``decode.split_strings``)
over a pread window of :data:`RUN_BYTES` and kept as arrays, not one Python step per
value.
"""
from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import numpy as np

from onnxdata.wire.compiled import compiled_scan, short_runs
from onnxdata.wire.fields import (
    COUNT,
    RUN,
    Occurrences,
    occurrence_batches,
    occurrences,
    piece_batches,
    walk_fields,
)
from onnxdata.wire.format import (
    I32,
    I64,
    LEN,
    VARINT,
)
from onnxdata.wire.loops import COMPILED
from onnxdata.wire.occurrences import Compact, Piece, RangeStore, Rewalked
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

__all__ = ["KEEP", "Fields", "scan"]

#: Occurrences of one repeated or message field kept as a list by ``scan``; more go into
#: a RangeStore (16 bytes each) up to COMPACT_PIECES, and past that are re-walked.
KEEP: Final = 64
#: Pieces (packed runs, single values) of one number field kept as tuples; more go into
#: a compact store (17 bytes each) up to COMPACT_PIECES, and past that are re-walked.
KEEP_PIECES: Final = 1024
COMPACT_PIECES: Final = 1 << 22
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



@dataclass(init=False, slots=True)
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

    def __init__(self) -> None:  # (the dataclass's own costs 0.5 us a message: a factory call
        self.scalars = {}        # per field; every small message makes one)
        self.bad_enum = None
        self.last = {}
        self.many = {}
        self.counts = {}
        self.pieces = {}
        self.unknown = []
        self.unknown_more = 0
        self.over = set()

    def pieces_of(self, name: str, parent: Occurrences, schema: Schema,
                  src: Source) -> Iterable[Piece]:
        """The pieces of number field ``name``: those kept (the list or Compact itself, which
        ``field_values.joined`` takes whole), or (past COMPACT_PIECES) the message walked
        again for them."""
        if name not in self.over:
            return self.pieces.get(name, ())
        return self._rewalk(name, parent, schema, src)

    def _rewalk(self, name: str, parent: Occurrences, schema: Schema, src: Source) -> Rewalked:
        number = NUMBERS[id(schema)][name]
        want = _WIRE_OF[schema[number][1]]

        return Rewalked(lambda: piece_batches(src, parent, number, want))

    def where(self, name: str, parent: Occurrences, schema: Schema) -> Occurrences | None:
        """The occurrences of message field ``name`` (None when absent)."""
        if name not in self.counts:
            return None
        kept = self.many.get(name)
        if kept is not None:
            return Occurrences(kept)
        return Occurrences(None, parent, NUMBERS[id(schema)][name])


def scan(src: Source, where: Occurrences, schema: Schema, limit: int = 1000,
         depth: int = 0) -> Fields:
    """One message's fields by ``schema``, its occurrences merged in order (as protobuf):
    by the compiled loop where it is built, else (or where it meets bytes it does not
    take: a group, bad wire) by ``scan_reference``, the reference. ``depth``: the message's
    (a group in it nests at most 100 - depth deep, as upb counts them)."""
    ranges = where.ranges
    root = ranges is not None and len(ranges) == 1 and ranges[0] == (0, src.size)
    # the root: the Python walk's record and runs measured faster, but for fields that
    # change at every step or so (an optional written 70,000 times: 7 s, compiled 0.3 s)
    if COMPILED and (not root or short_runs(src)):
        out = Fields()
        if compiled_scan(src, ranges, lambda: occurrence_batches(src, where), schema, out,
                         limit, depth):
            return _forget_over(out)
    return scan_reference(src, where, schema, limit, depth)


def scan_reference(src: Source, where: Occurrences, schema: Schema, limit: int = 1000,
                depth: int = 0) -> Fields:
    """``scan`` in Python: the reference the compiled loop is checked against."""
    out = Fields()
    scalars, counts, many, pieces, last = out.scalars, out.counts, out.many, out.pieces, out.last
    ranges = where.ranges
    record: tuple[array[int], ...] | None = None
    segments: list[Any] = []  # the root's record: field arrays and runs, in wire order
    room = COMPACT_PIECES  # fields the record may still take
    walked: Iterable[tuple[int, int, int, Any, Any]]
    runs = _RUNS.get(id(schema), frozenset())
    counted: set[int] = set()  # tags of runs past what is kept and recorded: only counted
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
            walked = walk_fields(src, ((0, src.size),), runs, repeats=True, counted=counted)
    else:
        walked = walk_fields(src, occurrences(src, where), runs, counted=counted, depth=depth)
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
            if record is None and spec is not None and _over(out, spec):
                counted.add(number << 3 | LEN)  # its next runs: a count, no arrays
            continue
        if wt == COUNT:
            assert spec is not None  # (only ever a field ``_over``)
            if spec[1] == MANY:
                out.counts[spec[0]] += a
            continue
        if len(out.unknown) < limit:
            out.unknown.append((number, wt))
        else:
            out.unknown_more += 1
    if record is not None:
        src.root_cache = segments
    _forget_over(out)
    for store in (*many.values(), *pieces.values()):
        if isinstance(store, (RangeStore, Compact)):
            store.settle()  # the runs added by _bulk, copied once
    return out


def _forget_over(out: Fields) -> Fields:
    """``out`` without the pieces it keeps of fields past COMPACT_PIECES: ``pieces_of``
    walks the message again for those."""
    for name in out.over:
        kept = out.pieces[name]
        if isinstance(kept, Compact):  # (a list goes over only where a test lowers the limit)
            kept.forget()
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


def _over(out: Fields, spec: tuple[str, int]) -> bool:
    """Field ``spec`` is past what ``scan`` keeps (a MANY field's ranges, a packed field's
    pieces): more of it is only counted."""
    name, kind = spec
    if kind == MANY:
        return name in out.many and out.many[name] is None
    return kind in (VARINTS, FIXED32S, FIXED64S) and name in out.over


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

