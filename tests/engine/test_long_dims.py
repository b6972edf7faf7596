"""A tensor's dims past 256 (a bogus reading's, merged from thousands of occurrences) are
listed once with their count and smallest dim worked out by numpy (``engine.tensor``'s
``_Dims``): the reading's problems are protobuf's, whatever the dims hold."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import onnxdata
from onnxdata import TensorProto
from onnxdata.explorer.readings import reading

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
