"""Every storage, side by side with onnx and with the floor (issue 14), in one run.

    .venv/bin/python bench/bench_storage.py                 # the issue's sizes (minutes)
    .venv/bin/python bench/bench_storage.py --scale 0.05    # a quick run (< 1 minute)
    .venv/bin/python bench/bench_storage.py --only W5,W7 --profile read

Workloads (sizes at ``--scale 1``):

- W1: a sequence of 64 float32 tensors in raw_data (``--raw-mib``, 256 MiB);
- W2: one float32 tensor in raw_data (``--raw-mib``);
- W3: a sequence of 100,000 small float32 tensors (4 values, raw_data);
- W4: a map of 1,000,000 int64 keys to 1,000,000 scalar float32 tensors;
- W5: one float16 tensor of 16 Mi values in int32_data (varints);
- W6: one tensor of 1,000,000 short strings;
- W7: a 10,000 x 10,000 float32 sparse tensor with 1 % non-zero (linear indices);
- W8a: an optional holding a sequence of 10,000 small tensors;
- W8b: an optional holding a sequence of 10,000 tensors of 1,024 float32 each.

Ops: ``read`` (the file, by ``onnxdata.read``; onnx: the file's bytes parsed and
converted by numpy_helper; for W1 and W2 every element is summed too),
``to_numpy`` (of the parsed message), ``validate``
(onnx: ``onnx.checker.check_tensor``/``check_sparse_tensor`` on every tensor; it
has no checker for sequences, maps or optionals), ``serialize`` (onnx:
``SerializeToString``) and ``save`` (onnx: ``SerializeToString``, write, fsync).
The floor is the least work that gives the same result: ``np.frombuffer`` of
the payload bytes (or a copy where the result must be decoded), making the
same numpy objects, ``np.zeros`` and one scatter for W7, one copy of the
serialized bytes for ``serialize``, one write + fsync of them for ``save``.

Times are medians of ``--repeat`` runs, ours, onnx's and the floor's taken in
turn (each first in turn), in this one process. ``vs onnx`` is onnx's time over
ours (above 1: we are faster); ``vs floor`` is ours over the floor's (1 is the best possible).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

try:
    import onnx
    from onnx import checker
    from onnx import numpy_helper as nh
except ImportError:  # pragma: no cover
    sys.exit("bench_storage needs onnx (use .venv)")

import onnxdata
from onnxdata import MapProto, OptionalProto, SequenceProto, SparseTensorProto, TensorProto

OPS = ("read", "to_numpy", "validate", "serialize", "save")
ONNX_CLASSES = {"tensor": onnx.TensorProto, "sparse_tensor": onnx.SparseTensorProto,
                "sequence": onnx.SequenceProto, "map": onnx.MapProto,
                "optional": onnx.OptionalProto}
OUR_CLASSES = {"tensor": TensorProto, "sparse_tensor": SparseTensorProto,
               "sequence": SequenceProto, "map": MapProto, "optional": OptionalProto}


@dataclass
class Workload:
    """One message as bytes, what onnx does with it, and the floor of making its value."""

    name: str
    label: str
    kind: str
    data: bytes
    onnx_value: Callable[[Any], Any]  # numpy_helper's reading of the parsed onnx message
    floor_value: Callable[[], Any]  # the same numpy objects, made the cheapest way
    tensors: Callable[[Any], list[Any]]  # the onnx tensors the checker is run on
    goals: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- workloads

def _seq_tensors(seq: Any) -> list[Any]:
    return list(seq.tensor_values)


def _sparse_dense(sp: Any) -> Any:
    """onnx's way to a dense array: numpy_helper on both parts, then one scatter."""
    values = nh.to_array(sp.values)
    indices = nh.to_array(sp.indices)
    out = np.zeros(int(np.prod(sp.dims)), values.dtype)
    out[indices] = values
    return out.reshape(tuple(sp.dims))


