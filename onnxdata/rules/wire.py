"""The wire rule: field numbers and wire types against the schema of each message."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.protobuf.unknown_fields import UnknownFieldSet

from onnxdata.core.paths import join_path
from onnxdata.errors import Problem
from onnxdata.wire.format import LEN, WIRE_TYPE_NAMES
from onnxdata.wire.schema import message_schema

__all__ = ["wire_field_problems"]


# --------------------------------------------------------------------------- wire

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
    schema = message_schema(message_name)
    out: list[Problem] = []
    for number, wire_type in fields:
        wname = WIRE_TYPE_NAMES.get(wire_type, str(wire_type))
        known = schema.get(number)
        if known is None:
            out.append(Problem(path, f"unknown field {number} ({wname}): {message_name} has "
                                     "no such field; were these bytes another message?"))
        elif wire_type not in known.wire_types:
            name, allowed = known.name, known.wire_types
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
