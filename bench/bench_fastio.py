"""Benchmark of onnxdata.read / onnxdata.write against onnx, and against the memory limit.

Each measurement runs in its own subprocess, so its peak RSS (``ru_maxrss``) is
its own. Files go to ``--dir`` (default: the system temp folder) and are
deleted at the end. Not run in CI; run by ``make bench`` or by hand:

    .venv/bin/python bench/bench_fastio.py                   # the issue's sizes
    .venv/bin/python bench/bench_fastio.py --gib 0.25 --big-gib 0 --small 20000

Workloads (issue 5): a sequence of ``--tensors`` float32 tensors of ``--gib``
GiB in all, read and summed / read without touching / written; ``--small``
small tensors read; a ``--big-gib`` sequence read without touching.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

GIB = 1 << 30


# --------------------------------------------------------------------------- workers

def _arrays(nbytes: int, count: int) -> list[Any]:
    import numpy as np

    per = nbytes // count // 4
    return [np.full(per, i + 0.5, dtype=np.float32) for i in range(count)]


def _small(count: int) -> list[Any]:
    import numpy as np

    return [np.full(4, i, dtype=np.float32) for i in range(count)]


def worker(name: str, path: str, nbytes: int, count: int) -> dict[str, float]:
    """One measurement: returns seconds, and the process's peak RSS is taken after."""
    import numpy as np

    if name == "make":  # write the input file, untimed
        import onnxdata

        values = _small(count) if nbytes == 0 else _arrays(nbytes, count)
        onnxdata.write(values, path)
        return {"seconds": 0.0}
    if name in ("read_sum", "read"):
        import onnxdata

        t = time.perf_counter()
        values = onnxdata.read(path, "sequence")
        total = sum(float(v.sum(dtype=np.float64)) for v in values) if name == "read_sum" \
            else float(len(values))
        return {"seconds": time.perf_counter() - t, "check": total}
    if name in ("onnx_read_sum", "onnx_read"):
        import onnx
        from onnx import numpy_helper

        t = time.perf_counter()
        seq = onnx.SequenceProto()
        with open(path, "rb") as f:
            seq.ParseFromString(f.read())
        values = numpy_helper.to_list(seq)
        total = sum(float(v.sum(dtype=np.float64)) for v in values) if name == "onnx_read_sum" \
            else float(len(values))
        return {"seconds": time.perf_counter() - t, "check": total}
    values = _arrays(nbytes, count)
    if name == "write":
        import onnxdata

        t = time.perf_counter()
        onnxdata.write(values, path)
        return {"seconds": time.perf_counter() - t}
    if name == "onnx_write":
        from onnx import numpy_helper

        return _synced_write(path, lambda f: f.write(
            numpy_helper.from_list(values).SerializeToString()))
    if name == "tofile":
        joined = np.concatenate(values)  # the same bytes, one array, untimed
        return _synced_write(path, joined.tofile)
    if name == "memcpy":
        joined = np.concatenate(values)
        out = np.empty_like(joined)
        t = time.perf_counter()
        np.copyto(out, joined)
        return {"seconds": time.perf_counter() - t}
    raise SystemExit(f"unknown worker {name}")