def w_raw_seq(n_tensors: int, mib: float) -> Workload:
    per = max(1, int(mib * (1 << 20)) // n_tensors // 4)
    arrays = [np.full(per, i + 0.5, np.float32) for i in range(n_tensors)]
    data = onnxdata.from_numpy(arrays, "sequence").SerializeToString()
    spans = _raw_spans(data, arrays)
    return Workload("W1", f"seq of {n_tensors} float32 raw ({per * 4 * n_tensors >> 20} MiB)",
                    "sequence", data, nh.to_list,
                    lambda: [np.frombuffer(data, np.float32, n, at) for at, n in spans],
                    _seq_tensors, {"read": ">= 5x onnx"})


def w_raw_one(mib: float) -> Workload:
    n = max(1, int(mib * (1 << 20)) // 4)
    array = np.arange(n, dtype=np.float32)
    data = onnxdata.from_numpy(array, "tensor").SerializeToString()
    at = len(data) - 4 * n
    return Workload("W2", f"one float32 tensor raw ({n * 4 >> 20} MiB)", "tensor", data,
                    nh.to_array, lambda: np.frombuffer(data, np.float32, n, at),
                    lambda t: [t], {"read": ">= 5x onnx"})


def _raw_spans(data: bytes, arrays: list[Any]) -> list[tuple[int, int]]:
    """Where each array's raw bytes are in ``data`` (found by their unique content)."""
    spans = []
    at = 0
    for a in arrays:
        raw = a.tobytes()
        at = data.index(raw, at)
        spans.append((at, a.size))
        at += len(raw)
    return spans


def w_small_seq(n: int, label: str = "W3") -> Workload:
    arrays = [np.full(4, i, np.float32) for i in range(n)]
    data = onnxdata.from_numpy(arrays, "sequence").SerializeToString()
    spans = _small_spans(data, n, 16)
    return Workload(label, f"seq of {n} float32[4] raw", "sequence", data, nh.to_list,
                    lambda: [np.frombuffer(data, np.float32, 4, at) for at in spans],
                    _seq_tensors, {"validate": "<= 1.5x checker", "serialize": "<= 1.2x",
                                   "save": "<= 1.2x"})


def _small_spans(data: bytes, n: int, nbytes: int) -> list[int]:
    """Offsets of each element's raw_data in a sequence of ``n`` like tensors (parsed once)."""
    seq = onnx.SequenceProto()
    seq.ParseFromString(data)
    out = []
    at = 0
    for t in seq.tensor_values:
        at = data.index(b"\x4a" + bytes([nbytes]) + t.raw_data, at) + 2
        out.append(at)
        at += nbytes
    return out


def w_map(n: int) -> Workload:
    keys = np.arange(n, dtype=np.int64) * 3
    values = np.arange(n, dtype=np.float32)
    m = MapProto(key_type=TensorProto.INT64)
    m.keys.extend(keys.tolist())
    m.values.elem_type = SequenceProto.TENSOR
    one = TensorProto(data_type=TensorProto.FLOAT)
    one_bytes = one.SerializeToString()
    raw = values.tobytes()
    # 1M scalar tensors in raw_data, built as bytes: from_numpy of 1M arrays takes a while
    elems = [one_bytes + b"\x4a\x04" + raw[4 * i:4 * i + 4] for i in range(n)]
    seq = SequenceProto()
    seq.elem_type = SequenceProto.TENSOR
    seq_bytes = seq.SerializeToString() + b"".join(
        _len_field(3, e) for e in elems)
    m_head = MapProto(key_type=TensorProto.INT64)
    m_head.keys.extend(keys.tolist())
    data = m_head.SerializeToString() + _len_field(5, seq_bytes)
    key_list = keys.tolist()

    def floor() -> Any:  # 1M zero-dim arrays, one per value
        return {k: np.frombuffer(raw, np.float32, 1, 4 * i).reshape(())
                for i, k in enumerate(key_list)}

    return Workload("W4", f"map of {n} int64 -> scalar float32", "map", data, nh.to_dict,
                    floor, lambda mp: list(mp.values.tensor_values),
                    {"validate": "<= 1.5x checker", "serialize": "<= 1.2x", "save": "<= 1.2x"})


def _len_field(number: int, payload: bytes) -> bytes:
    from onnxdata.wire.format import encode_varint

    return encode_varint(number << 3 | 2) + encode_varint(len(payload)) + payload


def w_f16(n: int) -> Workload:
    rng = np.random.default_rng(0)
    f16 = rng.standard_normal(n).astype(np.float16)
    t = onnx.TensorProto(data_type=onnx.TensorProto.FLOAT16, dims=[n])
    t.int32_data.extend(f16.view(np.uint16).astype(np.int32).tolist())
    data = t.SerializeToString()
    bits = f16.tobytes()
    return Workload("W5", f"float16 x {n} in int32_data", "tensor", data, nh.to_array,
                    lambda: np.frombuffer(bits, np.float16).copy(), lambda t: [t],
                    {"read": ">= 2x onnx"})


def w_strings(n: int) -> Workload:
    strings = np.array([f"s{i}".encode() for i in range(n)], dtype=object)
    data = onnxdata.from_numpy(strings, "tensor").SerializeToString()
    spans = []
    pos = data.index(b"\x32")  # the first string_data tag: dims and data_type come first
    for s in strings:
        spans.append((pos + 2, pos + 2 + len(s)))
        pos += 2 + len(s)
    assert data[spans[-1][0]:spans[-1][1]] == strings[-1]

    def floor() -> Any:
        out = np.empty(len(spans), dtype=object)
        out[:] = [data[a:b] for a, b in spans]
        return out

    return Workload("W6", f"{n} short strings", "tensor", data, nh.to_array, floor,
                    lambda t: [t], {"read": ">= 2x onnx"})


def w_sparse(side: int, density: float) -> Workload:
    rng = np.random.default_rng(1)
    total = side * side
    nnz = max(1, int(total * density))
    idx = np.sort(rng.choice(total, nnz, replace=False)).astype(np.int64)
    vals = rng.random(nnz, dtype=np.float32)
    sp = onnx.helper.make_sparse_tensor(nh.from_array(vals, "values"),
                                        nh.from_array(idx, "indices"), [side, side])
    data = sp.SerializeToString()
    vb, ib = vals.tobytes(), idx.tobytes()
    vat, iat = data.index(vb), data.index(ib)

    def floor() -> Any:
        out = np.zeros(total, np.float32)
        out[np.frombuffer(data, np.int64, nnz, iat)] = np.frombuffer(data, np.float32, nnz, vat)
        return out.reshape(side, side)

    return Workload("W7", f"sparse {side}x{side}, {nnz} non-zero", "sparse_tensor", data,
                    _sparse_dense, floor, lambda s: [s],
                    {"read": "<= 2x floor", "to_numpy": "<= 2x floor"})


def w_optional(n: int, per: int, label: str) -> Workload:
    arrays = [np.full(per, i, np.float32) for i in range(n)]
    seq = onnxdata.from_numpy(arrays, "sequence")
    opt = OptionalProto(elem_type=OptionalProto.SEQUENCE)
    opt.sequence_value.CopyFrom(seq)
    data = opt.SerializeToString()
    spans = _raw_spans(data, arrays) if per > 4 else [(at, per) for at in _opt_spans(data, n)]
    goals = {"validate": ">= 1.0x", "to_numpy": ">= 1.0x"} if label == "W8a" else \
        {"serialize": "<= 1.2x", "save": "<= 1.2x"}
    return Workload(label, f"optional of seq of {n} float32[{per}]", "optional", data,
                    nh.to_optional,
                    lambda: [np.frombuffer(data, np.float32, m, at) for at, m in spans],
                    lambda o: list(o.sequence_value.tensor_values), goals)


def _opt_spans(data: bytes, n: int) -> list[int]:
    o = onnx.OptionalProto()
    o.ParseFromString(data)
    out = []
    at = 0
    for t in o.sequence_value.tensor_values:
        at = data.index(b"\x4a\x10" + t.raw_data, at) + 2
        out.append(at)
        at += 16
    return out


# --------------------------------------------------------------------------- timing

def _total(value: Any) -> float:
    """Every element summed: a read that touches all the data."""
    arrays = value if isinstance(value, list) else [value]
    return sum(float(a.sum(dtype=np.float64)) for a in arrays)


def _fsync_write(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _parse(cls: Any, data: bytes) -> Any:
    m = cls()
    m.ParseFromString(data)
    return m


def contenders(w: Workload, op: str, folder: Path) -> tuple[Callable[[], Any],
                                                          Callable[[], Any],
                                                          Callable[[], Any] | None]:
    """(ours, onnx's, the floor's) for one op on one workload."""
    src = folder / f"{w.name}.pb"
    out = folder / f"{w.name}_out.pb"
    if not src.exists():
        src.write_bytes(w.data)
    ocls = ONNX_CLASSES[w.kind]
    ours_msg = _parse(OUR_CLASSES[w.kind], w.data)
    onnx_msg = _parse(ocls, w.data)
    if op == "read":
        def onnx_read() -> Any:
            with open(src, "rb") as f:
                return w.onnx_value(_parse(ocls, f.read()))
        if w.name in ("W1", "W2"):  # raw_data: read + sum, as the issue measures it
            return (lambda: _total(onnxdata.read(src, w.kind))), (lambda: _total(onnx_read())), \
                (lambda: _total(w.floor_value()))
        return (lambda: onnxdata.read(src, w.kind)), onnx_read, w.floor_value
    if op == "to_numpy":
        return (lambda: onnxdata.to_numpy(ours_msg)), (lambda: w.onnx_value(onnx_msg)), \
            w.floor_value
    if op == "validate":
        tensors = w.tensors(onnx_msg)
        check = checker.check_sparse_tensor if w.kind == "sparse_tensor" else \
            checker.check_tensor

        def onnx_check() -> None:
            for t in tensors:
                check(t)
        return (lambda: onnxdata.validate(ours_msg)), onnx_check, None
    if op == "serialize":
        return (lambda: onnxdata.serialize(ours_msg)), onnx_msg.SerializeToString, \
            (lambda: bytearray(w.data))
    assert op == "save"
    return (lambda: onnxdata.save(ours_msg, out)), \
        (lambda: _fsync_write(out, onnx_msg.SerializeToString())), \
        (lambda: _fsync_write(out, w.data))


def timed(fn: Callable[[], Any]) -> float:
    gc.collect()
    t = time.perf_counter()
    result = fn()
    seconds = time.perf_counter() - t
    del result
    return seconds


def measure(w: Workload, op: str, folder: Path, repeat: int) -> tuple[float, float, float | None]:
    ours, theirs, floor = contenders(w, op, folder)
    ours()  # once untimed: imports, caches, page cache
    times: list[list[float]] = [[], [], []]
    contestants = [(0, ours), (1, theirs)] + ([(2, floor)] if floor is not None else [])
    for i in range(repeat):  # each goes first in turn: whoever runs after a big free gains
        for k, fn in contestants[i % len(contestants):] + contestants[:i % len(contestants)]:
            times[k].append(timed(fn))
    return (statistics.median(times[0]), statistics.median(times[1]),
            statistics.median(times[2]) if times[2] else None)


def profile(w: Workload, op: str, folder: Path) -> None:
    ours, _, _ = contenders(w, op, folder)
    ours()
    prof = cProfile.Profile()
    prof.runcall(ours)
    print(f"--- cProfile of {w.name} {op}: {w.label}")
    pstats.Stats(prof, stream=sys.stdout).sort_stats("tottime").print_stats(8)


def _fmt(seconds: float) -> str:
    return f"{seconds:.3f} s" if seconds >= 0.1 else f"{seconds * 1e3:.2f} ms"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float,
                    default=float(os.environ.get("ONNXDATA_BENCH_SCALE", "1")),
                    help="multiplies every count (0.05 for a quick run; or "
                         "ONNXDATA_BENCH_SCALE)")
    ap.add_argument("--raw-mib", type=float, default=256.0, help="size of W1 and W2 at scale 1")
    ap.add_argument("--repeat", type=int, default=5, help="alternating runs per op (median)")
    ap.add_argument("--only", default="", help="comma-separated workloads, e.g. W3,W5")
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated ops")
    ap.add_argument("--profile", default="", help="cProfile this op of each workload instead")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    args, _ = ap.parse_known_args()  # run.py passes every script the same arguments
    s = args.scale
    builders: dict[str, Callable[[], Workload]] = {
        "W1": lambda: w_raw_seq(64, args.raw_mib * s),
        "W2": lambda: w_raw_one(args.raw_mib * s),
        "W3": lambda: w_small_seq(max(1, int(100_000 * s))),
        "W4": lambda: w_map(max(1, int(1_000_000 * s))),
        "W5": lambda: w_f16(max(1, int((16 << 20) * s))),
        "W6": lambda: w_strings(max(1, int(1_000_000 * s))),
        "W7": lambda: w_sparse(max(10, int(10_000 * s ** 0.5)), 0.01),
        "W8a": lambda: w_optional(max(1, int(10_000 * s)), 4, "W8a"),
        "W8b": lambda: w_optional(max(1, int(10_000 * s)), 1024, "W8b"),
    }
    only = [x for x in args.only.split(",") if x]
    ops = [x for x in args.ops.split(",") if x]
    print(f"bench_storage: scale {s}, {args.repeat} runs each; onnx {onnx.__version__}, "
          f"numpy {np.__version__}", flush=True)
    folder = Path(tempfile.mkdtemp(prefix="bench_storage_", dir=args.dir))
    rows: list[tuple[str, ...]] = []
    try:
        for name, build in builders.items():
            if only and name not in only:
                continue
            w = build()
            for op in ops:
                if args.profile:
                    if op == args.profile:
                        profile(w, op, folder)
                    continue
                ours, theirs, floor = measure(w, op, folder, args.repeat)
                row = (w.name, w.label, op, _fmt(ours), _fmt(theirs),
                       f"{theirs / ours:.2f}x",
                       f"{ours / floor:.2f}x" if floor else "-", w.goals.get(op, ">= 1.0x"))
                rows.append(row)
                print("  " + "  ".join(row), flush=True)
            for p in folder.iterdir():
                p.unlink()
            del w
            gc.collect()
    finally:
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()
    if rows:
        head = ("", "workload", "op", "onnxdata", "onnx", "vs onnx", "vs floor", "goal")
        print()
        print("| " + " | ".join(head) + " |")
        print("|" + "---|" * len(head))
        for r in rows:
            print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
