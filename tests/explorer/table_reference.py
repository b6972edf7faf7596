"""The byte table's rows as they were worded before the table took its messages' facts
from its own walk and worded what repeats once (onnxdata 623456d, explorer/table.py): each
message scanned for its Context before its rows, every row worded on its own, a payload's
values printed from numpy's scalars. The reference test_table_rows.py compares the table
with, byte for byte; the count past the limit is the table's own (``_Table.count``),
unchanged and checked by test_table_count.py."""

from __future__ import annotations

import numpy as np

from onnxdata.core.dtypes import data_type
from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.messages import ELEM_FIELDS, KIND_OF_ELEM_TYPE, OPTIONAL_FIELDS, ElemType
from onnxdata.engine.one_line import ELEM_WORDS, dims_text, dtype_name
from onnxdata.explorer.table import ELIDED_OFFSET, ByteRow, _Table
from onnxdata.wire.field_values import decode_varints
from onnxdata.wire.fields import fields, whole
from onnxdata.wire.format import I32, I64, LEN, VARINT, WIRE_TYPE_NAMES, WireError, signed64
from onnxdata.wire.schema import FieldSpec, Schema, message_schema
from onnxdata.wire.source import Source
from onnxdata.wire.walk import OPTIONAL, SEQUENCE, TENSOR, scan

_PREVIEW = 6
_CONTEXT: dict[str, Schema] = {"TensorProto": TENSOR, "OptionalProto": OPTIONAL,
                               "SequenceProto": SEQUENCE}


class _Context:
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


class ReferenceTable(_Table):
    def message(self, message: str, start: int, end: int, path: str, depth: int) -> None:
        if self.full():
            self.count(message, start, end, depth)
            return
        schema = message_schema(message)
        ctx = _Context(self.src, message, start, end)
        seen: dict[int, int] = {}
        for number, wt, offset, a, b in fields(self.src, start, end, depth):
            spec = schema.get(number)
            known = spec is not None and (wt == spec.wire_type or (spec.packable and wt == LEN))
            child = spec.message if known and spec is not None else None
            if self.full():
                self.more += 1
            else:
                self.rows.append(self.row(message, ctx, spec if known else None, number, wt,
                                          offset, a, b, path, seen, depth))
            if child is not None:
                if depth + 1 > MAX_DEPTH:
                    raise WireError(f"messages nested deeper than {MAX_DEPTH}", offset)
                sub = self.rows[-1].field if self.rows and self.rows[-1].offset == offset \
                    else path
                self.message(child, a, b, sub, depth + 1)
            if self.full():
                self.count(message, b, end, depth)
                return

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
        return self.src.read(a, min(b, a + 32)).hex(" ").upper()

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


def reference_rows(src: Source, message: str, limit: int | None) -> list[ByteRow]:
    """``table.rows`` as it was."""
    table = ReferenceTable(src, limit, MAX_DEPTH)
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
