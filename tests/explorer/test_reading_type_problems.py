"""A reading's problems against a declared type (``Reading.type_problems``) are the field
tree's (``type_problems_reference``) for any well-formed reading: over the compiled walk a
layout group at a time where the engine met nothing the tree stops at (``strays``), the
tree's own check where it did (issue 39)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import onnxdata
from onnxdata import strategies
from onnxdata.explorer import readings
from onnxdata.explorer.readings import reading
from onnxdata.model import type_walk
from onnxdata.model.types import DeclaredType, type_problems_reference
from tests.wire_bytes import ld, vint


@st.composite
def values_and_more(draw: st.DrawFn) -> tuple[bytes, str, DeclaredType]:
    """A drawn value's bytes with drawn fields after them (an unknown field, another
    element, another elem_type, a field of another wire type...), and its declared type
    or another."""
    t = draw(strategies.declared_types(2))
    value = draw(strategies.values(t, budget=16, max_len=4))
    data = onnxdata.serialize(onnxdata.from_numpy(value, declared=t))
    element = st.sampled_from([onnxdata.serialize(onnxdata.from_numpy(e)) for e in (
        np.zeros(2, np.float64), np.zeros((1, 2), np.float32), [np.zeros(1, np.int64)])])
    extra = draw(st.lists(st.one_of(
        st.builds(vint, st.integers(1, 20), st.integers(0, 20)),
        st.builds(ld, st.integers(1, 20), st.binary(max_size=6)),
        st.builds(ld, st.integers(1, 7), element),  # a known field, often: no stray
        st.binary(max_size=4)), max_size=3))
    other = draw(strategies.declared_types(2))
    return data + b"".join(extra), t.kind, draw(st.sampled_from([t, other]))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=values_and_more())
def test_a_reading_s_type_problems_are_the_field_tree_s(
        case: tuple[bytes, str, DeclaredType]) -> None:
    data, kind, declared = case
    r = reading(data, kind)
    if not r.well_formed:
        return
    found = r.type_problems(declared)
    event(f"valid={r.valid} strays={r.strays} type problems={bool(found)}")
    assert found == type_problems_reference(r.fit.root, declared)
    if not r.strays:
        assert r.fit.misfit is None  # (the tree is whole where the walk met no stray)


def test_an_invalid_value_is_checked_without_the_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value with problems of its own (a tensor's dims that its data does not fill) but
    no stray field is checked over the walk, with the element's exact path."""
    seq = onnxdata.from_numpy([np.zeros(2, np.float32) for _ in range(40)], "sequence")
    seq.tensor_values[9].dims[0] = 3
    r = reading(onnxdata.serialize(seq), "sequence")
    assert r.well_formed and not r.valid and not r.strays
    declared = DeclaredType("sequence", element=DeclaredType("tensor", 1, (2,)))
    calls = []

    def spied(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[1])
        return type_walk.declared_problems(*args, **kwargs)

    monkeypatch.setattr(readings, "declared_problems", spied)
    found = r.type_problems(declared)
    assert calls == ["sequence"]
    assert [(p.path, p.message) for p in found] == [
        ("tensor_values[9].dims", "declared shape [2] but dims are [3] (axis 0)")]
    assert found == type_problems_reference(r.fit.root, declared)
