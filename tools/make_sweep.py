"""Every bundled node case through ``onnxdata make`` (reference backend) and then ``onnxdata run``
(ONNX Runtime): per case, whether sets were generated and ORT agrees, or why not.

    .venv/bin/python tools/make_sweep.py [--cases tests/data/onnx-node] [-n 3] [--seed 0]

It calls what the two commands call (``make_test_data_sets``, ``run_test_data_set``), in one
process. A case refused because an input's rank is not declared is tried again with the fix
the error suggests (``--shape NAME=N``); one whose generated inputs the reference refuses
once more with ``--length 2`` (SequenceMap wants sequences of equal length, which no type
declares); a case that still fails is listed with the reason. The column "bundled on ORT"
is how ONNX Runtime does on the case's own sets, to tell ORT's limits from ours. The table is
the result (exit 0 whatever it says).
"""

from __future__ import annotations

import argparse
import re
import tempfile
from collections import Counter
from pathlib import Path

from onnxdata.cases.draw import GenerationError
from onnxdata.cases.make import make_test_data_sets
from onnxdata.cases.runner import run_test_data_set
from onnxdata.errors import OnnxDataError

_OPEN = re.compile(r"^input \d+ '([^']+)' .*not declared \(no rank\)")


def _one(case: Path, out: Path, n: int, seed: int) -> tuple[str, str]:
    """(outcome, detail) for one case."""
    shapes: dict[str, tuple[str, ...]] = {}
    length: int | None = None
    refused = ""
    for attempt in range(4):
        target = out / f"{case.name}-{attempt}"
        try:
            sets = make_test_data_sets(case / "model.onnx", n, seed=seed, backend="reference",
                                       out=target, length=length, shapes=shapes)
            break
        except GenerationError as exc:
            m = _OPEN.match(str(exc))
            if m is None or attempt == 3:
                return "refused", str(exc)
            refused = refused or str(exc)
            shapes[m.group(1)] = ("N",)  # the fix the error suggests, then try again
        except OnnxDataError as exc:
            if length is not None or attempt == 3:
                return "reference fails", str(exc).split(": ", 1)[-1][:200]
            length = 2
    fixes = [f"--shape {k}=N" for k in shapes] + (["--length 2"] if length else [])
    how = f" (with {' '.join(fixes)}; without: refused: {refused})" if refused else \
        f" (with {' '.join(fixes)})" if fixes else ""
    results = []
    try:
        for s in sets:
            results += run_test_data_set(target / "model.onnx", s, "ort")
    except (OnnxDataError, ImportError) as exc:
        return "ORT cannot run", str(exc)[:160]
    bad = [r for r in results if r.status != "pass"]
    if not bad:
        return "pass", f"{len(sets)} sets, {len(results)} outputs{how}"
    r = bad[0]
    detail = r.error if r.status == "error" else \
        f"{Path(r.folder).name} output {r.index} {r.name!r}: {r.differences[0]}"
    return ("ORT error" if r.status == "error" else "differs"), f"{detail[:160]}{how}"


def _bundled(case: Path) -> str:
    """How ORT does on the case's own bundled sets."""
    try:
        results = [r for s in sorted(case.glob("test_data_set_*"))
                   for r in run_test_data_set(case / "model.onnx", s, "ort")]
    except (OnnxDataError, ImportError):
        return "cannot load"
    return "pass" if all(r.status == "pass" for r in results) else \
        "error" if any(r.status == "error" for r in results) else "fail"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", default="tests/data/onnx-node")
    ap.add_argument("-n", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    cases = sorted(p for p in Path(args.cases).iterdir() if (p / "model.onnx").is_file())
    counts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            outcome, detail = _one(case, Path(tmp), args.n, args.seed)
            counts[outcome] += 1
            detail = " ".join(detail.split())  # one line per case
            print(f"{case.name:56s} {outcome:15s} bundled on ORT: {_bundled(case):11s} "
                  f"{detail}", flush=True)
    print(f"\n{len(cases)} cases: " + ", ".join(f"{v} {k}" for k, v in counts.most_common()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
