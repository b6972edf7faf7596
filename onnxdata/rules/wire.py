"""The wire rule: field numbers and wire types against the schema of each message."""

from __future__ import annotations

import functools
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
    out: list[Problem] = []
    made: dict[tuple[int, int], Problem | None] = {}  # (a Problem is frozen: one of each)
    for field in fields:
        if field in made:
            problem = made[field]
        else:
            said = _wire_problem(message_name, *field)
            problem = made[field] = None if said is None else \
                Problem(join_path(path, said[0]) if said[0] else path, said[1])
        if problem is not None:
            out.append(problem)
    return out


@functools.lru_cache(maxsize=4096)
def _wire_problem(message_name: str, number: int, wire_type: int) -> tuple[str, str] | None:
    """What ``wire_field_problems`` says of one field: the field's name ("" for an unknown
    field) and the message; None when the schema takes it. (A reading as the wrong message
    has a thousand such fields of a few numbers: each is worded once.)"""
    known = message_schema(message_name).get(number)
    wname = WIRE_TYPE_NAMES.get(wire_type, str(wire_type))
    if known is None:
        return "", (f"unknown field {number} ({wname}): {message_name} has no such field; "
                    "were these bytes another message?")
    if wire_type in known.wire_types:
        return None
    return known.name, (f"field {number} ({known.name}) has wire type {wname}, but the "
                        f"schema says {_wire_names(known.wire_types)}; were these bytes "
                        "another message?")


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
