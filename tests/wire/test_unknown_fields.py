"""``unknown_field_at`` (the compiled walk, ``_layouts.unknown_field_at``) against its
reference, ``unknown_field_at_reference``, and both against protobuf: they find a field
where protobuf sets one aside as unknown, in the message or in any message in it, and
nowhere else."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.message import DecodeError as ProtobufDecodeError
from google.protobuf.unknown_fields import UnknownFieldSet
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onnxdata.core.messages import MESSAGE_CLASSES, is_repeated
from onnxdata.wire.field_tree import field_tree
from onnxdata.wire.loops import layout_loop
from onnxdata.wire.unknown_fields import (
    unknown_field,
    unknown_field_at,
    unknown_field_at_reference,
)
from tests.conftest import CORPUS
from tests.wire_bytes import key, ld, varint, vint

KINDS = ("tensor", "sparse_tensor", "sequence", "map", "optional")
FILES = sorted(CORPUS.glob("*/test_data_set_*/*.pb"))
TENSOR = vint(1, 2) + vint(2, 1) + ld(9, bytes(8))  # dims [2], FLOAT, raw_data
NEEDS_LOOP = pytest.mark.skipif(layout_loop is None, reason="the compiled loops are not built")


def _protobuf_knows_of_unknowns(data: bytes, kind: str) -> bool | None:
    """Whether protobuf sets any field aside as unknown anywhere in the parsed tree (None:
    it does not parse). Walks every message, as load's check must not."""
    message = MESSAGE_CLASSES[kind]()
    try:
        message.ParseFromString(data)
    except (ProtobufDecodeError, RuntimeError, ValueError):
        return None
    todo: list[Any] = [message]
    while todo:
        m = todo.pop()
        if len(UnknownFieldSet(m)):
            return True
        for fd, value in m.ListFields():
            if fd.message_type is not None:
                todo.extend(value if is_repeated(fd) else [value])
    return False


def _check(data: bytes, kind: str) -> int | None:
    """Both walks' offset (they must agree, and on the place), protobuf's answer where it
    parses, and the field tree's words for the place."""
    got = unknown_field_at(data, kind)
    assert got == unknown_field_at_reference(data, kind), (kind, data.hex())
    known = _protobuf_knows_of_unknowns(data, kind)
    if known is not None:
        assert (got is not None) == known, (kind, got, data.hex())
        if got is not None:  # (bytes that parse: the field tree's first misfit is this)
            assert unknown_field(data, kind) == field_tree(data, kind).misfit, data.hex()
    return None if got is None else got[0]


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_the_corpus_as_every_kind(path: Path) -> None:
    data = path.read_bytes()
    found = {kind: _check(data, kind) for kind in KINDS}
    assert None in found.values()  # (each file is one of them, with no unknown field)


def test_the_first_unknown_field_anywhere_in_the_tree() -> None:
    sequence = vint(2, 1) + ld(3, TENSOR) * 2 + ld(3, TENSOR + vint(100, 1))
    assert _check(sequence, "sequence") == len(vint(2, 1) + ld(3, TENSOR) * 2) + 2 + \
        len(TENSOR)  # the tag of field 100 in tensor_values[2]
    assert _check(TENSOR + vint(100, 1), "tensor") == len(TENSOR)  # at the top, too
    # a sequence read as a tensor: its first element is the tensor's segment, whose begin
    # and end the element's dims and data_type pass for, but not its raw_data
    assert _check(sequence, "tensor") == 2 + 2 + 4
    segment_of_wrong_type = ld(3, key(1, 5) + bytes(4))  # Segment.begin as fixed32
    assert _check(TENSOR + segment_of_wrong_type, "tensor") == len(TENSOR) + 2
    inner = vint(2, 1) + ld(3, TENSOR + vint(100, 1))
    deep = vint(2, 4) + ld(5, vint(2, 4) + ld(5, inner))  # sequence(sequence(sequence))
    assert _check(deep, "sequence") is not None
    assert _check(vint(1, 7) + ld(5, inner), "map") is not None  # a map's values
    assert _check(vint(2, 1) + ld(3, TENSOR) * 3, "sequence") is None
    packed_dims = ld(1, varint(2) + varint(3)) + vint(2, 1) + ld(9, bytes(24))
    assert _check(packed_dims, "tensor") is None  # a packed repeated field is no stranger


def test_a_group_is_unknown_and_bad_bytes_are_for_the_parse_to_say() -> None:
    group = key(100, 3) + vint(1, 5) + key(100, 4)
    assert _check(TENSOR + group, "tensor") == len(TENSOR)
    assert _check(TENSOR + key(100, 3), "tensor") is None  # a group never closed
    assert _check(TENSOR + ld(3, b"\xff"), "tensor") is None  # a varint cut off
    assert _check(key(5, 4), "tensor") is None  # an end-group tag alone
    nested = TENSOR + vint(100, 1)
    for _ in range(120):  # deeper than protobuf parses
        nested = vint(2, 4) + ld(5, nested)
    assert _check(nested, "sequence") is None


@NEEDS_LOOP
def test_mutants_of_the_corpus_find_the_same_place() -> None:
    rng = random.Random(39)
    for path in FILES[::3]:
        data = bytearray(path.read_bytes())
        for _ in range(20):
            mutant = bytearray(data)
            for _ in range(rng.randint(1, 3)):
                mutant[rng.randrange(len(mutant))] = rng.randrange(256)
            for kind in KINDS:
                _check(bytes(mutant), kind)


_FIELDS = st.sampled_from([vint(1, 3), vint(2, 1), ld(9, bytes(4)), ld(8, b"n"),
                           vint(100, 1), ld(3, vint(1, 0) + vint(2, 1)), ld(3, vint(9, 1)),
                           key(2, 5) + bytes(4), ld(13, ld(1, b"k") + ld(2, b"v")),
                           ld(13, vint(3, 1)), vint(14, 0), ld(16, ld(1, b"k"))])


@st.composite
def _trees(draw: Any, depth: int = 3) -> bytes:
    """A sequence, optional or map (as bytes) of tensors and of such containers, some
    fields unknown or of another wire type."""
    kind = draw(st.sampled_from(["sequence", "optional", "map"]))
    tensors = draw(st.lists(st.lists(_FIELDS, max_size=4).map(b"".join), max_size=3))
    inner = draw(st.lists(_trees(depth - 1), max_size=2)) if depth else []
    if kind == "map":
        return vint(1, 7) + ld(5, vint(2, 1) + b"".join(ld(3, t) for t in tensors))
    return vint(2, 1) + b"".join(ld(3, t) for t in tensors) + \
        b"".join(ld(5 if kind == "sequence" else 7, t) for t in inner[:1])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_trees(), st.sampled_from(KINDS))
def test_made_trees_agree_with_protobuf(data: bytes, kind: str) -> None:
    _check(data, kind)
