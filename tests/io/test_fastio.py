"""onnxdata.read and write against the slow path: to_numpy_reference(load(...)) and
save(from_numpy(...)).

Differential everywhere: the corpus, property-generated values, typed-field
tensors, bad inputs (same class of error), plus what only the fast path has:
read-only zero-copy views that keep the mapping alive, truncation after the
mapping, external data, and the code paths of values over 2 GiB.
"""

from __future__ import annotations

import gc
import mmap
import os
import tracemalloc
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onnxdata.io.read as fast_read
import onnxdata.io.write as fast_write
from onnxdata import (
    DecodeError,
    MapProto,
    OnnxDataError,
    OptionalProto,
    SequenceProto,
    SparseTensorProto,
    TensorProto,
    ValidationError,
    load,
    read,
    save,
    write,
)
from onnxdata.convert.common import SparseParts
from onnxdata.convert.values import from_numpy, to_numpy_reference
from onnxdata.rules.validation import problems_reference
from onnxdata.wire import field_values
from onnxdata.wire.decode import decode_varints
from onnxdata.wire.format import encode_varint, read_varint
from onnxdata.wire.source import SMALL, WHOLE
from tests.conftest import corpus_params

# --------------------------------------------------------------------------- helpers


def same(a: Any, b: Any) -> bool:
    """Equal values: same types, keys, dtypes, shapes and bytes (NaN payloads included)."""
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, dict):
        return (isinstance(b, dict) and list(a) == list(b)
                and all(type(k) is type(j) for k, j in zip(a, b, strict=True))
                and all(same(a[k], b[k]) for k in a))
    if a is None or b is None:
        return a is b
    if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
        return False
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == object:
        return bool(a.tolist() == b.tolist())
    return a.tobytes() == b.tobytes()


def slow(path: Path, kind: str, base_dir: Path | None = None) -> Any:
    return to_numpy_reference(load(path, kind), base_dir=base_dir or path.parent)


def outcome(fn: Any) -> tuple[Any, type[BaseException] | None]:
    try:
        return fn(), None
    except OnnxDataError as exc:
        return None, _family(exc)


def _family(exc: BaseException) -> type[BaseException]:
    """The error class the contract is about: DecodeError, ValidationError or another."""
    for cls in (DecodeError, ValidationError):
        if isinstance(exc, cls):
            return cls
    return OnnxDataError


def assert_same_outcome(path: Path, kind: str, base_dir: Path | None = None) -> Any:
    expected, expected_err = outcome(lambda: slow(path, kind, base_dir))
    got, err = outcome(lambda: read(path, kind, base_dir=base_dir))
    assert err is expected_err, f"read raised {err}, the slow path {expected_err}"
    if err is None:
        assert same(got, expected)
    return got


def arrays(value: Any) -> list[np.ndarray[Any, Any]]:
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, list):
        return [a for v in value for a in arrays(v)]
    if isinstance(value, dict):
        return [a for v in value.values() for a in arrays(v)]
    return []


