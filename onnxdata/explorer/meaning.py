"""What one field of the byte table means: a varint as its field reads it, a payload's or a
packed run's first values, a string's start.

Two kinds of row need facts of their message (``Context``): a tensor's ``raw_data`` (its
data_type and dims: the values are shown as they are typed) and an optional's
``elem_type`` (which value field is set). The table takes those facts from the fields it
walked when it walked the whole message (``walked_context``), else from ``scan``
(``scanned_context``); the two agree, and tests/explorer/test_table_rows.py checks that
the table's rows are the ones the reference makes. ``Meanings`` words the rows of one
table, what repeats (a varint's value, a payload's type, dims and first bytes) once: in a
sequence of tensors most rows say what the row of the element before said.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from onnxdata.core.dtypes import DataType, data_type
from onnxdata.core.messages import (
    ELEM_FIELDS,
    KIND_OF_ELEM_TYPE,
    OPTIONAL_FIELDS,
    ElemType,
)
from onnxdata.engine.one_line import ELEM_WORDS, dims_text, dtype_name
from onnxdata.wire.field_values import decode_varints
from onnxdata.wire.fields import whole
from onnxdata.wire.format import I32, I64, LEN, VARINT, WireError, signed64
from onnxdata.wire.occurrences import Compact, Piece
from onnxdata.wire.schema import (
    FIXED32S,
    FIXED64S,
    LAST,
    MANY,
    SCALAR,
    VARINTS,
    FieldSpec,
    Schema,
)
from onnxdata.wire.source import Source
from onnxdata.wire.walk import OPTIONAL, TENSOR, scan

__all__ = ["CONTEXT_SCHEMAS", "FALLIBLE_CONTEXTS", "PREVIEW", "WALKED_FIELDS", "Context",
           "Meanings", "hex_of", "needs_context", "scanned_context", "walked_context"]

#: Values a payload's or a packed run's row shows.
PREVIEW: Final = 6
#: The most bytes of a payload its row shows (six complex128 values).
_PREVIEW_BYTES: Final = PREVIEW * 16
#: The messages some of whose rows need a Context, and the walk's schema of each.
CONTEXT_SCHEMAS: Final[dict[str, Schema]] = {"TensorProto": TENSOR, "OptionalProto": OPTIONAL}
#: The messages whose Context can fail to be made (a packed dims cut short): made for each
#: of them, whether a row needs it or not, as the table says so where it is.
FALLIBLE_CONTEXTS: Final = frozenset(
    message for message, schema in CONTEXT_SCHEMAS.items()
    if any(name == "dims" for name, _ in schema.values()))
#: The wire type each way of gathering a field takes (a packable one also takes LEN).
_WIRE_OF: Final = {SCALAR: VARINT, VARINTS: VARINT, LAST: LEN, MANY: LEN, FIXED32S: I32,
                   FIXED64S: I64}
_PACKABLE: Final = (VARINTS, FIXED32S, FIXED64S)
#: Fields a walked message may have for its facts to come from the walk: far below the
#: count past which ``scan`` stops keeping a field's pieces, so the two agree.
WALKED_FIELDS: Final = 1024
#: dtypes whose values print the same from ``tolist()`` (Python's int, bool and float)
#: as from numpy's scalars, without a numpy scalar made for each.
_PLAIN_KINDS: Final = frozenset("iub")
_F8: Final = np.dtype(np.float64)


class Context:
    """The facts of one message that its rows' meanings need: the varint scalars (as
    ``scan`` keeps them: raw, the last of each), the fields set, and the dims (None when
    there are too many to read for a row)."""

    __slots__ = ("dims", "present", "scalars")

    def __init__(self, scalars: dict[str, int], present: set[str], dims: list[int] | None
                 ) -> None:
        self.scalars = scalars
        self.present = present
        self.dims = dims

    def get_int(self, name: str) -> int:
        v = self.scalars.get(name, 0) & 0xFFFFFFFF
        return v - (1 << 32) if v >= 1 << 31 else v


def needs_context(message: str, spec: FieldSpec) -> bool:
    """Whether the row of ``spec`` (a field of ``message`` with its own wire type) needs
    the message's Context."""
    return spec.name == "raw_data" or (message == "OptionalProto" and spec.name == "elem_type")


