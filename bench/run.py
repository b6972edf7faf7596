"""Run every benchmark script (``make bench``): each prints its ratios against onnx.

Extra arguments are passed to every script, e.g. ``make bench ARGS="--dir /big"``.
Not run in CI: the full sizes write several GiB and take minutes.
``ONNXDATA_BENCH_SCALE=0.05`` makes bench_storage.py's run quick.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPTS = ("bench_convert.py", "bench_fastio.py", "bench_readings.py", "bench_model.py",
           "bench_compare.py", "bench_page.py", "bench_engine.py", "bench_storage.py",
           "bench_shapes.py", "bench_small_files.py", "bench_run.py", "bench_refusals.py",
           "bench_show_diff.py", "bench_nested_types.py", "bench_unknown_fields.py")


def main() -> int:
    here = Path(__file__).resolve().parent
    failed = []
    for name in SCRIPTS:
        print(f"\n===== {name} =====", flush=True)
        if subprocess.run([sys.executable, str(here / name), *sys.argv[1:]]).returncode:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
