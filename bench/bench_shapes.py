"""Timing (not a test): every entry point on many tiny elements of every kind (issue 18).

For each shape of ``bench/shapes.py`` at each size, each entry point runs in its own
fresh process, which imports what it needs, then times its call alone (CPU seconds,
``time.process_time``, imports and interpreter start-up left out) under a time limit
(``--timeout``, counted from the end of the imports; a process over it is killed and
prints ``> N s``):

- ``validate``, ``explore-json``: the CLI's own work, ``onnxdata.cli.main.main(["validate",
  FILE])`` and ``main(["explore", FILE, "--json"])``, its output really written, to
  /dev/null (stdout and stderr, at the file descriptor); one warm-up call on a 30-byte
  file first, so rich's and the commands' lazy imports are not timed; the exit status
  (1: invalid, 2: unreadable) is an outcome, not a failure;
- ``readings`` (the file's bytes, every reading's as_json), ``explore`` (the path, its
  as_json and byte table), ``read`` (the path, the shape's kind), ``to_numpy(load())``;
- ``FromString``: protobuf's own parser alone (upb, through onnx's generated class of the
  shape's kind), of bytes read before its clock starts: the pace the issue 39 goals are
  measured against (``readings``, ``explore`` and ``read`` within 10x of it, where
  protobuf parses the bytes at all), shown as its time and each of those three entries'
  time over it;
- ``onnx``: onnx's parse + numpy_helper (to_array / to_list / to_dict / to_optional),
  where onnx can make that value at all, of bytes read before its clock starts;
- ``file read``: the file's bytes read once (``Path.read_bytes``), nothing done with
  them: the floor of a reader that starts from the path and needs every byte, as onnx
  does and as ``read`` does where the fields are spread through the file (``read``
  maps a file over 64 KiB, so it beats this floor where the bytes are one payload).

What the command line adds before any of that, its start-up (``python -m onnxdata
validate`` and ``explore --json`` on a 30-byte file: interpreter, imports, a tiny run;
CPU seconds from wait4, the least of a few runs), is printed once in the header, not
taken off the columns: it varies by +-0.2 s between runs, more than a 1 MB file's work.

Each cell is MB/s (1 MB = 10**6 bytes of the .pb file) and, in brackets, onnx's
time over ours (above 1: faster than onnx); ``FromString`` is its time, and ``r/e/d x
FS`` the times of ``readings``, ``explore`` and ``read`` over it ("refused": protobuf
does not parse the bytes). The best of ``--repeat`` runs (5) counts:
the first two calls in a process pay the allocator's warm-up, about 250 page faults a
fresh 1 MB buffer takes until glibc's mmap and trim thresholds have adapted, which
onnx's column, parsing bytes read before its clock starts, does not.
``RSS MiB`` is the peak resident memory of the ``validate`` process (imports included).
Below each size's table: per shape, whether any entry point kept a 1 MB-or-smaller
input busy for more than 0.2 s, and which of the issues' goals are met (readings,
explore and read within 10x of FromString; readings, explore and CLI validate >= 20
MB/s; read >= 5 MB/s; read >= 2x onnx on valid shapes; where that last fails, the file
read's time as a share of onnx's: at 0.5 or more, a read from the path that needs every
byte cannot be 2x onnx's parse of bytes in memory).

    .venv/bin/python bench/bench_shapes.py                      # 1 MB and 32 MB
    .venv/bin/python bench/bench_shapes.py --quick              # 1 MB, one run, 2 s limit
    .venv/bin/python bench/bench_shapes.py --sizes 1 --only zipmap-string,strings-empty
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from shapes import Shape, by_name, tensor

#: The checkout this bench belongs to.
ROOT = Path(__file__).resolve().parent.parent
#: The children's environment: they run in a temporary folder, so the checkout goes first
#: on their path and ``import onnxdata`` is this tree's, not another installed onnxdata.
CHILD_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]),
             # process_time counts every thread: numpy's OpenBLAS threads spin for a
             # while after numpy starts (40 % more CPU seconds over a pure-Python loop,
             # at random), and no call timed here uses BLAS
             "OPENBLAS_NUM_THREADS": "1"}

MB = 10**6
ENTRIES = ("validate", "explore-json", "readings", "explore", "read", "to_numpy(load())")
CLI = {"validate": ["validate"], "explore-json": ["explore", "--json"]}
#: The entries held to within PROTOBUF_FACTOR of protobuf's FromString (issue 39).
NEAR_PROTOBUF = ("readings", "explore", "read")
PROTOBUF_FACTOR = 10
BUSY_LIMIT = 0.2  # seconds, for any input of 1 MB or less (issue 18)
STARTUP_LIMIT = 120.0  # seconds a child may take to import before its clock starts
CLOCK_FLOOR = 1e-4  # seconds process_time resolves: a faster run shows "> size / this"
TINY = "startup.pb"  # the 30-byte file, in the files' folder: the CLI's start-up, warm-up


# --- in the child process ---------------------------------------------------------------

def child(entry: str, path: str, kind: str, repeat: int) -> None:
    """Time ``entry`` on ``path`` ``repeat`` times, printing one JSON line after each run
    (so a run the parent kills still leaves the earlier ones)."""
    import warnings

    if entry not in CLI:  # the CLI shows the library's warnings its own way, as it would
        warnings.simplefilter("ignore")
    # The parent reads this process's stdout: the lines below go to a copy of it, and
    # stdout and stderr proper go to /dev/null, where the CLI's output is written.
    report = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    folder = str(Path(path).parent)
    op = _operation(entry, path, kind, folder)
    print("ready", file=report, flush=True)  # the parent's clock starts here
    for _ in range(repeat):
        start = time.process_time()
        try:
            outcome = op()
        except Exception as exc:  # a refusal is an outcome too: it is timed like a value
            outcome = f"{type(exc).__name__}"
        seconds = time.process_time() - start
        print(json.dumps({"seconds": seconds, "outcome": outcome}), file=report, flush=True)


def _operation(entry: str, path: str, kind: str, folder: str) -> Any:
    if entry == "FromString":
        import onnx

        cls = {"sequence": onnx.SequenceProto, "map": onnx.MapProto, "tensor": onnx.TensorProto,
               "optional": onnx.OptionalProto}[kind]
        data = Path(path).read_bytes()
        return lambda: (cls.FromString(data), "ok")[1]
    if entry == "onnx":
        import onnx
        from onnx import numpy_helper as nh

        cls = {"sequence": onnx.SequenceProto, "map": onnx.MapProto, "tensor": onnx.TensorProto,
               "optional": onnx.OptionalProto}[kind]
        convert = {"sequence": nh.to_list, "map": nh.to_dict, "tensor": nh.to_array,
                   "optional": nh.to_optional}[kind]
        data = Path(path).read_bytes()
        return lambda: (convert(cls.FromString(data)), "ok")[1]
    if entry == "file read":
        return lambda: (Path(path).read_bytes(), "ok")[1]
    if entry in CLI:
        return _command(CLI[entry], path, str(Path(folder) / TINY))
    import onnxdata

    if entry == "readings":
        data = Path(path).read_bytes()

        def readings() -> str:
            rs = onnxdata.readings(data, base_dir=folder)
            [r.as_json() for r in rs]
            mine = next(r for r in rs if r.kind_name == kind)
            return _verdict(mine.well_formed, mine.valid)
        return readings
    if entry == "explore":
        def explore() -> str:
            ex = onnxdata.explore(path)
            ex.as_json()
            ex.byte_table()
            return "ok"
        return explore
    if entry == "read":
        return lambda: (onnxdata.read(path, kind), "ok")[1]
    assert entry == "to_numpy(load())"
    return lambda: (onnxdata.to_numpy(onnxdata.load(path, kind), base_dir=folder), "ok")[1]


def _command(words: list[str], path: str, tiny: str) -> Any:
    """The CLI command ``words`` on ``path`` as the console script runs it, minus the
    interpreter and imports: ``main`` called in this process, once first on ``tiny``."""
    from onnxdata.cli.main import main as cli

    def run(name: str) -> str:
        code: int | str | None
        try:
            code = cli([words[0], name, *words[1:]])
        except SystemExit as exc:  # argparse's way out: an outcome like any exit status
            code = exc.code
        sys.stdout.flush()  # every byte of the output written (to /dev/null) in the run
        sys.stderr.flush()
        return f"exit {code}"

    run(tiny)
    return lambda: run(path)


def _verdict(well_formed: bool, valid: bool) -> str:
    return "valid" if valid else "invalid" if well_formed else "not well-formed"


# --- in the parent -------------------------------------------------------------------------

@dataclass
class Run:
    seconds: float | None  # None: over the time limit (or failed) with no run finished
    rss_mib: float
    outcome: str = ""


def timed(args: list[str], timeout: float, cwd: str, ready: bool = False
          ) -> tuple[str, float, float, bool]:
    """Run ``args`` for at most ``timeout`` s (counted from its line "ready" if ``ready``):
    stdout, CPU s, peak RSS MiB, and whether it was killed."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.DEVNULL, cwd=cwd,
                                env=CHILD_ENV, start_new_session=True)
        waiting = ready
        deadline = time.monotonic() + (STARTUP_LIMIT if ready else timeout)
        killed = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if waiting and os.pread(out.fileno(), 6, 0) == b"ready\n":
                waiting, deadline = False, time.monotonic() + timeout
            if time.monotonic() > deadline:
                os.killpg(proc.pid, signal.SIGKILL)  # the child's own session, no one else
                killed = True
                _, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.005)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    return text, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, killed


