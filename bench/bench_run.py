"""Benchmark of ``onnxdata run`` over ONNX's node cases, against onnx's ``BackendTest``.

The node cases (1,884 with onnx 1.23.2) are written by the installed onnx into
``--dir`` (``tests/node_cases.py``; a temporary folder by default; never checked in).
Then, each ``--repeat`` times, in its own subprocess, timed from outside:

* ``onnxdata run DIR --jobs 2 --json`` with the ort backend, and with ``reference``
  (onnx's ReferenceEvaluator; counts only, ``--skip-reference`` leaves it out);
* ``pytest -n 2`` over ``onnx.backend.test.BackendTest(onnxruntime.backend)``, with
  JUnit XML. onnx 1.23's BackendTest makes the same node cases in memory (each worker
  computes all of them at import, about a minute here), so with a partial ``--dir``
  it still runs all 1,884; compare times on the full set only.

It prints each run's pass/fail/skip/error counts, the time ratio onnxdata / BackendTest
(both with 2 worker processes), and every case where the two verdicts on ORT differ
(pass against not pass), with both messages. It also checks the ml_dtypes cases
(bfloat16, float8, int4/uint4, int2/uint2, e8m0) against the hand-written OrtValue
loop of ``tests/ortvalue_loop.py``: disagreements and dtype-bridge errors, both
expected 0. The machine may be shared: quote ratios, not seconds.

``--plugin`` also times the pytest plugin (``pytest --onnx-cases DIR`` at ``-n 0`` and
``-n JOBS``, in an empty folder) against ``onnxdata run DIR --jobs JOBS``, and prints
the ratios; ``--plugin-only`` times only these; ``--pytest-args`` adds arguments to
the plugin's runs. Where hypothesis's pytest plugin is installed (the dev venv), the
plugin at ``-n JOBS`` is also timed with ``-p no:hypothesispytest``, as ``pip install
'onnxdata[pytest]'`` has it: hypothesis's plugin imports hypothesis at the end of every
pytest process, xdist's workers included (0.7-0.9 s CPU each here). Each
command runs once untimed first, with bytecode writing allowed, so pytest's assertion
rewrite cache holds its plugins as after any first run (``--no-warm``: not).

    .venv/bin/python bench/bench_run.py --dir /work/tmp/node --repeat 1
    .venv/bin/python bench/bench_run.py --dir /work/node-cases --plugin-only
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# onnx 1.23's BackendTest builds its node cases in memory (the same generator as
# tests/node_cases.py); its other kinds are read from data_dir, here empty folders.
BACKEND_TEST = """
import functools
import onnx.backend.test.loader as loader
import onnx.backend.test.runner as runner
import onnxruntime
import onnxruntime.backend

onnxruntime.set_default_logger_severity(3)
runner.load_model_tests = functools.partial(loader.load_model_tests, data_dir={data!r})
backend_test = runner.Runner(onnxruntime.backend, __name__)
globals().update(backend_test.test_cases)
"""


def _timed(cmd: list[str], **kw: Any) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return time.perf_counter() - start, done


def _case_verdicts(report: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """{case: (pass|fail|error|skip|…, first message)} from ``onnxdata run --json``."""
    out: dict[str, tuple[str, str]] = {}
    rank = {"error": 4, "fail": 3, "unchecked": 2, "skip": 1, "xfail": 1, "pass": 0}
    for s in report["sets"]:
        old = out.get(s["case"])
        msg = s["message"] or ""
        if not msg:
            msg = next((f"output {o['index']}: {d['path'] or '(top)'}: {d['what']}"
                        for o in s["outputs"] for d in o["differences"]), "")
        if old is None or rank[s["status"]] > rank[old[0]]:
            out[s["case"]] = (s["status"], msg)
    return out


def _backend_test_verdicts(xml: Path) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for tc in ET.parse(xml).getroot().iter("testcase"):
        name = tc.get("name", "")
        if not name.endswith("_cpu"):
            continue
        case = name[: -len("_cpu")]
        failure = tc.find("failure")
        error = tc.find("error")
        skipped = tc.find("skipped")
        if failure is not None or error is not None:
            node = failure if failure is not None else error
            assert node is not None
            text = (node.get("message") or node.text or "").strip().splitlines()
            out[case] = ("fail", text[0][:160] if text else "")
        elif skipped is not None:
            out[case] = ("skip", (skipped.get("message") or "")[:160])
        else:
            out[case] = ("pass", "")
    return out


def _ml_dtypes_check(data: Path) -> tuple[int, collections.Counter[tuple[str, str]], list[str]]:
    """Cases of the ml_dtypes types: onnxdata's verdict per set against the hand loop."""
    import onnx

    from onnxdata import OnnxDataError
    from onnxdata.cases import run_test_data_set
    from onnxdata.cases.case_run import test_data_sets
    from tests.node_cases import uses_ml_dtypes
    from tests.ortvalue_loop import ortvalue_loop

    cases = [c for c in sorted(data.iterdir()) if (c / "model.onnx").exists() and
             uses_ml_dtypes(onnx.load(str(c / "model.onnx"), load_external_data=False))]
    pairs: collections.Counter[tuple[str, str]] = collections.Counter()
    notes = []
    for case in cases:
        hand = ortvalue_loop(case)
        try:
            ours = {}
            for f in test_data_sets(case):
                st = {r.status for r in run_test_data_set(case / "model.onnx", f)}
                ours[f.name] = "error" if "error" in st else "fail" if "fail" in st else "pass"
        except OnnxDataError:
            ours = {"*": "cannot load"}
        for k in sorted(set(hand) | set(ours)):
            h = hand.get(k, hand.get("*", "?")).split(":")[0]
            o = ours.get(k, ours.get("*", "?"))
            pairs[(o, h)] += 1
            if o != h or o in ("fail", "error"):
                notes.append(f"{case.name}[{k}]: onnxdata {o}, OrtValue loop "
                             f"{hand.get(k, hand.get('*'))}")
    return len(cases), pairs, notes


