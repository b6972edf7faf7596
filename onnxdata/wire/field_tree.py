"""Does a buffer's wire structure fit message X exactly? A tree over the engine's walk.

``field_tree(buf, "TensorProto")`` reads field tags and lengths with ``fields.fields``
(the one walk the engine, ``read`` and the byte table use) and checks each
against the schema of the message it is inside (taken from the generated
classes' descriptors, so it is ONNX's own schema): the field number
must be known, its wire type the right one (a repeated number may also come
packed), and every nested message must fit in turn, down to a depth cap.

It never decodes a large payload: ``raw_data`` and packed numbers are skipped
by length. The answer is a tree of ``FitMessage``/``FitField`` with byte
offsets and paths (one object per field: for what needs the whole tree, such
as checking a value against a model's declared type), and, when the bytes do
not fit, a ``Misfit`` saying why and at which byte. It is stricter than
validation: an unknown field or a known field with another wire type is a
misfit here, where protobuf (and so the engine) keeps it as unknown and
validation reports it as a problem. Nothing here raises for bad bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.paths import join_path
from onnxdata.wire.field_values import count_varints, decode_varints
from onnxdata.wire.fields import fields
from onnxdata.wire.format import (
    EGROUP,
    I32,
    I64,
    LEN,
    SGROUP,
    VARINT,
    WIRE_TYPE_NAMES,
    WireBuffer,
    WireError,
)
from onnxdata.wire.schema import FieldSpec, known_message, message_schema, schema_name
from onnxdata.wire.source import Source

__all__ = [
    "MESSAGE_NAMES",
    "Fit",
    "FitField",
    "FitMessage",
    "Misfit",
    "field_tree",
]

#: Packed varint payloads up to this size are decoded (dims, keys); longer ones are
#: only checked to end on a final byte, so a 1 GiB int64_data is not walked byte by byte.
PACKED_DECODE_LIMIT: Final = 1 << 16

#: The five top-level messages, in the explorer's order.
MESSAGE_NAMES: Final = ("SequenceProto", "OptionalProto", "MapProto", "TensorProto",
                        "SparseTensorProto")


@dataclass(frozen=True)
class Misfit:
    """Why the bytes are not the message: ``reason`` at byte ``offset``, inside ``path``."""

    offset: int
    path: str
    reason: str

    def __str__(self) -> str:
        where = f" in {self.path}" if self.path else ""
        return f"{self.reason}{where} at byte {self.offset}"


@dataclass
class FitField:
    """One field as it sits in the bytes and what the schema says it is.

    ``offset`` is where the tag starts, ``start``/``end`` delimit the value (for
    LEN the payload, without its length prefix). ``value`` is the raw varint of
    a VARINT field; ``values`` the decoded numbers of a packed varint field up to
    PACKED_DECODE_LIMIT bytes; ``count`` the number of packed entries when known.
    ``child`` is the nested message of a message field.
    """

    spec: FieldSpec
    wire_type: int
    offset: int
    start: int
    end: int
    path: str
    value: int | None = None
    values: tuple[int, ...] | None = None
    count: int | None = None
    child: FitMessage | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def number(self) -> int:
        return self.spec.number

    @property
    def packed(self) -> bool:
        return self.wire_type == LEN and self.spec.packable

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass
class FitMessage:
    """A message the bytes fit (or fit as far as ``fields`` go), with its fields in wire order."""

    type: str
    path: str
    start: int
    end: int
    fields: list[FitField] = field(default_factory=list)

    def every(self, name: str) -> list[FitField]:
        return [f for f in self.fields if f.spec.name == name]

    def last(self, name: str) -> FitField | None:
        """The field as protobuf sees it: for a singular field the last occurrence wins."""
        for f in reversed(self.fields):
            if f.spec.name == name:
                return f
        return None

    def has(self, name: str) -> bool:
        return any(f.spec.name == name for f in self.fields)

    def get_int(self, name: str, default: int = 0) -> int:
        f = self.last(name)
        if f is None or f.value is None:
            return default
        return f.spec.as_int(f.value)

    def get_ints(self, name: str) -> list[int] | None:
        """A repeated integer field's values, packed or not; None if a packed run was too long."""
        out: list[int] = []
        for f in self.fields:
            if f.spec.name != name:
                continue
            if f.value is not None:
                out.append(f.spec.as_int(f.value))
            elif f.values is not None:
                out.extend(f.spec.as_int(v) for v in f.values)
            else:
                return None
        return out

    def count_of(self, name: str) -> int | None:
        """How many entries a repeated field holds, packed or not (None if unknown)."""
        n = 0
        for f in self.fields:
            if f.spec.name != name:
                continue
            if f.packed:
                if f.count is None:
                    return None
                n += f.count
            else:
                n += 1
        return n

    def children(self, name: str) -> list[FitMessage]:
        return [f.child for f in self.fields if f.spec.name == name and f.child is not None]

    def child(self, name: str) -> FitMessage | None:
        f = self.last(name)
        return f.child if f is not None else None

    def walk(self) -> list[FitField]:
        """Every field, depth first in wire order (a nested message's header before its fields)."""
        out: list[FitField] = []
        for f in self.fields:
            out.append(f)
            if f.child is not None:
                out.extend(f.child.walk())
        return out