@pytest.fixture(params=[0, 1 << 16], ids=["stream-all", "stream-large"])
def stream_min(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(fast_write, "STREAM_MIN", request.param)
    return int(request.param)


def assert_write_equals_save(tmp_path: Path, value: Any, kind: str | None = None,
                             **kw: Any) -> Path:
    ours, theirs = tmp_path / "ours.pb", tmp_path / "theirs.pb"
    write(value, ours, kind, **kw)
    save(from_numpy(value, kind, **kw), theirs)  # type: ignore[call-overload]
    assert ours.read_bytes() == theirs.read_bytes()
    return ours


# --------------------------------------------------------------------------- the corpus


@pytest.mark.parametrize(("path", "kind"), corpus_params())
def test_read_equals_to_numpy_on_the_corpus(path: Path, kind: str) -> None:
    value = assert_same_outcome(path, kind)
    for a in arrays(value):
        assert not a.flags.writeable


@pytest.mark.parametrize(("path", "kind"), corpus_params()[::8])
def test_read_without_kind_uses_the_declared_type(path: Path, kind: str) -> None:
    assert same(read(path), read(path, kind))


@pytest.mark.parametrize(("path", "kind"), corpus_params())
def test_write_of_a_corpus_value_equals_save(tmp_path: Path, path: Path, kind: str,
                                             stream_min: int) -> None:
    message: Any = load(path, kind)
    value = read(path, kind)
    elem = message.elem_type if (isinstance(value, list) and not value) or value is None else None
    ours = assert_write_equals_save(tmp_path, value, kind, elem_type=elem, name=message.name)
    assert same(read(ours, kind), value)


# --------------------------------------------------------------------------- property tests

_DTYPES = [np.float32, np.float64, np.int8, np.uint16, np.int32, np.int64, np.uint64, np.bool_,
           np.float16, np.complex64, np.complex128, ml_dtypes.bfloat16,
           ml_dtypes.float8_e4m3fn, ml_dtypes.int4, ml_dtypes.uint4, ml_dtypes.int2,
           ml_dtypes.float4_e2m1fn, ml_dtypes.float6_e3m2fn, object]
_BITS = {ml_dtypes.int4: 4, ml_dtypes.uint4: 4, ml_dtypes.int2: 2, ml_dtypes.float4_e2m1fn: 4,
         ml_dtypes.float6_e3m2fn: 6}


@st.composite
def tensors(draw: st.DrawFn, dtype: Any = None) -> np.ndarray[Any, Any]:
    dtype = draw(st.sampled_from(_DTYPES)) if dtype is None else dtype
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    n = int(np.prod(shape))
    if dtype is object:
        items = draw(st.lists(st.binary(max_size=5), min_size=n, max_size=n))
        out = np.empty(n, dtype=object)
        out[:] = items
        return out.reshape(shape)
    dt = np.dtype(dtype)
    raw = np.frombuffer(draw(st.binary(min_size=n * dt.itemsize, max_size=n * dt.itemsize)),
                        dtype=np.uint8).copy()
    if dtype is np.bool_:
        raw &= 1
    if dtype in _BITS:
        raw &= (1 << _BITS[dtype]) - 1
    return raw.view(dt).reshape(shape)


def _same_dtype_list(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    return st.one_of(
        st.sampled_from(_DTYPES).flatmap(lambda d: st.lists(tensors(d), min_size=1, max_size=3)),
        st.lists(inner.filter(lambda v: not isinstance(v, np.ndarray)), min_size=1,
                 max_size=3).filter(_one_kind),
    )


def _kind(v: Any) -> str:
    return "optional" if v is None else type(v).__name__


def _one_kind(values: list[Any]) -> bool:
    """The elements share one type all the way down, as a sequence's must (issue 10, P11)."""
    kinds = {_kind(v) for v in values}
    if len(kinds - {"optional"}) > 1 or ("dict" in kinds and "optional" in kinds):
        return False
    return len({_signature(v) for v in values if v is not None}) <= 1


def _signature(v: Any) -> Any:
    """A value's nested type: dtypes, key kinds and element types, all the way down."""
    if isinstance(v, np.ndarray):
        return ("tensor", str(v.dtype))
    if isinstance(v, list):
        return ("list", *sorted({repr(_signature(x)) for x in v}))
    if isinstance(v, dict):
        return ("dict", *sorted({type(k).__name__ for k in v}),
                *sorted({repr(_signature(x)) for x in v.values()}))
    return (type(v).__name__,)


def _maps(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[Any, Any]]:
    keys = st.one_of(st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=3, unique=True),
                     st.lists(st.binary(max_size=4), min_size=1, max_size=3, unique=True))
    return st.tuples(keys, st.sampled_from(_DTYPES)).flatmap(
        lambda kd: st.lists(tensors(kd[1]), min_size=len(kd[0]), max_size=len(kd[0])).map(
            lambda vs: dict(zip(kd[0], vs, strict=True))))


values = st.recursive(
    tensors(),
    lambda inner: st.one_of(_same_dtype_list(inner), _maps(inner)),
    max_leaves=6,
)


@pytest.mark.slow
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(value=values, name=st.sampled_from(["", "x"]), optional=st.booleans(),
       stream_all=st.booleans())
def test_property_read_and_write_agree_with_the_slow_path(
        tmp_path: Path, value: Any, name: str, optional: bool, stream_all: bool) -> None:
    kind = "optional" if optional else None
    old = fast_write.STREAM_MIN
    fast_write.STREAM_MIN = 0 if stream_all else old
    try:
        ours = assert_write_equals_save(tmp_path, value, kind, name=name)
    finally:
        fast_write.STREAM_MIN = old
    k = kind or {np.ndarray: "tensor", list: "sequence", dict: "map"}[type(value)]
    got = read(ours, k)
    assert same(got, slow(ours, k))
    assert same(got, value) or _has_nan(value)


def _has_nan(value: Any) -> bool:
    return any(a.dtype != object and a.dtype.kind in "fcV" for a in arrays(value))


@pytest.mark.parametrize("value", [
    np.arange(24, dtype=">f4").reshape(2, 3, 4)[:, ::2, 1:],
    np.asfortranarray(np.arange(12, dtype=np.int16).reshape(3, 4)),
    np.arange(30, dtype=np.int8).astype(ml_dtypes.int4)[3:29],
    np.arange(7, dtype=np.int8).astype(ml_dtypes.float6_e2m3fn),
    np.array(3.5, dtype=">f8"),
    [SparseParts(np.arange(3.0), np.array([0, 2, 5]), (2, 3))],
    {np.int8(1): [np.zeros(70000, np.uint8)], np.int8(-2): [np.ones(3, np.uint8)]},
    [None, np.arange(70000.0), None],
], ids=["strided-big-endian", "fortran", "int4", "float6", "0-d", "sparse", "int8-keys",
        "optionals"])
def test_write_equals_save_for_awkward_arrays(tmp_path: Path, value: Any,
                                              stream_min: int) -> None:
    ours = assert_write_equals_save(tmp_path, value)
    kind = {np.ndarray: "tensor", list: "sequence", dict: "map"}[type(value)]
    assert same(read(ours, kind), slow(ours, kind))


def test_write_in_tiny_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast_write, "STREAM_MIN", 0)
    monkeypatch.setattr(fast_write, "WRITE_CHUNK", 7)
    value = [np.arange(100, dtype=">i4").reshape(10, 10)[:, ::3],
             np.arange(50, dtype=np.int32), np.arange(33, dtype=np.int32)]
    assert_write_equals_save(tmp_path, value)
    bits = [np.arange(33, dtype=np.uint8).astype(ml_dtypes.uint2)]
    assert_write_equals_save(tmp_path, bits)


