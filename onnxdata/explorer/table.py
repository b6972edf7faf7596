"""The byte table: one reading laid out field by field, a view over the engine's walk.

``rows(src, "SequenceProto", limit=200)`` walks with ``fields.fields`` in wire
order, a nested message's header row before its own rows, and records rows
only while fewer than ``limit`` are kept; after that it only counts, and the
table ends with one row "… 999,800 more fields". Bytes that break the wire
format end the table with a "does not fit" row. Fields protobuf would keep as
unknown (a number the message lacks, or a known number with another wire type)
get a row saying so; validation reports them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from onnxdata.core.dtypes import data_type
from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.messages import (
    ELEM_FIELDS,
    KIND_OF_ELEM_TYPE,
    KIND_OF_MESSAGE,
    OPTIONAL_FIELDS,
    ElemType,
)
from onnxdata.engine.one_line import ELEM_WORDS, dims_text, dtype_name
from onnxdata.wire.compiled import (
    PREFIX_BYTES,
    count_fields,
    count_prefix,
    element_groups,
)
from onnxdata.wire.field_values import decode_varints
from onnxdata.wire.fields import whole
from onnxdata.wire.format import I32, I64, LEN, VARINT, WIRE_TYPE_NAMES, WireError, signed64
from onnxdata.wire.schema import FieldSpec, Schema, message_schema
from onnxdata.wire.source import Source
from onnxdata.wire.walk import OPTIONAL, SEQUENCE, TENSOR, scan

__all__ = ["DEFAULT_ROWS", "ByteRow", "rows"]

#: Rows a byte table shows unless told otherwise.
DEFAULT_ROWS: Final = 200
_PREVIEW: Final = 6
_CONTEXT: Final[dict[str, Schema]] = {"TensorProto": TENSOR, "OptionalProto": OPTIONAL,
                                      "SequenceProto": SEQUENCE}


@dataclass(frozen=True)
class ByteRow:
    """One row of a byte table: the bytes in hex, the field path, and what they mean."""

    offset: int
    depth: int
    bytes: str
    field: str
    value: str


class _Context:
    """What a row's meaning needs from its message: data_type, dims, which fields are set."""

    def __init__(self, src: Source, message: str, start: int, end: int) -> None:
        schema = _CONTEXT.get(message)
        self.scalars: dict[str, int] = {}
        self.present: set[str] = set()
        self.dims: list[int] | None = []
        if schema is None:
            return
        try:
            f = scan(src, whole(start, end), schema)
        except WireError:
            return
        self.scalars = f.scalars
        self.present = set(f.counts) | set(f.pieces)
        pieces = f.pieces.get("dims", [])
        if "dims" in f.over or sum(b - a if wt == LEN else 0 for wt, a, b in pieces) > 1 << 16:
            self.dims = None
            return
        out: list[int] = []
        for wt, a, b in pieces:
            if wt == VARINT:
                out += [signed64(int(v)) for v in a]
            else:
                out += [signed64(int(v)) for v in decode_varints(src.u8(a, b), a).tolist()]
        self.dims = out

    def get_int(self, name: str) -> int:
        v = self.scalars.get(name, 0) & 0xFFFFFFFF
        return v - (1 << 32) if v >= 1 << 31 else v


