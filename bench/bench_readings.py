"""Timing (not a test): ``onnxdata.readings`` on 1 GiB files, memory-mapped.

Writes two 1 GiB files into a temporary folder (or --dir), streaming the
payload so the writer never holds it: one float32 TensorProto in raw_data, and
a SequenceProto of 64 float32 tensors of 16 MiB each. Then it times
``readings`` (all five readings, validation included) on a read-only mmap of
each, and reports the peak of Python allocations during the call.

    .venv/bin/python bench/bench_readings.py
"""

from __future__ import annotations

import argparse
import mmap
import tempfile
import time
import tracemalloc
from pathlib import Path

from onnxdata import readings
from onnxdata.core.messages import SequenceProto, TensorProto
from onnxdata.wire.format import encode_varint

GIB = 1 << 30
CHUNK = 64 << 20


def _tensor_header(nbytes: int, name: str = "") -> bytes:
    t = TensorProto(data_type=TensorProto.FLOAT, name=name)
    t.dims.extend([nbytes // 4])
    return t.SerializeToString() + b"\x4a" + encode_varint(nbytes)  # raw_data's tag and length


def _zeros(fh: object, n: int) -> None:
    block = b"\x3f" * min(n, CHUNK)
    while n > 0:
        fh.write(block[:n])  # type: ignore[attr-defined]
        n -= len(block)


def write_tensor(path: Path, nbytes: int) -> None:
    with open(path, "wb") as fh:
        fh.write(_tensor_header(nbytes, "big"))
        _zeros(fh, nbytes)


def write_sequence(path: Path, nbytes: int, count: int) -> None:
    each = nbytes // count
    head = SequenceProto(name="seq", elem_type=SequenceProto.TENSOR).SerializeToString()
    with open(path, "wb") as fh:
        fh.write(head)
        for _ in range(count):
            element = _tensor_header(each)
            fh.write(b"\x1a" + encode_varint(len(element) + each) + element)
            _zeros(fh, each)


def time_readings(path: Path, repeat: int) -> None:
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            rs = readings(m)
            best = min(best, time.perf_counter() - t0)
        tracemalloc.start()
        readings(m)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    size = path.stat().st_size
    print(f"{path.name}: {size / GIB:.2f} GiB, readings() best of {repeat}: "
          f"{best * 1000:.1f} ms, peak Python allocation {peak / 1024:.0f} KiB")
    for r in rs:
        state = "valid" if r.valid else "fits, invalid" if r.well_formed else "does not fit"
        print(f"  {r.kind:18} {state:14} {r.summary}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", help="folder for the 1 GiB files (default: a temp folder)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        folder = Path(tmp)
        tensor, seq = folder / "tensor_1gib.pb", folder / "sequence_64x16mib.pb"
        write_tensor(tensor, GIB)
        write_sequence(seq, GIB, 64)
        time_readings(tensor, args.repeat)
        time_readings(seq, args.repeat)


if __name__ == "__main__":
    main()