def run_child(entry: str, path: Path, kind: str, repeat: int, timeout: float) -> Run:
    """``entry``'s best CPU seconds over ``repeat`` runs in one fresh process (``child``),
    its imports left out; the runs together may take ``timeout`` s."""
    text, _, rss, _ = timed([sys.executable, __file__, "--child", entry, str(path), kind,
                             str(repeat)], timeout, str(path.parent), ready=True)
    runs = [json.loads(line) for line in text.splitlines() if line.startswith("{")]
    if not runs:
        return Run(None, rss)
    return Run(min(r["seconds"] for r in runs), rss, runs[-1]["outcome"])


def checkout_onnxdata(folder: Path) -> str | None:
    """Why a child would not import this checkout's onnxdata (None when it does): a
    non-editable install finds ``onnxdata`` here but not its ``generated`` package."""
    run = subprocess.run([sys.executable, "-c", "import onnxdata; print(onnxdata.__file__)"],
                         env=CHILD_ENV, cwd=folder, capture_output=True, text=True)
    if run.returncode:
        return run.stderr.strip().splitlines()[-1] if run.stderr.strip() else "import failed"
    found = Path(run.stdout.strip()).resolve()
    return None if found.is_relative_to(ROOT / "onnxdata") else f"onnxdata is {found}"


