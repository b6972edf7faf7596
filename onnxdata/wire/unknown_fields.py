"""Where the first field is that a message's schema does not take, in the message or in any
message in it: a field number it has not, or a known one given with another wire type
(protobuf sets either aside as unknown). ``load`` asks it of every buffer it parses, to warn
when the bytes are most likely another message (issue 39), so the answer must cost little
beside protobuf's parse: the compiled walk (``_layouts.unknown_field_at``) reads each tag
once in C and skips every payload by its length (a sequence of 100,000 small tensors: a
few percent of its parse), and says where the field is (the field tree would say it by
building a Python object per field: 11 s for a million tensors). ``unknown_field_at_reference``
is the same walk in Python.
"""

from __future__ import annotations

from array import array
from typing import Final

import numpy as np

from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.paths import join_path
from onnxdata.wire.field_tree import Misfit
from onnxdata.wire.format import (
    EGROUP,
    LEN,
    SGROUP,
    WIRE_TYPE_NAMES,
    WireBuffer,
    WireError,
    iter_fields,
    read_tag,
)
from onnxdata.wire.loops import layout_loop
from onnxdata.wire.schema import message_schema, schema_name

__all__ = ["unknown_field", "unknown_field_at", "unknown_field_at_reference"]


def _messages() -> list[str]:
    """Every message reachable from the five data messages, the five first."""
    found = ["SequenceProto", "OptionalProto", "MapProto", "TensorProto", "SparseTensorProto"]
    for name in found:  # (grows as it goes)
        for spec in message_schema(name).values():
            if spec.message is not None and spec.message not in found:
                found.append(spec.message)
    return found


_MESSAGES: Final = _messages()
_INDEX: Final = {name: i for i, name in enumerate(_MESSAGES)}
#: The field numbers a table row holds: one past the largest of any message's.
_WIDTH: Final = 1 + max(n for m in _MESSAGES for n in message_schema(m))
_CHILD: Final = 8  # (_layouts.pyx's U_CHILD_SHIFT)


def _table() -> array[int]:
    """``_layouts.unknown_field_at``'s table: per message and field number, the wire types
    the field may be given with (bits 0-5; a repeated number field packed too) and, for a
    message field, its message's index + 1 (bits 8 and up)."""
    table = array("i", [0] * (len(_MESSAGES) * _WIDTH))
    for m, name in enumerate(_MESSAGES):
        for number, spec in message_schema(name).items():
            entry = 0
            for wire_type in spec.wire_types:
                entry |= 1 << wire_type
            if spec.message is not None:
                entry |= (_INDEX[spec.message] + 1) << _CHILD
            table[m * _WIDTH + number] = entry
    return table


_TABLE: Final = _table()
_TABLE_NP: Final = np.frombuffer(_TABLE, np.int32)


#: The trail the compiled walk fills: the depth, then a number and an index per depth.
_TRAIL: Final = 2 * (MAX_DEPTH + 1) + 1
Trail = tuple[tuple[int, int], ...]


def unknown_field(data: WireBuffer, message: str) -> Misfit | None:
    """The first field (in wire order, depth first) that the schema of ``message``
    ("TensorProto", "sequence", ...) or of a message in it does not take, as the field
    tree words it (``field_tree(data, message).misfit``: its reason, the path of the
    message or field, its offset), without building the tree; None where every field
    fits, or the bytes are bad (protobuf's parse says why)."""
    found = unknown_field_at(data, message)
    return None if found is None else _misfit(data, schema_name(message), *found)


def unknown_field_at(data: WireBuffer, message: str) -> tuple[int, Trail] | None:
    """The offset of the first field the schema of ``message`` or of a message in it does
    not take, and the (number, index) of each field taken down to it, that one last; None
    where there is none or the bytes are bad."""
    if layout_loop is None:
        return unknown_field_at_reference(data, message)
    trail = np.zeros(_TRAIL, np.int64)
    got = layout_loop.unknown_field_at(data, _TABLE_NP, _WIDTH, _INDEX[schema_name(message)],
                                       trail)
    if got < 0:
        return None
    steps = trail[1:3 + 2 * int(trail[0])].tolist()
    return int(got), tuple(zip(steps[::2], steps[1::2], strict=True))


def unknown_field_at_reference(data: WireBuffer, message: str) -> tuple[int, Trail] | None:
    """``unknown_field_at`` in Python: the reference the compiled walk is checked against."""
    try:
        return _at(data, 0, len(data), _INDEX[schema_name(message)], 0)
    except (WireError, _Bad):
        return None


class _Bad(Exception):
    """Bytes the walk stops at (nesting past MAX_DEPTH)."""


def _at(data: WireBuffer, start: int, end: int, message: int, depth: int
        ) -> tuple[int, Trail] | None:
    if depth > MAX_DEPTH:
        raise _Bad
    row = message * _WIDTH
    seen: dict[int, int] = {}
    for f in iter_fields(data, start, end):
        index = seen.get(f.number, 0)
        seen[f.number] = index + 1
        entry = _TABLE[row + f.number] if f.number < _WIDTH else 0
        if not (entry >> f.wire_type) & 1:
            return f.offset, ((f.number, index),)
        if f.wire_type == LEN and entry >> _CHILD:
            inner = _at(data, f.start, f.end, (entry >> _CHILD) - 1, depth + 1)
            if inner is not None:
                return inner[0], ((f.number, index), *inner[1])
    return None


def _misfit(data: WireBuffer, message: str, offset: int, trail: Trail) -> Misfit:
    """The field tree's words for the field at ``offset`` that ``trail`` leads to."""
    path = ""
    for number, index in trail[:-1]:
        step = message_schema(message)[number]
        path = join_path(path, f"{step.name}[{index}]" if step.repeated else step.name)
        assert step.message is not None
        message = step.message
    number, index = trail[-1]
    wire_type = read_tag(data, offset, len(data))[1]
    spec = message_schema(message).get(number)
    if spec is None:
        return Misfit(offset, path, f"{message} has no field {number} "
                                    f"(wire type {WIRE_TYPE_NAMES[wire_type]})")
    got = "a group" if wire_type in (SGROUP, EGROUP) else \
        f"wire type {WIRE_TYPE_NAMES[wire_type]}"
    return Misfit(offset, join_path(path, f"{spec.name}[{index}]" if spec.repeated
                                    else spec.name),
                  f"field {number} ({spec.name}) should be "
                  f"{WIRE_TYPE_NAMES[spec.wire_type]} but is {got}")
