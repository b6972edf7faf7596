"""Timing (not a test): what ``load``'s unknown-field check costs (issue 39, item 2).

``load`` warns when bytes parse only by setting fields aside as unknown anywhere in the
message tree (``wire.unknown_fields.unknown_field_at``: one compiled walk of the tags,
payloads skipped). The figure that matters is a sequence of many small tensors, where a
walk with a Python step per element would cost several times the parse:

- ``load``: ``onnxdata.load(path, "sequence")`` of ``--count`` tensors of 3 floats;
- ``check``: ``unknown_field_at`` of the same bytes alone, and its share of ``load``;
- ``python walk``: ``UnknownFieldSet`` of each element, the walk it replaces.

Each figure is the best of ``--repeat`` runs, in ms.

    .venv/bin/python bench/bench_unknown_fields.py [--count 100000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the checkout

import onnxdata  # noqa: E402


def _best(f: Callable[[], Any], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "seq.pb"
        onnxdata.write([np.arange(3, dtype=np.float32)] * args.count, path)
        data = path.read_bytes()
        load = _best(lambda: onnxdata.load(path, "sequence"), args.repeat)
        print(f"{args.count:,} tensors, {len(data):,} bytes")
        print(f"load          {load:8.2f} ms")
        try:
            from onnxdata.wire.unknown_fields import unknown_field_at
        except ImportError:  # (a checkout before the check)
            print("check         n/a")
        else:
            check = _best(lambda: unknown_field_at(data, "sequence"), args.repeat)
            print(f"check         {check:8.2f} ms   {check / load:6.1%} of load")
        from google.protobuf.unknown_fields import UnknownFieldSet

        message = onnxdata.load(data, "sequence")
        walk = _best(lambda: [len(UnknownFieldSet(t)) for t in message.tensor_values],
                     max(1, args.repeat // 3))
        print(f"python walk   {walk:8.2f} ms   {walk / load:6.1%} of load")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
