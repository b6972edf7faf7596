"""The fast paths say exactly what the full rules say.

``quick_tensor`` (one ListFields, a cached verdict) may only ever vouch for a
tensor the full rules find valid; ``to_numpy``, which checks as it reads,
raises exactly the error ``validate`` raises; and the vectorised typed-entry
check reports what the element-by-element one did.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onnxdata import (
    DecodeError,
    OnnxDataError,
    SequenceProto,
    TensorProto,
    ValidationError,
    from_numpy,
    problems,
    to_numpy,
)
from onnxdata.core.dtypes import DATA_TYPES
from onnxdata.rules.common import MAX_REPORTED, TYPED_FIELDS
from onnxdata.rules.tensor import entries_in_range, typed_entry_problems
from onnxdata.rules.validation import quick_tensor
from tests.convert.test_convert_properties import _KIND, typed_values

SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Entries of every width: in range for some types, out of range for others.
ENTRY = st.sampled_from([0, 1, 2, 63, 64, 127, 128, 255, 256, 65535, 65536, -1, -128, -129,
                         2**31 - 1, -(2**31)])


@st.composite
def tensors(draw: st.DrawFn) -> TensorProto:
    """Tensors with a random mix of fields, valid or not, some with an unknown field."""
    t = TensorProto()
    if draw(st.booleans()):
        t.data_type = draw(st.sampled_from([0, 99, *DATA_TYPES]))
    t.dims.extend(draw(st.lists(st.integers(-2, 4), max_size=3)))
    if draw(st.booleans()):
        t.raw_data = bytes(draw(st.integers(0, 40)))
    for field in draw(st.lists(st.sampled_from(TYPED_FIELDS), max_size=2, unique=True)):
        n = draw(st.integers(0, 12))
        if field == "string_data":
            t.string_data.extend([b"s"] * n)
        elif field in ("float_data", "double_data"):
            getattr(t, field).extend([0.5] * n)
        elif field == "uint64_data":
            t.uint64_data.extend([draw(st.sampled_from([0, 1, 2**32, 2**64 - 1]))
                                  for _ in range(n)])
        else:
            getattr(t, field).extend([draw(ENTRY) for _ in range(n)])
    if draw(st.booleans()):
        t.name = "x"
    extra = draw(st.sampled_from(["", "doc", "location", "segment", "unknown"]))
    if extra == "doc":
        t.doc_string = "d"
    elif extra == "location":
        t.data_location = 0
    elif extra == "segment":
        t.segment.begin = 0
    elif extra == "unknown":
        t.MergeFromString(b"\xa8\x06\x01")  # field 101, varint 1
    return t


@SETTINGS
@given(tensors())
def test_quick_tensor_vouches_only_for_valid_tensors(t: TensorProto) -> None:
    found = problems(t)
    if quick_tensor(t) is not None:
        assert found == []
    # and a tensor inside a sequence gets the same problems, under its path
    s = SequenceProto(elem_type=1)
    s.tensor_values.add().CopyFrom(t)
    s.tensor_values.add().CopyFrom(t)
    inner = [p for p in problems(s) if p.path.startswith("tensor_values[1]")]
    assert [(p.path.removeprefix("tensor_values[1]").lstrip("."), p.message)
            for p in inner] == [(p.path, p.message) for p in found]


@pytest.mark.slow
@SETTINGS
@given(tensors())
def test_to_numpy_raises_what_validate_raises(t: TensorProto) -> None:
    for message in (t, SequenceProto(elem_type=1, tensor_values=[t])):
        found = problems(message)
        try:
            to_numpy(message)
        except ValidationError as exc:
            if found:
                assert exc.problems == found
            continue
        except OnnxDataError:
            assert not found
            continue
        assert not found


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Generating overly large repr")
@SETTINGS
@given(typed_values(), st.data())
def test_to_numpy_raises_what_validate_raises_on_damaged_values(tv: Any,
                                                               data: st.DataObject) -> None:
    t, (given_, _) = tv
    message = from_numpy(given_, _KIND[t[0]] if given_ is not None else None)
    raw = bytearray(message.SerializeToString())
    if raw:
        for _ in range(data.draw(st.integers(1, 3))):
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    damaged = type(message)()
    try:
        damaged.ParseFromString(bytes(raw))
    except Exception:  # protobuf's own refusal
        return
    found = problems(damaged)
    with contextlib.suppress(DecodeError):
        try:
            to_numpy(damaged)
        except ValidationError as exc:
            assert not found or exc.problems == found
            return
        except OnnxDataError:
            assert not found
            return
        assert not found


def test_one_bad_tensor_among_many_gives_validates_whole_error() -> None:
    s = from_numpy([np.zeros(2, np.float32) for _ in range(50)])
    s.tensor_values[7].raw_data = b"\0" * 5
    s.tensor_values[31].data_type = 11
    s.tensor_values[40].MergeFromString(b"\xa8\x06\x01")
    with pytest.raises(ValidationError) as info:
        to_numpy(s)
    assert info.value.problems == problems(s)
    assert [p.path for p in info.value.problems] == [
        "tensor_values[31]", "tensor_values[7].raw_data", "tensor_values[31].raw_data",
        "tensor_values[40]"]


@pytest.mark.parametrize("code", [c for c, d in DATA_TYPES.items() if d.field == "int32_data"])
def test_typed_entries_vectorised_report_the_same(code: int) -> None:
    dt = DATA_TYPES[code]
    values = [0, 1, -1, 255, 256, 65535, 65536, -129, 63, 64] * 5
    t = TensorProto(data_type=code, dims=[len(values) * dt.per_entry])
    t.int32_data.extend(values)
    found = typed_entry_problems("t", code, "int32_data", t.int32_data)
    assert found == typed_entry_problems("t", code, "int32_data", np.array(values))
    assert found == typed_entry_problems("t", code, "int32_data", values)
    lo, hi = {9: (0, 1), 2: (0, 255), 3: (-128, 127), 4: (0, 65535), 5: (-32768, 32767),
              6: None, 27: (0, 63), 28: (0, 63)}.get(code, (0, 255 if dt.bits <= 8 else 65535)) \
        or (None, None)
    if lo is None:
        assert found == []
        return
    bad = [i for i, v in enumerate(values) if not lo <= v <= hi]
    want = [(f"t.int32_data[{i}]", f"{values[i]} is outside [{lo}, {hi}], the range of a "
             f"{dt.name} entry of int32_data") for i in bad[:MAX_REPORTED]]
    if len(bad) > MAX_REPORTED:
        want.append(("t.int32_data", f"{len(bad) - MAX_REPORTED} more faulty entries not "
                                      "listed"))
    assert [(p.path, p.message) for p in found] == want
    assert (quick_tensor(t) is None) == bool(bad)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint64, np.uint8])
def test_entries_in_range_both_ends(dtype: Any) -> None:
    info = np.iinfo(dtype)
    for lo, hi in [(0, 1), (0, 255), (-128, 127)]:
        for v in (lo, hi, lo - 1, hi + 1, int(info.min), int(info.max)):
            if not info.min <= v <= info.max:
                continue
            a = np.array([0 if lo <= 0 <= hi else lo, v], dtype=dtype)
            assert entries_in_range(a, lo, hi) == all(lo <= int(x) <= hi for x in a), (lo, hi, v)
    assert entries_in_range(np.zeros(0, dtype), 0, 1)


def test_raw_data_is_read_once_for_check_and_array() -> None:
    big = np.arange(1 << 16, dtype=np.float32)
    s = SequenceProto()
    s.ParseFromString(from_numpy([big, big]).SerializeToString())
    out = to_numpy(s)
    assert all(not a.flags.writeable and a.base is not None for a in out)
    assert np.array_equal(out[1], big)


@pytest.mark.parametrize("code", [c for c, d in DATA_TYPES.items()
                                  if d.field == "int32_data" and d.per_entry == 1])
def test_int32_data_narrowed_to_each_type(code: int) -> None:
    dt = DATA_TYPES[code]
    lo, hi = (0, 1) if code == 9 else (-128, 127) if code == 3 else \
        (-32768, 32767) if code == 5 else (-(2**31), 2**31 - 1) if code == 6 else \
        (0, 63) if dt.bits == 6 else (0, 255) if dt.dtype.itemsize == 1 else (0, 65535)
    entries = np.array([lo, hi, (lo + hi) // 2, lo + 1, hi - 1] * 3, dtype=np.int64)
    t = TensorProto(data_type=code, dims=[3, 5])
    t.int32_data.extend(entries.tolist())
    got = to_numpy(t)
    bits = entries.astype(np.int32).astype(f"u{dt.dtype.itemsize}" if dt.dtype.kind != "i"
                                           else dt.dtype)
    want = bits.view(dt.dtype).reshape(3, 5) if dt.dtype.kind not in "iub" else \
        entries.astype(dt.dtype).reshape(3, 5)
    assert got.dtype == dt.dtype and got.shape == (3, 5)
    assert got.tobytes() == want.tobytes()
