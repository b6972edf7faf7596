"""``TensorWalk.plain`` reads a tensor whose values are float_data or double_data packed
once as it reads raw_data (the same little-endian bytes), and a STRING tensor's few
string_data: for any such bytes it gives what the full scan gives (problems, summaries,
values, errors, writable copies where the reference reader makes them), and it is what
runs for the common valid tensor."""

from __future__ import annotations

import contextlib
import struct
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onnxdata
from onnxdata import TensorProto
from onnxdata.core.dtypes import DATA_TYPES
from onnxdata.engine import tensor as engine_tensor
from onnxdata.engine.engine import Engine
from onnxdata.explorer.readings import reading
from onnxdata.io import message_values
from onnxdata.wire.source import Source
from tests.conftest import import_onnx
from tests.engine.test_external_tensors import spy_scans
from tests.walk_digest import outcome
from tests.wire_bytes import ld, varint, vint

SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])
CODES = [TensorProto.FLOAT, TensorProto.COMPLEX64, TensorProto.DOUBLE, TensorProto.COMPLEX128,
         TensorProto.FLOAT16, TensorProto.INT32, TensorProto.STRING, 0, 99]


@st.composite
def typed_tensors(draw: Any) -> bytes:
    """Tensors of float_data or double_data, most packed once and valid, some with a count
    that does not fit, a second packed run, raw_data too, values one at a time, a name."""
    code = draw(st.sampled_from(CODES))
    dims = draw(st.lists(st.integers(0, 3), max_size=3))
    field, width = draw(st.sampled_from([(4, 4), (10, 8)]))
    n = int(np.prod(dims)) * (2 if code in (TensorProto.COMPLEX64, TensorProto.COMPLEX128)
                              else 1)
    n = draw(st.sampled_from([n, n, n, n + 1, max(0, n - 1)]))
    payload = draw(st.binary(min_size=n * width, max_size=n * width))
    payload += draw(st.sampled_from([b"", b"", b"", b"\x00"]))  # a length no value fits
    parts = [vint(1, d) for d in dims] if draw(st.booleans()) else \
        ([ld(1, b"".join(varint(d) for d in dims))] if dims else [])
    parts.append(vint(2, code))
    how = draw(st.sampled_from(["once", "once", "once", "twice", "raw-too", "one-at-a-time",
                                "named"]))
    if how == "twice":
        parts += [ld(field, payload[:width]), ld(field, payload[width:])]
    elif how == "one-at-a-time":
        tag = 0x25 if width == 4 else 0x51
        parts += [bytes([tag]) + payload[i:i + width]
                  for i in range(0, len(payload) - width + 1, width)]
    else:
        parts.append(ld(field, payload))
    if how == "raw-too":
        parts.append(ld(9, payload))
    if how == "named":
        parts.insert(0, ld(8, b"t"))
    order = draw(st.permutations(range(len(parts))))
    return b"".join(parts[i] for i in order)


@st.composite
def string_tensors(draw: Any) -> bytes:
    """STRING tensors of string_data, most valid, some with a count that does not fit, more
    strings than plain takes, raw_data or float_data too, another data type, a name."""
    code = draw(st.sampled_from([TensorProto.STRING] * 6 + [TensorProto.FLOAT, 0]))
    dims = draw(st.lists(st.integers(0, 3), max_size=3))
    n = int(np.prod(dims))
    n = draw(st.sampled_from([n, n, n, n + 1, max(0, n - 1),
                              engine_tensor._PLAIN_STRINGS + 1]))
    values = draw(st.lists(st.binary(max_size=3), min_size=n, max_size=n))
    parts = [vint(1, d) for d in dims] if draw(st.booleans()) else \
        ([ld(1, b"".join(varint(d) for d in dims))] if dims else [])
    parts.append(vint(2, code))
    parts += [ld(6, v) for v in values]
    how = draw(st.sampled_from(["plain", "plain", "plain", "raw-too", "float-too", "named"]))
    if how == "raw-too":
        parts.append(ld(9, b"ab"))
    elif how == "float-too":
        parts.append(ld(4, b""))
    elif how == "named":
        parts.insert(0, ld(8, b"t"))
    order = draw(st.permutations(range(len(parts))))
    return b"".join(parts[i] for i in order)


