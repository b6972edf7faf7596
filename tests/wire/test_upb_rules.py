"""Well-formedness follows upb, protobuf's compiled parser, the one onnx's users run (issue 43):
bytes upb refuses are never a well-formed reading, nor a value ``read`` returns.

The checks upb makes (upb/wire/decode.c, upb/wire/reader.c) that our walks lacked:

- a LEN field's length is a varint of at most 5 bytes: one written in 6 to 10 bytes is
  "Wire format was corrupt" (protobuf's pure-Python parser takes it: upb is followed);
- groups and messages count in one depth of 100: a group in a message at depth k nests
  at most 100 - k deep (upb's ``_upb_WireReader_SkipGroup`` is given the decoder's depth).

Each case is checked against upb's own ``FromString`` as well as against what we expect,
in the walk this suite runs (compiled, or ``ONNXDATA_PURE_PYTHON=1``); the same bytes are
kept in tests/data/fuzz-regressions/, which the walk differential reads in both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf.message import DecodeError as ProtobufDecodeError

import onnxdata
from onnxdata.core.messages import kind_class
from onnxdata.wire import decode
from onnxdata.wire.field_tree import field_tree
from onnxdata.wire.format import WireError, read_length
from onnxdata.wire.source import Source
from tests import wire_model
from tests.wire_bytes import key, ld, varint, vint

KINDS = ("sequence", "optional", "map", "tensor", "sparse_tensor")
UPB = wire_model.UPB  # upb that checks lengths as upb 7 does


def padded(value: int, nbytes: int) -> bytes:
    """``value`` as a varint of exactly ``nbytes`` bytes (zero continuation bytes added)."""
    out = bytearray(varint(value))
    assert len(out) <= nbytes
    if len(out) < nbytes:
        out[-1] |= 0x80
        out += b"\x80" * (nbytes - len(out) - 1) + b"\x00"
    return bytes(out)


def ld_padded(number: int, payload: bytes, nbytes: int) -> bytes:
    return key(number, 2) + padded(len(payload), nbytes) + payload


def upb_takes(data: bytes, kind: str) -> bool:
    try:
        kind_class(kind).FromString(data)
    except (ProtobufDecodeError, RuntimeError, ValueError):
        return False
    return True


def well_formed(data: bytes) -> dict[str, bool]:
    return {r.kind_name: r.well_formed for r in onnxdata.readings(data)}


def read_refused(data: bytes, kind: Any, folder: Path) -> bool:
    path = folder / "value.pb"
    path.write_bytes(data)
    try:
        onnxdata.read(path, kind)
    except onnxdata.DecodeError:
        return True
    except onnxdata.OnnxDataError:
        return False
    return False


# --------------------------------------------------------------------------- lengths

def test_read_length_takes_5_bytes_and_refuses_more_where_fewer_would_do() -> None:
    assert read_length(padded(3, 5) + b"xyz", 0, 8) == (3, 5)
    for n in range(6, 11):
        with pytest.raises(WireError, match=f"length 3 written in {n} bytes .protobuf reads a "
                                            "length in at most 5"):
            read_length(padded(3, n), 0, n)
    big = varint(1 << 35)  # needs 6 bytes: kept, for files over 2 GiB (upb refuses any)
    assert read_length(big, 0, len(big)) == (1 << 35, 6)
    with pytest.raises(WireError, match="written in 7 bytes"):
        read_length(padded(1 << 35, 7), 0, 7)


#: Where a length sits: (name, bytes with the length written in ``n`` bytes, the kind
#: they are meant as).
PLACES: list[tuple[str, Any, str]] = [
    ("tensor name", lambda n: vint(2, 1) + ld_padded(8, b"t", n), "tensor"),
    ("tensor raw_data", lambda n: ld(1, varint(1)) + vint(2, 1) + ld_padded(9, b"\0" * 4, n),
     "tensor"),
    ("packed dims", lambda n: ld_padded(1, varint(0), n) + vint(2, 1), "tensor"),
    ("third of a string_data run",
     lambda n: ld(1, varint(4)) + vint(2, 8) + ld(6, b"a") * 2 + ld_padded(6, b"b", n)
     + ld(6, b"c"), "tensor"),
    ("unknown LEN field", lambda n: vint(2, 1) + ld_padded(20, b"", n), "tensor"),
    ("LEN in an unknown group", lambda n: key(20, 3) + ld_padded(1, b"", n) + key(20, 4),
     "tensor"),
    ("sequence element", lambda n: vint(2, 1) + ld(3, b"") * 3 + ld_padded(3, b"", n),
     "sequence"),
    ("tensor in a sequence element",
     lambda n: vint(2, 1) + ld(3, vint(2, 1) + ld_padded(8, b"t", n)) * 3, "sequence"),
    ("sparse values' name", lambda n: ld(1, vint(2, 1) + ld_padded(8, b"v", n)),
     "sparse_tensor"),
    ("map's string key", lambda n: vint(2, 8) + ld_padded(4, b"k", n), "map"),
    ("optional's tensor", lambda n: vint(2, 1) + ld_padded(3, vint(2, 1), n), "optional"),
]


@pytest.mark.parametrize(("name", "make", "kind"), PLACES, ids=[p[0] for p in PLACES])
def test_a_length_upb_refuses_is_refused_everywhere(name: str, make: Any, kind: str,
                                                     tmp_path: Path) -> None:
    """Issue 43: a length in 6 to 10 bytes was well formed to every reading and read
    returned a value; upb refuses it. In 5 bytes it is fine (upb takes it)."""
    five = make(5)
    assert well_formed(five)[kind] and not read_refused(five, kind, tmp_path)
    for n in (6, 10):
        data = make(n)
        got = well_formed(data)
        if UPB:  # as other kinds the length may be inside bytes no one parses
            assert got == {k: upb_takes(data, k) for k in KINDS}
        assert not got[kind], f"{name} in {n} bytes is well formed"
        misfit = next(r for r in onnxdata.readings(data) if r.kind_name == kind).misfit
        assert misfit is not None and f"written in {n} bytes" in misfit.reason
        assert read_refused(data, kind, tmp_path)
        fitted = field_tree(Source.of_buffer(data), kind).misfit
        assert fitted is not None and f"written in {n} bytes" in fitted.reason


def test_a_string_run_stops_at_an_overlong_length() -> None:
    """The run splitters (compiled and numpy) hand an overlong length to the walk, which
    says what is wrong, as they do a length cut off."""
    data = ld(6, b"a") * 2 + ld_padded(6, b"b", 6) + ld(6, b"c")
    arr = np.frombuffer(data, np.uint8)
    for split in (decode.split_strings, decode.split_strings_reference):
        assert split(arr, 0, len(data), 0x32) is None
        starts, ends, stop = split(arr, 0, len(data), 0x32, partial=True)  # type: ignore[misc]
        assert starts.tolist() == [2, 5] and ends.tolist() == [3, 6] and stop == 6
    five = ld(6, b"a") + ld_padded(6, b"b", 5)
    got = decode.split_strings(np.frombuffer(five, np.uint8), 0, len(five), 0x32)
    assert got is not None and got[0].tolist() == [2, 9]


# --------------------------------------------------------------------------- groups

def groups(depth: int, number: int = 20) -> bytes:
    out = b""
    for _ in range(depth):
        out = key(number, 3) + out + key(number, 4)
    return out


def nested(levels: int, inner: bytes) -> bytes:
    """A sequence whose elements are sequences ``levels`` deep (the innermost at depth
    ``levels``), ``inner`` the innermost's fields."""
    for _ in range(levels):
        inner = vint(2, 3) + ld(5, inner)
    return inner


