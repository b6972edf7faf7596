"""Timing (not a test): ``validate``, ``read`` and ``show`` of a set beside a model that
declares a nested type, ``seq(map(int64, seq(seq(seq(tensor(float))))))`` (issue 39).

The set is ``bench_show_diff.py``'s ``nested`` input (``--mb`` MB of map entries, each
4 x 4 x 4 float tensors of 2 elements), in ``test_data_set_0`` beside the ``model.onnx``
whose input declares that type, so every route checks the value against it. Each entry
runs in its own process, which imports what it needs and runs the entry once on a tiny
file of the same layout (so lazy imports are not timed), then times one run on the big
file (CPU seconds, ``time.process_time``) and reports its peak RSS growth over the
warmed-up process: the peak is reset before the run (Linux's ``clear_refs``), then its
``VmHWM`` after less the resident memory before (where the reset is refused, the
process's whole peak less it: an upper bound).

- ``validate``: ``onnxdata validate input_0.pb`` (the CLI's ``main``);
- ``read``: ``onnxdata.read(input_0.pb)`` (no kind: the model's declared type chooses);
- ``load``: ``onnxdata.cases.load_test_data_set(test_data_set_0)``, the test loop's read:
  the value checked against the declared type, then read;
- ``show``: ``onnxdata show --limit all input_0.pb`` (output to /dev/null);
- ``onnx`` (the reference): ``SequenceProto.FromString`` of the file's bytes, then
  ``onnx.numpy_helper.to_list``, onnx's own route to the same value;
- ``floor`` (no reader): the value alone, built as directly as numpy allows: one compact
  copy of its float bytes (prepared before the run, copied in it), an array viewing it per
  tensor, and the lists and dicts around them. Every reader's value costs at least this;
  ``read`` also keeps the file's bytes, which its arrays view (zero-copy: 1.0x more).

Goal (issue 39, "must show"): <= 0.2 s per MB for validate, read, load and show (its
"what to build" asks show for under 1 s per MB), and a peak RSS growth <= 10x the file.

    .venv/bin/python bench/bench_nested_types.py [--mb 1] [--repeat 3]
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
from itertools import pairwise
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_show_diff import NESTED, nested_set

import onnxdata

ROOT = Path(__file__).resolve().parent.parent
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
             # process_time counts every thread: numpy's OpenBLAS threads spin for a
             # while after numpy starts (40 % more CPU seconds over a pure-Python loop,
             # at random), and no call timed here uses BLAS
             "OPENBLAS_NUM_THREADS": "1"}
ENTRIES = {"validate": 0.2, "read": 0.2, "load": 0.2, "show": 0.2,  # entry: goal, s per MB
           "onnx": 0.0, "floor": 0.0}  # (references: no goal)
RSS_GOAL = 10.0  # peak RSS growth over the file's size


def floor_parts(path: Path) -> Path:
    """The value's map keys and float bytes (``path``'s ``.floor.npz``), read by the parent,
    so that the ``floor`` child reads nothing else before its run."""
    import numpy as np

    value = onnxdata.read(path)
    keys = np.array([k for m in value for k in m], dtype=np.int64)
    lengths = np.array([len(m) for m in value], dtype=np.int64)
    floats = np.concatenate([a.ravel() for m in value for v in m.values() for b in v
                             for c in b for a in c])
    parts = path.with_suffix(".floor.npz")
    np.savez(parts, keys=keys, lengths=lengths, floats=floats)
    return parts


def floor_value(path: str) -> Any:
    """A function building ``path``'s value as directly as numpy can (the ``floor`` entry)
    from its keys and float bytes, read here, before the run."""
    import numpy as np

    with np.load(Path(path).with_suffix(".floor.npz")) as parts:
        keys, lengths, data = (parts[k] for k in ("keys", "lengths", "floats"))
    starts = np.concatenate([[0], np.cumsum(lengths)]).tolist()
    per_map = [keys[a:b].tolist() for a, b in pairwise(starts)]

    def build() -> Any:
        floats = data.copy()
        floats.flags.writeable = False
        at = iter(range(0, floats.size, 2))
        return [{k: [[[floats[i:i + 2] for i in (next(at) for _ in range(4))]
                      for _ in range(4)] for _ in range(4)] for k in ks} for ks in per_map]
    return build


def operation(entry: str, path: str) -> Any:
    if entry == "floor":
        builders = {path: floor_value(path)}  # (its parts read before the run)
        return lambda p: (builders.get(p) or floor_value(p))()
    if entry == "onnx":
        from onnx import SequenceProto, numpy_helper

        def onnx_read(p: str) -> Any:
            with open(p, "rb") as f:
                return numpy_helper.to_list(SequenceProto.FromString(f.read()))
        return onnx_read
    if entry == "read":
        return lambda p: onnxdata.read(p)
    if entry == "load":
        from onnxdata.cases import load_test_data_set

        return lambda p: load_test_data_set(os.path.dirname(p))
    from onnxdata.cli.main import main as cli

    words = ["validate"] if entry == "validate" else ["show", "--limit", "all"]

    def run(p: str) -> Any:
        try:
            return cli([words[0], p, *words[1:]])
        except SystemExit as exc:
            return exc.code
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
    return run


def rss_kib() -> int:
    """This process's resident memory now, KiB (Linux)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def reset_peak() -> bool:
    """Reset this process's peak resident memory to what it holds now (Linux: writing 5 to
    clear_refs), so the peak after a run is the run's own; False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def peak_kib() -> int:
    """The peak resident memory since the last reset (VmHWM), KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(entry: str, path: str, tiny: str) -> None:
    report = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    op = operation(entry, path)
    op(tiny)  # the lazy imports and first-call set-up, untimed
    before = rss_kib()
    reset_peak()
    start = time.process_time()
    outcome = op(path)
    seconds = time.process_time() - start
    peak = peak_kib()
    if not isinstance(outcome, (int, str, type(None))):
        outcome = type(outcome).__name__
    print(json.dumps({"seconds": seconds, "growth_kib": max(peak - before, 0), "peak_kib": peak,
                      "outcome": outcome}), file=report, flush=True)


