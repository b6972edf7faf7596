"""Which loop walks a file's root (walk.scan): the Python walk takes long runs of one
field of short values in bulk, the compiled loop takes fields that change at every step,
come one number (fixed-width or varint) at a time or are long
(``walk_compiled.short_runs``); either way the root's fields are the Python walk's."""

from __future__ import annotations

import struct

import pytest

from onnxdata.wire import walk, walk_compiled
from onnxdata.wire.source import Source
from onnxdata.wire.walk import MAP, OPTIONAL, SEQUENCE, TENSOR, Where, python_scan
from tests.wire_bytes import ld, vint

SCALAR = vint(2, 1) + ld(9, struct.pack("<f", 2.5))
ROOTS = {  # name: (bytes, schema, short runs)
    "optional-written-again-and-again": ((vint(2, 1) + ld(3, SCALAR)) * 500, OPTIONAL, True),
    "floats-one-at-a-time": (vint(1, 300) + vint(2, 1) + (b"\x25" + struct.pack("<f", 1)) * 300,
                             TENSOR, True),
    "a-sequence-of-tensors": (vint(2, 1) + ld(3, SCALAR) * 500, SEQUENCE, False),
    "strings-in-one-tensor": (vint(1, 400) + vint(2, 8) + ld(6, b"") * 400, TENSOR, False),
    "a-few-fields": (vint(2, 1) + ld(3, SCALAR), OPTIONAL, False),
    "one-big-payload": (vint(1, 2000) + vint(2, 1) + ld(9, bytes(8000)), TENSOR, False),
    # elements of 128 bytes or more: the Python walk's runs are of one-byte lengths
    "a-sequence-of-long-elements": (vint(2, 1) + ld(3, vint(1, 200) + vint(2, 1) +
                                                   ld(9, bytes(800))) * 40, SEQUENCE, True),
    "elements-just-short-of-long": (vint(2, 1) + ld(3, vint(2, 1) + ld(9, bytes(100))) * 100,
                                    SEQUENCE, False),
    # a map's int64 keys as protobuf writes them (proto2: not packed), one varint each
    "map-keys-one-at-a-time": (vint(2, 7) + b"".join(vint(3, 1 << 21 | i) for i in range(300))
                               + ld(5, vint(2, 1) + ld(3, SCALAR) * 300), MAP, True),
}


@pytest.mark.parametrize("name", sorted(ROOTS))
def test_short_runs(name: str) -> None:
    data, _, short = ROOTS[name]
    assert walk_compiled.short_runs(Source.of_buffer(data)) is short


@pytest.mark.parametrize("name", sorted(ROOTS))
def test_the_root_has_the_python_walks_fields(name: str) -> None:
    data, schema, _ = ROOTS[name]
    root = Where([(0, len(data))])
    got = walk.scan(Source.of_buffer(data), root, schema)
    want = python_scan(Source.of_buffer(data), root, schema)
    for part in ("scalars", "counts", "last", "unknown"):
        assert getattr(got, part) == getattr(want, part), part
    assert {k: list(v) for k, v in got.many.items()} == \
        {k: list(v) for k, v in want.many.items()}
