"""The densify budget of one call (``onnxdata.core.budget``): one budget per outermost
block, shared by the blocks inside it, spent in place and given back whole at its end."""

from __future__ import annotations

import pytest

from onnxdata.core.budget import budget_mark, densify_budget, spend
from onnxdata.errors import ValidationError


def test_a_block_opens_a_budget_and_its_end_closes_it() -> None:
    assert budget_mark() is None
    with densify_budget(100):
        spend(30, 100, "x", "a tensor")
        assert budget_mark() == 70
        with pytest.raises(ValidationError, match="x"):
            spend(71, 100, "x", "a tensor")
    assert budget_mark() is None


def test_an_inner_block_shares_the_outer_budget() -> None:
    with densify_budget(100):
        spend(10, 100, "x", "a tensor")
        with densify_budget(1000):  # the outer budget, not a new one of 1000
            spend(10, 1000, "x", "a tensor")
            assert budget_mark() == 80
        assert budget_mark() == 80
    assert budget_mark() is None


def test_one_object_entered_again_inside_itself_keeps_the_outer_budget() -> None:
    budget = densify_budget(100)
    with budget:
        spend(10, 100, "x", "a tensor")
        with budget:
            spend(10, 100, "x", "a tensor")
        assert budget_mark() == 80  # the inner end closed nothing it did not open
    assert budget_mark() is None
    with budget:  # and it can be used again
        assert budget_mark() == 100


def test_an_error_in_the_block_closes_the_budget() -> None:
    with pytest.raises(KeyError), densify_budget(100):
        raise KeyError("x")
    assert budget_mark() is None
