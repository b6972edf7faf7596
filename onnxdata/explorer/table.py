"""The byte table: one reading laid out field by field, a view over the engine's walk.

``rows(src, "SequenceProto", limit=200)`` walks with ``fields.fields`` in wire
order, a nested message's header row before its own rows, and records rows
only while fewer than ``limit`` are kept; after that it only counts, and the
table ends with one row "… 999,800 more fields". Bytes that break the wire
format end the table with a "does not fit" row. Fields protobuf would keep as
unknown (a number the message lacks, or a known number with another wire type)
get a row saying so; validation reports them. What a row says is ``meaning``'s: most rows
are worded as they are walked, a tensor's raw_data and an optional's elem_type once their
message is walked (they need its data_type, dims or value field, wherever they are).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Final

import numpy as np

from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.messages import KIND_OF_MESSAGE
from onnxdata.explorer.meaning import (
    CONTEXT_SCHEMAS,
    FALLIBLE_CONTEXTS,
    Meanings,
    hex_of,
    needs_context,
    scanned_context,
    walked_context,
)
from onnxdata.wire.compiled import (
    PREFIX_BYTES,
    count_fields,
    count_prefix,
    element_groups,
)
from onnxdata.wire.fields import fields
from onnxdata.wire.format import LEN, WIRE_TYPE_NAMES, WireError
from onnxdata.wire.schema import FieldSpec, message_schema
from onnxdata.wire.source import Source

__all__ = ["DEFAULT_ROWS", "ByteRow", "rows"]

#: Rows a byte table shows unless told otherwise.
DEFAULT_ROWS: Final = 200


@dataclass(frozen=True)
class ByteRow:
    """One row of a byte table: the bytes in hex, the field path, and what they mean."""

    offset: int
    depth: int
    bytes: str
    field: str
    value: str


class _Table:
    def __init__(self, src: Source, limit: int | None, max_depth: int) -> None:
        self.src = src
        self.limit = limit
        self.max_depth = max_depth
        self.rows: list[ByteRow] = []
        self.more = 0
        self.said = Meanings(src)
        self.window: tuple[Any, int] = (b"", 0)  # the bytes the last row's hex came from

    def full(self) -> bool:
        return self.limit is not None and len(self.rows) >= self.limit

    def message(self, message: str, start: int, end: int, path: str, depth: int) -> None:
        if self.full():
            self.count(message, start, end, depth)
            return
        plan = _plan(message)
        seen: dict[int, int] = {}
        rows, limit, src, said = self.rows, self.limit, self.src, self.said
        # the fields walked, for the message's Context, and the rows that wait for it
        walked: list[tuple[int, int, int, int]] | None = \
            [] if message in CONTEXT_SCHEMAS else None
        waiting: list[tuple[int, FieldSpec, int, int, int, int]] = []
        whole = False
        first = (len(rows), self.more)  # the table as the message found it
        try:
            for number, wt, offset, a, b in fields(src, start, end, depth):
                if walked is not None:
                    walked.append((number, wt, a, b))
                known = plan.get(number)
                if known is None or not (wt == known[1] or (wt == LEN and known[2])):
                    rows.append(self.unknown(message, number, wt, offset, a, b, path, depth))
                else:
                    spec, _, packable, waits = known
                    name = f"{path}.{spec.name}" if path else spec.name
                    index = seen.get(number, 0)  # (a packed run counts, unnamed)
                    seen[number] = index + 1
                    if spec.repeated and not (wt == LEN and packable):
                        name = f"{name}[{index}]"
                    shown = self.shown(wt, offset, a, b)
                    if waits:  # worded once the message is walked
                        waiting.append((len(rows), spec, offset, a, b, depth))
                        rows.append(ByteRow(offset, depth, shown, name, ""))
                    else:
                        rows.append(ByteRow(offset, depth, shown, name,
                                            said.of(message, spec, wt, a, b)))
                    if spec.message is not None:
                        if depth + 1 > MAX_DEPTH:
                            raise WireError(f"messages nested deeper than {MAX_DEPTH}", offset)
                        self.message(spec.message, a, b, name, depth + 1)
                if limit is not None and len(rows) >= limit:  # the rest is only counted
                    self.count(message, b, end, depth)
                    return
            whole = True
        finally:
            if waiting or message in FALLIBLE_CONTEXTS:
                self.word(message, start, end, walked if whole else None, waiting, first)

    def word(self, message: str, start: int, end: int,
             walked: list[tuple[int, int, int, int]] | None,
             waiting: list[tuple[int, FieldSpec, int, int, int, int]],
             first: tuple[int, int]) -> None:
        """The meanings of the rows that wait for their message's Context: from the fields
        walked when all of them were, else from a scan of the message. The Context is the
        message's first word: where it cannot be made (a packed dims cut short) the table
        ends before the message's rows, whatever else is wrong after it."""
        try:
            ctx = None if walked is None else walked_context(self.src, message, walked)
            if ctx is None:
                ctx = scanned_context(self.src, message, start, end)
        except WireError:
            del self.rows[first[0]:]
            self.more = first[1]
            raise
        rows = self.rows
        for i, spec, offset, a, b, depth in waiting:
            row = rows[i]
            rows[i] = ByteRow(offset, depth, row.bytes, row.field,
                              self.said.in_context(message, ctx, spec, a, b))

    def count(self, message: str, start: int, end: int, depth: int) -> None:
        """Count the fields of ``[start, end)`` read as ``message`` and of the messages in
        it, as ``message`` does once the table is full (the same count, the same
        WireError at the same point), a run of elements at a time."""
        counted = count_fields(self.src, start, end, message, depth)
        if counted is not None:  # the compiled count: the same, in C
            self.more += counted
            return
        pos = start
        window, widest = PREFIX_BYTES
        while pos < end:  # a long message (or a bad one): by the compiled count, a window
            # at a time, and the fields it leaves (long, or bad) by the Python count
            got = count_prefix(self.src, pos, end, message, depth, window)
            if got is not None and got[1] > pos:
                self.more += got[0]
                pos = got[1]
                window = min(2 * window, widest)
                continue
            pos = self.walked(message, pos, end, depth, got is not None)

    def walked(self, message: str, start: int, end: int, depth: int, one: bool) -> int:
        """``count`` by the Python walk, of every field of ``[start, end)`` or (``one``) of
        the first field or run; where that stops."""
        from onnxdata.wire.fields import RUN, walk_fields

        schema = message_schema(message)
        for number, wt, offset, a, b in walk_fields(self.src, ((start, end),), (), repeats=True,
                                                    depth=depth):
            spec = schema.get(number)
            want = LEN if wt == RUN else wt
            known = spec is not None and (want == spec.wire_type or
                                          (spec.packable and want == LEN))
            child = spec.message if known and spec is not None else None
            if wt == RUN and child is not None:
                self.elements(child, offset, a, b, depth + 1)
            else:
                self.more += int(a.size) if wt == RUN else 1
                if child is not None:
                    if depth + 1 > MAX_DEPTH:
                        raise WireError(f"messages nested deeper than {MAX_DEPTH}", offset)
                    self.count(child, a, b, depth + 1)
            if one:
                return int(b[-1]) if wt == RUN else b
        return end

    def elements(self, message: str, first_at: int, starts: Any, ends: Any,
                 depth: int) -> None:
        """Count a run of messages (and their fields) as ``count`` counts them one by one:
        a layout at a time (``grouped``) where the compiled walk gives layouts, else one
        at a time."""
        s_all = np.asarray(starts, np.int64)
        e_all = np.asarray(ends, np.int64)
        for first in range(0, int(s_all.size), 1 << 14):
            s, e = s_all[first:first + (1 << 14)], e_all[first:first + (1 << 14)]
            tags = [first_at if first == 0 else int(e_all[first - 1]),
                    *e[:-1].tolist()]  # each element's tag follows the one before
            if self.grouped(message, tags, s, e, depth):
                continue
            for at, a, b in zip(tags, s.tolist(), e.tolist(), strict=True):
                self.more += 1
                if depth > MAX_DEPTH:
                    raise WireError(f"messages nested deeper than {MAX_DEPTH}", at)
                self.count(message, a, b, depth)

    def grouped(self, message: str, tags: list[int], s: Any, e: Any, depth: int) -> bool:
        """Count a run of elements a layout at a time (``compiled.element_groups``:
        elements of one layout have as many fields, and the same wire): False where the
        compiled walk is off or gives no layouts (count them one by one)."""
        kind = KIND_OF_MESSAGE.get(message)
        if kind is None or s.size < 2 or depth > MAX_DEPTH:
            return False
        got = element_groups(self.src, s.astype(np.uint64), e.astype(np.uint64), kind, depth)
        if got is None:
            return False
        ids, firsts = got
        fields = []
        for i in firsts:
            before = self.more
            self.count(message, int(s[i]), int(e[i]), depth)
            fields.append(self.more - before)
        self.more += int(s.size) + int(np.asarray(fields, np.int64)[ids].sum()) - sum(fields)
        return True

    def shown(self, wt: int, offset: int, a: int, b: int) -> str:
        """A field's bytes in hex: its tag and value, or a LEN field's tag and length and
        how many bytes follow (at most 32 bytes in hex)."""
        stop = min(b if wt != LEN else a, offset + 32)
        buf, at = self.window
        if offset < at or stop > at + len(buf):  # (the walk's window: no read of its own)
            buf, at = self.window = self.src.window(offset, stop)
        head: str = buf[offset - at:stop - at].hex(" ").upper()
        if wt != LEN or a == b:
            return head
        n = b - a
        return f"{head} + {n} byte{'s' if n != 1 else ''}"

    def unknown(self, message: str, number: int, wt: int, offset: int, a: int, b: int,
                path: str, depth: int) -> ByteRow:
        where = f"{path}.(field {number})" if path else f"(field {number})"
        return ByteRow(offset, depth, self.shown(wt, offset, a, b), where,
                       f"unknown: {message} has no field {number} of wire type "
                       f"{WIRE_TYPE_NAMES[wt]} (protobuf keeps it aside)")


