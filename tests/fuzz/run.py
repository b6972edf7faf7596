"""Run the atheris fuzz harnesses, or replay every input that ever crashed one.

    python tests/fuzz/run.py HARNESS... [--seconds N | --runs N]   # fuzz (HARNESS or "all")
    python tests/fuzz/run.py --regress                             # replay fuzz-regressions

Each harness is fuzzed in its own process (``fuzz_one``), coverage-guided over
onnxdata's own code, seeded from every ``.pb`` in tests/data plus a few values
made with ``from_numpy`` for kinds the corpus lacks (maps, sparse tensors).
The working corpus lives in ``$ONNXDATA_FUZZ_WORK`` (default
``/tmp/onnxdata-fuzz/<harness>``) so repeated runs build on each other. A crash
is written to ``tests/data/fuzz-regressions/<harness>-crash-<sha1>``: rename it
to say what it hit and keep it. The last line per harness reads
``harness NAME: N executions, K unexpected exceptions``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE.parent / "data"
REGRESSIONS = DATA / "fuzz-regressions"
sys.path.insert(0, str(HERE))

HARNESSES = ("load_tensor", "load_sparse_tensor", "load_sequence", "load_optional", "load_map",
             "readings", "read", "wire")


def seeds() -> list[bytes]:
    """Every message file in tests/data and a few made here for kinds the corpus lacks."""
    out = [p.read_bytes() for p in sorted(DATA.rglob("*.pb"))]
    import numpy as np

    import onnxdata
    f32 = np.array([1.5, -2.0], np.float32)
    made = [
        onnxdata.from_numpy({1: f32, 2: f32}),
        onnxdata.from_numpy({b"a": [f32], b"b": [f32]}, "map"),
        onnxdata.from_numpy(onnxdata.SparseParts(f32, np.array([0, 3], np.int64), (2, 3))),
        onnxdata.from_numpy(onnxdata.SparseParts(f32, np.array([[0, 0], [1, 2]], np.int64),
                                                 (2, 3))),
        onnxdata.from_numpy(np.array([b"x", b"yz"], dtype=object)),
        onnxdata.from_numpy(None, "optional"),
        onnxdata.from_numpy([np.arange(3, dtype=np.int64)], "optional"),
    ]
    out += [m.SerializeToString() for m in made]
    return out


def fuzz_one(name: str, seconds: int | None, runs: int | None, work: Path) -> int:
    """Fuzz one harness in this process (atheris calls sys.exit at the end)."""
    import atheris

    with atheris.instrument_imports(include=["onnxdata"]):
        import onnxdata

        for module in pkgutil.walk_packages(onnxdata.__path__, "onnxdata."):
            if not module.name.endswith("__main__"):
                importlib.import_module(module.name)
    import targets

    hits: dict[str, int] = {}
    hits_file = work / "known-bug-hits.json"  # libFuzzer exits without running atexit
    hits_file.unlink(missing_ok=True)

    def one_input(data: bytes) -> None:
        bug = targets.run_one(name, data)
        if bug is not None:
            hits[bug] = hits.get(bug, 0) + 1
            hits_file.write_text(json.dumps(hits))

    work.mkdir(parents=True, exist_ok=True)
    for i, s in enumerate(seeds()):
        (work / f"seed-{i:04d}").write_bytes(s)
    REGRESSIONS.mkdir(parents=True, exist_ok=True)
    argv = [sys.argv[0], str(work), f"-artifact_prefix={REGRESSIONS}/{name}-",
            "-max_len=65536", "-rss_limit_mb=1024", "-timeout=20", "-print_final_stats=1"]
    if seconds is not None:
        argv.append(f"-max_total_time={seconds}")
    if runs is not None:
        argv.append(f"-atheris_runs={runs}")
    atheris.Setup(argv, one_input)
    atheris.Fuzz()
    return 0


_DONE = re.compile(r"Done (\d+) (?:runs )?in")  # (atheris: "Done N in S second(s)")
_EXECS = re.compile(r"stat::number_of_executed_units:\s*(\d+)")


def fuzz(names: list[str], seconds: int | None, runs: int | None) -> int:
    """Fuzz each harness in a child process, one after the other; print a table."""
    rows = []
    status = 0
    for name in names:
        work = Path(os.environ.get("ONNXDATA_FUZZ_WORK", "/tmp/onnxdata-fuzz")) / name
        cmd = [sys.executable, __file__, "--child", name, "--work", str(work)]
        if seconds is not None:
            cmd += ["--seconds", str(seconds)]
        if runs is not None:
            cmd += ["--runs", str(runs)]
        started = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
        log = proc.stdout + proc.stderr
        m = _EXECS.search(log) or _DONE.search(log)
        execs = int(m.group(1)) if m else 0
        hits_file = work / "known-bug-hits.json"
        hits = json.loads(hits_file.read_text()) if hits_file.exists() else {}
        known = f"known bug hits: {sum(hits.values())} {hits}"
        crashed = proc.returncode != 0
        if crashed:
            status = 1
            sys.stderr.write(log[-6000:])
        rows.append((name, execs, int(crashed), time.monotonic() - started))
        print(f"harness {name}: {execs} executions, {int(crashed)} unexpected exceptions, "
              f"{known} ({time.monotonic() - started:.0f} s)", flush=True)
    total = sum(r[1] for r in rows)
    print(f"total: {total} executions, {sum(r[2] for r in rows)} unexpected exceptions")
    return status


def regress() -> int:
    """Replay every kept input through every harness; only allowed exceptions may come out."""
    import targets

    files = sorted(p for p in REGRESSIONS.iterdir() if p.is_file() and p.name != "README.md")
    failures = 0
    for path in files:
        data = path.read_bytes()
        for name in targets.TARGETS:
            try:
                bug = targets.run_one(name, data)
                if bug is not None:
                    print(f"known bug {bug}: {path.name} in {name}")
            except BaseException:
                failures += 1
                print(f"FAIL {path.name} in {name}:\n{traceback.format_exc()}")
    print(f"{len(files)} inputs x {len(targets.TARGETS)} harnesses replayed, "
          f"{failures} failures")
    return 1 if failures else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("harness", nargs="*", help=f"one of {', '.join(HARNESSES)}, or all")
    ap.add_argument("--seconds", type=int)
    ap.add_argument("--runs", type=int)
    ap.add_argument("--regress", action="store_true")
    ap.add_argument("--child")
    ap.add_argument("--work", type=Path)
    args = ap.parse_args()
    if args.regress:
        return regress()
    if args.child:
        return fuzz_one(args.child, args.seconds, args.runs, args.work)
    names = list(HARNESSES) if args.harness in ([], ["all"]) else args.harness
    unknown = [n for n in names if n not in HARNESSES]
    if unknown:
        ap.error(f"unknown harness {unknown}; choose from {', '.join(HARNESSES)}")
    if args.seconds is None and args.runs is None:
        args.seconds = 60
    return fuzz(names, args.seconds, args.runs)


def main_for(name: str) -> int:
    """The entry point of one harness file: fuzz ``name`` with the options given."""
    sys.argv[1:1] = [name]
    return main()


if __name__ == "__main__":
    sys.exit(main())
