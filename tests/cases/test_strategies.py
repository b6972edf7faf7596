"""onnxdata.strategies: generated values of every declared type survive from_numpy -> save ->
read unchanged, bit for bit, and validate accepts every message built from them."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onnxdata
from onnxdata.cases.draw import GenerationError
from onnxdata.convert.common import SparseParts
from onnxdata.core.dtypes import DATA_TYPES, KEY_TYPES
from onnxdata.core.messages import KindName
from onnxdata.model.types import DeclaredType
from onnxdata.strategies import declared_types, inputs, messages, values


def _dense(p: SparseParts) -> np.ndarray[Any, Any]:
    out = np.zeros(int(np.prod(p.shape, dtype=np.int64)), dtype=p.values.dtype)
    if out.dtype == object:
        out[:] = b""
    out[p.indices] = p.values
    return out.reshape(p.shape)


def _plain(value: Any) -> Any:
    """The value as to_numpy gives it: sparse tensors dense."""
    if isinstance(value, SparseParts):
        return _dense(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _same(actual: Any, expected: Any, path: str = "value") -> None:
    """Equal structure, dtypes, shapes and bytes (NaN payloads and -0.0 included)."""
    if isinstance(expected, SparseParts):
        expected = _dense(expected)
    if expected is None:
        assert actual is None, path
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), path
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _same(a, e, f"{path}[{i}]")
    elif isinstance(expected, dict):
        assert isinstance(actual, dict) and list(actual) == list(expected), path
        for k, e in expected.items():
            _same(actual[k], e, f"{path}[{k!r}]")
    else:
        a = np.asarray(actual)
        assert (a.dtype, a.shape) == (expected.dtype, expected.shape), path
        if a.dtype == object:
            assert a.tolist() == expected.tolist(), path
        else:
            assert np.ascontiguousarray(a).tobytes() == \
                np.ascontiguousarray(expected).tobytes(), path


def _count(value: Any) -> int:
    if isinstance(value, SparseParts):
        return int(np.prod(value.shape, dtype=np.int64))
    if isinstance(value, list):
        return sum(map(_count, value))
    if isinstance(value, dict):
        return sum(map(_count, value.values()))
    return 0 if value is None else int(np.asarray(value).size)


@st.composite
def _typed_values(draw: st.DrawFn) -> tuple[DeclaredType, Any]:
    t = draw(declared_types(max_depth=3))
    return t, draw(values(t, budget=48))


def _round_trip(t: DeclaredType, value: Any) -> None:
    msg = onnxdata.from_numpy(value, declared=t)
    onnxdata.validate(msg)  # what values() gives is valid as built
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "v.pb"
        onnxdata.save(msg, path)
        back = onnxdata.read(path, t.kind)
        again = onnxdata.to_numpy(onnxdata.load(path, t.kind))
    _same(back, value)
    _same(again, value)
    assert onnxdata.compare(back, _plain(value), rtol=0, atol=0) == []


@pytest.mark.slow
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_typed_values())
def test_nested_values_round_trip_through_save_and_read_and_validate(
        case: tuple[DeclaredType, Any]) -> None:
    _round_trip(*case)


_LEAVES: list[KindName] = ["tensor", "sparse_tensor"]


@pytest.mark.slow
@pytest.mark.parametrize("code", sorted(DATA_TYPES), ids=lambda c: DATA_TYPES[c].name)
def test_every_data_type_round_trips_through_save_and_read(code: int) -> None:
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from(_LEAVES).map(
        lambda kind: DeclaredType(kind, code)).flatmap(
        lambda t: values(t, budget=24).map(lambda v: (t, v))))
    def check(case: tuple[DeclaredType, Any]) -> None:
        _round_trip(*case)

    check()


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(KEY_TYPES), ids=lambda c: DATA_TYPES[c].name)
def test_every_key_type_round_trips_through_save_and_read(key: int) -> None:
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(values(DeclaredType("map", key, element=DeclaredType("tensor", 7)), budget=8,
                  max_len=5))
    def check(value: Any) -> None:
        _round_trip(DeclaredType("map", key, element=DeclaredType("tensor", 7)), value)

    check()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["tensor", "sparse_tensor", "sequence", "optional", "map"])
def test_messages_of_each_kind_are_valid_and_round_trip(kind: str) -> None:
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(messages(kind))
    def check(msg: Any) -> None:
        assert onnxdata.core.messages.kind_name(type(msg)) == kind
        onnxdata.validate(msg)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "m.pb"
            onnxdata.save(msg, path)
            loaded = onnxdata.load(path, kind)
            assert loaded.SerializeToString() == msg.SerializeToString()
            assert onnxdata.compare(onnxdata.read(path, kind), onnxdata.to_numpy(msg),
                                    rtol=0, atol=0) == []

    check()


@settings(max_examples=60, deadline=None)
@given(values("seq(map(string, tensor(int8)))", budget=10, max_len=4))
def test_maps_have_distinct_keys_and_the_budget_holds(v: list[dict[bytes, Any]]) -> None:
    assert len(v) <= 4
    for m in v:
        assert all(isinstance(k, bytes) for k in m) and len(set(m)) == len(m)
    assert _count(v) <= 10


@settings(max_examples=60, deadline=None)
@given(inputs([("a", DeclaredType("tensor", 1, ("N", 2))),
               ("b", DeclaredType("sequence", element=DeclaredType("tensor", 7, ("N",)))),
               ("c", DeclaredType("tensor", 1, (3, None)))], budget=100))
def test_a_symbolic_dim_takes_one_size_shared_by_every_input(v: list[Any]) -> None:
    a, b, c = v
    assert a.shape[1] == 2 and c.shape[0] == 3
    assert all(x.shape == (a.shape[0],) for x in b)


@settings(max_examples=30, deadline=None)
@given(values("seq(tensor(float))", shapes=("K", 2), dims={"K": 3}))
def test_shapes_fill_what_the_type_leaves_open(v: list[Any]) -> None:
    assert all(x.shape == (3, 2) for x in v)


@settings(max_examples=60, deadline=None)
@given(values("tensor(float16)", special_floats=False), values("tensor(float8e4m3fn)",
                                                               style="small"))
def test_special_floats_can_be_left_out(a: Any, b: Any) -> None:
    assert np.isfinite(a.astype(np.float32)).all()
    assert (np.abs(b.astype(np.float32)) <= 4).all()


@settings(max_examples=1)
@given(st.data())
def test_a_declared_shape_over_the_budget_is_refused_by_name(data: st.DataObject) -> None:
    with pytest.raises(GenerationError, match=r"\[100, 100\] needs 10000 elements"):
        data.draw(values(DeclaredType("tensor", 1, (100, 100)), budget=50))


def test_importing_onnxdata_does_not_import_hypothesis() -> None:
    code = "import sys, onnxdata, onnxdata.cli.main; print('hypothesis' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_the_docs_example_runs_as_written() -> None:
    """docs/generating.md's test of a converter (the README's until the docs site)."""
    page = (Path(__file__).parents[2] / "docs" / "generating.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"^```python\n(.*?)^```", page, re.S | re.M)
                if "strategies" in b]
    assert len(block.strip().splitlines()) == 6  # five lines and a blank one
    seen: list[Any] = []

    def my_encode(value: Any) -> bytes:
        seen.append(value)
        return onnxdata.serialize(onnxdata.from_numpy(value, declared="seq(map(int64, "
                                                                       "tensor(float)))"))

    def my_decode(data: bytes) -> Any:
        return onnxdata.to_numpy(onnxdata.load(data, "sequence"))

    names: dict[str, Any] = {"my_encode": my_encode, "my_decode": my_decode}
    exec(compile(block, "docs/generating.md (strategies)", "exec"), names)
    names["test_my_converter_round_trips"]()
    assert len(seen) > 10 and any(v and any(m for m in v) for v in seen)

    def broken(data: bytes) -> Any:  # drops the last map: the example must notice
        return my_decode(data)[:-1]

    names["my_decode"] = broken
    exec(compile(block, "docs/generating.md (strategies)", "exec"), names)
    with pytest.raises(AssertionError):
        names["test_my_converter_round_trips"]()