def test_write_passes_elem_type_and_key_type(tmp_path: Path) -> None:
    assert_write_equals_save(tmp_path, [], "sequence", elem_type="map")
    assert_write_equals_save(tmp_path, {}, "map", elem_type="tensor", key_type="uint8")
    assert_write_equals_save(tmp_path, None, "optional", elem_type="tensor", name="n")


def test_write_raises_what_from_numpy_raises_and_leaves_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "v.pb"
    target.write_bytes(b"old")
    for bad in ([np.zeros(70000, np.float32), np.zeros(3, np.int8)], [], {1.5: np.zeros(1)}):
        with pytest.raises(OnnxDataError) as theirs:
            from_numpy(bad)
        with pytest.raises(type(theirs.value)):
            write(bad, target)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["v.pb"]


# --------------------------------------------------------------------------- typed fields


def _typed(code: int, dims: list[int], field: str, entries: list[Any]) -> TensorProto:
    t = TensorProto(data_type=code, dims=dims)
    getattr(t, field).extend(entries)
    return t


@pytest.mark.parametrize("message", [
    _typed(1, [2, 2], "float_data", [1.0, -2.5, float("nan"), 0.0]),
    _typed(11, [3], "double_data", [1.0, 2.0, -3.0]),
    _typed(14, [2], "float_data", [1.0, 2.0, 3.0, 4.0]),
    _typed(15, [1], "double_data", [1.0, -1.0]),
    _typed(6, [3], "int32_data", [-1, 2**31 - 1, -2**31]),
    _typed(3, [2], "int32_data", [-128, 127]),
    _typed(9, [3], "int32_data", [0, 1, 1]),
    _typed(10, [2], "int32_data", [0x3C00, 0xFFFF]),
    _typed(16, [1], "int32_data", [0x3F80]),
    _typed(22, [3], "int32_data", [0x21, 0x0F]),
    _typed(25, [5], "int32_data", [0xE4, 0x03]),
    _typed(27, [2], "int32_data", [1, 63]),
    _typed(7, [2, 1], "int64_data", [-(2**63), 2**63 - 1]),
    _typed(12, [2], "uint64_data", [0, 2**32 - 1]),
    _typed(13, [2], "uint64_data", [2**64 - 1, 1]),
    _typed(8, [2], "string_data", [b"a", b"\xff"]),
], ids=lambda m: f"{m.data_type}-{m.ListFields()[-1][0].name}")
def test_typed_fields_read_like_to_numpy(tmp_path: Path, message: TensorProto) -> None:
    path = tmp_path / "t.pb"
    save(message, path)
    got = assert_same_outcome(path, "tensor")
    assert not got.flags.writeable or got.dtype == object or message.data_type in (3, 6, 9)


