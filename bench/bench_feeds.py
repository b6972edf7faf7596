"""What checking a backend's inputs against the model (``cases/feeds.fit_inputs``) costs.

Over every set of the cases under ``--dir`` (default: the bundled tests/data/onnx-node),
each set's inputs read once, then, best of ``--repeat`` passes, the total time of:

* ``fit_inputs`` on a plain list (what ``Backend.run`` does with a caller's values),
* ``fit_inputs`` on ``CheckedInputs`` (what the test loop gives it: the set's loaded
  values, whose types ``load_test_data_set`` checked, so only their count is),
* ``prepared.run`` on ORT (the check included), for scale.

Then the check on big values, whose cost must not grow with a tensor's size: one tensor
of 10**7 float32, and a sequence of 10**5 small tensors (one check per element, as the
conversion for the backend makes one per element too). Quote the ratios.

    .venv/bin/python bench/bench_feeds.py --dir /work/node-cases
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from onnxdata.cases.backends import get_backend  # noqa: E402
from onnxdata.cases.case_run import find_cases, test_data_sets  # noqa: E402
from onnxdata.cases.feeds import fit_inputs  # noqa: E402
from onnxdata.cases.load import load_checked_set  # noqa: E402
from onnxdata.model.types import DeclaredType  # noqa: E402


def _best(f: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=str(ROOT / "tests" / "data" / "onnx-node"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    ort = get_backend("ort")
    loaded = []
    for case in find_cases([args.dir]):
        try:
            prepared = ort.prepare(case / "model.onnx")
        except Exception:  # a model ORT cannot load: its check is timed all the same
            prepared = None
        for s in test_data_sets(case):
            try:
                inputs, _ = load_checked_set(s, model=case / "model.onnx")
            except Exception:
                continue
            model = get_backend("reference").prepare(case / "model.onnx").model \
                if prepared is None else prepared.model
            loaded.append((model, inputs, prepared))
    print(f"{len(loaded)} sets under {args.dir}")

    def check_plain() -> None:
        for m, inputs, _ in loaded:
            fit_inputs(list(inputs), m.inputs, m.shown, m.initializers)

    def check_loaded() -> None:
        for m, inputs, _ in loaded:
            fit_inputs(inputs, m.inputs, m.shown, m.initializers)

    def copies() -> None:  # what check_plain spends on list() alone
        for _, inputs, _ in loaded:
            list(inputs)

    def run() -> None:
        for _, inputs, p in loaded:
            if p is not None:
                with contextlib.suppress(Exception):
                    p.run(inputs)

    plain = _best(check_plain, args.repeat) - _best(copies, args.repeat)
    checked = _best(check_loaded, args.repeat)
    ran = _best(run, args.repeat)
    n = len(loaded) or 1
    print(f"fit_inputs, caller's values: {plain * 1e6 / n:8.2f} us a set")
    print(f"fit_inputs, loaded values:   {checked * 1e6 / n:8.2f} us a set")
    print(f"ORT's run (check included):  {ran * 1e6 / n:8.2f} us a set; the check is "
          f"{plain / ran:.2%} of it for a caller's values, {checked / ran:.2%} for loaded ones")

    f32 = DeclaredType("tensor", 1)
    big = [("x", f32)]
    seq = [("s", DeclaredType("sequence", element=f32))]
    tensor = [np.zeros(10**7, np.float32)]
    many = [[np.zeros(2, np.float32) for _ in range(10**5)]]
    t_big = _best(lambda: fit_inputs(tensor, big, "m", set), args.repeat)
    t_seq = _best(lambda: fit_inputs(many, seq, "m", set), args.repeat)
    t_list = _best(lambda: [np.asarray(v) for v in many[0]], args.repeat)
    print(f"one tensor of 10**7 float32:   {t_big * 1e6:8.2f} us")
    print(f"a sequence of 10**5 tensors: {t_seq * 1e3:8.2f} ms ({t_seq / t_list:.2f}x one "
          f"np.asarray per element, as the reference's conversion does)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