def cli_startup(folder: Path, repeat: int) -> dict[str, float]:
    """The CLI's start-up: CPU seconds of ``python -m onnxdata ...`` on a 30-byte tensor
    file (interpreter, imports, a tiny run), the least of a few runs. The file stays in
    ``folder`` for the CLI entries' warm-up."""
    tiny = folder / TINY
    tiny.write_bytes(tensor(1, [2], b"\x22\x08" + b"\x00" * 8))
    return {entry: min(timed([sys.executable, "-m", "onnxdata", words[0], str(tiny),
                              *words[1:]], STARTUP_LIMIT, str(folder))[1]
                       for _ in range(max(repeat, 3)))
            for entry, words in CLI.items()}


def cell(size: int, run: Run | None, onnx: Run | None, timeout: float) -> str:
    if run is None:
        return "-"
    if run.seconds is None:
        return f"> {timeout:g} s"
    if run.seconds < CLOCK_FLOOR:  # below what the clock resolves
        return f"> {size / MB / CLOCK_FLOOR:.0f}"
    rate = size / MB / run.seconds
    text = f"{rate:.3g}" if rate < 1000 else f"{rate:.0f}"
    if onnx is not None and onnx.seconds is not None:
        text += f" ({onnx.seconds / run.seconds:.2g}x)"
    return text