@cache
def _plan(message: str) -> dict[int, tuple[FieldSpec, int, bool, bool]]:
    """The fields of ``message`` as the table's loop reads them: by number, the spec, its
    wire type, whether it may come packed, and whether its row needs the Context."""
    return {number: (spec, spec.wire_type, spec.packable, needs_context(message, spec))
            for number, spec in message_schema(message).items()}


#: The offset of the row that counts the fields left out (no byte has it).
ELIDED_OFFSET: Final = -1


def elided_count(row: ByteRow) -> int:
    """How many fields the row "… 999,800 more fields" stands for (0 for any other row)."""
    if row.offset != ELIDED_OFFSET:
        return 0
    return int(row.value.split()[1].replace(",", ""))


def rows(src: Source, message: str, *, limit: int | None = DEFAULT_ROWS,
         max_depth: int = MAX_DEPTH) -> list[ByteRow]:
    """The byte table of ``src`` read as ``message``: at most ``limit`` field rows (None:
    all), then one row counting the fields left out, then a "does not fit" row if the
    bytes break the wire format."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, not {limit}")
    table = _Table(src, limit, max_depth)
    misfit: ByteRow | None = None
    try:
        table.message(message, 0, src.size, "", 0)
    except WireError as e:
        at = e.offset if e.offset is not None else 0
        try:
            shown = hex_of(src, at, min(at + 4, src.size))
        except Exception:
            shown = ""
        misfit = ByteRow(at, 0, shown, "(message)", f"does not fit: {e.reason}")
    out = table.rows
    if table.more:
        out.append(ByteRow(ELIDED_OFFSET, 0, "…", "…", f"… {table.more:,} more fields"))
    if misfit is not None:
        out.append(misfit)
    return out
