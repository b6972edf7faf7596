"""serialize and save write exactly SerializeToString's bytes, built from parts."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onnxdata
import onnxdata.io.serialize as module
from onnxdata import SequenceProto, TensorProto, from_numpy, serialize
from onnxdata.io.serialize import serialized_parts
from tests.conftest import corpus_params
from tests.convert.test_convert_properties import _KIND, typed_values

SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# An unknown varint field (number 101) and an unknown length-delimited one (102), the
# second with a non-minimal length varint that protobuf keeps as it came.
UNKNOWN = b"\xa8\x06\x01\xb2\x06\x82\x00ab"


@contextlib.contextmanager
def every_bytes_field_apart() -> Iterator[None]:
    """Write even the shortest bytes field apart, so small values test that path too."""
    with mock.patch.object(module, "_BIG_BYTES", 0):
        yield


def assert_identical(message: Any) -> None:
    want = message.SerializeToString()
    assert serialize(message) == want
    with every_bytes_field_apart():
        assert serialize(message) == want


@pytest.mark.parametrize(("path", "kind"), corpus_params())
def test_corpus_serializes_identically(path: Path, kind: str) -> None:
    assert_identical(onnxdata.load(path, kind))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@SETTINGS
@given(typed_values(), st.data())
def test_values_serialize_identically(tv: Any, data: st.DataObject) -> None:
    t, (given_, _) = tv
    message = from_numpy(given_, _KIND[t[0]] if given_ is not None else None,
                         name=data.draw(st.sampled_from(["", "v"])))
    assert_identical(message)
    # unknown fields anywhere: at the root, or in a nested message
    with_unknown = type(message)()
    with_unknown.CopyFrom(message)
    nested = [m for m in _messages(with_unknown) if m is not with_unknown]
    target = data.draw(st.sampled_from([with_unknown, *nested])) if nested else with_unknown
    target.MergeFromString(UNKNOWN)
    assert_identical(with_unknown)


def _messages(message: Any) -> list[Any]:
    out = [message]
    for fd, value in message.ListFields():
        if fd.message_type is not None:
            for child in ([value] if hasattr(value, "DESCRIPTOR") else value):
                out += _messages(child)
    return out


def test_a_tensor_with_every_field_in_field_number_order() -> None:
    t = TensorProto(data_type=1, dims=[2], name="n", doc_string="d", raw_data=bytes(8),
                    data_location=0, double_data=[1.0], uint64_data=[3])
    t.metadata_props.add(key="k", value="v")
    t.external_data.add(key="location", value="x")
    t.segment.begin = 1
    t.float_data.extend([1.0, 2.0])
    t.int32_data.extend([-1, 5])
    t.string_data.extend([b"a"])
    t.int64_data.extend([-(1 << 40)])
    assert_identical(t)
    s = SequenceProto(name="s", elem_type=1, tensor_values=[t, t])
    assert_identical(s)


def test_large_raw_data_is_a_part_and_small_elements_go_whole() -> None:
    big = np.arange(1 << 16, dtype=np.float32)
    s = from_numpy([big, big[:3], big])
    with mock.patch.object(module, "_BIG_BYTES", big.nbytes):
        parts = serialized_parts(s)
        root = serialized_parts(from_numpy(big))
    assert b"".join(parts) == s.SerializeToString()
    assert [p for p in parts if len(p) >= big.nbytes] == [big.tobytes(), big.tobytes()]
    assert s.tensor_values[1].SerializeToString() in parts
    assert big.tobytes() in root
    # under the thresholds the whole message is one SerializeToString
    assert serialized_parts(s) == [s.SerializeToString()]
    # over the total threshold the sequence is split, and each small element goes whole
    with mock.patch.object(module, "_BIG_TOTAL", big.nbytes):
        split = serialized_parts(s)
    assert b"".join(split) == s.SerializeToString() and big.tobytes() not in split
    assert [t.SerializeToString() for t in s.tensor_values] == split[2::2]


def test_the_split_is_decided_by_a_sample_of_the_children() -> None:
    small = [np.zeros(2, np.float32)] * 100
    s = from_numpy([*small, np.zeros(1 << 10, np.float32)])  # the last: always sampled
    with mock.patch.object(module, "_BIG_BYTES", 8 << 10):
        assert len(serialized_parts(s)) == 1  # 4 KiB: no payload is big
    with mock.patch.object(module, "_BIG_BYTES", 4 << 10):
        parts = serialized_parts(s)
    assert len(parts) > 1 and b"".join(parts) == s.SerializeToString()


def test_a_tensor_whose_dims_lie_about_its_size_serializes_identically() -> None:
    s = SequenceProto(elem_type=1)
    s.tensor_values.add(data_type=1, dims=[1 << 20], raw_data=b"abc")  # hint: big; is not
    s.tensor_values.add(data_type=1, dims=[1 << 20], raw_data=bytes(1 << 22))  # both big
    s.tensor_values.add(data_type=1, dims=[1], raw_data=bytes(1 << 21))  # hint: small; is big
    s.tensor_values.add(data_type=99, dims=[1 << 30], raw_data=b"")  # unknown type
    assert_identical(s)


def test_serialize_refuses_what_protobuf_refuses() -> None:
    s = from_numpy([np.zeros(4, np.float32)])
    with mock.patch.object(module, "PROTOBUF_LIMIT", 10), \
            pytest.raises(onnxdata.OnnxDataError, match="over protobuf's 2 GiB limit"):
        serialize(s)
    with mock.patch.object(module, "PROTOBUF_LIMIT", 10), \
            pytest.raises(onnxdata.OnnxDataError, match=r"use onnxdata\.write"):
        onnxdata.save(s, "/nonexistent-never-written.pb")


def test_save_writes_the_parts(tmp_path: Path) -> None:
    big = np.arange(1 << 17, dtype=np.float32)
    s = from_numpy([big, big], name="seq")
    s.MergeFromString(UNKNOWN)
    onnxdata.save(s, tmp_path / "v.pb")
    assert (tmp_path / "v.pb").read_bytes() == s.SerializeToString()


def test_many_mid_sized_payloads_go_whole_however_large_in_all() -> None:
    s = from_numpy([np.zeros(256, np.float32)] * 40)  # 40 KiB of 1 KiB payloads
    with mock.patch.object(module, "_BIG_TOTAL", 1 << 10):
        assert serialized_parts(s) == [s.SerializeToString()]
        with mock.patch.object(module, "_MID_BYTES", 1 << 10):
            parts = serialized_parts(s)
    assert len(parts) > 1 and b"".join(parts) == s.SerializeToString()
