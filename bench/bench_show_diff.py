"""Timing (not a test): ``onnxdata show --limit all`` and ``onnxdata diff`` of many tiny elements.

Inputs, built in a temp folder (``--mb`` sizes them):

- ``tiny``: a SequenceProto of float tensors of 2 elements each, ~``--mb`` MB;
- ``nested``: a set beside a model declaring
  ``seq(map(int64, seq(seq(seq(tensor(float))))))``, ~``--mb`` MB;
- ``diff``: two sequences of ``--elements`` float tensors of shape (2,) that differ in
  every element, and the same file against a copy of itself (equal).

Each command runs in its own process (``python -m onnxdata ...``, output to /dev/null);
the wall seconds are the best of ``--repeat`` runs, less the seconds of ``onnxdata
--version`` (the imports). It prints seconds per MB and the ratio to the goal (show:
1 s per MB; diff: 5 s differing, 2 s equal; below 1 is within it).

    .venv/bin/python bench/bench_show_diff.py
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import onnxdata

NESTED = "seq(map(int64, seq(seq(seq(tensor(float))))))"


def run(args: list[str], repeat: int) -> float:
    """The least wall seconds of ``repeat`` runs of ``python -m onnxdata ARGS``."""
    least = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "onnxdata", *args], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, check=False)
        least = min(least, time.perf_counter() - start)
    return least


def tiny_sequence(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return list(rng.random((n, 2), dtype=np.float32))


def nested_value(mb: float) -> list[dict[int, list[list[list[np.ndarray]]]]]:
    # one map entry holds 4 x 4 x 4 tensors of 2 floats (~1.1 KB on the wire)
    rng = np.random.default_rng(1)
    entries = max(1, int(mb * 1e6 / 1100))
    maps: list[dict[int, list[list[list[np.ndarray]]]]] = []
    for start in range(0, entries, 16):
        maps.append({k: [[list(rng.random((4, 2), dtype=np.float32)) for _ in range(4)]
                         for _ in range(4)] for k in range(start, min(entries, start + 16))})
    return maps


def nested_set(folder: Path, mb: float) -> Path:
    import onnx
    from onnx import helper

    typ = helper.make_sequence_type_proto(helper.make_map_type_proto(
        onnx.TensorProto.INT64, helper.make_sequence_type_proto(
            helper.make_sequence_type_proto(helper.make_sequence_type_proto(
                helper.make_tensor_type_proto(onnx.TensorProto.FLOAT, None))))))
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g",
                              [helper.make_value_info("x", typ)],
                              [helper.make_value_info("y", typ)])
    onnx.save(helper.make_model(graph), folder / "model.onnx")
    data = folder / "test_data_set_0"
    data.mkdir()
    onnxdata.write(nested_value(mb), data / "input_0.pb", "sequence", declared=NESTED)
    return data / "input_0.pb"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=1.0, help="size of the show inputs")
    parser.add_argument("--elements", type=int, default=300_000, help="elements to diff")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command")
    parser.add_argument("--quick", action="store_true", help="one run each")
    args, _ = parser.parse_known_args()  # run.py passes every script the same arguments
    repeat = 1 if args.quick else args.repeat
    tmp = Path(tempfile.mkdtemp(prefix="bench_show_diff_"))
    try:
        tiny = tmp / "tiny.pb"
        onnxdata.write(tiny_sequence(int(args.mb * 1e6 / 20)), tiny, "sequence")
        nested = nested_set(tmp, args.mb)
        a, b, same = tmp / "a.pb", tmp / "b.pb", tmp / "same.pb"
        onnxdata.write(tiny_sequence(args.elements, 2), a, "sequence")
        onnxdata.write(tiny_sequence(args.elements, 3), b, "sequence")
        shutil.copy(a, same)
        base = run(["--version"], repeat)
        print(f"best of {repeat} runs, less {base:.2f} s of start-up; goal ratio below 1")
        print(f"{'command':44} {'MB':>6} {'s':>7} {'s/MB':>7} {'/goal':>6}")
        rows = [(f"show --limit all tiny ({int(args.mb * 1e6 / 20)} elements)", tiny,
                 ["show", "--limit", "all", str(tiny)], 1.0, True),
                (f"show --limit all {NESTED}", nested,
                 ["show", "--limit", "all", str(nested)], 1.0, True),
                (f"diff {args.elements} elements, all differ", a,
                 ["diff", str(a), str(b)], 5.0, False),
                (f"diff {args.elements} elements, equal", a,
                 ["diff", str(a), str(same)], 2.0, False)]
        for label, path, cmd, goal, per_mb in rows:
            mb = path.stat().st_size / 1e6
            seconds = max(run(cmd, repeat) - base, 0.0)
            ratio = (seconds / mb if per_mb else seconds) / goal
            print(f"{label[:44]:44} {mb:6.2f} {seconds:7.2f} {seconds / mb:7.2f} {ratio:6.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