def scanned_context(src: Source, message: str, start: int, end: int) -> Context:
    """The Context of ``message`` at ``[start, end)`` by ``scan`` (empty where its bytes
    break the wire format; WireError for a packed dims cut short)."""
    schema = CONTEXT_SCHEMAS.get(message)
    if schema is None:
        return Context({}, set(), [])
    try:
        f = scan(src, whole(start, end), schema)
    except WireError:
        return Context({}, set(), [])
    dims = None if "dims" in f.over else _dims(src, f.pieces.get("dims", []))
    return Context(f.scalars, set(f.counts) | set(f.pieces), dims)


def walked_context(src: Source, message: str, walked: list[tuple[int, int, int, int]]
                   ) -> Context | None:
    """The Context of ``message`` from ``walked``, the ``(number, wire_type, a, b)`` of every
    one of its fields in wire order (as ``fields.fields`` gives them), gathered as ``scan``
    gathers them; None when there are more than WALKED_FIELDS (``scanned_context`` then).
    WireError, as from ``scanned_context``, for a packed dims cut short."""
    if len(walked) > WALKED_FIELDS:
        return None
    schema = CONTEXT_SCHEMAS[message]
    scalars: dict[str, int] = {}
    present: set[str] = set()
    dims: list[Piece] = []
    for number, wt, a, b in walked:
        spec = schema.get(number)
        if spec is None:
            continue
        name, kind = spec
        if wt == _WIRE_OF[kind]:
            if kind == SCALAR:
                if name != "data_location" or (a & 0xFFFFFFFF) in (0, 1):
                    scalars[name] = a  # (a closed enum's value out of range is kept aside)
                continue
        elif not (wt == LEN and kind in _PACKABLE):
            continue
        present.add(name)
        if name == "dims":
            dims.append((VARINT, (a,), 0) if wt == VARINT else (wt, a, b))
    return Context(scalars, present, _dims(src, dims))


def _dims(src: Source, pieces: list[Piece] | Compact) -> list[int] | None:
    """The dims of ``scan``'s pieces (``(VARINT, values, 0)``, or a packed run's ``(LEN, a,
    b)``); None past 64 KiB of packed bytes."""
    if sum(b - a if wt == LEN else 0 for wt, a, b in pieces) > 1 << 16:
        return None
    out: list[int] = []
    for wt, a, b in pieces:
        if wt == VARINT:
            out += [signed64(int(v)) for v in a]
        else:
            out += [signed64(int(v)) for v in decode_varints(src.u8(a, b), a).tolist()]
    return out


def hex_of(src: Source, a: int, b: int) -> str:
    """Bytes ``[a, b)`` in hex, the first 32 of them: "0A 1B"."""
    return src.read(a, min(b, a + 32)).hex(" ").upper()


