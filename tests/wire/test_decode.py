"""wire/decode.py's vectorised primitives against wire/format.py's scalar reader and
protobuf's parser."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onnxdata import MapProto, TensorProto
from onnxdata.wire import decode
from onnxdata.wire.decode import decode_varints, split_strings, strings_array
from onnxdata.wire.format import WireError, encode_varint, read_varint

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
U64 = (1 << 64) - 1


def scalar_read(data: bytes) -> list[int]:
    out = []
    pos = 0
    while pos < len(data):
        value, pos = read_varint(data, pos, len(data))
        out.append(value)
    return out


def u8(data: bytes) -> np.ndarray:
    return np.frombuffer(data, np.uint8)


# Values of every length: one byte, the 4-byte words, the 8-byte words, 9 and 10 bytes.
values = st.one_of(st.integers(0, 127), st.integers(0, (1 << 28) - 1),
                   st.integers(0, (1 << 56) - 1), st.integers(0, U64))
# Varints as protobuf may write them, also over-long (padded with 0x80 bytes) and with
# bits past the 64th in the 10th byte, which protobuf drops.


def padded(value: int, pad: int) -> bytes:
    """``value``'s varint made ``pad`` bytes longer with continuation bytes of zero."""
    e = encode_varint(value)
    if not pad:
        return e
    return e[:-1] + bytes([e[-1] | 0x80]) + b"\x80" * (pad - 1) + b"\x00"


odd_varints = st.builds(padded, st.integers(0, (1 << 49) - 1), st.integers(0, 2))
tenth = st.builds(lambda top: b"\xff" * 9 + bytes([top]), st.integers(1, 127))


@pytest.mark.slow
@pytest.mark.parametrize("chunk", [1, 3, 11, decode.CHUNK])
@SETTINGS
@given(st.lists(st.one_of(values.map(encode_varint), odd_varints, tenth), max_size=80))
def test_varints_as_the_scalar_reader_reads_them(chunk: int, encoded: list[bytes]) -> None:
    data = b"".join(encoded)
    want = scalar_read(data)
    with mock.patch.object(decode, "CHUNK", chunk):
        got = decode_varints(u8(data))
        low = decode_varints(u8(data), np.uint32)
    assert got.dtype == np.uint64 and got.tolist() == want
    assert low.dtype == np.uint32 and low.tolist() == [v & 0xFFFFFFFF for v in want]


@pytest.mark.slow
@SETTINGS
@given(st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=60),
       st.lists(st.integers(-(1 << 31), (1 << 31) - 1), max_size=60))
def test_varints_as_protobuf_reads_them(int64s: list[int], int32s: list[int]) -> None:
    t = TensorProto(int64_data=int64s, int32_data=int32s)
    data = t.SerializeToString()
    parsed = TensorProto.FromString(data)
    fields = {5: parsed.int32_data, 7: parsed.int64_data}
    pos = 0
    while pos < len(data):
        key, pos = read_varint(data, pos, len(data))
        length, pos = read_varint(data, pos, len(data))
        payload = u8(data[pos:pos + length])
        if key >> 3 == 7:
            assert decode_varints(payload).view(np.int64).tolist() == list(fields[7])
        else:
            assert decode_varints(payload, np.uint32).view(np.int32).tolist() == list(fields[5])
        pos += length


def test_the_common_shapes_in_bulk() -> None:
    f16 = np.arange(1 << 16, dtype=np.uint16)
    t = TensorProto(int32_data=f16.astype(np.int32).tolist())
    payload = u8(t.SerializeToString()[4:])  # tag 0x2a and a 3-byte length
    assert (decode_varints(payload, np.uint32) == f16).all()
    small = np.arange(100, dtype=np.uint8)
    assert (decode_varints(small) == small).all()
    assert decode_varints(u8(b"")).size == 0


@pytest.mark.parametrize(("data", "reason", "at"), [
    (b"\x80", "truncated", 0),
    (b"\x01\x02\xff\xff", "truncated", 2),
    (b"\x05" + b"\xff" * 10 + b"\x01", "longer than 10 bytes", 1),
    (b"\xff" * 30, "longer than 10 bytes", 0),
])
@pytest.mark.parametrize("chunk", [2, decode.CHUNK])
def test_bad_varints_say_what_and_where(data: bytes, reason: str, at: int, chunk: int) -> None:
    with mock.patch.object(decode, "CHUNK", chunk), pytest.raises(WireError) as info:
        decode_varints(u8(data))
    assert reason in info.value.reason and info.value.offset == at
    with pytest.raises(WireError, match=reason):
        scalar_read(data)