def mb_per_s(size: int, run: Run | None) -> float:
    if run is None or run.seconds is None:
        return 0.0
    return size / MB / max(run.seconds, CLOCK_FLOOR)


def over_protobuf(runs: dict[str, Run]) -> dict[str, float | None]:
    """Each of NEAR_PROTOBUF's time over FromString's (None: over the time limit), where
    protobuf parsed the bytes; {} where it did not."""
    protobuf = runs.get("FromString")
    if protobuf is None or protobuf.seconds is None:
        return {}
    floor = max(protobuf.seconds, CLOCK_FLOOR)
    return {e: None if runs[e].seconds is None else runs[e].seconds / floor
            for e in NEAR_PROTOBUF}


def protobuf_cells(runs: dict[str, Run], timeout: float) -> tuple[str, str]:
    """FromString's time, and readings/explore/read's time over it."""
    protobuf = runs.get("FromString")
    if protobuf is None:
        return "refused", "-"
    if protobuf.seconds is None:
        return f"> {timeout:g} s", "-"
    ratios = over_protobuf(runs)
    return (f"{protobuf.seconds * 1e3:.3g} ms",
            "/".join("?" if r is None else f"{r:.0f}" if r >= 10 else f"{r:.1f}"
                     for r in ratios.values()))


def goals(size: int, nominal: int, runs: dict[str, Run], verdict: str, timeout: float
          ) -> str:
    """The issue's goals for one shape at one size, each ok or FAIL."""
    out = []
    ratios = over_protobuf(runs)
    if ratios:
        worst = [e for e, r in ratios.items() if r is None or r > PROTOBUF_FACTOR]
        out.append(f"within {PROTOBUF_FACTOR}x of FromString "
                   f"{'FAIL (' + ', '.join(worst) + ')' if worst else 'ok'}")
    for entry, least in (("readings", 20), ("explore", 20), ("validate", 20), ("read", 5)):
        met = mb_per_s(size, runs.get(entry)) >= least
        out.append(f"{entry} >= {least} MB/s {'ok' if met else 'FAIL'}")
    onnx, read = runs.get("onnx"), runs.get("read")
    if verdict == "valid" and onnx is not None:
        fast = read is not None and read.seconds is not None and (
            onnx.seconds is None or onnx.seconds >= 2 * read.seconds)
        floor = runs.get("file read")
        why = ""
        if not fast and onnx.seconds and floor is not None and floor.seconds is not None:
            why = f" (the file read alone: {floor.seconds / onnx.seconds:.2f} of onnx's time)"
        out.append(f"read >= 2x onnx {'ok' if fast else 'FAIL'}{why}")
    if nominal <= MB:
        slow = [(e, r.seconds) for e, r in runs.items()
                if e not in ("onnx", "FromString", "file read")
                and (r.seconds is None or r.seconds > BUSY_LIMIT)]
        if slow:
            worst = ", ".join(f"{e} {f'> {timeout:g}' if s is None else f'{s:.2f}'} s"
                              for e, s in slow)
            out.append(f"busy > {BUSY_LIMIT} s: YES ({worst})")
        else:
            out.append(f"busy > {BUSY_LIMIT} s: no")
    return "; ".join(out)