def run_child(entry: str, path: Path, tiny: Path) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, "--child", entry, str(path), str(tiny)],
                         env=CHILD_ENV, capture_output=True, text=True, check=False)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise SystemExit(f"{entry} failed: {out.stderr.strip()[-400:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=1.0, help="size of the set's file")
    parser.add_argument("--repeat", type=int, default=3, help="processes per entry (best)")
    parser.add_argument("--quick", action="store_true", help="one process each")
    parser.add_argument("--only", default=",".join(ENTRIES), help="entries, comma-separated")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args()  # run.py passes every script the same arguments
    if args.child:
        child(*args.child)
        return 0
    repeat = 1 if args.quick else args.repeat
    with tempfile.TemporaryDirectory(prefix="bench_nested_") as tmp:
        big_dir, tiny_dir = Path(tmp, "big"), Path(tmp, "tiny")
        big_dir.mkdir()
        tiny_dir.mkdir()
        path, tiny = nested_set(big_dir, args.mb), nested_set(tiny_dir, 0.002)
        if "floor" in args.only.split(","):
            floor_parts(path)
            floor_parts(tiny)
        size = path.stat().st_size
        print(f"{NESTED}: {size / 1e6:.2f} MB; best of {repeat} processes; CPU s after "
              f"imports and a warm-up; RSS growth over the warmed-up process")
        print(f"{'entry':10} {'s':>7} {'s/MB':>7} {'/goal':>6} {'RSS +MiB':>9} {'x file':>7} "
              f"{'peak MiB':>9}  outcome")
        print("(peak MiB: the run's peak, the warmed-up process's memory included)")
        for entry in args.only.split(","):
            runs = [run_child(entry, path, tiny) for _ in range(repeat)]
            best = min(runs, key=lambda r: r["seconds"])
            growth = min(r["growth_kib"] for r in runs) * 1024
            per_mb = best["seconds"] / (size / 1e6)
            ratio = f"{per_mb / ENTRIES[entry]:6.2f}" if ENTRIES[entry] else f"{'-':>6}"
            print(f"{entry:10} {best['seconds']:7.3f} {per_mb:7.3f} "
                  f"{ratio} {growth / 2**20:9.1f} {growth / size:7.1f} "
                  f"{best['peak_kib'] / 1024:9.1f}  {best['outcome']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
