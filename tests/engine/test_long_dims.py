"""A tensor's dims past 256 (a bogus reading's, merged from thousands of occurrences) are
listed once with their count and smallest dim worked out by numpy (``engine.tensor``'s
``_Dims``): the reading's problems are protobuf's, whatever the dims hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import onnxdata
from onnxdata import TensorProto
from onnxdata.explorer.readings import reading
from onnxdata.wire import decode
from tests.wire_bytes import ld

dim = st.one_of(st.just(1), st.integers(2, 9), st.just(2**62), st.just(0), st.just(-1),
                st.integers(-(2**63), 2**63 - 1))
runs = st.lists(st.tuples(dim, st.integers(1, 300)), min_size=1, max_size=6).map(
    lambda parts: [d for d, k in parts for _ in range(k)])


@settings(max_examples=150, deadline=None)
@given(runs, st.sampled_from([b"", b"\x00" * 4, b"\x00" * 8]))
def test_long_dims_give_protobufs_problems(dims: list[int], raw: bytes) -> None:
    data = TensorProto(data_type=TensorProto.FLOAT, dims=dims, raw_data=raw).SerializeToString()
    want = onnxdata.problems(onnxdata.load(data, "tensor"))
    got = reading(data, "tensor")
    assert list(got.problems) == want
    assert got.valid == (not want)


def test_a_merged_tensor_of_many_dims() -> None:
    """The dims of 1,000 occurrences merged: 1,000 dims of 2, one of them 0 (a tensor of
    no elements), then one negative (none)."""
    for bad, word in ((0, "valid"), (-3, "negative")):
        one = TensorProto(data_type=TensorProto.FLOAT, dims=[2]).SerializeToString()
        data = one * 999 + TensorProto(dims=[bad]).SerializeToString()
        want = onnxdata.problems(onnxdata.load(data, "tensor"))
        got = reading(data, "tensor")
        assert list(got.problems) == want, word


@pytest.mark.parametrize("route", ["compiled", "numpy"])
@pytest.mark.parametrize("raw", [b"", b"\x00" * 4])
@pytest.mark.parametrize("last", [0x00, 0x02, 0x7E, 0x01, 0x03])
def test_a_ten_byte_dim_whose_low_64_bits_are_zero_is_zero(tmp_path: Path, last: int,
                                                           raw: bytes, route: str,
                                                           onnx: Any) -> None:
    """70,001 packed dims, over 64 KiB (``engine.tensor._LONG_INTS``: counted by the varint
    scan, not decoded), the last one 0x80 * 9 then ``last``: protobuf (upb, and python's
    decoder) keeps bit 0 of a 10th byte (bit 63) and drops the rest, so an even one makes
    the dim 0 (no elements: raw_data must be empty) and an odd one -2**63. The reading and
    ``read`` list the problems protobuf's message has, with the scan compiled or numpy's."""
    data = ld(1, b"\x01" * 70_000 + b"\x80" * 9 + bytes([last])) + b"\x10\x01" + (
        ld(9, raw) if raw else b"")
    parsed = onnx.TensorProto.FromString(data)
    assert parsed.dims[-1] == (0 if last % 2 == 0 else -(1 << 63))
    want = onnxdata.problems(onnxdata.load(data, "tensor"))
    assert len(want) == 1 + (last % 2 == 1) + (last % 2 == 0 and bool(raw))
    path = tmp_path / "t.pb"
    path.write_bytes(data)
    with mock.patch.object(decode, "_LOOP", None if route == "numpy" else decode._LOOP):
        assert list(reading(data, "tensor").problems) == want
        with pytest.raises(onnxdata.ValidationError) as caught:
            onnxdata.read(path, "tensor")
    assert caught.value.problems == want
