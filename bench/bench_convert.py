"""Timing of to_numpy / from_numpy against onnx's numpy_helper, in one run (not a test).

    .venv/bin/python bench/bench_convert.py [MiB]      # or ONNXDATA_BENCH_MIB=...; default 1024

Workloads: a sequence of 64 float32 tensors of MiB in all; 100,000 small tensors;
a float16 tensor in int32_data; a tensor of strings. For each, converting the
parsed message to numpy (ours checks every rule of ``validate`` as it reads;
onnx does not validate; ``validate`` alone is timed too), and building the
message from numpy and serializing it: onnx's ``from_list(...)
.SerializeToString()`` against our ``serialize(from_numpy(...))``, which gives
the same bytes by parts (protobuf's SerializeToString of one big message grows
its buffer by doubling). ``ratio`` is onnx's time over ours: above 1 we are
faster. Goals: every ratio >= 0.9, and building + serializing the big sequence
>= 3. The streaming ``onnxdata.write`` (issue 5) is timed too, to a file in
/dev/shm.
"""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np

try:
    import onnx
    from onnx import numpy_helper as nh
except ImportError:  # pragma: no cover
    sys.exit("bench_convert needs onnx (use .venv, not .venv-old)")

from onnxdata import SequenceProto, TensorProto, from_numpy, serialize, to_numpy, validate, write


def best(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
        del result
    return min(times)


def parse(cls: Any, data: bytes) -> Any:
    m = cls()
    m.ParseFromString(data)
    return m


def main() -> None:
    mib = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ.get("ONNXDATA_BENCH_MIB",
                                                                         "1024"))
    rng = np.random.default_rng(0)
    per = (mib << 20) // 64 // 4
    big = [rng.random(per, dtype=np.float32) for _ in range(64)]
    small = [np.full(2, i, np.float32) for i in range(100_000)]
    f16 = rng.random(1 << 20).astype(np.float16)
    strings = np.array([f"s{i}".encode() for i in range(100_000)], dtype=object)
    f16_typed = TensorProto(data_type=10, dims=[f16.size])
    f16_typed.int32_data.extend(f16.view(np.uint16).astype(np.int32).tolist())
    big_repeat = 1 if mib >= 512 else 3

    rows: list[tuple[str, float, float, str]] = []

    def row(label: str, theirs: float, ours: float, note: str = "") -> None:
        rows.append((label, theirs, ours, note))
        print(f"  {label:<44} onnx {theirs:8.3f} s   ours {ours:8.3f} s   "
              f"ratio {theirs / ours:6.2f} {note}", flush=True)

    print(f"bench_convert: {mib} MiB sequence of 64 float32 tensors; onnx {onnx.__version__}, "
          f"numpy {np.__version__}")

    # --- converting to numpy
    def convert(label: str, data: bytes, ours_cls: Any, theirs_cls: Any,
                theirs_read: Callable[[Any], Any], repeat: int) -> None:
        ours_msg, theirs_msg = parse(ours_cls, data), parse(theirs_cls, data)
        v = best(lambda: validate(ours_msg), repeat)
        row(label, best(lambda: theirs_read(theirs_msg), repeat),
            best(lambda: to_numpy(ours_msg), repeat), f"(validate alone {v:.3f} s)")

    convert(f"to_numpy: {mib} MiB seq of 64 float32", from_numpy(big).SerializeToString(),
            SequenceProto, onnx.SequenceProto, nh.to_list, big_repeat)
    convert("to_numpy: 100,000 small tensors", from_numpy(small).SerializeToString(),
            SequenceProto, onnx.SequenceProto, nh.to_list, 3)
    convert("to_numpy: float16 in int32_data (1 Mi)", f16_typed.SerializeToString(),
            TensorProto, onnx.TensorProto, nh.to_array, 3)
    convert("to_numpy: 100,000 strings", from_numpy(strings).SerializeToString(),
            TensorProto, onnx.TensorProto, nh.to_array, 3)

    # --- building and serializing
    row(f"build+serialize: {mib} MiB seq of 64 float32",
        best(lambda: nh.from_list(big).SerializeToString(), big_repeat),
        best(lambda: serialize(from_numpy(big)), big_repeat), "(goal >= 3)")
    folder = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    target = os.path.join(folder, f"bench_convert_{os.getpid()}.pb")

    def onnx_to_file() -> None:
        with open(target, "wb") as f:
            f.write(nh.from_list(big).SerializeToString())

    try:
        row(f"to a file: {mib} MiB seq (onnxdata.write)", best(onnx_to_file, big_repeat),
            best(lambda: write(big, target), big_repeat), "(streaming, issue 5)")
    finally:
        if os.path.exists(target):
            os.unlink(target)
    row("build+serialize: 100,000 small tensors",
        best(lambda: nh.from_list(small).SerializeToString(), 3),
        best(lambda: serialize(from_numpy(small)), 3))
    row("build+serialize: float16 (1 Mi)",
        best(lambda: nh.from_array(f16).SerializeToString(), 3),
        best(lambda: serialize(from_numpy(f16)), 3))
    row("build+serialize: 100,000 strings",
        best(lambda: nh.from_array(strings).SerializeToString(), 3),
        best(lambda: serialize(from_numpy(strings)), 3))

    print()
    print("| workload | onnx s | ours s | ratio (onnx/ours) |")
    print("|---|---:|---:|---:|")
    for label, theirs, ours, note in rows:
        print(f"| {label} {note} | {theirs:.3f} | {ours:.3f} | {theirs / ours:.2f} |")


if __name__ == "__main__":
    main()
