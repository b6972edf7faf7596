"""Property tests: ``to_numpy(from_numpy(v))`` gives ``v`` back bit for bit, for nested values
of every data type and kind (NaN payloads, empty values and typed empty optionals included),
and to_numpy on damaged messages raises only our errors."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from google.protobuf.message import DecodeError as ProtobufDecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onnxdata import (
    OnnxDataError,
    SequenceProto,
    SparseParts,
    ValidationError,
    from_numpy,
    problems,
    to_numpy,
)
from onnxdata.core.dtypes import DATA_TYPES, KEY_TYPES, STRING, DataType

Pair = tuple[Any, Any]  # (what from_numpy is given, what to_numpy must give back)
SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def assert_same(got: Any, want: Any, where: str = "value") -> None:
    """Equal bit for bit (only the low bits of a sub-byte element are its value)."""
    assert type(got) is type(want), f"{where}: {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, np.ndarray):
        assert (got.dtype, got.shape) == (want.dtype, want.shape), where
        if want.dtype == object:
            assert got.tolist() == want.tolist(), where
            return
        g = np.ascontiguousarray(got).view(np.uint8)
        w = np.ascontiguousarray(want).view(np.uint8)
        bits = next(d.bits for d in DATA_TYPES.values() if d.dtype == want.dtype)
        mask = (1 << bits) - 1 if bits < 8 else 0xFF
        assert ((g & mask).tobytes() == (w & mask).tobytes()), f"{where}: bytes differ"
    elif isinstance(want, list):
        assert len(got) == len(want), where
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(want, dict):
        assert list(got) == list(want), where
        for k in want:
            assert_same(got[k], want[k], f"{where}[{k!r}]")
    else:
        assert got is None and want is None, where


# ---------------------------------------------------------------- types, then values

NUMERIC = [d for d in DATA_TYPES.values() if not d.is_string]
shapes = st.lists(st.integers(0, 3), min_size=0, max_size=3).map(tuple)

# A type: ("tensor", dt) | ("sparse", dt) | ("seq", T) | ("map", key_code, T) | ("opt", T)
leaf_types = st.one_of(
    st.sampled_from(list(DATA_TYPES.values())).map(lambda d: ("tensor", d)),
    st.sampled_from(list(DATA_TYPES.values())).map(lambda d: ("sparse", d)),
)


def _extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        inner.map(lambda t: ("seq", t)),
        st.tuples(st.sampled_from(sorted(KEY_TYPES)), inner)
        .filter(lambda kt: kt[1][0] != "opt").map(lambda kt: ("map", kt[0], kt[1])),
        inner.map(lambda t: ("opt", t)),
    )


types = st.recursive(leaf_types, _extend, max_leaves=4)

_KIND = {"tensor": "tensor", "sparse": "sparse_tensor", "seq": "sequence", "map": "map",
         "opt": "optional"}


@st.composite
def arrays(draw: st.DrawFn, dt: DataType, shape: tuple[int, ...] | None = None) -> Any:
    shape = draw(shapes) if shape is None else shape
    n = math.prod(shape)
    if dt.is_string:
        items = draw(st.lists(st.one_of(st.binary(max_size=5), st.text(max_size=3)),
                              min_size=n, max_size=n))
        given_ = np.empty(n, dtype=object)
        given_[:] = items
        want = np.empty(n, dtype=object)
        want[:] = [s.encode() if isinstance(s, str) else s for s in items]
        return given_.reshape(shape), want.reshape(shape)
    if dt.code == 9:
        raw = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), np.uint8)
    elif dt.bits < 8:
        raw = np.array(draw(st.lists(st.integers(0, (1 << dt.bits) - 1), min_size=n,
                                     max_size=n)), np.uint8)
    else:  # any bit pattern: NaNs with payloads, infinities, subnormals, -0.0
        raw = np.frombuffer(draw(st.binary(min_size=n * dt.dtype.itemsize,
                                           max_size=n * dt.dtype.itemsize)), np.uint8)
    a = raw.view(dt.dtype).reshape(shape)
    return a, a


@st.composite
def sparse(draw: st.DrawFn, dt: DataType) -> Pair:
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
    total = math.prod(shape)
    linear = sorted(draw(st.lists(st.integers(0, total - 1), unique=True, max_size=total)))
    values, _ = draw(arrays(dt, (len(linear),)))
    if dt.is_string:
        values = np.array([s.encode() if isinstance(s, str) else s for s in values],
                          dtype=object).reshape(-1)
        dense = np.full(total, b"", dtype=object)
    else:
        dense = np.zeros(total, dtype=dt.dtype)
    dense[np.array(linear, dtype=np.int64)] = values
    coords = draw(st.booleans())
    idx = np.array(linear, dtype=np.int64)
    indices = (np.stack(np.unravel_index(idx, shape), axis=1).reshape(len(idx), len(shape))
               if coords else idx)
    return SparseParts(values, indices, shape), dense.reshape(shape)


def _first_type(t: Any) -> Any:
    return t[2] if t[0] == "map" else t[1]


def values(t: Any) -> st.SearchStrategy[Pair]:
    kind = t[0]
    if kind == "tensor":
        return arrays(t[1])
    if kind == "sparse":
        return sparse(t[1])
    if kind == "seq":
        inner = t[1]
        # one data type per sequence of tensors: the type fixes it
        def build(items: list[Pair]) -> Pair:
            if not items:
                return from_numpy([], elem_type=_KIND[inner[0]]), []
            return [b for b, _ in items], [w for _, w in items]
        return st.lists(values(inner), max_size=3).map(build)
    if kind == "map":
        return map_values(t[1], t[2])
    inner = t[1]
    present = values(inner).map(
        lambda bw: (from_numpy(bw[0], "optional", elem_type=_KIND[inner[0]]), bw[1]))
    return st.one_of(
        st.just((None, None)),
        st.just((from_numpy(None, "optional", elem_type=_KIND[inner[0]]), None)),
        present,
    )


@st.composite
def map_values(draw: st.DrawFn, key_code: int, inner: Any) -> Pair:
    n = draw(st.integers(0, 3))
    if key_code == STRING:
        raw = draw(st.lists(st.binary(max_size=4), min_size=n, max_size=n, unique=True))
        keys: list[Any] = [k.decode() if draw(st.booleans()) and k.isascii() else k
                           for k in raw]
        want_keys: list[Any] = raw
    else:
        dtype = DATA_TYPES[key_code].dtype
        info = np.iinfo(dtype)
        ints = draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=n,
                             max_size=n, unique=True))
        keys = [dtype.type(k) for k in ints]
        want_keys = ints
    items = [draw(values(inner)) for _ in range(n)]
    if not n:
        return from_numpy({}, key_type=key_code, elem_type=_KIND[inner[0]]), {}
    return (dict(zip(keys, [b for b, _ in items], strict=True)),
            dict(zip(want_keys, [w for _, w in items], strict=True)))


@st.composite
def typed_values(draw: st.DrawFn) -> tuple[Any, Pair]:
    t = draw(types)
    return t, draw(values(t))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@SETTINGS
@given(typed_values())
def test_round_trip_is_bitwise(tv: tuple[Any, Pair]) -> None:
    t, (given_, want) = tv
    message = from_numpy(given_, _KIND[t[0]] if given_ is not None else None,
                         name="v")
    assert_same(to_numpy(message), want)
    # and the bytes survive a trip through the wire
    again = type(message)()
    again.ParseFromString(message.SerializeToString())
    assert_same(to_numpy(again), want)


@SETTINGS
@given(st.sampled_from(NUMERIC).flatmap(lambda d: arrays(d)))
def test_every_numeric_dtype_round_trips(pair: Pair) -> None:
    given_, want = pair
    assert_same(to_numpy(from_numpy(given_)), want)


@pytest.mark.slow
@SETTINGS
@given(typed_values(), st.data())
def test_damaged_messages_raise_only_our_errors(tv: tuple[Any, Pair], data: st.DataObject) -> None:
    t, (given_, _) = tv
    message = from_numpy(given_, _KIND[t[0]] if given_ is not None else None)
    raw = bytearray(message.SerializeToString())
    if raw:
        for _ in range(data.draw(st.integers(1, 3))):
            i = data.draw(st.integers(0, len(raw) - 1))
            raw[i] = data.draw(st.integers(0, 255))
    for cls in (type(message), SequenceProto):
        damaged = cls()
        try:
            damaged.ParseFromString(bytes(raw))
        except ProtobufDecodeError:  # protobuf's own refusal: not our reader
            continue
        assert_to_numpy_keeps_its_word(damaged)


#: What to_numpy gives for a valid message of each kind (an optional: its value, or None).
_VALUE_TYPES: dict[str, tuple[type, ...]] = {
    "TensorProto": (np.ndarray,), "SparseTensorProto": (np.ndarray,),
    "SequenceProto": (list,), "MapProto": (dict,),
    "OptionalProto": (np.ndarray, list, dict, type(None)),
}


def assert_to_numpy_keeps_its_word(message: Any) -> None:
    """to_numpy's contract: a message with problems raises ValidationError listing exactly
    the problems validate finds; a valid one gives a value of its kind, or our error for a
    value too big to build (the densify limit, or memory)."""
    found = problems(message)
    try:
        value = to_numpy(message)
    except ValidationError as exc:
        if found:
            assert exc.problems == found
        else:
            assert all("set_densify_limit" in p.message for p in exc.problems), exc
        return
    except OnnxDataError as exc:
        assert not found and "out of memory" in str(exc), exc
        return
    assert found == [], f"to_numpy converted a value with problems {found[:3]}"
    assert isinstance(value, _VALUE_TYPES[message.DESCRIPTOR.name]), type(value)