def test_packed_float_data_is_a_view_of_the_mapping(tmp_path: Path) -> None:
    path = tmp_path / "t.pb"
    n = SMALL // 4 + 1000  # past SMALL: mapped
    save(_typed(1, [n], "float_data", list(range(n))), path)
    got = read(path, "tensor")
    assert not got.flags.writeable
    assert not got.flags.owndata and _reaches_mmap(got)


def test_a_small_file_is_read_into_one_copy_not_mapped(tmp_path: Path) -> None:
    path = tmp_path / "t.pb"
    save(_typed(1, [1000], "float_data", list(range(1000))), path)
    assert path.stat().st_size <= SMALL
    fds = len(os.listdir("/proc/self/fd"))
    got = read(path, "tensor")
    assert not got.flags.writeable and not got.flags.owndata and not _reaches_mmap(got)
    assert len(os.listdir("/proc/self/fd")) == fds  # no descriptor held, on any Python
    with open(path, "r+b") as f:  # rewritten in place: the value is the copy's
        f.seek(path.stat().st_size - 4000)
        f.write(np.zeros(1000, np.float32).tobytes())
    assert got.tolist() == list(range(1000))


def _reaches_mmap(a: Any) -> bool:
    while a is not None:
        if isinstance(a, mmap.mmap):
            return True
        a = getattr(a, "base", None) if not isinstance(a, memoryview) else a.obj
    return False


def test_varints_are_decoded_as_protobuf_does() -> None:
    rng = np.random.default_rng(0)
    numbers = [0, 1, 127, 128, 2**31, 2**32 - 1, 2**63, 2**64 - 1,
               *rng.integers(0, 2**63, 200, dtype=np.uint64).tolist()]
    data = b"".join(encode_varint(n) for n in numbers)
    assert decode_varints(np.frombuffer(data, np.uint8)).tolist() == numbers
    pos, back = 0, []
    while pos < len(data):
        v, pos = read_varint(data, pos, len(data))
        back.append(v)
    assert back == numbers
    with pytest.raises(DecodeError, match="truncated"):
        decode_varints(np.frombuffer(data[:-1], np.uint8))
    with pytest.raises(DecodeError, match="10 bytes"):
        decode_varints(np.frombuffer(b"\x80" * 10 + b"\x01", np.uint8))
    overlong = np.frombuffer(b"\xff" * 9 + b"\x02", np.uint8)  # protobuf keeps the low 64 bits
    assert decode_varints(overlong).tolist() == [(1 << 63) - 1]


def test_varint_decoding_works_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(field_values, "VARINT_CHUNK", 3)
    numbers = [*range(0, 5000, 37), 2**40]
    data = b"".join(encode_varint(n) for n in numbers)
    assert decode_varints(np.frombuffer(data, np.uint8)).tolist() == numbers


# --------------------------------------------------------------------------- bad inputs


