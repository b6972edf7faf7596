"""``onnxdata run``: find the cases, run them (``case_pool``), print, report, write outputs.

One case named by its folder, its model or one of its sets prints one line per
set and output, as before; several cases (a folder of case folders, many
arguments, or ``--jobs``/``--timeout``/``--shard``/``--report``/``--executor``)
print one line per set as each case finishes and a summary at the end. With
``--json`` the one JSON object is printed whatever happens, with an ``error``
field saying why when the run could not start.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import re
from pathlib import Path
from typing import Any

from onnxdata.cases.backend_errors import BackendUnavailable
from onnxdata.cases.backends import get_backend
from onnxdata.cases.case_pool import run_cases
from onnxdata.cases.case_run import CaseTask, SetResult, find_cases, shard, test_data_sets
from onnxdata.cases.diff import SHOWN
from onnxdata.cases.expectations import ATOL, RTOL, Expectations, read_expectations
from onnxdata.cases.run_outputs import check_case, fill_in, new_case, start_case
from onnxdata.cases.scoreboard import summarize, write_report
from onnxdata.cli.args import model_problem
from onnxdata.cli.console import console, printable, write_text
from onnxdata.core.version import VERSION
from onnxdata.errors import MISSING, OnnxDataError

__all__ = ["run_command"]

_SET = re.compile(r"^test_data_set_(\d+)$")
_STYLE = {"pass": "green", "fail": "yellow", "error": "red", "unchecked": "cyan",
          "xfail": "magenta", "skip": "blue"}


class _Stop(Exception):
    """The run cannot start: the message, exit 2."""


def run_command(args: argparse.Namespace) -> int:
    """``onnxdata run`` with parsed arguments; the exit code."""
    from rich.text import Text

    try:
        return _run(args)
    except _Stop as exc:
        if args.json:
            write_text(json.dumps({"passed": False, "error": str(exc), "results": [],
                                   "sets": []}, indent=2) + "\n")
        else:
            console(stderr=True).print(Text(f"onnxdata: {printable(str(exc))}", style="red"),
                                   soft_wrap=True)
        return 2


def _one_case(target: Path, args: argparse.Namespace) -> tuple[Path, Path] | None:
    """``(case folder, model)`` when ``target`` names one case, its model or one set."""
    if not target.is_dir():
        gone = model_problem(os.fspath(target))
        if gone:
            raise _Stop(gone)
        return target.parent, target
    if (target / "model.onnx").is_file():
        return target, target / "model.onnx"
    m = _SET.match(target.name)
    if m is not None and (target.parent / "model.onnx").is_file():
        if args.set is None:
            args.set = int(m.group(1))  # a data set folder: run that set only
        return target.parent, target.parent / "model.onnx"
    return None


def _cases(args: argparse.Namespace) -> tuple[list[tuple[Path, Path]], bool]:
    """The cases to run, and whether the run is of one case as named."""
    if len(args.model) == 1:
        one = _one_case(Path(args.model[0]), args)
        if one is not None:
            return [one], True
    try:
        found = find_cases(args.model)
    except OnnxDataError as exc:
        raise _Stop(str(exc)) from exc
    if not found:
        where = Path(args.model[0])
        raise _Stop(f"{where / 'model.onnx'}: {MISSING}" if len(args.model) == 1 else
                    "no test case (model.onnx beside test_data_set_N) in the folders given")
    return [(c, c / "model.onnx") for c in found], False


def _expectations(args: argparse.Namespace) -> Expectations:
    exp = Expectations(args.rtol, args.atol)
    if args.expectations:
        exp = read_expectations(args.expectations)
        if (args.rtol, args.atol) != (RTOL, ATOL):  # given on the command line: they win
            exp = exp.with_defaults(args.rtol, args.atol)
    return exp


def _check_backend(name: str, providers: list[str] | None) -> None:
    try:
        get_backend(name, providers)
    except ValueError as exc:
        raise _Stop(str(exc)) from exc
    except BackendUnavailable as exc:
        if isinstance(exc.__cause__, ImportError):
            raise _Stop(str(exc)) from exc
        # a provider missing here: every case is skipped with the reason


def _run(args: argparse.Namespace) -> int:
    cases, single = _cases(args)
    many = not single or bool(args.jobs or args.timeout or args.shard or args.report or
                              args.executor == "dask")
    if args.write_outputs is not None and (len(cases) != 1 or args.against):
        raise _Stop("--write-outputs takes one test case, and no --against")
    providers = [p.strip() for p in args.providers.split(",") if p.strip()] \
        if args.providers else None
    try:  # the user's own files first: a bad expectations file is said with or without ORT
        exp = _expectations(args)
    except OnnxDataError as exc:
        raise _Stop(str(exc)) from exc
    _check_backend(args.backend, providers)
    if args.against:
        _check_backend(args.against, None)
    if args.shard:
        try:
            cases = [c for c in cases if c[0] in set(shard([c for c, _ in cases], args.shard))]
        except ValueError as exc:
            raise _Stop(str(exc)) from exc
    sets: tuple[str, ...] | None = None
    if single:
        case, model = cases[0]
        found = test_data_sets(case)
        if not found:
            raise _Stop(f"no test_data_set_N folder beside {model}")
        if args.set is not None:
            sets = (f"test_data_set_{args.set}",)
            if sets[0] not in {p.name for p in found}:
                raise _Stop(f"no test_data_set_{args.set} in {case}")
    tasks = [CaseTask(os.fspath(c), args.backend, os.fspath(m), tuple(providers or ()),
                      args.against, exp, sets,
                      pictures=bool(args.report and not args.report.endswith(".json")),
                      keep_outputs=args.write_outputs is not None) for c, m in cases]
    jobs = args.jobs if args.jobs > 0 else (1 if args.timeout else 0)
    try:
        results = _execute(tasks, jobs, args, many)
    except (ImportError, ValueError, OSError) as exc:
        raise _Stop(str(exc)) from exc
    written, kept, sources = _write(args, cases, results) if args.write_outputs is not None \
        else ([], [], [])
    code = exit_code(results, args.allow_unchecked, sources)
    if args.report:
        try:
            write_report(args.report, results, _header(args, providers))
        except OSError as exc:
            raise _Stop(f"cannot write {args.report}: {exc.strerror or exc}") from exc
        except OnnxDataError as exc:  # a folder, FIFO or device where the report would go
            raise _Stop(str(exc)) from exc
    if args.json:
        write_text(json.dumps(_json(args, cases, single, results, written, kept, code),
                              indent=2) + "\n")
        return code
    out = console()
    if not many:
        _print_outputs(out, results, written, kept)
    else:
        _print_summary(out, results)
    if code == 1 and any(r.status == "unchecked" and r.folder not in sources
                         for r in results):
        out.print("unchecked: a set has no expected outputs (exit 1): --write-outputs adds "
                  "them, --allow-unchecked accepts them", markup=False, soft_wrap=True)
    return code


def _execute(tasks: list[CaseTask], jobs: int, args: argparse.Namespace,
             many: bool) -> list[SetResult]:
    if not many or args.json:
        return run_cases(tasks, jobs=jobs, timeout=args.timeout, executor=args.executor,
                         scheduler=args.scheduler)
    out = console()
    if not out.is_terminal:
        return run_cases(tasks, jobs=jobs, timeout=args.timeout, executor=args.executor,
                         scheduler=args.scheduler, progress=lambda rs: _print_sets(out, rs))
    from rich.progress import Progress

    # no redirection: onnxdata's console writes to sys.stdout, which Live would wrap (a loop)
    with Progress(console=out, transient=True, redirect_stdout=False,
                  redirect_stderr=False) as bar:
        job = bar.add_task("cases", total=len(tasks))

        def step(rs: list[SetResult]) -> None:
            _print_sets(bar.console, rs)
            bar.advance(job)

        return run_cases(tasks, jobs=jobs, timeout=args.timeout, executor=args.executor,
                         scheduler=args.scheduler, progress=step)


def exit_code(results: list[SetResult], allow_unchecked: bool = False,
              written: list[str] | tuple[str, ...] = ()) -> int:
    """2 for an error, 1 for a fail (or an unchecked set not written or allowed), else 0."""
    if any(r.status == "error" for r in results):
        return 2
    if any(r.status == "fail" for r in results):
        return 1
    if not allow_unchecked and any(r.status == "unchecked" and r.folder not in written
                                   for r in results):
        return 1
    return 0


def _write(args: argparse.Namespace, cases: list[tuple[Path, Path]],
           results: list[SetResult]) -> tuple[list[str], list[str], list[str]]:
    """The folders written, the sets kept as they were, and the sets whose outputs were
    written (in place or to the new case)."""
    from onnxdata.cases.save import read_model

    model_path = cases[0][1]
    todo = [r for r in results if r.status not in ("error", "skip") and r.outputs]
    written: list[str] = []
    kept: list[str] = []
    sources: list[str] = []
    try:
        data, model = read_model(model_path)
        if args.write_outputs:
            return _write_case(Path(args.write_outputs), model_path, data, model, todo)
        for r in todo:
            if all(not o.checked for o in r.outputs):
                written.append(os.fspath(fill_in(Path(r.folder), [o.value for o in r.outputs],
                                                 model)))
                sources.append(r.folder)
            else:
                kept.append(r.set)
    except (OnnxDataError, OSError) as exc:
        raise _Stop(str(exc)) from exc
    return written, kept, sources


def _write_case(target: Path, model_path: Path, data: bytes, model: Any,
                todo: list[SetResult]) -> tuple[list[str], list[str], list[str]]:
    """``--write-outputs DIR``: the new case built in a hidden sibling, renamed to DIR when
    whole; any failure (a full disk) leaves DIR as it was (none, or an empty folder)."""
    from onnxdata.cases.load import load_test_data_set
    from onnxdata.io.atomic import staged_folder

    if not todo:
        return [], [], []
    check_case(target)
    shown = os.fspath(target)
    written: list[str] = []
    sources: list[str] = []
    try:
        with staged_folder(target, replace=False) as stage:
            start_case(stage, data, model)
            for r in todo:
                folder = Path(r.folder)
                inputs, _ = load_test_data_set(folder, model=model_path)
                new_case(stage, folder, inputs, [o.value for o in r.outputs], model)
                written.append(os.fspath(target / folder.name))
                sources.append(r.folder)
    except OSError as exc:
        if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
            raise OnnxDataError(f"{shown} was filled while the outputs were written; it is "
                                "left as it is and no output was written") from exc
        raise OSError(exc.errno, f"{exc.strerror}; nothing was written",
                      shown) from exc
    except OnnxDataError as exc:
        raise OnnxDataError(f"{exc}; nothing was written to {shown}") from exc
    return written, [], sources


def _header(args: argparse.Namespace, providers: list[str] | None) -> dict[str, str]:
    head = {"onnxdata": VERSION}
    try:
        head.update(get_backend(args.backend, providers).versions())
    except (OnnxDataError, ValueError) as exc:
        head["backend"] = f"{args.backend} ({exc})"
    if args.against:
        head["against"] = args.against
    return head


def _json(args: argparse.Namespace, cases: list[tuple[Path, Path]], single: bool,
          results: list[SetResult], written: list[str], kept: list[str],
          code: int) -> dict[str, Any]:
    per_output: list[dict[str, Any]] = []
    for r in results:
        if not r.outputs:
            per_output.append({"set": r.set, "folder": r.folder, "output": -1, "name": "",
                               "status": r.status, "error": r.message or r.reason or None,
                               "differences": []})
        for o in r.outputs:
            per_output.append({"set": r.set, "folder": r.folder, "output": o.index,
                               "name": o.name, "status": o.status, "error": None,
                               "differences": [d.as_json() for d in o.differences],
                               "against": [d.as_json() for d in o.against]})
    head: dict[str, Any] = {"model": os.fspath(cases[0][1])} if single else \
        {"cases": [os.fspath(c) for c, _ in cases]}
    errors = {r.message for r in results if r.status == "error"}
    # one case whose every set failed the same way (the model does not load): say it once
    error = errors.pop() if single and len(errors) == 1 and \
        all(r.status == "error" for r in results) else None
    return {**head, "passed": code == 0, "backend": args.backend, "against": args.against,
            "rtol": args.rtol, "atol": args.atol, "written": written, "kept": kept,
            "error": error, "summary": summarize(results), "results": per_output,
            "sets": [r.as_json() for r in results]}


def _print_outputs(out: Any, results: list[SetResult], written: list[str],
                   kept: list[str]) -> None:
    """One case: one line per set and output, the differences under each."""
    from rich.text import Text


    for r in results:
        if not r.outputs:
            why = r.message or r.reason
            out.print(Text.assemble((printable(r.set), "bold"), ": ",
                                    (r.status, _STYLE[r.status]),
                                    f": {printable(why)}" if why else ""), soft_wrap=True)
            continue
        for o in r.outputs:
            n = len(o.differences) + len(o.against)
            more = f", {n} difference{'s' if n != 1 else ''}" if n else ""
            out.print(Text.assemble((printable(r.set), "bold"),
                                    f" output {o.index} {printable(repr(o.name))}: ",
                                    (o.status, _STYLE[o.status]), more), soft_wrap=True)
            for label, found in (("", o.differences), ("against: ", o.against)):
                for d in found[:SHOWN]:
                    out.print(printable(f"  {label}{d}"), markup=False, soft_wrap=True)
                if len(found) > SHOWN:
                    out.print(f"  {label}… {len(found) - SHOWN} more (--json lists all)",
                              soft_wrap=True)
        if r.status == "xfail" or r.message:
            out.print(Text.assemble((printable(r.set), "bold"), ": ",
                                    (r.status, _STYLE[r.status]),
                                    f": {printable(r.message or r.reason)}"), soft_wrap=True)
    for w in written:
        out.print(f"wrote {printable(w)}", markup=False, soft_wrap=True)
    if kept:
        out.print(f"not written: {printable(', '.join(kept))} (expected outputs there already; "
                  "--write-outputs DIR writes the outputs to a new test case)",
                  markup=False, soft_wrap=True)


def _print_sets(out: Any, results: list[SetResult]) -> None:
    """Many cases: one line per set as its case finishes."""
    from rich.text import Text

    for r in results:
        why = r.message or r.reason
        out.print(Text.assemble((printable(r.id), "bold"), ": ", (r.status, _STYLE[r.status]),
                                f" ({r.seconds:.3f} s)", f": {printable(why)}" if why else ""),
                  soft_wrap=True)
        for line in r.lines(3):
            out.print(f"  {printable(line)}", markup=False, soft_wrap=True)


def _print_summary(out: Any, results: list[SetResult]) -> None:
    s = summarize(results)
    counts = ", ".join(f"{s['counts'][k]} {k}" for k in
                       ("pass", "fail", "xfail", "skip", "error", "unchecked")
                       if s["counts"].get(k))
    out.print(f"{s['sets']} sets in {s['cases']} cases: {counts or 'none'}", markup=False,
              soft_wrap=True)
    for reason, n in s["skipped_by_reason"].items():
        out.print(f"  skipped {n}: {printable(reason)}", markup=False, soft_wrap=True)
    if s["slowest"]:
        out.print("slowest: " + ", ".join(f"{printable(i)} {t:.3f} s"
                                          for i, t in s["slowest"]),
                  markup=False, soft_wrap=True)