class _Table:
    def __init__(self, src: Source, limit: int | None, max_depth: int) -> None:
        self.src = src
        self.limit = limit
        self.max_depth = max_depth
        self.rows: list[ByteRow] = []
        self.more = 0

    def full(self) -> bool:
        return self.limit is not None and len(self.rows) >= self.limit

    def message(self, message: str, start: int, end: int, path: str, depth: int) -> None:
        from onnxdata.wire.fields import fields

        if self.full():
            self.count(message, start, end, depth)
            return
        schema = message_schema(message)
        ctx = None if self.full() else _Context(self.src, message, start, end)
        seen: dict[int, int] = {}
        for number, wt, offset, a, b in fields(self.src, start, end, depth):
            spec = schema.get(number)
            known = spec is not None and (wt == spec.wire_type or (spec.packable and wt == LEN))
            child = spec.message if known and spec is not None else None
            if self.full():
                self.more += 1
            else:
                if ctx is None:
                    ctx = _Context(self.src, message, start, end)
                self.rows.append(self.row(message, ctx, spec if known else None, number, wt,
                                          offset, a, b, path, seen, depth))
            if child is not None:
                if depth + 1 > MAX_DEPTH:
                    raise WireError(f"messages nested deeper than {MAX_DEPTH}", offset)
                sub = self.rows[-1].field if self.rows and self.rows[-1].offset == offset \
                    else path
                self.message(child, a, b, sub, depth + 1)
            if self.full():  # the rest of the message is only counted
                self.count(message, b, end, depth)
                return

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

    def row(self, message: str, ctx: _Context, spec: FieldSpec | None, number: int, wt: int,
            offset: int, a: int, b: int, path: str, seen: dict[int, int],
            depth: int) -> ByteRow:
        if wt == LEN:
            head = self.hex(offset, a)
            n = b - a
            shown = f"{head} + {n} byte{'s' if n != 1 else ''}" if n else head
        else:
            shown = self.hex(offset, b)
        if spec is None:
            where = f"{path}.(field {number})" if path else f"(field {number})"
            return ByteRow(offset, depth, shown, where,
                           f"unknown: {message} has no field {number} of wire type "
                           f"{WIRE_TYPE_NAMES[wt]} (protobuf keeps it aside)")
        index = seen.get(number, 0)
        seen[number] = index + 1
        name = f"{path}.{spec.name}" if path else spec.name
        if spec.repeated and not (spec.packable and wt == LEN):
            name = f"{name}[{index}]"
        return ByteRow(offset, depth, shown, name, self.meaning(message, ctx, spec, wt, a, b))

    def hex(self, a: int, b: int) -> str:
        return self.src.read(a, min(b, a + 32)).hex(" ").upper()  # "0A 1B": bytes.hex in C

    def meaning(self, message: str, ctx: _Context, spec: FieldSpec, wt: int, a: int,
                b: int) -> str:
        if spec.message is not None:
            return f"{spec.message}, {b - a} bytes"
        if wt == VARINT:
            v = spec.as_int(a)
            if spec.name == "elem_type" and message in ("SequenceProto", "OptionalProto"):
                return _elem_type_meaning(message, ctx, v)
            if spec.name in ("data_type", "key_type"):
                dt = data_type(v)
                if dt is None:
                    return f"{v}, {'UNDEFINED' if v == 0 else 'not a data type'}"
                return f"{v}, {dt.name} ({dtype_name(v)})"
            if spec.enum is not None:
                return f"{v}, {spec.enum.get(v, 'not a known value')}"
            return str(v)
        if spec.name == "raw_data":
            return self.payload(ctx, a, b)
        if wt == LEN and spec.packable:
            return self.packed(spec, a, b)
        if wt in (I32, I64):
            fmt = {2: "<f4", 1: "<f8"}.get(spec.type, "<u4" if wt == I32 else "<u8")
            return str(np.frombuffer(self.src.read(a, b), dtype=fmt)[0].item())
        return _text(self.src.read(a, min(b, a + 256)))

    def payload(self, ctx: _Context, a: int, b: int) -> str:
        code = ctx.get_int("data_type")
        dt = data_type(code)
        n_bytes = b - a
        head = f"{n_bytes} bytes"
        if dt is None or dt.is_string:
            return f"{head} of {dtype_name(code)}"
        head = f"{dtype_name(code)} {dims_text(ctx.dims)}, {head}"
        if n_bytes == 0:
            return head
        if dt.bits % 8:
            return f"{head}: packed {dt.bits}-bit, " + self.hex(a, min(b, a + 4))
        size = dt.bits // 8
        n = min(_PREVIEW, n_bytes // size)
        try:
            values = np.frombuffer(self.src.read(a, a + n * size),
                                   dtype=dt.dtype.newbyteorder("<"))
            shown = ", ".join(str(v) for v in values)
        except (TypeError, ValueError):
            shown = self.hex(a, a + n * size)
        more = ", …" if n_bytes > n * size else ""
        return f"{head}: {shown}{more}"

    def packed(self, spec: FieldSpec, a: int, b: int) -> str:
        if spec.wire_type == VARINT:
            head = self.src.read(a, min(b, a + 10 * (_PREVIEW + 1)))
            values: list[int] = []
            pos = 0
            while pos < len(head) and len(values) < _PREVIEW:
                end = pos
                while end < len(head) and head[end] & 0x80:
                    end += 1
                if end >= len(head):
                    break
                v = 0
                for k, byte in enumerate(head[pos:end + 1]):
                    v |= (byte & 0x7F) << (7 * k)
                values.append(spec.as_int(v & 0xFFFFFFFFFFFFFFFF))
                pos = end + 1
            if spec.name == "dims" and a + pos == b:
                return dims_text(values)
            more = ", …" if a + pos < b else ""
            return f"{b - a} bytes: " + ", ".join(map(str, values)) + more
        size = 4 if spec.wire_type == I32 else 8
        fmt = {2: "<f4", 1: "<f8"}.get(spec.type, "<u4" if size == 4 else "<u8")
        n = min(_PREVIEW, (b - a) // size)
        vals = np.frombuffer(self.src.read(a, a + n * size), dtype=fmt).tolist()
        more = ", …" if b - a > n * size else ""
        return f"{(b - a) // size} values: " + ", ".join(map(str, vals)) + more


def _text(raw: bytes, limit: int = 60) -> str:
    s = raw.decode("utf-8", errors="backslashreplace")
    return s if len(s) <= limit else s[:limit] + "…"


def _elem_type_meaning(message: str, ctx: _Context, code: int) -> str:
    try:
        name = ElemType(code).name
    except ValueError:
        return f"{code}, not an element type"
    if message == "OptionalProto":
        if code == ElemType.UNDEFINED:
            return "0, UNDEFINED: the value is absent"
        if KIND_OF_ELEM_TYPE[code] in ctx.present:
            return f"{code}, {name}: the value is in {OPTIONAL_FIELDS[code]}"
        return f"{code}, {name}: a {ELEM_WORDS[code][0]} type, the value is absent"
    if code == ElemType.UNDEFINED:
        return "0, UNDEFINED: no element type (a sequence needs one)"
    return f"{code}, {name}: the elements are in {ELEM_FIELDS[code]}"


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
            shown = table.hex(at, min(at + 4, src.size))
        except Exception:
            shown = ""
        misfit = ByteRow(at, 0, shown, "(message)", f"does not fit: {e.reason}")
    out = table.rows
    if table.more:
        out.append(ByteRow(ELIDED_OFFSET, 0, "…", "…", f"… {table.more:,} more fields"))
    if misfit is not None:
        out.append(misfit)
    return out