@pytest.mark.parametrize(("levels", "deep", "well"), [
    (0, 100, True), (0, 101, False), (1, 99, True), (1, 100, False), (50, 50, True),
    (50, 51, False), (99, 1, True), (100, 1, False)])
def test_groups_nest_as_deep_as_the_messages_around_them_leave(
        levels: int, deep: int, well: bool, tmp_path: Path) -> None:
    """Issue 43: upb counts groups and messages in one depth of 100; our walks gave every
    message's groups 100 levels of their own."""
    data = nested(levels, groups(deep))
    if UPB:
        assert upb_takes(data, "sequence") == well
    assert well_formed(data)["sequence"] == well
    assert read_refused(data, "sequence", tmp_path) == (not well)
    if not well:
        misfit = field_tree(Source.of_buffer(data), "sequence").misfit  # (it refuses groups too)
        assert misfit is not None and misfit.reason == ("groups nested deeper than 100 "
                                                        "(counting the messages they are in)")


@pytest.mark.parametrize(("place", "levels"), [
    ("a tensor's segment", lambda g: ld(3, ld(3, groups(g)))),
    ("an external_data entry", lambda g: ld(3, ld(13, groups(g)))),
    ("alike tensors, walked by layout", lambda g: ld(3, groups(g)) * 5),
])
def test_groups_in_a_tensor_in_a_sequence(place: str, levels: Any) -> None:
    """A sequence's tensor is at depth 1 and its segment or entry at 2: 98 levels of
    groups there, not 99."""
    assert well_formed(vint(2, 1) + levels(98 if "alike" not in place else 99))["sequence"]
    data = vint(2, 1) + levels(99 if "alike" not in place else 100)
    if UPB:
        assert not upb_takes(data, "sequence")
    assert not well_formed(data)["sequence"]