def _bad_messages() -> list[Any]:
    seq_mixed = SequenceProto(elem_type=1)
    seq_mixed.tensor_values.add().CopyFrom(from_numpy(np.zeros(2, np.float32)))
    seq_mixed.tensor_values.add().CopyFrom(from_numpy(np.zeros(2, np.int8)))
    seq_wrong = SequenceProto(elem_type=3)
    seq_wrong.tensor_values.add().CopyFrom(from_numpy(np.zeros(2, np.float32)))
    dup = from_numpy({1: np.zeros(1), 2: np.zeros(1)})
    dup.keys[1] = 1
    int8_key = from_numpy({1: np.zeros(1)}, key_type="int8")
    int8_key.keys[0] = 1000
    sparse = SparseTensorProto(dims=[2, 2])  # indices out of order
    sparse.values.CopyFrom(from_numpy(np.arange(2.0)))
    sparse.indices.CopyFrom(from_numpy(np.array([3, 1], np.int64)))
    opt = OptionalProto(elem_type=1)
    opt.sequence_value.elem_type = 1
    bomb = TensorProto(data_type=1, dims=[2**20, 2**20], raw_data=b"1234")
    unknown = from_numpy(np.zeros(3, np.float32))
    return [
        ("tensor", TensorProto(dims=[2], raw_data=b"12345678")),
        ("tensor", bomb),
        ("tensor", _typed(3, [2], "int32_data", [1, 1000])),
        ("tensor", _typed(1, [3], "float_data", [1.0])),
        ("tensor", TensorProto(data_type=1, dims=[1], raw_data=b"1234", float_data=[1.0])),
        ("tensor", TensorProto(data_type=1, dims=[-1])),
        ("sequence", SequenceProto()),
        ("sequence", seq_mixed),
        ("sequence", seq_wrong),
        ("map", dup),
        ("map", int8_key),
        ("map", MapProto(key_type=1)),
        ("sparse_tensor", sparse),
        ("sparse_tensor", SparseTensorProto(dims=[3])),
        ("optional", opt),
        ("optional", OptionalProto()),
        ("sequence", unknown),
        ("tensor", unknown.SerializeToString() + b"\x98\x01\x05"),
    ]


@pytest.mark.parametrize(("kind", "message"), _bad_messages())
def test_bad_values_give_the_same_error(tmp_path: Path, kind: str, message: Any) -> None:
    """Same problems, word for word: read raises the engine's own findings (there is no
    re-check with protobuf any more, so this holds at any size)."""
    path = tmp_path / "bad.pb"
    if isinstance(message, bytes):
        path.write_bytes(message)
    else:
        save(message, path)
    with pytest.raises(ValidationError) as theirs:
        slow(path, kind)
    with pytest.raises(ValidationError) as ours:
        read(path, kind)
    assert ours.value.problems == theirs.value.problems


@pytest.mark.parametrize("dims", [[0, 1 << 62, 1 << 62], [0] * 70, [1] * 70])
def test_a_shape_numpy_cannot_hold_is_a_validation_error(tmp_path: Path, dims: list[int]) -> None:
    t = TensorProto(dims=dims, data_type=1, raw_data=b"" if 0 in dims else b"1234")
    path = tmp_path / "t.pb"
    save(t, path)
    with pytest.raises(ValidationError, match="numpy array"):
        read(path, "tensor")
    assert problems_reference(t), "validate agrees with read (issue 10, P14)"
    s = SequenceProto(elem_type=1)
    s.tensor_values.add().CopyFrom(t)
    save(s, path)
    with pytest.raises(ValidationError, match=r"tensor_values\[0\]"):
        read(path, "sequence")


def test_a_dims_bomb_is_refused_without_allocating(tmp_path: Path) -> None:
    path = tmp_path / "bomb.pb"
    save(TensorProto(data_type=1, dims=[2**40], raw_data=b"1234"), path)
    tracemalloc.start()
    with pytest.raises(ValidationError):
        read(path, "tensor")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 1 << 20


def _corpus_file(kind: str, name: str) -> Path:
    return next(p.values[0] for p in corpus_params() if name in str(p.values[0])
                and p.values[1] == kind)


@pytest.mark.parametrize(("kind", "name"), [
    ("sequence", "test_sequence_insert_at_back"), ("optional", "test_loop16_seq_none"),
    ("tensor", "test_abs/"), ("tensor", "test_string_concat/"),
])
def test_every_truncation_gives_the_same_class_of_error(tmp_path: Path, kind: str,
                                                        name: str) -> None:
    data = _corpus_file(kind, name).read_bytes()
    path = tmp_path / "cut.pb"
    for n in range(len(data)):
        path.write_bytes(data[:n])
        assert_same_outcome(path, kind)


@pytest.mark.parametrize("data", [b"\x0b\x01", b"\x0a\x05ab", b"\xff" * 11, b"\x07",
                                  b"\x12\x02\x01", b"\x0c", b"\x0a\x80"])
@pytest.mark.parametrize("kind", ["tensor", "sequence", "optional", "map", "sparse_tensor"])
def test_corrupt_bytes_give_the_same_class_of_error(tmp_path: Path, data: bytes,
                                                    kind: str) -> None:
    path = tmp_path / "bad.pb"
    path.write_bytes(data)
    assert_same_outcome(path, kind)


