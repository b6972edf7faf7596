"""Many like tensors in a sequence, checked and read by the engine a layout at a time
(``onnxdata.problems`` and ``onnxdata.to_numpy`` of the message), give the reference's
verdict and values (``validation.problems_reference``, ``convert.to_numpy_reference``: one
by one), whatever one tensor's bytes turn into. (These were the tests of the bulk path
``uniform``, which the layout groups replaced.)"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from unittest import mock

import numpy as np
import pytest
from google.protobuf.message import DecodeError as ProtobufDecodeError
from hypothesis import given, settings
from hypothesis import strategies as st

import onnxdata
import onnxdata.rules.containers as rules_containers
import onnxdata.rules.validation as validation
from onnxdata import SequenceProto, TensorProto, from_numpy, problems
from onnxdata.convert import values as convert
from onnxdata.engine.by_layout import MIN_GROUPED
from tests.conftest import import_onnx

N = MIN_GROUPED + 8


def like_tensors(n: int = N, name: str = "") -> SequenceProto:
    seq = from_numpy([np.full(4, i, np.float32) for i in range(n)], "sequence")
    if name:
        seq.name = name
    return seq


def one_by_one(seq: Any) -> list[Any]:
    return validation.problems_reference(seq)


def test_like_tensors_pass() -> None:
    seq = like_tensors(name="s")
    assert problems(seq) == one_by_one(seq) == []
    onnx_seq = import_onnx().SequenceProto()
    onnx_seq.ParseFromString(seq.SerializeToString())
    assert problems(onnx_seq) == []


MUTATIONS: dict[str, Callable[[TensorProto], object]] = {
    "dims": lambda t: t.dims.__setitem__(0, 5),
    "one more dim": lambda t: t.dims.append(1),
    "data_type": lambda t: setattr(t, "data_type", TensorProto.INT32),
    "bad data_type": lambda t: setattr(t, "data_type", 99),
    "raw too short": lambda t: setattr(t, "raw_data", b"\0" * 12),
    "name": lambda t: setattr(t, "name", "x"),
    "doc_string": lambda t: setattr(t, "doc_string", "d"),
    "float_data too": lambda t: t.float_data.append(1.0),
    "external": lambda t: setattr(t, "data_location", TensorProto.EXTERNAL),
    "unknown field": lambda t: t.MergeFromString(b"\xa8\x06\x01"),
    "metadata": lambda t: t.metadata_props.add(key="k", value="v"),
}


@pytest.mark.parametrize("where", [0, 1, N // 2, N - 1])
@pytest.mark.parametrize("change", sorted(MUTATIONS))
def test_one_different_tensor_is_found(change: str, where: int) -> None:
    seq = like_tensors()
    MUTATIONS[change](seq.tensor_values[where])
    assert problems(seq) == one_by_one(seq)


def test_other_elements_or_unknown_fields_of_the_sequence_are_not_skipped() -> None:
    seq = like_tensors()
    seq.sparse_tensor_values.add()
    assert problems(seq) == one_by_one(seq) != []
    seq = like_tensors()
    seq.MergeFromString(b"\xa8\x06\x01")
    assert problems(seq) == one_by_one(seq) != []


def test_few_or_big_tensors() -> None:
    few = like_tensors(MIN_GROUPED - 1)
    few.tensor_values[3].dims.append(2)
    assert problems(few) == one_by_one(few) != []
    big = from_numpy([np.zeros(1 << 15, np.float32)] * MIN_GROUPED, "sequence")
    big.tensor_values[3].dims.append(2)
    assert problems(big) == one_by_one(big) != []


@settings(max_examples=60, deadline=None)
@given(st.integers(0, N - 1), st.binary(min_size=1, max_size=12), st.booleans())
def test_any_bytes_merged_into_one_tensor_give_the_same_problems(where: int, extra: bytes,
                                                                 payload_only: bool) -> None:
    """Whatever a tensor's bytes turn into, the verdict is the one-by-one check's."""
    seq = like_tensors()
    t = seq.tensor_values[where]
    try:
        if payload_only:
            t.raw_data = (extra * 16)[:16]
        else:
            t.MergeFromString(extra)
    except ProtobufDecodeError:  # bytes protobuf refuses: nothing to compare
        return
    assert problems(seq) == one_by_one(seq)
    if payload_only:
        assert problems(seq) == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-(1 << 63), (1 << 63) - 1), min_size=60, max_size=90),
       st.sampled_from([TensorProto.INT8, TensorProto.INT32, TensorProto.INT64,
                        TensorProto.UINT64, TensorProto.UINT8, TensorProto.UINT16]),
       st.booleans(), st.sampled_from([0, 90, 70_000]))
def test_map_keys_checked_in_bulk_as_one_by_one(keys: list[int], key_type: int,
                                               as_array: bool, span: int) -> None:
    """The numpy pass over map keys finds a fault exactly when the loop does: keys spread
    over int64 (sorted) and over a few values (counted), some outside the key type."""
    if key_type == TensorProto.INT8:
        keys = [k % 300 - 150 for k in keys]
    if span:
        keys = [k % span - 10 for k in keys]
    given_keys: Any = np.array(keys, np.int64) if as_array else keys
    kwargs: Any = {"values_elem_type": SequenceProto.TENSOR, "n_values": len(keys)}
    bulk = rules_containers.map_problems("m", key_type, given_keys, [], **kwargs)
    with mock.patch.object(rules_containers, "_key_faults", lambda *_: None):
        loop = rules_containers.map_problems("m", key_type, given_keys, [], **kwargs)
    assert bulk == loop
    if len(set(keys)) < len(keys):
        assert bulk


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), max_size=200))
def test_string_keys_again_are_worded_up_to_the_cap_and_counted(picks: list[int]) -> None:
    """Many string keys again: the first MAX_REPORTED worded as the loop over every key
    words them, the rest counted."""
    from onnxdata.rules.common import capped_problems, short_repr

    keys = [b"k%d" % i for i in picks]
    first: dict[bytes, int] = {}
    dup = []
    for at, k in enumerate(keys):
        was = first.setdefault(k, at)
        if was != at:
            dup.append((at, f"{short_repr(k)} appears again (first at string_keys[{was}])"))
    found = rules_containers.map_problems("m", TensorProto.STRING, [], keys,
                                          values_elem_type=SequenceProto.TENSOR)
    assert found == capped_problems("m", "string_keys", dup, len(dup))


def test_string_keys_twice_are_found() -> None:
    keys = [f"k{i}".encode() for i in range(100)] + [b"k7"]
    found = rules_containers.map_problems("m", TensorProto.STRING, [], keys,
                                          values_elem_type=SequenceProto.TENSOR)
    assert [p.message for p in found] == ["b'k7' appears again (first at string_keys[7])"]


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (1, 1, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.float64, np.uint16])
def test_to_numpy_of_like_tensors_is_views_of_one_buffer(shape: tuple[int, ...],
                                                         dtype: Any) -> None:
    arrays = [np.full(shape, i, dtype) for i in range(N)]
    seq = from_numpy(arrays, "sequence")
    got = onnxdata.to_numpy(seq)
    slow = convert.to_numpy_reference(seq)
    assert len(got) == N
    for g, s, a in zip(got, slow, arrays, strict=True):
        assert g.shape == a.shape and g.dtype == a.dtype and np.array_equal(g, a)
        assert np.array_equal(g, s) and not g.flags.writeable
    assert not any(np.asarray(g).flags.owndata for g in got)  # views of the bytes


@pytest.mark.parametrize("change", sorted(MUTATIONS))
def test_to_numpy_of_one_different_tensor(change: str) -> None:
    seq = like_tensors()
    MUTATIONS[change](seq.tensor_values[N // 2])
    try:
        want: Any = [onnxdata.to_numpy(t) for t in seq.tensor_values]
    except onnxdata.OnnxDataError:
        with pytest.raises(onnxdata.OnnxDataError):
            onnxdata.to_numpy(seq)
        return
    if change == "data_type":  # two data types in one sequence
        with pytest.raises(onnxdata.ValidationError, match="share one data type"):
            onnxdata.to_numpy(seq)
        return
    got = onnxdata.to_numpy(seq)
    assert all(np.array_equal(g, w) for g, w in zip(got, want, strict=True))
