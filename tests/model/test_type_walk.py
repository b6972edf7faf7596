"""The declared-type check over the compiled walk, a layout group at a time
(``model.type_walk``), says what its reference over the field tree says: the same problems,
each with the exact path of its element, in the same order, under the same cap (issue 39)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onnxdata
from onnxdata import strategies
from onnxdata.core.dtypes import DATA_TYPES, KEY_TYPES
from onnxdata.core.messages import ElemType, KindName, SequenceProto
from onnxdata.model import type_walk
from onnxdata.model.type_walk import declared_problems
from onnxdata.model.types import DeclaredType, type_problems_reference
from onnxdata.wire.field_tree import field_tree
from onnxdata.wire.loops import COMPILED
from onnxdata.wire.source import Source

CAPS = (1000, 3, 1)


def both(data: bytes, kind: Any, declared: DeclaredType, cap: int = 1000
         ) -> tuple[list[Any] | None, list[Any]]:
    fast = declared_problems(Source.of_buffer(data), kind, declared, max_problems=cap)
    walked = field_tree(data, kind)
    assert walked.misfit is None
    return fast, type_problems_reference(walked.root, declared, max_problems=cap)


def assert_same(data: bytes, kind: Any, declared: DeclaredType) -> list[Any]:
    """The problems (capped at 1,000) once both say the same under each cap."""
    said = []
    for cap in CAPS:
        fast, reference = both(data, kind, declared, cap)
        assert fast == reference, (cap, declared)
        said.append(reference)
    return said[0]


@st.composite
def mutated(draw: st.DrawFn, t: DeclaredType) -> DeclaredType:
    """``t``, or ``t`` changed somewhere: a data type, key type, kind, or a declared shape."""
    how = draw(st.sampled_from(["same", "here", "inside"]))
    if how == "inside" and t.element is not None:
        return DeclaredType(t.kind, t.elem_type, t.shape, draw(mutated(t.element)))
    if how != "here":
        return t
    what = draw(st.sampled_from(["code", "kind", "shape"]))
    if what == "code":
        codes = sorted(KEY_TYPES if t.kind == "map" else DATA_TYPES)
        return DeclaredType(t.kind, draw(st.sampled_from(codes)), t.shape, t.element)
    if what == "kind" or t.kind not in ("tensor", "sparse_tensor"):
        kinds: list[KindName] = ["tensor", "sparse_tensor", "sequence", "optional"]
        kind = draw(st.sampled_from(kinds))
        if kind in ("tensor", "sparse_tensor"):
            return DeclaredType(kind, 1)
        return DeclaredType(kind, element=t.element or DeclaredType("tensor", 1))
    dims = draw(st.lists(st.one_of(st.none(), st.integers(0, 3), st.just("N")), max_size=3))
    return DeclaredType(t.kind, t.elem_type, tuple(dims), t.element)


@st.composite
def cases(draw: st.DrawFn) -> tuple[bytes, str, DeclaredType]:
    t = draw(strategies.declared_types(3))
    value = draw(strategies.values(t, budget=24, max_len=4))
    data = onnxdata.serialize(onnxdata.from_numpy(value, declared=t))
    return data, t.kind, draw(mutated(t))


@pytest.mark.parametrize("grouped", [1, 4])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_it_says_what_the_reference_says_of_drawn_values(
        case: tuple[bytes, str, DeclaredType], grouped: int) -> None:
    data, kind, declared = case
    saved = type_walk.MIN_GROUPED
    type_walk.MIN_GROUPED = grouped  # (monkeypatch is function-scoped; given
    try:  # runs many examples in one call)
        assert_same(data, kind, declared)
    finally:
        type_walk.MIN_GROUPED = saved


NESTED = DeclaredType("sequence", element=DeclaredType("map", 7, element=DeclaredType(
    "sequence", element=DeclaredType("sequence", element=DeclaredType("tensor", 1, (2,))))))


def nested_value(n: int) -> list[Any]:
    return [{k: [[np.full(2, k, np.float32)] * 3] * 2 for k in range(i, i + 5)}
            for i in range(n)]


def write(value: Any, declared: str | None) -> bytes:
    if declared is None:
        return onnxdata.serialize(onnxdata.from_numpy(value))
    return onnxdata.serialize(onnxdata.from_numpy(value, declared=declared))


def maps(value: list[Any]) -> bytes:
    """A sequence of the maps ``value`` each written alone: their types need not agree
    (``from_numpy`` refuses a sequence whose elements differ in type), as in a file written
    by something else (the value is then invalid, its field tree whole)."""
    seq = SequenceProto(elem_type=ElemType.MAP)
    seq.map_values.extend(onnxdata.from_numpy(m, "map") for m in value)
    return onnxdata.serialize(seq)


def test_a_value_that_matches_has_none() -> None:
    data = write(nested_value(40), str(NESTED))
    assert assert_same(data, "sequence", NESTED) == []


def every_tensor(m: int) -> list[str]:
    """The paths of map ``m``'s tensors (of ``nested_value``'s layout) in document order."""
    return [f"map_values[{m}].values.sequence_values[{k}].sequence_values[{s}]"
            f".tensor_values[{t}]" for k in range(5) for s in range(2) for t in range(3)]


def test_a_wrong_element_type_deep_inside_is_named_by_its_path() -> None:
    value = nested_value(40)
    d = np.zeros(2, np.float64)
    for m in (7, 33):
        value[m] = {k: [[d] * 3] * 2 for k in value[m]}
    found = assert_same(maps(value), "sequence", NESTED)
    assert [p.path for p in found] == [f"{p}.data_type" for m in (7, 33)
                                       for p in every_tensor(m)]
    assert found[0].message == "declared tensor(float) but holds double"


def test_many_wrong_elements_are_the_first_1000_then_a_count() -> None:
    value = [{k: [[np.zeros(2, np.float64)] * 4] * 4 for k in range(i, i + 16)}
             for i in range(20)]
    data = write(value, None)
    found = assert_same(data, "sequence", NESTED)
    assert len(found) == 1001  # 20 x 16 x 4 x 4 = 5,120 wrong tensors
    assert found[-1].message == "…and 4,120 more problems"
    assert found[17].path == ("map_values[0].values.sequence_values[1].sequence_values[0]"
                              ".tensor_values[1].data_type")


def test_a_wrong_key_type_and_a_wrong_rank() -> None:
    value = nested_value(40)
    data = write(value, "seq(map(int32, seq(seq(tensor(float)))))")
    found = assert_same(data, "sequence", NESTED)
    assert [p.path for p in found[:2]] == ["map_values[0].key_type", "map_values[1].key_type"]
    assert len(found) == 40
    value[21] = {k: [[np.zeros((2, 1), np.float32)] * 3] * 2 for k in value[21]}
    found = assert_same(maps(value), "sequence", NESTED)
    assert [(p.path, p.message) for p in found] == [
        (f"{p}.dims", "declared shape [2] has rank 1 but dims are [2, 1]")
        for p in every_tensor(21)]


def test_a_value_of_another_kind_or_elements_of_another_kind() -> None:
    data = write([[np.zeros(2, np.float32)]] * 50, "seq(seq(tensor(float)))")
    found = assert_same(data, "sequence", NESTED)
    assert [p.path for p in found] == ["elem_type"]
    assert assert_same(data, "sequence", DeclaredType("tensor", 1)) == [
        onnxdata.Problem("", "declared tensor(float) but the value is a sequence")]


@pytest.mark.skipif(not COMPILED, reason="the layout groups are the compiled loop's")
def test_a_layout_group_is_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """50 maps of 10 to 14 keys (distinct: 5 layouts, by key count), of values of one
    layout, of 4 sequences of one layout, of 4 tensors of one layout: one tensor checked
    per layout of map, not per map, nor 10 x 4 x 4 per map."""
    from onnxdata.model import type_walk as walk

    calls = []
    check = walk._Walk.check

    def counted(self: Any, kind: str, *args: Any) -> None:
        calls.append(kind)
        check(self, kind, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(walk._Walk, "check", counted)
    data = write([{k: [[np.zeros(2, np.float32)] * 4] * 4 for k in range(i, i + 10 + i % 5)}
                  for i in range(50)], str(NESTED))
    assert declared_problems(Source.of_buffer(data), "sequence", NESTED) == []
    assert calls.count("tensor") == 5
