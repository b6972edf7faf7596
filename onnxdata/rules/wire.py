"""The wire rule: field numbers and wire types against the schema of each message."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.unknown_fields import UnknownFieldSet

from onnxdata.core.messages import (
    MapProto,
    OptionalProto,
    SequenceProto,
    SparseTensorProto,
    TensorProto,
    is_repeated,
)
from onnxdata.core.paths import join_path
from onnxdata.errors import Problem
from onnxdata.wire.format import I32, I64, LEN, VARINT, WIRE_TYPE_NAMES

__all__ = ["wire_field_problems"]


# --------------------------------------------------------------------------- wire

_SCALAR_WIRE: Final[dict[int, int]] = {
    FieldDescriptor.TYPE_FLOAT: I32, FieldDescriptor.TYPE_FIXED32: I32,
    FieldDescriptor.TYPE_SFIXED32: I32, FieldDescriptor.TYPE_DOUBLE: I64,
    FieldDescriptor.TYPE_FIXED64: I64, FieldDescriptor.TYPE_SFIXED64: I64,
    FieldDescriptor.TYPE_STRING: LEN, FieldDescriptor.TYPE_BYTES: LEN,
    FieldDescriptor.TYPE_MESSAGE: LEN,
}


def _schema_of(desc: Descriptor, out: dict[str, dict[int, tuple[str, frozenset[int]]]]) -> None:
    if desc.name in out:
        return
    fields: dict[int, tuple[str, frozenset[int]]] = {}
    out[desc.name] = fields
    for fd in desc.fields:
        wire = _SCALAR_WIRE.get(fd.type, VARINT)
        allowed = {wire}
        if is_repeated(fd) and wire != LEN:
            allowed.add(LEN)  # packed
        fields[fd.number] = (fd.name, frozenset(allowed))
        if fd.message_type is not None:
            _schema_of(fd.message_type, out)


#: For each message name: field number -> (field name, wire types the field accepts).
_SCHEMA: Final[dict[str, dict[int, tuple[str, frozenset[int]]]]] = {}
for _cls in (SequenceProto, OptionalProto, MapProto, TensorProto, SparseTensorProto):
    _schema_of(_cls.DESCRIPTOR, _SCHEMA)


def _wire_names(types: frozenset[int]) -> str:
    packed = len(types) > 1
    return " or ".join("packed LEN" if t == LEN and packed else WIRE_TYPE_NAMES[t]
                       for t in sorted(types, key=lambda t: (t == LEN, t)))


def wire_field_problems(path: str, message_name: str,
                        fields: Iterable[tuple[int, int]]) -> list[Problem]:
    """Fields the schema of ``message_name`` lacks, or that carry the wrong wire type.

    ``message_name`` is a descriptor name ("TensorProto", "SequenceProto",
    "Segment", "StringStringEntryProto", ...); ``fields`` are ``(number,
    wire_type)`` pairs, either every field seen on the wire or only the ones
    protobuf kept as unknown. Either means the bytes were read as the wrong
    message, or were written by something else.
    """
    schema = _SCHEMA[message_name]
    out: list[Problem] = []
    for number, wire_type in fields:
        wname = WIRE_TYPE_NAMES.get(wire_type, str(wire_type))
        known = schema.get(number)
        if known is None:
            out.append(Problem(path, f"unknown field {number} ({wname}): {message_name} has "
                                     "no such field; were these bytes another message?"))
        elif wire_type not in known[1]:
            name, allowed = known
            out.append(Problem(join_path(path, name),
                               f"field {number} ({name}) has wire type {wname}, but the schema "
                               f"says {_wire_names(allowed)}; were these bytes another message?"))
    return out


def unknown_field_list(message: Any) -> list[Any]:
    """The unknown fields protobuf kept (field_number, wire_type, data); 4.25 and 7.x alike."""
    found = UnknownFieldSet(message)
    return [found[i] for i in range(len(found))]


def unknown_field_problems(path: str, message: Any) -> list[Problem]:
    """Problems for the unknown fields protobuf kept in ``message`` (not its children)."""
    name: str = message.DESCRIPTOR.name
    # A known field with an accepted wire type lands here only as a closed enum's
    # out-of-range value (TensorProto.data_location): tensor_storage_problems reports it.
    return wire_field_problems(path, name, [(f.field_number, f.wire_type)
                                            for f in unknown_field_list(message)])
