"""The one schema of ONNX's data messages, built from the generated classes' descriptors
(so it is ONNX's own): each message's fields with their numbers, types and wire types.
The walk (``walk_schema``), the field tree (``fit``), the byte table and the wire rule
all read it."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Final

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from onnxdata.core.messages import MESSAGE_CLASSES, is_repeated
from onnxdata.wire.format import I32, I64, LEN, VARINT, signed64

__all__ = ["FIXED32S", "FIXED64S", "LAST", "MANY", "SCALAR", "VARINTS", "FieldSpec", "Schema",
           "known_message", "message_schema", "schema_name", "walk_schema"]

#: How the walk gathers a field: one varint (the last wins), all varints (packed or
#: not), the last LEN payload, every LEN payload (repeated, or a message to merge), and
#: fixed-width runs.
SCALAR, VARINTS, LAST, MANY, FIXED32S, FIXED64S = range(6)

#: What the walk reads of a message: field number -> (name, how it is gathered).
Schema = dict[int, tuple[str, int]]

_SCALAR_WIRE: Final[dict[int, int]] = {
    FieldDescriptor.TYPE_DOUBLE: I64, FieldDescriptor.TYPE_FIXED64: I64,
    FieldDescriptor.TYPE_SFIXED64: I64,
    FieldDescriptor.TYPE_FLOAT: I32, FieldDescriptor.TYPE_FIXED32: I32,
    FieldDescriptor.TYPE_SFIXED32: I32,
    FieldDescriptor.TYPE_INT64: VARINT, FieldDescriptor.TYPE_UINT64: VARINT,
    FieldDescriptor.TYPE_INT32: VARINT, FieldDescriptor.TYPE_UINT32: VARINT,
    FieldDescriptor.TYPE_BOOL: VARINT, FieldDescriptor.TYPE_ENUM: VARINT,
    FieldDescriptor.TYPE_SINT32: VARINT, FieldDescriptor.TYPE_SINT64: VARINT,
    FieldDescriptor.TYPE_STRING: LEN, FieldDescriptor.TYPE_BYTES: LEN,
    FieldDescriptor.TYPE_MESSAGE: LEN,
}


@dataclass(frozen=True)
class FieldSpec:
    """One field of a message's schema, as the walk needs it."""

    number: int
    name: str
    type: int  # FieldDescriptor.TYPE_*
    wire_type: int
    repeated: bool
    message: str | None  # full name (without package) of a message field's type
    enum: dict[int, str] | None = None

    @property
    def packable(self) -> bool:
        return self.repeated and self.wire_type != LEN

    @property
    def wire_types(self) -> frozenset[int]:
        """The wire types the field may carry: its own, and LEN when it can be packed."""
        return frozenset({self.wire_type, LEN} if self.packable else {self.wire_type})

    @property
    def walk_kind(self) -> int:
        """How the walk gathers the field (SCALAR, VARINTS, ...; see ``walk_schema``)."""
        if self.wire_type == LEN:
            # every occurrence of a message field is kept, to be merged as protobuf merges
            return MANY if self.repeated or self.message is not None else LAST
        if not self.repeated:
            if self.wire_type != VARINT:
                raise ValueError(f"{self.name}: the walk has no kind for a single "
                                 "fixed-width field")
            return SCALAR
        return {VARINT: VARINTS, I32: FIXED32S, I64: FIXED64S}[self.wire_type]

    def as_int(self, raw: int) -> int:
        """The value a varint's raw unsigned 64 bits stand for in this field's type."""
        t = self.type
        if t in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_ENUM):
            v = raw & 0xFFFFFFFF
            return v - (1 << 32) if v >= 1 << 31 else v
        if t == FieldDescriptor.TYPE_UINT32:
            return raw & 0xFFFFFFFF
        if t == FieldDescriptor.TYPE_INT64:
            return signed64(raw)
        if t == FieldDescriptor.TYPE_SINT64 or t == FieldDescriptor.TYPE_SINT32:
            return (raw >> 1) ^ -(raw & 1)
        if t == FieldDescriptor.TYPE_BOOL:
            return int(raw != 0)
        return raw


def _short_name(desc: Descriptor) -> str:
    return desc.full_name.split(".", 1)[1]


def _descriptors() -> dict[str, Descriptor]:
    """Every message reachable from the five, by name without the package
    ("TensorProto.Segment") and by its own name ("Segment") where that is unique."""
    found: dict[str, Descriptor] = {}
    todo = [cls.DESCRIPTOR for cls in MESSAGE_CLASSES.values()]
    while todo:
        d = todo.pop()
        name = _short_name(d)
        if name in found:
            continue
        found[name] = d
        for fd in d.fields:
            if fd.message_type is not None:
                todo.append(fd.message_type)
    own = [d.name for d in found.values()]
    for d in list(found.values()):
        if own.count(d.name) == 1:
            found.setdefault(d.name, d)
    return found


_DESCRIPTORS: Final = _descriptors()


_KIND_TO_MESSAGE: Final = {k: cls.DESCRIPTOR.name for k, cls in MESSAGE_CLASSES.items()}


def schema_name(message: str) -> str:
    """The message name for a kind name ("sequence" -> "SequenceProto"); others as given."""
    return _KIND_TO_MESSAGE.get(message, message)


def known_message(message: str) -> bool:
    """Whether ``message_schema`` knows ``message``."""
    return schema_name(message) in _DESCRIPTORS


@cache
def message_schema(message: str) -> dict[int, FieldSpec]:
    """Field number -> FieldSpec for a message name ("TensorProto", "TensorProto.Segment",
    "Segment", or a kind name such as "sequence")."""
    desc = _DESCRIPTORS[schema_name(message)]
    specs: dict[int, FieldSpec] = {}
    for fd in desc.fields:
        enum = None
        if fd.enum_type is not None:
            enum = {v.number: v.name for v in fd.enum_type.values}
        specs[fd.number] = FieldSpec(
            number=fd.number, name=fd.name, type=fd.type,
            wire_type=_SCALAR_WIRE[fd.type], repeated=is_repeated(fd),
            message=_short_name(fd.message_type) if fd.message_type is not None else None,
            enum=enum,
        )
    return specs


def walk_schema(message: str, names: dict[str, str] | None = None) -> Schema:
    """The walk's view of ``message``: each field's name (renamed by ``names``) and how
    the walk gathers it."""
    names = names or {}
    return {n: (names.get(spec.name, spec.name), spec.walk_kind)
            for n, spec in sorted(message_schema(message).items())}
