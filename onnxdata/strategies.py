"""Hypothesis strategies for ONNX values: ``values``, ``declared_types``, ``messages``.

``pip install 'onnxdata[hypothesis]'``. ``import onnxdata`` never imports
hypothesis; this module does. Each draw goes through hypothesis, so a failing
example shrinks (to an empty sequence, a 0-d tensor, all-zero bits).

>>> from hypothesis import given
>>> from onnxdata.strategies import values
>>> @given(values("seq(map(int64, tensor(float)))"))
... def test_mine(v): ...

``values`` gives what ``from_numpy(value, declared=...)`` builds and
``to_numpy`` gives back: ndarrays of the declared data type (ml_dtypes ones
too, every bit pattern unless ``special_floats=False`` or ``style="small"``),
``SparseParts`` for sparse tensors, lists (empty ones too), dicts with
distinct keys (Python ints, or bytes for string keys), None for an empty
optional. Sizes stay within ``budget`` tensor elements per value.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import hypothesis.strategies as st
import numpy as np
from hypothesis.extra import numpy as hnp

from onnxdata.cases.draw import Dim, Plan, Style, check_generable, generate
from onnxdata.convert.declared import parse_type
from onnxdata.core.dtypes import DATA_TYPES, KEY_TYPES
from onnxdata.core.messages import KindName, kind_name
from onnxdata.model.types import DeclaredType

__all__ = ["declared_types", "inputs", "messages", "values"]


class _Draws:
    """``cases.draw.Choices`` answered by hypothesis's ``draw``."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))

    def codes(self, count: int, lo: int, hi: int, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
        return self.draw(hnp.arrays(dtype, count, elements=st.integers(lo, hi)))

    def text(self, max_len: int, utf8: bool) -> bytes:
        if utf8:
            return self.draw(st.text(max_size=max_len)).encode("utf-8", "surrogatepass")
        return self.draw(st.binary(max_size=max_len))

    def unique_integers(self, lo: int, hi: int, count: int) -> list[int]:
        return self.draw(st.lists(st.integers(lo, hi), min_size=min(count, hi - lo + 1),
                                  max_size=count, unique=True))

    def unique_texts(self, count: int, max_len: int, utf8: bool) -> list[bytes]:
        one = st.text(max_size=max_len).map(lambda s: s.encode("utf-8", "surrogatepass")) \
            if utf8 else st.binary(max_size=max_len)
        return self.draw(st.lists(one, max_size=count, unique=True))


def _declared(declared: str | DeclaredType) -> DeclaredType:
    return parse_type(declared) if isinstance(declared, str) else declared


def _plan(budget: int, max_len: int, style: Style, special_floats: bool,
          shapes: Sequence[Dim] | None, dims: Mapping[str, int] | None) -> Plan:
    return Plan(budget=budget, max_len=max_len, style=style, special_floats=special_floats,
                utf8=False, shape=tuple(shapes) if shapes is not None else None,
                dims=dict(dims or {}))


def values(declared: str | DeclaredType, shapes: Sequence[Dim] | None = None, *,
           dims: Mapping[str, int] | None = None, budget: int = 64, max_len: int = 3,
           style: Style = "any", special_floats: bool = True) -> st.SearchStrategy[Any]:
    """Values of ``declared`` (``"seq(map(string, tensor(float)))"`` or a DeclaredType).

    ``shapes`` is the shape (ints and dim names) of each tensor whose type
    declares none; without it such tensors take any rank up to 3. A dim name
    takes one size per value (``dims`` fixes some). ``budget`` bounds the
    tensor elements of one value, ``max_len`` each sequence's and map's length.
    """
    t = _declared(declared)
    check_generable(t, _plan(budget, max_len, style, special_floats, shapes, dims), "value")

    @st.composite
    def draw(d: st.DrawFn) -> Any:
        plan = _plan(budget, max_len, style, special_floats, shapes, dims)
        return generate(t, _Draws(d), plan)

    return draw()


def inputs(types: Sequence[tuple[str, DeclaredType]], *,
           shapes: Mapping[str, Sequence[Dim]] | None = None,
           dims: Mapping[str, int] | None = None, budget: int = 256, max_len: int = 3,
           style: Style = "any", special_floats: bool = True,
           min_named_dim: int = 0) -> st.SearchStrategy[list[Any]]:
    """One value per ``(name, declared type)``, as a model's inputs: a symbolic dim
    takes one size per draw, shared by every input that names it; ``shapes``
    gives the shape of an input's tensors whose shape is not declared."""
    types = list(types)

    @st.composite
    def draw(d: st.DrawFn) -> list[Any]:
        plan = Plan(budget=budget, max_len=max_len, style=style,
                    special_floats=special_floats, dims=dict(dims or {}),
                    min_named_dim=min_named_dim)
        out = []
        for name, t in types:
            plan.shape = tuple(shapes[name]) if shapes and name in shapes else None
            out.append(generate(t, _Draws(d), plan, f"input {name!r}"))
        return out

    return draw()


_LEAF_KINDS = ("tensor", "sparse_tensor")


def _map_value(t: DeclaredType) -> bool:
    return t.kind != "optional"  # a MapProto holds no optionals


def declared_types(max_depth: int = 2, *, kinds: Sequence[KindName] | None = None,
                   data_types: Sequence[int] | None = None) -> st.SearchStrategy[DeclaredType]:
    """Declared types nested at most ``max_depth`` containers deep, of any tensor data
    type and map key type (``kinds``: only these kinds at the top)."""
    codes = sorted(data_types if data_types is not None else DATA_TYPES)
    leaf = st.builds(DeclaredType, st.sampled_from(_LEAF_KINDS), st.sampled_from(codes))

    def grow(inner: st.SearchStrategy[DeclaredType]) -> st.SearchStrategy[DeclaredType]:
        return st.one_of(
            inner,
            st.builds(lambda e: DeclaredType("sequence", element=e), inner),
            st.builds(lambda e: DeclaredType("optional", element=e), inner),
            st.builds(lambda k, e: DeclaredType("map", k, element=e),
                      st.sampled_from(sorted(KEY_TYPES)), inner.filter(_map_value)))

    nested = leaf
    for _ in range(max_depth):
        nested = grow(nested)
    if kinds is None:
        return nested
    wanted = {kind_name(k) for k in kinds}
    tops = [k for k in wanted if k in _LEAF_KINDS]
    out: list[st.SearchStrategy[DeclaredType]] = []
    if tops:
        out.append(st.builds(DeclaredType, st.sampled_from(sorted(tops)),
                             st.sampled_from(codes)))
    inner = declared_types(max(0, max_depth - 1), data_types=data_types)
    if "sequence" in wanted:
        out.append(st.builds(lambda e: DeclaredType("sequence", element=e), inner))
    if "optional" in wanted:
        out.append(st.builds(lambda e: DeclaredType("optional", element=e), inner))
    if "map" in wanted:
        out.append(st.builds(lambda k, e: DeclaredType("map", k, element=e),
                             st.sampled_from(sorted(KEY_TYPES)), inner.filter(_map_value)))
    return st.one_of(out)


def messages(kind: Any, *, max_depth: int = 2, budget: int = 64) -> st.SearchStrategy[Any]:
    """Valid messages of ``kind`` ("sequence", "MapProto", our class, ...): a declared
    type of that kind, a value of it, and ``from_numpy`` of the two."""
    from onnxdata.convert.values import from_numpy

    k = kind_name(kind)

    @st.composite
    def draw(d: st.DrawFn) -> Any:
        t = d(declared_types(max_depth, kinds=[k]))
        v = d(values(t, budget=budget))
        return from_numpy(v, declared=t)

    return draw()
