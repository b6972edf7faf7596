"""Which loop walks a file's root (walk.scan): the Python walk takes long runs of one
field of short values in bulk, the compiled loop takes fields that change at every step,
come one number (fixed-width or varint) or group at a time, have tags of two bytes or are
long (looking past a few long values early in a big file)
(``compiled.short_runs``); either way the root's fields are the Python walk's."""

from __future__ import annotations

import struct

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from onnxdata.wire import compiled, loops, walk
from onnxdata.wire.fields import Occurrences
from onnxdata.wire.source import Source
from onnxdata.wire.walk import MAP, OPTIONAL, SEQUENCE, TENSOR, scan_reference
from tests.wire_bytes import ld, vint

SCALAR = vint(2, 1) + ld(9, struct.pack("<f", 2.5))
ROOTS = {  # name: (bytes, schema, short runs)
    "optional-written-again-and-again": ((vint(2, 1) + ld(3, SCALAR)) * 500, OPTIONAL, True),
    "floats-one-at-a-time": (vint(1, 300) + vint(2, 1) + (b"\x25" + struct.pack("<f", 1)) * 300,
                             TENSOR, True),
    "a-sequence-of-tensors": (vint(2, 1) + ld(3, SCALAR) * 500, SEQUENCE, False),
    "strings-in-one-tensor": (vint(1, 2100) + vint(2, 8) + ld(6, b"") * 2100, TENSOR, False),
    # a root of at most the sample's 4,096 bytes: the compiled loop walks it all
    "a-few-fields": (vint(2, 1) + ld(3, SCALAR), OPTIONAL, True),
    "few-strings-in-one-tensor": (vint(1, 400) + vint(2, 8) + ld(6, b"") * 400, TENSOR, True),
    # values of 256 bytes and more (the sample cut short) in a file read whole: the loop's
    "one-big-payload": (vint(1, 2000) + vint(2, 1) + ld(9, bytes(8000)), TENSOR, True),
    "a-sequence-of-4-kb-tensors": (vint(2, 1) + ld(3, vint(2, 1) + ld(9, bytes(4000))) * 100,
                                   SEQUENCE, True),
    # ... but past source.WHOLE the Python walk's record serves the explorer's five readings
    "one-big-payload-in-a-big-file": (vint(1, 1 << 19) + vint(2, 1) + ld(9, bytes(1 << 21)),
                                      TENSOR, False),
    # ... where the fields after the payload are a few: still the Python walk's ...
    "a-big-payload-then-a-few-fields": (vint(2, 1) + ld(9, bytes(1 << 21)) + ld(8, b"n")
                                        + ld(12, b"d"), TENSOR, False),
    # ... but many after long values are sampled there: metadata_props (field 16, a tag of
    # two bytes: the Python walk takes them one step each) after a long name and doc_string
    "entries-after-long-values-in-a-big-file": (
        vint(2, 1) + ld(8, b"n" * (1 << 20)) + ld(12, b"d" * (1 << 20))
        + ld(16, ld(1, b"key") + ld(2, b"value")) * 3000, TENSOR, True),
    # elements of 128 bytes or more: the Python walk's runs are of one-byte lengths
    "a-sequence-of-long-elements": (vint(2, 1) + ld(3, vint(1, 200) + vint(2, 1) +
                                                   ld(9, bytes(800))) * 40, SEQUENCE, True),
    "elements-just-short-of-long": (vint(2, 1) + ld(3, vint(2, 1) + ld(9, bytes(100))) * 100,
                                    SEQUENCE, False),
    # unknown groups, which the Python walk skips a byte at a time (issue 39: 0.3 s a MB)
    "a-tensor-of-unknown-groups": (vint(1, 2) + vint(2, 7) + (
        b"\x9b\x03" + vint(1, 5) + ld(2, b"xy") + b"\x9c\x03") * 400, TENSOR, True),
    # a map's int64 keys as protobuf writes them (proto2: not packed), one varint each
    "map-keys-one-at-a-time": (vint(2, 7) + b"".join(vint(3, 1 << 21 | i) for i in range(300))
                               + ld(5, vint(2, 1) + ld(3, SCALAR) * 300), MAP, True),
}


@pytest.mark.parametrize("name", sorted(ROOTS))
def test_short_runs(name: str) -> None:
    data, _, short = ROOTS[name]
    assert compiled.short_runs(Source.of_buffer(data)) is short


@pytest.mark.parametrize("name", sorted(ROOTS))
def test_the_root_has_the_python_walks_fields(name: str) -> None:
    data, schema, _ = ROOTS[name]
    root = Occurrences([(0, len(data))])
    got = walk.scan(Source.of_buffer(data), root, schema)
    want = scan_reference(Source.of_buffer(data), root, schema)
    for part in ("scalars", "counts", "last", "unknown"):
        assert getattr(got, part) == getattr(want, part), part
    assert {k: list(v) for k, v in got.many.items()} == \
        {k: list(v) for k, v in want.many.items()}


@pytest.mark.skipif(not loops.COMPILED, reason="no compiled walk")
@settings(max_examples=400, deadline=None)
@given(st.one_of(st.binary(max_size=300),
                 st.lists(st.sampled_from([*(r[0][:200] for r in ROOTS.values()),
                                           b"\x0b\x10\x01\x0c", b"\x0c", b"\x0b" * 3,
                                           vint(5, 1 << 40), b"\x2a\x80\x01" + bytes(128)]),
                          max_size=8).map(b"".join)),
       st.integers(0, 320), st.integers(-2, 70), st.integers(-3, 200))
@example(b"\x0a\x01a", 3, 5, -1)  # a negative length: every LEN value is long
@example(b"\x08\x01\x08\x02", 4, 0, 0)  # no field asked
@example(b"\x08\x01\x0a\x05", 90, 9, 0)  # an end past the buffer: cut at its end
def test_the_compiled_sample_is_the_python_one(data: bytes, end: int, most: int,
                                               long_value: int) -> None:
    """``_walk.sample`` (what short_runs reads) against ``sample_reference``, its reference:
    the same counts, and the same place where a field breaks the wire format; also for
    arguments short_runs never passes (no field asked, an end past the buffer, a negative
    length)."""
    loop = compiled._LOOP
    assert loop is not None
    assert loop.sample(data, end, most, long_value) == \
        compiled.sample_reference(data, end, most, long_value)


@pytest.mark.parametrize("name", sorted(ROOTS))
def test_the_sample_of_each_root(name: str) -> None:
    data = ROOTS[name][0]
    want = compiled.sample_reference(data, min(len(data), 4096), 64, 128)
    assert want[0] > 0
    if compiled._LOOP is not None:
        assert compiled._LOOP.sample(data, 4096, 64, 128) == want
