"""``read``, ``readings`` and validate of a sequence's many tensors, taken a layout at a
time (``by_layout``, ``layout_values``): the values onnx reads, as one by one, and the
same verdicts wherever one element breaks the run. (These were the tests of the bulk
path ``plain_runs``, which the layout groups replaced.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
from onnxdata.engine.by_layout import MIN_GROUPED, GroupWalk
from onnxdata.wire.loops import COMPILED
from tests.conftest import import_onnx
from tests.engine.test_engine import check_same_verdicts

onnx = import_onnx()  # the values are made by onnx's own writer; skips where it is absent
nh = onnx.numpy_helper
N = MIN_GROUPED + 8


def _sequence(tensors: list[onnx.TensorProto]) -> bytes:
    seq = onnx.SequenceProto(elem_type=onnx.SequenceProto.TENSOR)
    seq.tensor_values.extend(tensors)
    return seq.SerializeToString()


def _read(tmp_path: Path, data: bytes, kind: str = "sequence", copy: bool = False) -> Any:
    path = tmp_path / "value.pb"
    path.write_bytes(data)
    return onnxdata.read(path, kind, copy=copy)


@pytest.fixture
def bulk_calls(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each run was taken a layout at a time (True) or one by one (False)."""
    calls: list[bool] = []
    real = GroupWalk.grouped

    def spy(self: GroupWalk, *args: Any, **kwargs: Any) -> Any:
        got = real(self, *args, **kwargs)
        calls.append(got[0])
        return got

    monkeypatch.setattr(GroupWalk, "grouped", spy)
    return calls


#: What ``bulk_calls`` holds after one run taken a layout at a time: nothing is grouped
#: where the compiled walk is off (the Python walk takes every element).
GROUPED = [COMPILED]


@pytest.mark.parametrize("copy", [False, True])
@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (1, 0 + 2, 1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int8, np.uint16, np.bool_])
def test_a_run_of_one_layout_is_read_in_bulk_as_onnx_reads_it(
        tmp_path: Path, bulk_calls: list[bool], copy: bool, shape: tuple[int, ...],
        dtype: Any) -> None:
    rng = np.random.default_rng(0)
    arrays = [rng.integers(0, 2, shape).astype(dtype) for _ in range(N)]
    data = _sequence([nh.from_array(a, "t") for a in arrays])
    got = _read(tmp_path, data, copy=copy)
    assert bulk_calls == GROUPED
    assert len(got) == N
    for g, a in zip(got, arrays, strict=True):
        assert g.shape == a.shape and g.dtype == a.dtype and not g.flags.writeable
        assert np.array_equal(g, a)
    assert not isinstance(got[0], np.generic)  # scalars are 0-d arrays, as to_numpy gives


def test_a_map_of_scalar_tensors_is_read_in_bulk(tmp_path: Path,
                                                  bulk_calls: list[bool]) -> None:
    m = onnx.MapProto(key_type=onnx.TensorProto.INT64, keys=list(range(0, 3 * N, 3)))
    m.values.elem_type = onnx.SequenceProto.TENSOR
    m.values.tensor_values.extend(nh.from_array(np.array(i, np.float32)) for i in range(N))
    got = _read(tmp_path, m.SerializeToString(), "map")
    assert bulk_calls == GROUPED
    assert got == {3 * i: i for i in range(N)}
    assert all(v.shape == () and v.dtype == np.float32 for v in got.values())


def _odd_ones() -> list[tuple[str, onnx.TensorProto]]:
    """Tensors that break a run of float32[4] tensors named "t"."""
    named = nh.from_array(np.zeros(4, np.float32), "u")
    wider = nh.from_array(np.zeros(5, np.float32), "t")
    other_dims = nh.from_array(np.zeros((2, 2), np.float32), "t")
    other_type = nh.from_array(np.zeros(4, np.int32), "t")
    bad_size = nh.from_array(np.zeros(4, np.float32), "t")
    bad_size.dims[0] = 5  # 16 bytes of raw_data for 5 values: a problem
    doc = nh.from_array(np.zeros(4, np.float32), "t")
    doc.doc_string = "x"
    typed = onnx.TensorProto(data_type=onnx.TensorProto.FLOAT, dims=[4], name="t",
                             float_data=[1, 2, 3, 4])
    return [("named", named), ("wider", wider), ("other_dims", other_dims),
            ("other_type", other_type), ("bad_size", bad_size), ("doc", doc),
            ("typed", typed)]


@pytest.mark.parametrize("at", [1, N // 2, N - 1])
@pytest.mark.parametrize(("what", "odd"), _odd_ones(), ids=[w for w, _ in _odd_ones()])
def test_one_odd_tensor_leaves_values_and_verdicts_as_one_by_one(
        tmp_path: Path, bulk_calls: list[bool], at: int, what: str,
        odd: onnx.TensorProto) -> None:
    tensors = [nh.from_array(np.full(4, i, np.float32), "t") for i in range(N)]
    tensors[at] = odd
    data = _sequence(tensors)
    check_same_verdicts(data, "sequence")
    check_same_verdicts(data, "map")
    bulk_calls.clear()
    if what in ("bad_size", "other_type"):
        with pytest.raises(onnxdata.ValidationError) as info:
            _read(tmp_path, data)
        assert info.value.problems == onnxdata.rules.validation.problems_reference(
            onnxdata.load(data, "sequence"))
    else:
        got = _read(tmp_path, data)
        for g, t in zip(got, tensors, strict=True):
            assert np.array_equal(g, nh.to_array(t)) and g.shape == tuple(t.dims)
    assert len(bulk_calls) == 1  # the odd one is a group of its own, or all are one by one


def test_a_first_tensor_with_a_field_after_its_payload_reads_as_onnx_does(
        tmp_path: Path, bulk_calls: list[bool]) -> None:
    tensors = [nh.from_array(np.full(4, i, np.float32)) for i in range(N)]
    data = bytearray(_sequence(tensors))
    # the first tensor's name after its raw_data: 0x42 len "a", in place of nothing
    first = tensors[0].SerializeToString() + b"\x42\x01a"
    rest = b"".join(b"\x1a" + bytes([len(t.SerializeToString())]) + t.SerializeToString()
                    for t in tensors[1:])
    data = bytearray(b"\x10\x01\x1a" + bytes([len(first)]) + first + rest)
    got = _read(tmp_path, bytes(data))
    assert bulk_calls == GROUPED
    assert all(np.array_equal(g, np.full(4, i, np.float32)) for i, g in enumerate(got))


@pytest.mark.parametrize("source", ["bytes", "file"])
def test_validating_a_run_of_one_layout_takes_it_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bulk_calls: list[bool],
        source: str) -> None:
    """readings/validate (no values) take the run a layout at a time and give the verdict
    and summary of one by one."""
    data = _sequence([nh.from_array(np.full(4, i, np.float32), "t") for i in range(N)])
    path = tmp_path / "run.pb"
    path.write_bytes(data)
    found = onnxdata.readings(data if source == "bytes" else
                              onnxdata.explorer.readings.open_buffer(path))
    sequence = next(r for r in found if r.kind == "SequenceProto")
    assert (True in bulk_calls) == COMPILED
    assert sequence.valid and sequence.summary == f"sequence of {N} tensors, float32 [4]"
    monkeypatch.setattr(GroupWalk, "grouped", lambda *args, **kwargs: (False, args[8]))
    again = onnxdata.readings(data)  # one by one, to compare
    assert [(r.kind, r.valid, r.problems, r.summary) for r in found] == \
        [(r.kind, r.valid, r.problems, r.summary) for r in again]