def test_wrong_output_type_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="uint32 or uint64"):
        decode_varints(u8(b"\x01"), np.int64)


# --------------------------------------------------------------------------- strings

strings = st.lists(st.one_of(st.binary(max_size=12), st.binary(min_size=120, max_size=300),
                             st.sampled_from([b"2", b"22\x32", b"\x00", b"a\x00", b""])),
                   max_size=40)


@pytest.mark.slow
@SETTINGS
@given(strings, st.sampled_from(["", "n"]), st.binary(max_size=4))
def test_strings_as_protobuf_reads_them(values: list[bytes], name: str, before: bytes) -> None:
    t = TensorProto(data_type=8, dims=[len(values)], string_data=values)
    if name:
        t.name = name
    data = before + t.SerializeToString()
    arr = u8(data)
    head = len(before) + len(TensorProto(data_type=8, dims=[len(values)]).SerializeToString())
    if not values:
        return
    got = split_strings(arr, head, len(data), 0x32)
    assert got is not None
    starts, ends, stop = got
    assert stop == len(data) - (len(name) + 2 if name else 0)
    assert strings_array(data, starts, ends).tolist() == values
    assert strings_array(memoryview(data), starts, ends).tolist() == values


@pytest.mark.slow
@SETTINGS
@given(st.lists(st.binary(max_size=8), min_size=1, max_size=30))
def test_map_string_keys(keys: list[bytes]) -> None:
    m = MapProto(key_type=8, string_keys=keys)
    data = m.SerializeToString()
    got = split_strings(u8(data), 2, len(data), 0x22)
    assert got is not None and strings_array(data, got[0], got[1]).tolist() == keys


def test_long_strings_and_the_ones_it_leaves_to_the_caller() -> None:
    long = TensorProto(string_data=[b"x" * 20000, b"y"]).SerializeToString()  # 3-byte length
    starts, ends, stop = split_strings(u8(long), 0, len(long), 0x32) or ((), (), 0)
    assert strings_array(long, np.asarray(starts), np.asarray(ends)).tolist() == \
        [b"x" * 20000, b"y"] and stop == len(long)
    assert split_strings(u8(long[:2]), 0, 2, 0x32) is None  # its length cut off
    cut = TensorProto(string_data=[b"abc", b"defg"]).SerializeToString()[:-1]
    assert split_strings(u8(cut), 0, len(cut), 0x32) is None
    assert split_strings(u8(b"\x01\x32\x00"), 0, 3, 0x32) is None  # not at a tag


def test_strings_at_the_very_end_of_the_buffer_and_empty_ones() -> None:
    data = b"\x32\x00\x32\x01\x00"
    starts, ends, stop = split_strings(u8(data), 0, 5, 0x32) or ((), (), 0)
    assert stop == 5 and strings_array(data, np.asarray(starts), np.asarray(ends)).tolist() \
        == [b"", b"\x00"]
    assert strings_array(b"", np.zeros(0, np.intp), np.zeros(0, np.intp)).size == 0


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 140), st.integers(1, 150), st.binary(max_size=1)),
                min_size=1, max_size=6))
def test_rows_of_one_length_whatever_their_bytes(rows: list[tuple[int, int, bytes]]) -> None:
    """Rows of equal-length values (the strided path), their bytes tag-like or not."""
    values = [(fill or b"2") * length for length, count, fill in rows for _ in range(count)]
    data = TensorProto(string_data=values, name="after").SerializeToString()
    got = split_strings(u8(data), 0, len(data), 0x32)
    assert got is not None
    assert strings_array(data, got[0], got[1]).tolist() == values
    assert data[got[2]] == 0x42  # the name field's tag


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(1, 30)), min_size=0, max_size=30),
       st.integers(0, 5))
def test_the_bytes_inside_packed_runs_are_those_a_running_count_finds(
        runs: list[tuple[int, int]], tail: int) -> None:
    # payloads._inside clears the gaps' bytes when runs are close, else counts; both
    # must mark exactly the bytes of the runs
    from onnxdata.wire.field_values import _inside

    starts, ends, pos = [], [], 0
    for gap, length in runs:
        starts.append(pos + gap)
        ends.append(pos + gap + length)
        pos += gap + length
    size = pos + tail
    expected = np.zeros(size, bool)
    for a, b in zip(starts, ends, strict=True):
        expected[a:b] = True
    got = _inside(np.array(starts, np.int64), np.array(ends, np.int64), size)
    assert np.array_equal(got, expected)
