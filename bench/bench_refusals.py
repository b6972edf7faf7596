"""Timing (not a test): how fast hostile values are refused (issue 19).

The suite checks what these refusals say and how little memory they take; how long
they take is a figure, kept here instead of as a test's wall-time assertion:

- ``bomb to_numpy`` / ``bomb read``: the 128-byte sequence of six sparse STRING tensors
  that claim 1 GiB each (tests/engine/test_memory_budget.py), refused by the densify budget;
- ``fifo read_external``: a FIFO without a writer as external data, refused without
  blocking (tests/wire/test_external_races.py);
- ``fifo race, slowest load``: the slowest of ``--tries`` loads (to_numpy and read) of a
  tensor whose external file a thread keeps swapping with a FIFO.

Each figure is the median (and the slowest) of ``--repeat`` runs, in ms. The old tests
asked for under 1 s each.

    .venv/bin/python bench/bench_refusals.py
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the checkout, for tests.*

import onnxdata  # noqa: E402
from onnxdata.wire.external import read_external  # noqa: E402
from tests.engine.test_memory_budget import _six_bombs  # noqa: E402
from tests.wire.test_external_races import INSIDE, _running, _swap_fifo, _tensor  # noqa: E402


def _ms(f: Callable[[], Any]) -> float:
    start = time.perf_counter()
    with contextlib.suppress(onnxdata.OnnxDataError):
        f()
    return (time.perf_counter() - start) * 1000


def _row(name: str, times: list[float]) -> None:
    print(f"{name:<28} median {statistics.median(times):9.2f} ms   slowest {max(times):9.2f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--tries", type=int, default=500, help="loads per fifo race run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bomb = folder / "bomb.pb"
        bomb.write_bytes(_six_bombs().SerializeToString())
        data = bomb.read_bytes()
        _row("bomb to_numpy", [_ms(lambda: onnxdata.to_numpy(onnxdata.load(data, "sequence")))
                               for _ in range(args.repeat)])
        _row("bomb read", [_ms(lambda: onnxdata.read(bomb, "sequence"))
                           for _ in range(args.repeat)])
        os.mkfifo(folder / "pipe.bin")
        _row("fifo read_external",
             [_ms(lambda: read_external(folder, "pipe.bin", 0, 4, where="external_data"))
              for _ in range(args.repeat)])
        (folder / "data.bin").write_bytes(INSIDE.tobytes())
        t = _tensor("data.bin")
        pb = folder / "t.pb"
        onnxdata.save(t, pb)
        slowest = []
        for _ in range(args.repeat):
            with _running(_swap_fifo, folder / "data.bin"):
                slowest.append(max(_ms(load) for _ in range(args.tries // 2) for load in (
                    lambda: onnxdata.to_numpy(t, base_dir=folder),
                    lambda: onnxdata.read(pb, "tensor"))))
        _row("fifo race, slowest load", slowest)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