@dataclass
class Fit:
    """The answer of ``fit``: the tree as far as it fits, and the misfit if any."""

    message: str
    root: FitMessage
    misfit: Misfit | None

    @property
    def ok(self) -> bool:
        return self.misfit is None


class _Stop(Exception):
    def __init__(self, misfit: Misfit) -> None:
        self.misfit = misfit


def field_tree(buf: WireBuffer | Source, message: str, start: int = 0, end: int | None = None, *,
        max_depth: int = MAX_DEPTH) -> Fit:
    """Walk ``buf[start:end]`` as ``message`` (a message name or kind name); never raises
    for bad bytes. The walk is ``fields.fields``, the engine's; this builds the tree."""
    if not known_message(message):
        raise ValueError(f"unknown message {message!r}")
    name = schema_name(message)
    src = buf if isinstance(buf, Source) else Source.of_buffer(buf)
    end = src.size if end is None else end
    root = FitMessage(name, "", start, end)
    try:
        _walk(src, root, start, end, 0, max_depth)
    except _Stop as stop:
        return Fit(name, root, stop.misfit)
    return Fit(name, root, None)


def _walk(src: Source, node: FitMessage, start: int, end: int, depth: int,
          max_depth: int) -> None:
    schema = message_schema(node.type)
    seen: dict[int, int] = {}
    here = node.path
    found = fields(src, start, end, depth)
    offset = start
    while True:
        try:
            item = next(found, None)
        except WireError as e:
            raise _Stop(Misfit(e.offset if e.offset is not None else offset, here,
                               e.reason)) from None
        if item is None:
            return
        number, wire_type, offset, a, b = item
        spec = schema.get(number)
        if spec is None:
            raise _Stop(Misfit(offset, here,
                               f"{node.type} has no field {number}"
                               f" (wire type {WIRE_TYPE_NAMES[wire_type]})"))
        index = seen.get(number, 0)
        seen[number] = index + 1
        path = join_path(here, spec.name)
        if spec.repeated and not (spec.packable and wire_type == LEN):
            path = f"{path}[{index}]"
        expected = spec.wire_type
        if wire_type != expected and not (spec.packable and wire_type == LEN):
            if wire_type in (SGROUP, EGROUP):
                got = "a group"
            else:
                got = f"wire type {WIRE_TYPE_NAMES[wire_type]}"
            raise _Stop(Misfit(offset, path,
                               f"field {number} ({spec.name}) should be "
                               f"{WIRE_TYPE_NAMES[expected]} but is {got}"))
        if wire_type == VARINT:
            node.fields.append(FitField(spec, wire_type, offset, offset, b, path, value=a))
            continue
        f = FitField(spec, wire_type, offset, a, b, path)
        node.fields.append(f)
        if spec.message is not None:
            if depth >= max_depth:
                raise _Stop(Misfit(offset, path, f"messages nested deeper than {max_depth}"))
            child = FitMessage(spec.message, path, a, b)
            f.child = child
            _walk(src, child, a, b, depth + 1, max_depth)
        elif spec.packable and wire_type == LEN:
            _packed(src, f)


def _packed(src: Source, f: FitField) -> None:
    """Check a packed run (and decode it when short); raises _Stop when it is broken."""
    length = f.end - f.start
    if f.spec.wire_type == I32 or f.spec.wire_type == I64:
        size = 4 if f.spec.wire_type == I32 else 8
        if length % size:
            raise _Stop(Misfit(f.start, f.path, f"packed {f.spec.name} has {length} bytes, "
                                                 f"not a multiple of {size}"))
        f.count = length // size
        return
    if length == 0:
        f.values, f.count = (), 0
        return
    try:
        if length > PACKED_DECODE_LIMIT:
            f.count = count_varints(src, f.start, f.end)
            return
        values = decode_varints(src.u8(f.start, f.end), f.start)
    except WireError as e:
        raise _Stop(Misfit(e.offset if e.offset is not None else f.start, f.path,
                           f"packed {f.spec.name}: {e.reason}")) from None
    f.values = tuple(values.tolist())
    f.count = len(f.values)