class Meanings:
    """The meanings of one table's rows, what repeats worded once."""

    def __init__(self, src: Source) -> None:
        self.src = src
        #: Varints worded so far, by (message, field number, raw value): a varint's meaning
        #: is its value's alone (an optional's elem_type aside: it needs the Context).
        self.varints: dict[tuple[str, int, int], str] = {}
        #: Payloads worded so far, by (data type, dims, size, their first bytes).
        self.payloads: dict[tuple[int, tuple[int, ...] | None, int, bytes], str] = {}

    def of(self, message: str, spec: FieldSpec, wt: int, a: int, b: int) -> str:
        """The meaning of a field of ``message`` whose row needs no Context."""
        if spec.message is not None:
            return f"{spec.message}, {b - a} bytes"
        if wt == VARINT:
            key = (message, spec.number, a)
            said = self.varints.get(key)
            if said is None:
                said = self.varints[key] = _varint(message, spec, a)
            return said
        if wt == LEN and spec.packable:
            return self.packed(spec, a, b)
        if wt in (I32, I64):
            fmt = {2: "<f4", 1: "<f8"}.get(spec.type, "<u4" if wt == I32 else "<u8")
            return str(np.frombuffer(self.src.read(a, b), dtype=fmt)[0].item())
        return _text(self.src.read(a, min(b, a + 256)))

    def in_context(self, message: str, ctx: Context, spec: FieldSpec, a: int, b: int) -> str:
        """The meaning of a field for which ``needs_context`` holds."""
        if spec.name == "raw_data":
            return self.payload(ctx, a, b)
        return _elem_type(message, ctx, spec.as_int(a))

    def payload(self, ctx: Context, a: int, b: int) -> str:
        code, dims = ctx.get_int("data_type"), ctx.dims
        key = (code, None if dims is None else tuple(dims), b - a,
               self.src.read(a, min(b, a + _PREVIEW_BYTES)))
        said = self.payloads.get(key)
        if said is None:
            said = self.payloads[key] = self._payload(code, dims, a, b)
        return said

    def _payload(self, code: int, dims: list[int] | None, a: int, b: int) -> str:
        dt = data_type(code)
        n_bytes = b - a
        head = f"{n_bytes} bytes"
        if dt is None or dt.is_string:
            return f"{head} of {dtype_name(code)}"
        head = f"{dtype_name(code)} {dims_text(dims)}, {head}"
        if n_bytes == 0:
            return head
        if dt.bits % 8:
            return f"{head}: packed {dt.bits}-bit, " + hex_of(self.src, a, min(b, a + 4))
        size = dt.bits // 8
        n = min(PREVIEW, n_bytes // size)
        shown = _values(dt, self.src.read(a, a + n * size))
        more = ", …" if n_bytes > n * size else ""
        return f"{head}: {shown}{more}"

    def packed(self, spec: FieldSpec, a: int, b: int) -> str:
        if spec.wire_type == VARINT:
            head = self.src.read(a, min(b, a + 10 * (PREVIEW + 1)))
            values: list[int] = []
            pos = 0
            while pos < len(head) and len(values) < PREVIEW:
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
        n = min(PREVIEW, (b - a) // size)
        vals = np.frombuffer(self.src.read(a, a + n * size), dtype=fmt).tolist()
        more = ", …" if b - a > n * size else ""
        return f"{(b - a) // size} values: " + ", ".join(map(str, vals)) + more


def _values(dt: DataType, raw: bytes) -> str:
    """A payload's first values, as numpy prints each (int, bool and float64 from
    ``tolist()``: the same text); their hex where numpy cannot view them."""
    try:
        values = np.frombuffer(raw, dtype=dt.dtype.newbyteorder("<"))
        if values.dtype.kind in _PLAIN_KINDS or values.dtype == _F8:
            return ", ".join(map(str, values.tolist()))
        return ", ".join(map(str, values))
    except (TypeError, ValueError):
        return raw[:32].hex(" ").upper()


def _varint(message: str, spec: FieldSpec, raw: int) -> str:
    v = spec.as_int(raw)
    if spec.name == "elem_type" and message == "SequenceProto":
        return _elem_type(message, None, v)
    if spec.name in ("data_type", "key_type"):
        dt = data_type(v)
        if dt is None:
            return f"{v}, {'UNDEFINED' if v == 0 else 'not a data type'}"
        return f"{v}, {dt.name} ({dtype_name(v)})"
    if spec.enum is not None:
        return f"{v}, {spec.enum.get(v, 'not a known value')}"
    return str(v)


def _text(raw: bytes, limit: int = 60) -> str:
    s = raw.decode("utf-8", errors="backslashreplace")
    return s if len(s) <= limit else s[:limit] + "…"


def _elem_type(message: str, ctx: Context | None, code: int) -> str:
    """An elem_type's meaning (``ctx``: an optional's, which says whether the value is set)."""
    try:
        name = ElemType(code).name
    except ValueError:
        return f"{code}, not an element type"
    if message == "OptionalProto":
        assert ctx is not None
        if code == ElemType.UNDEFINED:
            return "0, UNDEFINED: the value is absent"
        if KIND_OF_ELEM_TYPE[code] in ctx.present:
            return f"{code}, {name}: the value is in {OPTIONAL_FIELDS[code]}"
        return f"{code}, {name}: a {ELEM_WORDS[code][0]} type, the value is absent"
    if code == ElemType.UNDEFINED:
        return "0, UNDEFINED: no element type (a sequence needs one)"
    return f"{code}, {name}: the elements are in {ELEM_FIELDS[code]}"
