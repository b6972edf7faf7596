"""Timing (not a test): ``onnxdata explore FILE --html`` on 1 GiB sequences.

Writes 1 GiB SequenceProto files into a temporary folder (or --dir), streaming
the payload: 64 float32 tensors of 16 MiB as vectors, the same as 2048 x 2048
matrices (heatmaps), and 16,384 tensors of 64 KiB (a byte table far longer than
the page shows). For each it times ``explore`` and ``render_page`` apart and
prints the page's size; the issue asks for under 2 MB, written in under 3 s.

    .venv/bin/python bench/bench_page.py
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench_readings import GIB, _zeros

from onnxdata.core.messages import SequenceProto, TensorProto
from onnxdata.explorer.readings import explore
from onnxdata.page.page import render_page
from onnxdata.wire.format import encode_varint


def write_sequence(path: Path, count: int, dims: list[int]) -> None:
    """A sequence of ``count`` float32 tensors of ``dims``, each filled with 0.75."""
    each = 4
    for d in dims:
        each *= d
    t = TensorProto(data_type=TensorProto.FLOAT)
    t.dims.extend(dims)
    element = t.SerializeToString() + b"\x4a" + encode_varint(each)
    head = SequenceProto(name="seq", elem_type=SequenceProto.TENSOR).SerializeToString()
    with open(path, "wb") as fh:
        fh.write(head)
        for _ in range(count):
            fh.write(b"\x1a" + encode_varint(len(element) + each) + element)
            _zeros(fh, each)


def time_page(path: Path) -> None:
    t0 = time.perf_counter()
    result = explore(path, reading="sequence")
    t1 = time.perf_counter()
    page = render_page(result)
    t2 = time.perf_counter()
    size = len(page.encode("utf-8"))
    print(f"{path.name}: {path.stat().st_size / GIB:.2f} GiB -> page {size / 1e6:.3f} MB "
          f"({'under' if size < 2_000_000 else 'OVER'} 2 MB); explore {t1 - t0:.2f} s + "
          f"page {t2 - t1:.2f} s = {t2 - t0:.2f} s "
          f"({'under' if t2 - t0 < 3 else 'OVER'} 3 s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dir", help="folder for the 1 GiB files (default: a temp folder)")
    args = parser.parse_args()
    shapes = {"seq_64_vectors.pb": (64, [GIB // 64 // 4]),
              "seq_64_matrices.pb": (64, [2048, 2048]),
              "seq_16384_small.pb": (16384, [GIB // 16384 // 4])}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for name, (count, dims) in shapes.items():
            path = Path(tmp) / name
            write_sequence(path, count, dims)
            time_page(path)
            path.unlink()


if __name__ == "__main__":
    main()