@st.composite
def dataless_tensors(draw: Any) -> bytes:
    """Tensors with no data field, of every data type (and none, and a bad one): valid
    only with no elements; some with an empty raw_data instead, some named."""
    code = draw(st.sampled_from([*sorted(DATA_TYPES), 0, 99]))
    dims = draw(st.lists(st.sampled_from([0, 0, 1, 2]), max_size=3))
    parts = [vint(1, d) for d in dims] + [vint(2, code)]
    how = draw(st.sampled_from(["none", "none", "empty-raw", "named"]))
    if how == "empty-raw":
        parts.append(ld(9, b""))
    elif how == "named":
        parts.insert(0, ld(8, b"t"))
    order = draw(st.permutations(range(len(parts))))
    return b"".join(parts[i] for i in order)


def _everything(data: bytes, folder: Path) -> dict[str, Any]:
    path = folder / "value.pb"
    path.write_bytes(data)
    seq = folder / "value.seq"
    seq.write_bytes(vint(1, 1) + ld(3, data) * 3)
    r = reading(data, "tensor")
    message: Any = None
    with contextlib.suppress(onnxdata.DecodeError):
        message = onnxdata.load(data, "tensor")
    return {"reading": (r.well_formed, r.valid, r.summary, [str(p) for p in r.problems]),
            "read": outcome(lambda: onnxdata.read(path, "tensor")),
            "sequence": outcome(lambda: onnxdata.read(seq, "sequence")),
            "to_numpy": None if message is None else
            outcome(lambda: message_values.to_numpy(message))}


@SETTINGS
@given(typed_tensors())
def test_the_plain_path_says_what_the_scan_says(tmp_path: Path, data: bytes) -> None:
    fast = _everything(data, tmp_path)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(engine_tensor.TensorWalk, "plain", lambda *args: None)
        slow = _everything(data, tmp_path)
    assert fast == slow


@SETTINGS
@given(string_tensors())
def test_the_plain_path_says_what_the_scan_says_of_strings(tmp_path: Path, data: bytes) -> None:
    fast = _everything(data, tmp_path)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(engine_tensor.TensorWalk, "plain", lambda *args: None)
        slow = _everything(data, tmp_path)
    assert fast == slow


@SETTINGS
@given(dataless_tensors())
def test_the_plain_path_says_what_the_scan_says_of_no_data(tmp_path: Path, data: bytes) -> None:
    fast = _everything(data, tmp_path)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(engine_tensor.TensorWalk, "plain", lambda *args: None)
        slow = _everything(data, tmp_path)
    assert fast == slow


