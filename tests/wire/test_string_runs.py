"""Strings and sequences taken a run at a time (walk._run, field_values.string_values) against
protobuf.

``read`` splits runs of ``string_data``/``string_keys`` fields with numpy over
pread windows of ``fields.RUN_BYTES``; here the window is made small so that
runs break at window ends, on long lengths, on other fields in between, and
in the root's record replayed for the other kinds, and every result is the
slow path's (``to_numpy(load(...))``), every bad file its error class.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from onnxdata import (
    MapProto,
    OnnxDataError,
    SequenceProto,
    TensorProto,
    load,
    read,
    readings,
    to_numpy,
)
from onnxdata.core.messages import KindName
from onnxdata.engine.engine import Engine
from onnxdata.wire import fields, loops
from onnxdata.wire.source import Source


def _values(n: int, seed: int) -> list[bytes]:
    """Rows of one length (the strided path), values of varied length (one by one),
    lengths of two bytes, empty values and values ending in NUL."""
    rng = np.random.default_rng(seed)
    out = [f"s{i}".encode() for i in range(n)]
    out += [bytes(rng.integers(0, 256, int(k), dtype=np.uint8))
            for k in rng.integers(0, 300, n)]
    out += [b"", b"\x00", b"a\x00", b"2" * 130, b"\x32\x02" * 3]
    return out


def _tensor_bytes(first: list[bytes], second: list[bytes]) -> bytes:
    """One string tensor given in three parts (merged as protobuf merges them): the values
    are ``first + second`` with a name field between the two runs."""
    head = TensorProto(data_type=8, dims=[len(first) + len(second)], string_data=first)
    return (head.SerializeToString() + TensorProto(name="between").SerializeToString()
            + TensorProto(string_data=second).SerializeToString())


def _same(path: Path, kind: KindName, copy: bool) -> None:
    """``read`` gives what the slow path gives, or raises the same class of error."""
    try:
        want: Any = to_numpy(load(path, kind))
    except OnnxDataError as exc:
        with pytest.raises(type(exc)):
            read(path, kind, copy=copy)
        return
    got = read(path, kind, copy=copy)
    if isinstance(want, dict):
        assert list(got) == list(want)
        for key in want:
            np.testing.assert_array_equal(got[key], want[key])
        return
    if isinstance(want, list):
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype and g.tolist() == w.tolist()
        return
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tolist() == want.tolist()


@pytest.fixture(params=[1 << 20, 97, 4096], ids=["window-1MiB", "window-97", "window-4KiB"])
def run_bytes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(fields, "RUN_BYTES", request.param)
    return int(request.param)


@pytest.mark.parametrize("copy", [False, True], ids=["mmap", "copy"])
@pytest.mark.parametrize("n", [3, 40, 3000])
def test_string_tensor_as_protobuf(tmp_path: Path, run_bytes: int, n: int, copy: bool) -> None:
    values = _values(n, n)
    path = tmp_path / "strings.pb"
    path.write_bytes(_tensor_bytes(values[:n // 2], values[n // 2:]))
    _same(path, "tensor", copy)
    got = read(path, "tensor", copy=copy)
    assert got.tolist() == values


@pytest.mark.parametrize("copy", [False, True], ids=["mmap", "copy"])
def test_cut_or_bad_string_runs_fail_as_protobuf(tmp_path: Path, run_bytes: int,
                                                 copy: bool) -> None:
    data = _tensor_bytes(_values(30, 1), _values(30, 2))
    path = tmp_path / "bad.pb"
    cuts = sorted({*range(len(data) - 40, len(data)), len(data) // 2, len(data) // 3 + 1})
    for cut in cuts:
        path.write_bytes(data[:cut])
        _same(path, "tensor", copy)
    long_length = bytearray(data)
    at = bytes(data).index(b"\x32\x02s0")
    long_length[at + 1] = 0xFF  # a length that runs past the end
    path.write_bytes(bytes(long_length))
    _same(path, "tensor", copy)


@pytest.mark.parametrize("n", [5, 500])
def test_map_of_string_keys_as_protobuf(tmp_path: Path, run_bytes: int, n: int) -> None:
    keys = [f"key{i}".encode() for i in range(n - 2)] + [b"", b"k\x00"]
    tensors = [TensorProto(data_type=1, dims=[1], float_data=[float(i)]) for i in range(n)]
    m = MapProto(key_type=8, string_keys=keys,
                 values=SequenceProto(elem_type=1, tensor_values=tensors))
    path = tmp_path / "map.pb"
    path.write_bytes(m.SerializeToString())
    _same(path, "map", False)
    assert list(read(path, "map")) == keys


def test_the_roots_record_replays_runs_for_every_kind(run_bytes: int) -> None:
    """The root is walked once per Source and replayed: a run comes back as a run for a
    tensor and field by field for the other kinds, with the verdicts of a fresh walk."""
    data = _tensor_bytes(_values(200, 3), _values(200, 4))
    src = Source.of_buffer(data)
    kinds: list[KindName] = ["tensor", "sequence", "map", "optional", "sparse_tensor", "tensor"]
    for kind in kinds:
        fresh = Engine(Source.of_buffer(data), values=True)
        again = Engine(src, values=True)
        try:
            want: Any = (fresh.run(kind).value, fresh.problems.result())
        except OnnxDataError as exc:
            with pytest.raises(type(exc)):
                again.run(kind)
            continue
        got = again.run(kind).value, again.problems.result()
        # the Python walk's record (the compiled loop walks the root again instead)
        assert src.root_cache or loops.COMPILED, "the root's record is kept"
        if isinstance(want[0], np.ndarray):
            assert got[0].tolist() == want[0].tolist() and got[1] == want[1]
        else:
            assert got == want
    assert [r.kind for r in readings(data)] == [r.kind for r in readings(bytearray(data))]


@pytest.mark.parametrize("copy", [False, True], ids=["mmap", "copy"])
def test_sequence_of_tensors_taken_as_runs(tmp_path: Path, run_bytes: int, copy: bool) -> None:
    """A sequence's tensors are a run too: rows of like tensors (one- and two-byte lengths),
    tensors of other sizes between, and a field between two runs."""
    small = [TensorProto(data_type=1, dims=[4], raw_data=np.arange(4, dtype="<f4").tobytes())
             for _ in range(150)]
    big = [TensorProto(data_type=1, dims=[40], float_data=[float(i)] * 40) for i in range(90)]
    odd = [TensorProto(data_type=1, dims=[k], float_data=[1.0] * k) for k in range(1, 60, 7)]
    first = SequenceProto(elem_type=1, tensor_values=small + odd).SerializeToString()
    second = SequenceProto(name="s", tensor_values=big + small[:3]).SerializeToString()
    data = first + second
    path = tmp_path / "seq.pb"
    path.write_bytes(data)
    _same(path, "sequence", copy)
    assert len(read(path, "sequence", copy=copy)) == len(small) + len(odd) + len(big) + 3
    for cut in (len(first) + 3, len(data) - 1, len(data) - 30):
        path.write_bytes(data[:cut])
        _same(path, "sequence", copy)


@pytest.mark.parametrize("n", [0, 1, 2, 64, 65])
def test_a_few_strings_in_memory_are_what_the_batched_read_makes(tmp_path: Path,
                                                                 n: int) -> None:
    """``field_values.string_values`` slices a few strings of bytes in memory one by one:
    the same bytes objects, in the same writable object array, as the numpy batch of a
    file read with pread."""
    from onnxdata.wire.field_values import string_values
    from onnxdata.wire.walk import TENSOR, scan

    values = [b"", b"\x00\xff", b"abc" * 50] * 22
    data = TensorProto(data_type=8, dims=[n], string_data=values[:n]).SerializeToString()
    path = tmp_path / "s.pb"
    path.write_bytes(data)
    got = []
    for src in (Source.of_buffer(data), Source.of_buffer(memoryview(bytearray(data))),
                Source.of_file(str(path), "pread")):
        where = fields.whole(0, len(data))
        f = scan(src, where, TENSOR)
        out = string_values(src, f.where("string_data", where, TENSOR),
                            f.counts.get("string_data"))
        assert out.dtype == object and out.shape == (n,) and out.flags.writeable
        assert all(type(v) is bytes for v in out)
        got.append(out.tolist())
    assert got == [values[:n]] * 3
