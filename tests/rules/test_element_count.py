"""``rules.tensor.element_count`` of long dims (a bogus reading's 100,000, taken by C-speed
passes a chunk at a time) is the plain loop's: None for a negative dim anywhere, 0 for a
zero, and the product up to the dim that passes HUGE (a bomb of huge dims costs nothing)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnxdata.rules import tensor
from onnxdata.rules.tensor import element_count


def one_by_one(dims: list[int]) -> int | None:
    """The plain loop's count (dims this long never reach the chunked passes)."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(tensor, "_CHUNK", len(dims) + 1)
        return element_count(dims)


dim = st.one_of(st.just(1), st.integers(2, 9), st.just(2**62), st.just(0), st.just(-1),
                st.integers(-(2**63), 2**63 - 1))
runs = st.lists(st.tuples(dim, st.integers(1, 400)), max_size=8).map(
    lambda parts: [d for d, k in parts for _ in range(k)])


@settings(max_examples=300, deadline=None)
@given(runs)
def test_long_dims_count_as_the_loop_counts(dims: list[int]) -> None:
    assert element_count(dims) == one_by_one(dims)


def test_the_dim_past_huge_is_the_last_multiplied() -> None:
    dims = [1] * 300 + [2**40, 2**30, 5] + [1] * 300
    assert element_count(dims) == 2**70  # the 5 after it is not multiplied
    assert element_count([1] * 100_000) == 1
    assert element_count([3] * 100_000 + [-4]) is None
    assert element_count([2**62] * 100_000 + [0]) == 0
