"""Timing (not a test): ``read`` of the small files a test-data set is made of, against onnx.

The bundled node cases (``tests/data/onnx-node``: every ``test_data_set_*/*.pb``, a few
dozen bytes to a few KiB each) are what the test loop reads most. Per file, in this
process, the best of ``--repeat`` calls of:

- ``read``: ``onnxdata.read(path, kind)``, the kind the explorer chooses (found once,
  not timed); ``read, no kind``: ``onnxdata.read(path)``, which finds it (model.onnx);
- ``onnx``: ``Path.read_bytes()`` + ``FromString`` + numpy_helper's to_array / to_list /
  to_optional, as onnx's own backend test runner loads a case;
- ``file read``: ``Path.read_bytes()`` alone, the floor of both.

It prints, per kind, the mean microseconds a file and onnx's time over ours (above 1:
faster than onnx).

    .venv/bin/python bench/bench_small_files.py
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
from onnx import numpy_helper

import onnxdata

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "data" / "onnx-node"
ONNX: dict[str, tuple[Any, Callable[[Any], Any]]] = {
    "tensor": (onnx.TensorProto, numpy_helper.to_array),
    "sequence": (onnx.SequenceProto, numpy_helper.to_list),
    "optional": (onnx.OptionalProto, numpy_helper.to_optional),
    "map": (onnx.MapProto, numpy_helper.to_dict),
}
COLUMNS = ("read", "read, no kind", "onnx", "file read")


def best(call: Callable[[], object], repeat: int) -> float:
    """The least seconds of ``repeat`` calls (after one not timed)."""
    call()
    least = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        least = min(least, time.perf_counter() - start)
    return least


def timings(path: Path, kind: str, repeat: int) -> dict[str, float]:
    cls, convert = ONNX[kind]
    calls: dict[str, Callable[[], object]] = {
        "read": lambda: onnxdata.read(path, kind),
        "read, no kind": lambda: onnxdata.read(path),
        "onnx": lambda: convert(cls.FromString(path.read_bytes())),
        "file read": path.read_bytes,
    }
    return {name: best(call, repeat) for name, call in calls.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=100, help="timed calls per file")
    parser.add_argument("--quick", action="store_true", help="10 calls per file")
    args, _ = parser.parse_known_args()  # run.py passes every script the same arguments
    repeat = 10 if args.quick else args.repeat
    files = sorted(CASES.glob("*/test_data_set_*/*.pb"))
    sums: dict[str, dict[str, float]] = defaultdict(lambda: dict.fromkeys(COLUMNS, 0.0))
    counts: dict[str, int] = defaultdict(int)
    skipped = 0
    for path in files:
        kind = onnxdata.explore(path).as_json()["chosen"]
        if kind not in ONNX:  # (no valid reading onnx can convert)
            skipped += 1
            continue
        for name, seconds in timings(path, kind, repeat).items():
            sums[kind][name] += seconds
        counts[kind] += 1
    print(f"{len(files) - skipped} files of {CASES.relative_to(ROOT)} ({skipped} left out), "
          f"best of {repeat} calls each; us a file (onnx's time / ours)")
    print(f"{'kind':10} {'files':>5}" + "".join(f" {c:>18}" for c in COLUMNS))
    for kind in sorted(counts):
        n, row = counts[kind], sums[kind]
        cells = []
        for name in COLUMNS:
            text = f"{row[name] / n * 1e6:.1f}"
            if name.startswith("read"):
                text += f" ({row['onnx'] / row[name]:.2f}x)"
            cells.append(f" {text:>18}")
        print(f"{kind:10} {n:5}" + "".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