def _cpu_timed(cmd: list[str], **kw: Any) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user + sys of the command and every process it
    waited for) and the last line of its output."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent, done = _timed(cmd, **kw)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return spent, cpu, (done.stdout.strip().splitlines() or [""])[-1]


def _plugin_times(base: Path, jobs: int, repeat: int, extra: list[str], warm: bool) -> None:
    """The plugin at -n 0 and -n JOBS against ``onnxdata run --jobs JOBS``, best of
    ``repeat``, each in an empty folder (no tests of its own to collect). On a shared
    machine the CPU seconds hold better than the wall time.

    With ``warm``, each command runs once untimed first, the pytest ones with bytecode
    writing allowed: pytest rewrites the asserts of every module of a pytest11 plugin's
    distribution (hypothesis, xdist) at import and keeps the result beside the .pyc, as on
    any machine without PYTHONDONTWRITEBYTECODE; with it set (as here), each of the three
    pytest processes of ``-n 2`` rewrote hypothesis again, ~0.6 s CPU each."""
    wall: dict[str, list[float]] = collections.defaultdict(list)
    cpu: dict[str, list[float]] = collections.defaultdict(list)
    last: dict[str, str] = {}
    commands = {f"run --jobs {jobs}": [sys.executable, "-m", "onnxdata", "run", str(base),
                                       "--jobs", str(jobs), "--allow-unchecked",
                                       "--timeout", "300"]}
    for n in (0, jobs):
        commands[f"plugin -n {n}"] = [sys.executable, "-m", "pytest", "-q", "-p",
                                      "no:cacheprovider", "--onnx-cases", str(base),
                                      "-n", str(n), *extra]
    if importlib.util.find_spec("_hypothesis_pytestplugin") is not None and \
            "no:hypothesispytest" not in extra:  # (as onnxdata[pytest] installs it: without)
        commands[f"plugin -n {jobs}, no hypothesis"] = [
            *commands[f"plugin -n {jobs}"], "-p", "no:hypothesispytest"]
    with tempfile.TemporaryDirectory(prefix="bench-plugin-") as work:
        if warm:
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            for cmd in commands.values():
                subprocess.run(cmd, capture_output=True, cwd=work, env=env)
        for _ in range(repeat):
            for name, cmd in commands.items():
                w, c, line = _cpu_timed(cmd, cwd=work)
                wall[name].append(w)
                cpu[name].append(c)
                last[name] = line[:100]
    for name in commands:
        print(f"{name}: wall {min(wall[name]):.1f} s, CPU {min(cpu[name]):.1f} s "
              f"(best of {len(wall[name])}); {last[name]}")
    run = f"run --jobs {jobs}"
    for name in commands:
        if name == run:
            continue
        print(f"ratio {name} / {run}: wall {min(wall[name]) / min(wall[run]):.2f}, "
              f"CPU {min(cpu[name]) / min(cpu[run]):.2f}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", help="where the node cases are (written there if missing)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--skip-reference", action="store_true")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--plugin", action="store_true", help="time the pytest plugin too")
    ap.add_argument("--plugin-only", action="store_true",
                    help="time only the pytest plugin against onnxdata run")
    ap.add_argument("--no-warm", action="store_true",
                    help="no untimed first run of each plugin command (pytest's assertion "
                         "rewrite cache of its plugins stays as it is)")
    ap.add_argument("--pytest-args", default="",
                    help="more arguments for the plugin's pytest runs, e.g. "
                         "'-p no:hypothesispytest' (hypothesis's plugin imports hypothesis "
                         "at every pytest process's end, ~1 s each without .pyc files)")
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="bench-run-") if not args.dir else None
    base = Path(args.dir) if args.dir else Path(tmp.name if tmp else "") / "node"
    if not base.exists() or not any(base.iterdir()):
        from tests.node_cases import write_node_cases

        t = time.perf_counter()
        written = write_node_cases(base)
        print(f"wrote {len(written)} node cases to {base} in {time.perf_counter() - t:.1f} s")
    cases = [c for c in base.iterdir() if (c / "model.onnx").exists()]
    print(f"{len(cases)} node cases in {base}; the machine may be shared: ratios hold better")
    if args.plugin or args.plugin_only:
        _plugin_times(base, args.jobs, args.repeat, shlex.split(args.pytest_args),
                      not args.no_warm)
        if args.plugin_only:
            if tmp is not None:
                tmp.cleanup()
            return 0
    onnxdata = [sys.executable, "-m", "onnxdata", "run", str(base), "--jobs", str(args.jobs),
                "--json", "--allow-unchecked", "--timeout", "300"]
    runs: dict[str, list[float]] = collections.defaultdict(list)
    reports: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-bt-") as work:
        test_file = Path(work) / "test_backend_ort.py"
        for kind in ("real", "simple", "pytorch-converted", "pytorch-operator"):
            (Path(work) / "data" / kind).mkdir(parents=True)
        test_file.write_text(BACKEND_TEST.format(data=str(Path(work) / "data")))
        xml = Path(work) / "bt.xml"
        for _ in range(args.repeat):
            for backend in ("ort", *(() if args.skip_reference else ("reference",))):
                spent, done = _timed([*onnxdata, "--backend", backend])
                runs[backend].append(spent)
                reports[backend] = json.loads(done.stdout)
            spent, done = _timed([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                  "-p", "no:onnxdata", "-n", str(args.jobs), str(test_file),
                                  "--junitxml", str(xml), "-W", "ignore"], cwd=work)
            runs["BackendTest"].append(spent)
        bt = _backend_test_verdicts(xml)
    for name, times in runs.items():
        print(f"{name}: wall {min(times):.1f} s (best of {len(times)})")
    for backend, report in reports.items():
        counts = {k: v for k, v in report["summary"]["counts"].items() if v}
        per_case = collections.Counter(v[0] for v in _case_verdicts(report).values())
        print(f"onnxdata run --backend {backend}: sets {counts}; cases {dict(per_case)}")
    bt_counts = dict(collections.Counter(v[0] for v in bt.values()))
    print(f"BackendTest(onnxruntime.backend): cases {bt_counts}")
    ratio = min(runs["ort"]) / min(runs["BackendTest"])
    print(f"ratio onnxdata run --jobs {args.jobs} / pytest -n {args.jobs} BackendTest: "
          f"{ratio:.2f}")
    ours = _case_verdicts(reports["ort"])
    differ = sorted(c for c in set(ours) & set(bt)
                    if (ours[c][0] == "pass") != (bt[c][0] == "pass"))
    print(f"verdicts that differ (pass against not pass): {len(differ)}")
    for c in differ:
        print(f"  {c}: onnxdata {ours[c][0]} {ours[c][1][:140]!r}; BackendTest {bt[c][0]} "
              f"{bt[c][1][:140]!r}")
    n, pairs, notes = _ml_dtypes_check(base)
    print(f"ml_dtypes cases: {n}; (onnxdata, OrtValue loop) per set: {dict(pairs)}")
    for line in notes:
        print(f"  {line}")
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    raise SystemExit(main())