def _synced_write(path: Path, write: Callable[[IO[bytes]], object]) -> dict[str, float]:
    """The seconds to open ``path``, ``write`` into it and fsync it, as a save does."""
    t = time.perf_counter()
    with open(path, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    return {"seconds": time.perf_counter() - t}


def measure(name: str, path: Path, nbytes: int = 0, count: int = 0) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--worker", name, str(path), str(nbytes),
                          str(count)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def best(name: str, path: Path, repeat: int, nbytes: int = 0, count: int = 0) -> dict[str, float]:
    runs = [measure(name, path, nbytes, count) for _ in range(repeat)]
    return min(runs, key=lambda r: r["seconds"])


# --------------------------------------------------------------------------- the report

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gib", type=float, default=1.0, help="size of the sequence (GiB)")
    ap.add_argument("--tensors", type=int, default=64, help="tensors in that sequence")
    ap.add_argument("--small", type=int, default=100_000, help="count of small tensors")
    ap.add_argument("--big-gib", type=float, default=3.0, help="size of the big sequence "
                    "(GiB, 0 to skip)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of the fast measurements")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    args = ap.parse_args()

    folder = Path(tempfile.mkdtemp(prefix="bench_fastio_", dir=args.dir))
    seq, small, big, scratch = (folder / n for n in ("seq.pb", "small.pb", "big.pb", "out.pb"))
    nbytes = int(args.gib * GIB)
    rows: list[tuple[str, str, str, str]] = []

    def ratio(theirs: float, ours: float) -> str:
        return f"{theirs / ours:.1f}x"

    try:
        measure("make", seq, nbytes, args.tensors)
        size = seq.stat().st_size
        print(f"sequence: {args.tensors} float32 tensors, {size / GIB:.2f} GiB at {seq}",
              file=sys.stderr)
        ours = best("read_sum", seq, args.repeat)
        theirs = measure("onnx_read_sum", seq)
        rss = ours["maxrss"] / size
        rows.append(("read + sum", f"{ours['seconds']:.3f} s (onnx {theirs['seconds']:.2f} s)",
                     f"{ratio(theirs['seconds'], ours['seconds'])}, RSS {rss:.2f}x file "
                     f"(onnx {theirs['maxrss'] / size:.2f}x)", ">= 5x, RSS <= 1.15x"))
        assert abs(ours["check"] - theirs["check"]) <= 1e-6 * abs(theirs["check"])
        ours = best("read", seq, args.repeat)
        theirs = measure("onnx_read", seq)
        rows.append(("read, untouched", f"{ours['seconds'] * 1e3:.2f} ms (onnx "
                     f"{theirs['seconds']:.2f} s)", ratio(theirs["seconds"], ours["seconds"]),
                     ">= 100x"))
        ours = best("write", scratch, args.repeat, nbytes, args.tensors)
        theirs = measure("onnx_write", scratch, nbytes, args.tensors)
        tofile = best("tofile", scratch, args.repeat, nbytes, args.tensors)
        memcpy = best("memcpy", scratch, args.repeat, nbytes, args.tensors)
        rows.append(("write", f"{ours['seconds']:.3f} s (onnx {theirs['seconds']:.2f} s, "
                     f"tofile {tofile['seconds']:.3f} s)",
                     f"{ratio(theirs['seconds'], ours['seconds'])} vs onnx, "
                     f"{ours['seconds'] / tofile['seconds']:.2f}x tofile's time",
                     ">= 10x, <= 2x tofile"))
        rows.append(("memcpy (the limit)", f"{memcpy['seconds']:.3f} s", "", ""))
        seq.unlink()
        scratch.unlink(missing_ok=True)

        measure("make", small, 0, args.small)
        ours = best("read", small, args.repeat)
        theirs = best("onnx_read", small, args.repeat)
        rows.append((f"{args.small} small tensors, read", f"{ours['seconds']:.3f} s (onnx "
                     f"{theirs['seconds']:.3f} s)", ratio(theirs["seconds"], ours["seconds"]),
                     ">= 1.0x"))
        small.unlink()

        if args.big_gib > 0:
            big_bytes = int(args.big_gib * GIB)
            measure("make", big, big_bytes, max(1, int(args.big_gib * 16)))
            ours = best("read", big, args.repeat)
            rows.append((f"{big.stat().st_size / GIB:.2f} GiB sequence, read untouched",
                         f"{ours['seconds'] * 1e3:.2f} ms",
                         f"peak RSS {ours['maxrss'] / (1 << 20):.0f} MiB", "< 200 MiB"))
            big.unlink()
    finally:
        for p in folder.iterdir():
            p.unlink()
        folder.rmdir()

    widths = [max(len(r[i]) for r in [("workload", "time", "ratio", "goal"), *rows])
              for i in range(4)]
    for r in [("workload", "time", "ratio", "goal"), *rows]:
        print(" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        result: dict[str, float] = worker(sys.argv[2], sys.argv[3], int(sys.argv[4]),
                                          int(sys.argv[5]))
        result["maxrss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0
        print(json.dumps(result))
    else:
        main()