@pytest.mark.parametrize("n", [0, 1, 6, engine_tensor._PLAIN_STRINGS + 1])
def test_the_plain_path_reads_a_few_strings(n: int, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A STRING tensor of up to _PLAIN_STRINGS strings is read by plain (no scan), as load
    and to_numpy read it; more are left to the scan's compiled walk."""
    message = TensorProto(data_type=TensorProto.STRING, dims=[n],
                          string_data=[b"s%d" % i for i in range(n)])
    data = message.SerializeToString()
    (tmp_path / "t.pb").write_bytes(data)
    scanned = spy_scans(monkeypatch)
    got = onnxdata.read(tmp_path / "t.pb", "tensor")
    assert got.dtype == object and got.tolist() == list(message.string_data)
    assert not got.flags.writeable
    assert onnxdata.read(tmp_path / "t.pb", "tensor", strings="str").tolist() == \
        [s.decode() for s in message.string_data]
    assert scanned == ([] if n <= engine_tensor._PLAIN_STRINGS else ["", ""])


@pytest.mark.parametrize("array", [np.arange(6, dtype=np.float32).reshape(2, 3),
                                   np.array([1.5, -2.0], np.float64),
                                   np.array([1 + 2j, 3 - 4j], np.complex64),
                                   np.array(7.25, np.float32)], ids=str)
def test_the_plain_path_reads_a_valid_float_data_tensor(
        array: np.ndarray[Any, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """onnx's make_tensor writes float_data packed: plain reads it, no scan, onnx's values."""
    onnx = import_onnx()  # (the old-protobuf suite has no onnx)
    helper, numpy_helper = onnx.helper, onnx.numpy_helper
    code = helper.np_dtype_to_tensor_dtype(array.dtype)
    data = helper.make_tensor("t", code, array.shape, array.ravel().tolist()).SerializeToString()
    message = TensorProto.FromString(data)
    assert not message.HasField("raw_data") and (message.float_data or message.double_data)
    scanned = spy_scans(monkeypatch)
    (tmp_path / "t.pb").write_bytes(data)
    got = onnxdata.read(tmp_path / "t.pb", "tensor")
    want = numpy_helper.to_array(message)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want) and not got.flags.writeable
    assert reading(data, "tensor").valid
    assert scanned == []


def test_an_empty_string_tensor_with_empty_float_data_reads_as_load_does(
        tmp_path: Path) -> None:
    """Issue 43, found by the read fuzz: dims [0], data_type STRING and an empty packed
    float_data are a valid empty STRING tensor, but plain took the float_data's bytes as
    raw STRING values and numpy's TypeError ("array of references") escaped ``read``."""
    data = bytes.fromhex("0a0100100822" "00")
    (tmp_path / "t.pb").write_bytes(data)
    assert reading(data, "tensor").valid
    got = onnxdata.read(tmp_path / "t.pb", "tensor")
    want = onnxdata.to_numpy(onnxdata.load(data, "tensor"))
    assert got.dtype == want.dtype == object and got.shape == want.shape == (0,)


def test_a_float_data_value_from_a_message_is_a_writable_copy() -> None:
    message = TensorProto(data_type=TensorProto.FLOAT, dims=[2], float_data=[1.0, 2.0])
    got = message_values.to_numpy(message)
    assert got.flags.writeable and got.tolist() == [1.0, 2.0]
    assert struct.pack("<2f", 1.0, 2.0) in message.SerializeToString()


@pytest.mark.parametrize("code", [TensorProto.FLOAT, TensorProto.INT4, TensorProto.BOOL,
                                  TensorProto.FLOAT8E4M3FN, TensorProto.INT64])
def test_the_plain_path_reads_an_empty_tensor_with_no_data(
        code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty tensor written with no data field at all (onnx's make_tensor of no values):
    plain, no scan, the dtype and shape load and to_numpy give."""
    data = vint(1, 0) + vint(1, 3) + vint(2, code)
    (tmp_path / "t.pb").write_bytes(data)
    scanned = spy_scans(monkeypatch)
    got = onnxdata.read(tmp_path / "t.pb", "tensor")
    want = onnxdata.to_numpy(onnxdata.load(data, "tensor"))
    assert got.dtype == want.dtype and got.shape == want.shape == (0, 3)
    assert not got.flags.writeable and scanned == []


@pytest.mark.parametrize("data", [ld(9, bytes(8)), b""], ids=["raw_data", "no-data"])
def test_an_out_of_range_data_location_given_before_a_valid_one_is_refused(
        data: bytes, tmp_path: Path) -> None:
    """protobuf keeps data_location 2 aside (a closed enum) and validate reports it, though
    a 0 comes after: plain took the last value, 0, and read a raw_data tensor that load
    and validate refuse (the fuzz file read-diff-data-location-2-then-0 without raw_data)."""
    dims = vint(1, 2) if data else vint(1, 0)
    message = dims + vint(2, TensorProto.FLOAT) + data + vint(14, 2) + vint(14, 0)
    (tmp_path / "t.pb").write_bytes(message)
    with pytest.raises(onnxdata.ValidationError, match="data_location: 2 is not DEFAULT"):
        onnxdata.to_numpy(onnxdata.load(message, "tensor"))
    with pytest.raises(onnxdata.ValidationError, match="data_location: 2 is not DEFAULT"):
        onnxdata.read(tmp_path / "t.pb", "tensor")


@pytest.mark.parametrize("how", ["unpacked", "overlong", "packed-runs", "external-entries"])
def test_the_plain_path_stops_where_no_tensor_is_valid(how: str) -> None:
    """Issue 39: plain read every dim (or external_data entry) of a tensor in Python before
    it gave up on it, 0.1-0.2 s for 1 MB of dims: past numpy's most dimensions, or more
    entries than there are keys, no tensor is valid, so it stops there (and scan_tensor,
    the compiled walk, says why). Its Python steps are counted (lines run)."""
    n = 20000
    dims = {"unpacked": vint(1, 1) * n,
            "overlong": (b"\x08\x81" + b"\x80" * 8 + b"\x00") * n,
            "packed-runs": ld(1, b"\x01\x01\x01") * n}.get(how, vint(1, 2))
    extra = b""
    if how == "external-entries":
        extra = b"".join(ld(13, ld(1, b"k%d" % i) + ld(2, b"v")) for i in range(n))
        extra += vint(14, 1)
    data = dims + vint(2, TensorProto.INT64) + extra + ld(7, b"\x07")
    walker = Engine(Source.of_buffer(data))
    lines = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        def local(frame: Any, event: str, arg: Any) -> Any:
            nonlocal lines
            lines += event == "line"
            return local
        return local if frame.f_code is engine_tensor.TensorWalk.plain.__code__ else None

    sys.settrace(tracer)
    try:
        assert walker.plain(0, len(data)) is None
    finally:
        sys.settrace(None)
    assert 0 < lines < 5000
    r = reading(data, "tensor")
    assert not r.valid and r.problems