def test_deep_nesting_is_refused_like_protobuf(tmp_path: Path) -> None:
    inner: Any = OptionalProto()
    for _ in range(150):
        outer = OptionalProto(elem_type=5)
        outer.optional_value.CopyFrom(inner)
        inner = outer
    path = tmp_path / "deep.pb"
    path.write_bytes(inner.SerializeToString())
    _, expected = outcome(lambda: slow(path, "optional"))
    _, got = outcome(lambda: read(path, "optional"))
    assert got is not None and expected is not None


# --------------------------------------------------------------------------- the mapping


def test_arrays_are_read_only_views_that_keep_the_mapping(tmp_path: Path) -> None:
    path = tmp_path / "seq.pb"
    n = WHOLE // 4 + 100_000  # past source.WHOLE: not read whole, so mapped
    write([np.arange(n, dtype=np.float32), np.arange(5, dtype=np.float32)], path)
    values = read(path, "sequence")
    first = values[0]
    del values
    gc.collect()
    os.unlink(path)  # the mapping outlives the name
    gc.collect()
    assert not first.flags.writeable and _reaches_mmap(first)
    with pytest.raises(ValueError):
        first[0] = 1
    assert np.array_equal(first, np.arange(n, dtype=np.float32))


def test_a_file_the_walk_reads_whole_gives_views_of_that_read(tmp_path: Path) -> None:
    """400 KB: past the first window, the walk reads the file whole; its arrays view that
    read, not the mapping too (which would hold the file's bytes twice)."""
    path = tmp_path / "seq.pb"
    write([np.arange(100_000, dtype=np.float32), np.arange(5, dtype=np.float32)], path)
    assert SMALL < path.stat().st_size <= WHOLE
    values = read(path, "sequence")
    assert not any(_reaches_mmap(v) for v in values)
    assert all(not v.flags.writeable and not v.flags.owndata for v in values)
    with open(path, "r+b") as f:  # rewritten in place: the values are the read's
        f.seek(path.stat().st_size - 20)
        f.write(np.zeros(5, np.float32).tobytes())
    assert values[1].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert float(values[0].sum()) == float(np.arange(100_000, dtype=np.float32).sum())


def test_a_file_truncated_after_mapping_is_an_error(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "seq.pb"
    write([np.arange(100_000, dtype=np.float32)] * 3, path)
    real = fast_read._open

    def map_then_truncate(name: str, mode: Any) -> Any:
        source = real(name, mode)
        os.truncate(name, 1000)
        return source

    monkeypatch.setattr(fast_read, "_mapped", map_then_truncate)
    with pytest.raises(DecodeError, match="changed while reading"):
        read(path, "sequence")


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.pb"
    path.write_bytes(b"")
    for kind in ("tensor", "sequence", "optional", "map", "sparse_tensor"):
        assert_same_outcome(path, kind)


# --------------------------------------------------------------------------- external data


def _external(tmp_path: Path, location: str, offset: int = 0, length: int | None = 24,
              data: bytes = bytes(range(64))) -> Path:
    (tmp_path / "data.bin").write_bytes(data)
    t = TensorProto(data_type=1, dims=[2, 3], data_location=1)
    entries = [("location", location), ("offset", str(offset))]
    if length is not None:
        entries.append(("length", str(length)))
    for k, v in entries:
        t.external_data.add(key=k, value=v)
    path = tmp_path / "ext.pb"
    save(t, path)
    return path


@pytest.mark.parametrize("offset", [0, 8, 40])
def test_external_data_is_a_read_only_copy(tmp_path: Path, offset: int) -> None:
    """External data is read through one descriptor, closed at once (issue 10, P3b/P10)."""
    path = _external(tmp_path, "data.bin", offset)
    got = assert_same_outcome(path, "tensor")
    assert not got.flags.writeable and not _reaches_mmap(got)
    assert got.tobytes() == bytes(range(64))[offset:offset + 24]


@pytest.mark.parametrize(("location", "offset", "length"), [
    ("../data.bin", 0, 24), ("/etc/passwd", 0, 24), ("data.bin", 48, 24),
    ("data.bin", 0, 20), ("missing.bin", 0, 24), ("link.bin", 0, 24),
])
def test_bad_external_data_gives_the_same_error(tmp_path: Path, location: str, offset: int,
                                                length: int) -> None:
    inside = tmp_path / "in"
    inside.mkdir()
    (tmp_path / "data.bin").write_bytes(bytes(64))
    (inside / "link.bin").symlink_to(tmp_path / "data.bin")
    path = _external(inside, location, offset, length)
    (inside / "data.bin").write_bytes(bytes(64))
    assert_same_outcome(path, "tensor")
    with pytest.raises(ValidationError):
        read(path, "tensor")


def test_external_data_inside_a_sequence(tmp_path: Path) -> None:
    t = TensorProto(data_type=6, dims=[4], data_location=1)
    t.external_data.add(key="location", value="sub/w.bin")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "w.bin").write_bytes(np.arange(4, dtype="<i4").tobytes())
    s = SequenceProto(elem_type=1)
    s.tensor_values.add().CopyFrom(t)
    path = tmp_path / "s.pb"
    save(s, path)
    got = assert_same_outcome(path, "sequence")
    assert got[0].tolist() == [0, 1, 2, 3]
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "s.pb").write_bytes(path.read_bytes())
    with pytest.raises(ValidationError):
        read(other / "s.pb", "sequence")
    assert read(other / "s.pb", "sequence", base_dir=tmp_path)[0].tolist() == [0, 1, 2, 3]