def bench_one(shape: Shape, size: int, folder: Path, args: argparse.Namespace
              ) -> tuple[int, dict[str, Run], str]:
    built = shape(size)
    path = folder / f"{shape.name}.pb"
    path.write_bytes(built.data)
    for name, data in built.extras.items():
        (folder / name).write_bytes(data)
    runs: dict[str, Run] = {}
    for entry in ENTRIES:
        runs[entry] = run_child(entry, path, shape.kind, args.repeat, args.timeout)
    if shape.onnx:
        onnx = run_child("onnx", path, shape.kind, args.repeat, args.timeout)
        if onnx.outcome == "ok" or onnx.seconds is None:  # left out where onnx refuses it
            runs["onnx"] = onnx
    protobuf = run_child("FromString", path, shape.kind, args.repeat, args.timeout)
    if protobuf.outcome == "ok" or protobuf.seconds is None:  # left out where it refuses
        runs["FromString"] = protobuf
    runs["file read"] = run_child("file read", path, shape.kind, args.repeat, args.timeout)
    path.unlink()
    for name in built.extras:
        (folder / name).unlink()
    return len(built.data), runs, verdict_of(runs)


def verdict_of(runs: dict[str, Run]) -> str:
    """The verdict on the shape's own kind: its reading's, else what read() did."""
    if runs["readings"].outcome:
        return runs["readings"].outcome
    return {"ok": "valid", "ValidationError": "invalid",
            "DecodeError": "not well-formed"}.get(runs["read"].outcome, "?")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1,32", help="sizes in MB, comma-separated")
    parser.add_argument("--quick", action="store_true",
                        help="1 MB only, one run of each, a 2 s limit")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each; the best counts")
    parser.add_argument("--timeout", type=float, default=5.0,
                        help="seconds each entry point may take per file (all its runs)")
    parser.add_argument("--only", help="comma-separated shape names")
    parser.add_argument("--dir", help="folder for the files (default: a temporary one)")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args()  # run.py passes every script the same arguments
    if args.child:
        entry, path, kind, repeat = args.child
        child(entry, path, kind, int(repeat))
        return 0
    if args.quick:
        args.sizes, args.repeat, args.timeout = "1", 1, 2.0
    shapes = by_name(args.only)
    sizes = [int(float(s) * MB) for s in args.sizes.split(",")]
    folder = Path(tempfile.mkdtemp(prefix="bench-shapes-", dir=args.dir))
    try:
        why = checkout_onnxdata(folder)
        if why is not None:
            print(f"the children cannot import {ROOT / 'onnxdata'} ({why}); install this "
                  "checkout editable (make .venv/.ok, or pip install -e .)", file=sys.stderr)
            return 1
        startup = cli_startup(folder, args.repeat)
        print(f"CLI start-up, in no column (python -m onnxdata on a 30-byte file, CPU): "
              f"validate {startup['validate']:.2f} s, explore --json "
              f"{startup['explore-json']:.2f} s; limit {args.timeout:g} s per entry point "
              f"and file; best of {args.repeat}", flush=True)
        for size in sizes:
            print(f"\n--- {size / MB:g} MB: MB/s (onnx's time / ours) ---")
            head = f"{'shape':26} {'verdict':9}" + "".join(f" {e:>16}" for e in ENTRIES) + \
                f" {'onnx':>10} {'FromString':>10} {'r/e/d x FS':>14} {'file read':>10}" \
                f" {'RSS MiB':>8}"
            print(head, flush=True)
            notes = []
            for shape in shapes:
                actual, runs, verdict = bench_one(shape, size, folder, args)
                onnx = runs.get("onnx")
                row = f"{shape.name:26} {verdict[:9]:9}" + "".join(
                    f" {cell(actual, runs[e], onnx, args.timeout):>16}" for e in ENTRIES)
                row += f" {cell(actual, onnx, None, args.timeout):>10}"
                protobuf, ratios = protobuf_cells(runs, args.timeout)
                row += f" {protobuf:>10} {ratios:>14}"
                row += f" {cell(actual, runs['file read'], None, args.timeout):>10}"
                row += f" {runs['validate'].rss_mib:8.0f}"
                print(row, flush=True)
                notes.append(f"{shape.name}: {goals(actual, size, runs, verdict, args.timeout)}")
            print("\ngoals at this size:")
            for line in notes:
                print("  " + line)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