# --------------------------------------------------------------------------- over 2 GiB


def test_varints_for_lengths_over_2_gib() -> None:
    for n in (2**28 - 1, 2**28, 2**31 - 1, 2**31, 2**32 + 5, 3 * 2**30, 2**35 - 1, 2**35):
        data = encode_varint(n)
        assert len(data) == (4 if n < 2**28 else 5 if n < 2**35 else 6)
        assert read_varint(data, 0, len(data)) == (n, len(data))


def test_write_plans_a_sequence_over_2_gib_without_protobuf() -> None:
    """The >2 GiB write path at no cost: sizes of a 3 GiB value from stride-0 arrays."""
    big = np.broadcast_to(np.float32(1.5), (3 * 2**28 // 2,))  # 1.5 GiB, no memory
    value = [big, big]
    skeleton = from_numpy(fast_write._skeleton(value))
    parts = fast_write._parts(skeleton, value)
    total = fast_write._size(parts)
    assert total > 3 * 2**30
    head = parts[0] + parts[1]  # elem_type, then the first element's tag and length
    assert isinstance(head, bytes)
    length, _ = read_varint(head, 3, len(head))
    assert length > 2**30 and len(encode_varint(length)) == 5


def _sparse_file(path: Path, payloads: list[int]) -> list[int]:
    """A sequence of uint8 tensors with these payload sizes, as a file full of holes."""
    offsets = []
    with open(path, "wb") as f:
        f.write(b"\x10\x01")
        for n in payloads:
            head = b"\x08" + encode_varint(n) + b"\x10\x02\x4a" + encode_varint(n)
            f.write(b"\x1a" + encode_varint(len(head) + n) + head)
            offsets.append(f.tell())
            f.seek(n - 1, os.SEEK_CUR)
            f.write(b"\x07")
    return offsets


def test_read_a_sequence_over_2_gib_from_a_sparse_file(tmp_path: Path) -> None:
    path = tmp_path / "big.pb"
    sizes = [2**31 + 3, 5, 2**30]
    _sparse_file(path, sizes)
    if os.stat(path).st_blocks * 512 > 2**24:
        pytest.skip("this filesystem does not keep holes")
    values = read(path, "sequence")
    assert [v.shape for v in values] == [(n,) for n in sizes]
    assert all(int(v[-1]) == 7 and int(v[0]) == 0 for v in values)
    assert not any(v.flags.writeable for v in values)


@pytest.mark.skipif(not os.environ.get("ONNXDATA_BIG"), reason="writes 2.1 GiB: set ONNXDATA_BIG=1")
def test_write_and_read_back_over_2_gib(tmp_path: Path) -> None:
    big = np.broadcast_to(np.uint8(3), (2**31 + 11,))
    path = tmp_path / "big.pb"
    write([big, np.arange(4, dtype=np.uint8)], path)
    back = read(path, "sequence")
    assert back[0].shape == big.shape and int(back[0][-1]) == 3
    assert back[1].tolist() == [0, 1, 2, 3]
