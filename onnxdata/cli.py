"""The ``onnxdata`` command line: explore, validate, show, diff and run data message files.

  onnxdata explore FILE [--model MODEL (--input K | --output K)] [--reading KIND]
                        [--rows N|all] [--json] [--html OUT.html]
  onnxdata validate FILE... [--kind KIND]
  onnxdata show FILE [--kind KIND] [--limit N]
  onnxdata diff A B [--rtol R] [--atol A] [--kind KIND] [--json]
  onnxdata run MODEL_DIR_OR_MODEL [--set N] [--rtol R] [--atol A] [--json] [--write-outputs]

Output is for people: rich tables with aligned columns, colour on a terminal,
plain text when piped, one record per line. Exit status: 0 when all is well, 1 when
a file is invalid (``validate``, ``show``) or values differ (``diff``, ``run``), 2 when
something cannot be read or run; ``onnxdata COMMAND --help`` says more.

Bytes valid as several messages (a one-element sequence is also an optional)
and no model to say which: ``validate`` says "valid as SequenceProto or
OptionalProto (the same bytes)" and exits 0, ``explore --json`` gives
``"ambiguous": true`` and every valid reading, ``show`` asks for ``--kind``.
A ``model.onnx`` found in the ``test_data_set_N/input_K.pb`` layout that
cannot be read is left out with a warning; one named with ``--model`` must be
readable. Files of 256 MiB or more get a progress bar on a terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from onnxdata import __version__, diff, runner
from onnxdata.console import console as _console
from onnxdata.console import printable, write_text
from onnxdata.console import silence as _silence
from onnxdata.errors import DecodeError, OnnxDataError, Problem, ValidationError
from onnxdata.explorer import (
    ByteRow,
    Exploration,
    Reading,
    ambiguity,
    byte_table,
    choose_kind,
    explore,
    kind_of_message,
)
from onnxdata.fit import MESSAGE_NAMES
from onnxdata.messages import KIND_NAMES, kind_name
from onnxdata.model_file import declared_for
from onnxdata.model_types import IO
from onnxdata.progress import progress_bar
from onnxdata.source import set_stream_limit
from onnxdata.table import DEFAULT_ROWS, elided_count

__all__ = ["main"]

_KIND_CHOICES = (*KIND_NAMES, *MESSAGE_NAMES)


def _kind(value: str) -> str:
    try:
        return kind_of_message(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _whole(value: str, message: str) -> int:
    """A count given on the command line: a whole number >= 0, else argparse's error."""
    try:
        n = int(value)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(message.format(value=value))
    return n


def _rows(value: str) -> int | None:
    if value == "all":
        return None
    return _whole(value, "expected a number of rows or 'all', not {value!r}")


def _limit(value: str) -> int:
    return _whole(value, "--limit needs a whole number >= 0, not {value!r}")


def _plain(text: str | None) -> str:
    """A docstring for --help: without reStructuredText's double backquotes."""
    return (text or "").replace("``", "")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="onnxdata", description=_plain(__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"onnxdata {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser(
        "explore", help="which messages a file's bytes can be, byte by byte",
        description="Read FILE's bytes as each of the five messages: whether they fit, "
                    "whether the value is valid, a summary, then the byte table of the "
                    "reading used (the model's declared type, else the only valid one). "
                    "Exit 0 when FILE was read and reported, whatever it holds (even no "
                    "reading that fits), 2 when FILE or its model cannot be read or the "
                    "page cannot be written.")
    ex.add_argument("file", metavar="FILE", help="a .pb file (TensorProto, SequenceProto, …)")
    ex.add_argument("--model", help="model.onnx declaring the value's type (found "
                                    "automatically in the test_data_set_N/input_K.pb layout)")
    which = ex.add_mutually_exclusive_group()
    which.add_argument("--input", type=int, metavar="K", help="the value is the model's input K")
    which.add_argument("--output", type=int, metavar="K",
                       help="the value is the model's output K")
    ex.add_argument("--reading", "--kind", dest="reading", type=_kind, metavar="KIND",
                    help="show this reading's byte table (SequenceProto, sequence, …); "
                         "--kind, as the other commands spell it, is the same")
    ex.add_argument("--rows", type=_rows, default=DEFAULT_ROWS, metavar="N|all",
                    help=f"byte table rows to show (default {DEFAULT_ROWS}); the rest are "
                         "counted in one row")
    ex.add_argument("--json", action="store_true", help="print one JSON object")
    ex.set_defaults(explore_parser=ex)  # its usage errors show explore's usage, not the top's
    ex.add_argument("--html", metavar="OUT.html",
                    help="write the exploration as one self-contained HTML page "
                         "instead of the table (with --json: the page and the JSON)")
    va = sub.add_parser(
        "validate", help="check files against the format's rules",
        description="Check each FILE against every rule of the format (and the model's "
                    "declared type, beside a model.onnx); one line per file, then its "
                    "problems with their paths. Exit 0 when every file is valid, 1 when any "
                    "is invalid, 2 when any cannot be read.")
    va.add_argument("files", nargs="+", metavar="FILE", help=".pb files")
    va.add_argument("--kind", type=_kind, metavar="KIND",
                    help="read as this kind (default: the model's, else the valid reading)")
    sh = sub.add_parser(
        "show", help="print the numpy value of a file",
        description="Print FILE's value as numpy gives it (ndarrays, lists, dicts, None), "
                    "with shapes, dtypes and a preview. Exit 0 when shown, 1 when the value "
                    "is invalid, 2 when FILE cannot be read or the kind is ambiguous.")
    sh.add_argument("file", metavar="FILE", help="a .pb file")
    sh.add_argument("--kind", type=_kind, metavar="KIND",
                    help="read as this kind (default: the model's, else the valid reading)")
    sh.add_argument("--limit", type=_limit, default=20, metavar="N",
                    help="show at most N items of each list or dict (default 20)")
    diff.add_parser(sub)
    runner.add_parser(sub)
    _add_max_bytes(sub)
    return parser


def _add_max_bytes(sub: Any) -> None:
    """``--max-bytes N`` on every command: the cap on what a pipe, FIFO or device gives."""
    for command in sub.choices.values():
        command.add_argument("--max-bytes", type=_byte_count, metavar="N",
                             help="read at most N bytes from a pipe, FIFO or device (K, M, G "
                                  "suffixes; default 1G); regular files have no cap")


def _byte_count(value: str) -> int:
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    m = re.fullmatch(r"(\d+)([KMGT]?)(?:i?B)?", value.strip(), re.IGNORECASE)
    if m is None:
        raise argparse.ArgumentTypeError(f"--max-bytes takes a byte count such as 64M, "
                                         f"not {value!r}")
    return int(m.group(1)) * units[m.group(2).upper()]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status is the return value (also on a closed pipe)."""
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _warning_printer()
            return _run(argv)
    except BrokenPipeError:  # a write outside the consoles (argparse's help, say)
        _silence(sys.stdout)
        return 0
    except MemoryError:  # anywhere: our error, not a traceback (issue 23, finding 5)
        return _fail("out of memory (a smaller --max-bytes, --limit or input helps)")


def _warning_printer() -> Callable[..., None]:
    """What shows a warning from the library (a model.onnx found but unusable, say) during
    one command: one line of ours on stderr, each text once, not Python's
    "file:line: UserWarning" form."""
    shown: set[str] = set()

    def show(message: Warning | str, category: type[Warning], filename: str, lineno: int,
             file: TextIO | None = None, line: str | None = None) -> None:
        text = str(message)
        if text not in shown:
            shown.add(text)
            _console(stderr=True).print(Text(f"onnxdata: warning: {text}", "yellow"))
    return show


def _run(argv: Sequence[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if getattr(args, "max_bytes", None) is not None:
        set_stream_limit(args.max_bytes)
    if args.command == "explore":
        if args.model is not None and args.input is None and args.output is None:
            args.explore_parser.error("--model needs --input K or --output K")
        if args.model is None and (args.input is not None or args.output is not None):
            args.explore_parser.error("--input/--output need --model")
        return _explore(args)
    if args.command == "validate":
        return _validate(args.files, args.kind)
    if args.command == "diff":
        return diff.main(args)
    if args.command == "run":
        return runner.main(args)
    return _show(args.file, args.kind, args.limit)


def _fail(message: str) -> int:
    _console(stderr=True).print(Text(f"onnxdata: {message}", style="red"))
    return 2


# --- explore -------------------------------------------------------------------------------

def _explore(args: argparse.Namespace) -> int:
    io: IO | None = ("input" if args.input is not None else
                     "output" if args.output is not None else None)
    index = args.input if args.input is not None else args.output
    try:
        with progress_bar(_size(args.file), f"exploring {Path(args.file).name}") as progress:
            result = explore(args.file, model=args.model, io=io, index=index,
                             reading=args.reading, progress=progress)
    except (OnnxDataError, OSError, IndexError, ValueError) as exc:
        return _fail(str(exc))
    facts = _exploration_json(result, args.rows) if args.json or args.html else None
    if args.html is not None:
        failed = _write_html(result, args.html, facts, path_to_stderr=args.json)
        if failed or not args.json:
            return failed
    if facts is not None:
        write_text(json.dumps(facts, indent=2) + "\n")
        return 0
    if result.model_warning is not None:
        _console(stderr=True).print(Text(f"onnxdata: warning: {result.model_warning}",
                                         "yellow"))
    _print_exploration(_console(), result, args.rows)
    if not any(r.valid for r in result.readings) and _model_hint(args.file):
        _console().print(_model_hint(args.file).strip(" ()"), markup=False)
    return 0


def _model_hint(name: str) -> str:
    """For a .onnx file no data message reads validly: say it is a model, and what to do."""
    if not name.lower().endswith(".onnx"):
        return ""
    return (" (a .onnx file is a model, not a data file: onnxdata reads the "
            "test_data_set_N/*.pb files beside it, and onnxdata run runs the model on them)")


def _exploration_json(result: Exploration, limit: int | None) -> dict[str, Any]:
    """What ``--json`` prints and ``--html`` embeds: one dict, so they never disagree."""
    out = result.as_json()
    shown = _shown(result)
    head, elided, tail = _capped_rows(result, shown, limit)
    rows: list[dict[str, Any]] = [_row_json(r) for r in head]
    if elided:
        rows.append({"elided": elided, "value": _elided(elided)})
    rows.extend(_row_json(r) for r in tail)
    out["table"] = None if shown is None else {"reading": shown.kind_name, "rows": rows}
    return out


def _row_json(row: ByteRow) -> dict[str, Any]:
    return {"offset": row.offset, "depth": row.depth, "bytes": row.bytes, "field": row.field,
            "value": row.value}


def _size(name: str) -> int:
    try:
        return os.stat(name).st_size
    except OSError:
        return 0  # explore or validate says why it cannot be read


def _shown(result: Exploration) -> Reading | None:
    """The reading whose byte table is shown: the chosen one, or when the bytes are
    ambiguous the first valid reading (labelled as one of several)."""
    if result.chosen is not None:
        return result.chosen
    return result.valid_readings[0] if result.ambiguous else None


def _capped_rows(result: Exploration, shown: Reading | None,
                 limit: int | None) -> tuple[list[ByteRow], int, list[ByteRow]]:
    """The byte table cut to ``limit`` rows (all when None) by the walk itself:
    ``(head, elided, tail)``, where ``elided`` rows are left out between them and ``tail``
    keeps a closing "does not fit" row."""
    if shown is None:
        return [], 0, []
    rows = byte_table(result.data, shown, limit=limit)
    for i, row in enumerate(rows):
        n = elided_count(row)
        if n:
            return rows[:i], n, rows[i + 1:]
    return rows, 0, []


def _elided(n: int) -> str:
    return f"… {n:,} more field{'s' if n != 1 else ''}"


_LEGEND = ("← the reading used (the model's declared type, else the only valid one) · "
           "fits: the bytes parse as that message · valid: the value also keeps every rule")


def _print_exploration(out: Console, result: Exploration,
                       limit: int | None = DEFAULT_ROWS) -> None:
    out.print(Text.assemble((printable(result.file), "bold"), f"  {result.size} bytes"))
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    table.add_column("reading")
    table.add_column("fits")
    table.add_column("valid")
    table.add_column("value, or what is wrong")
    for r in result.readings:
        mark = " ←" if result.chosen is r else ""
        fits = Text("yes", "green") if r.well_formed else Text("no", "red")
        valid = (Text("yes", "green") if r.valid else
                 Text(f"no ({len(r.problems)})", "yellow") if r.well_formed else Text("-"))
        what = r.summary
        noise = not mark and not r.valid  # a reading that fits only by chance, or not at all
        if r.well_formed and not r.valid and (result.chosen is None or not noise):
            what += "\n" + "\n".join(f"  {p}" for p in r.problems[:3])
            if len(r.problems) > 3:
                what += f"\n  … {len(r.problems) - 3} more"
        table.add_row(Text(r.kind + mark, "bold" if mark else ""), fits, valid, Text(what),
                      style="dim" if noise else None)
    out.print(table)
    out.print(Text(_LEGEND, "dim"))
    if result.declared is not None:
        out.print(f"declared: {result.declared}  (model {result.model}, {result.io} "
                  f"{result.index})", markup=False)
        if result.type_problems:
            out.print(Text("the value does not match the declared type:", "yellow"))
            for p in result.type_problems:
                out.print(f"  {p}", markup=False)
        elif result.chosen is not None and result.chosen.well_formed:
            out.print(Text("the value matches the declared type", "green"))
    shown = _shown(result)
    if shown is None:
        out.print("no valid reading; pick one with --reading KIND to see its bytes")
        return
    if result.chosen is None:
        out.print(Text(f"{ambiguity(result.valid_readings)}; pick one with --reading KIND",
                       "yellow"))
        out.print(Text.assemble("\nbytes as ", (shown.kind, "bold"),
                                " (one of the valid readings)"))
    else:
        out.print(Text.assemble("\nbytes as ", (shown.kind, "bold")))
    rows = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    rows.add_column("Bytes", no_wrap=True)
    rows.add_column("Field", overflow="fold")  # a path folds onto more lines, never cut with …
    rows.add_column("Value", overflow="fold")
    head, elided, tail = _capped_rows(result, shown, limit)
    for i, row in enumerate(head + tail):
        if elided and i == len(head):
            rows.add_row(Text("…", "dim"), Text(_elided(elided), "dim"),
                         Text("--rows all shows them", "dim"))
        style = "red" if row.value.startswith("does not fit") else ""
        rows.add_row(Text(row.bytes, "cyan"), Text(row.field), Text(row.value, style))
    if elided and not tail:
        rows.add_row(Text("…", "dim"), Text(_elided(elided), "dim"),
                     Text("--rows all shows them", "dim"))
    out.print(rows)


# --- validate ------------------------------------------------------------------------------

def _validate(files: Sequence[str], kind: str | None) -> int:
    out = _console()
    worst = 0
    warned: set[str] = set()  # one broken model.onnx beside many files: said once
    for name in files:
        try:
            with progress_bar(_size(name), f"validating {Path(name).name}") as progress:
                result = explore(name, reading=kind, progress=progress)
        except (OnnxDataError, OSError, IndexError, ValueError) as exc:
            out.print(Text.assemble((printable(name), "bold"), ": ", ("cannot read", "red"),
                                    f": {exc}"))
            worst = 2
            continue
        if result.model_warning is not None and result.model_warning not in warned:
            warned.add(result.model_warning)
            out.print(Text.assemble((printable(name), "bold"), ": ", ("warning", "yellow"),
                                    f": {result.model_warning}"))
        if result.ambiguous:
            valid = result.valid_readings
            out.print(Text.assemble((printable(name), "bold"), ": ", ("valid", "green"),
                                    f" as {' or '.join(r.kind for r in valid)} (the same "
                                    f"bytes): {valid[0].summary}"))
            continue
        chosen = result.chosen
        if chosen is None and result.size == 0 and kind is None:
            out.print(Text.assemble((printable(name), "bold"), ": ", ("invalid", "yellow"),
                                    ": the file is empty (0 bytes); no data message is "
                                    "valid empty"))
            worst = max(worst, 1)
            continue
        if chosen is None:
            formed = [r for r in result.readings if r.well_formed]
            if _model_hint(name) and not result.valid_readings:
                out.print(Text.assemble((printable(name), "bold"), ": ", ("cannot read", "red"),
                                        f": no data message reads it validly"
                                        f"{_model_hint(name)}"))
                worst = 2
                continue
            if not formed:
                best = result.readings[0]
                out.print(Text.assemble((printable(name), "bold"), ": ", ("cannot read", "red"),
                                        f": no message fits; nearest is {best.kind}: "
                                        f"{best.misfit}{_model_hint(name)}"))
                worst = 2
                continue
            chosen = formed[0]
        if not chosen.well_formed:
            out.print(Text.assemble((printable(name), "bold"), ": ", ("cannot read", "red"),
                                    f" as {chosen.kind}: {chosen.misfit}"))
            worst = 2
            continue
        found: list[Problem] = list(chosen.problems) + list(result.type_problems)
        if found:
            out.print(Text.assemble((printable(name), "bold"), ": ", ("invalid", "yellow"),
                                    f" as {chosen.kind}, {len(found)} problem"
                                    f"{'s' if len(found) != 1 else ''}:"))
            for p in found:
                out.print(f"  - {p}", markup=False)
            worst = max(worst, 1)
        else:
            how = f" (declared {result.declared})" if result.declared is not None else ""
            out.print(Text.assemble((printable(name), "bold"), ": ", ("valid", "green"),
                                    f" {chosen.kind}: {chosen.summary}{how}"))
    return worst


# --- show ----------------------------------------------------------------------------------

def _show(name: str, kind: str | None, limit: int) -> int:
    from onnxdata.fast_read import open_source, read_source

    out = _console()
    try:
        guessed = kind is None
        with progress_bar(_size(name), f"reading {Path(name).name}") as progress, \
                contextlib.closing(open_source(name, copy=True)) as src:  # once: a pipe
            if kind is None:
                declared = declared_for(name)
                if declared.warning is not None:
                    _console(stderr=True).print(
                        Text(f"onnxdata: warning: {declared.warning}", "yellow"))
                try:
                    kind = choose_kind(name, src, declared=declared,
                                       how="--kind {}", progress=_part(progress, 0, 1 / 3))
                except DecodeError as exc:
                    return _fail(f"{exc} (onnxdata explore {name} shows every reading)"
                                 f"{_model_hint(name)}")
            # read maps the file and makes views of its bytes: no tensor data is copied or
            # decoded, so a huge value costs little beyond the elements shown.
            value = read_source(src, kind_name(kind))
    except ValidationError as exc:
        if guessed and _model_hint(name):
            return _fail(f"cannot read {name}: no data message reads it validly"
                         f"{_model_hint(name)}")
        out.print(Text.assemble((printable(name), "bold"), ": ", ("invalid", "yellow"),
                                f" as {kind}:" if kind else ":"))
        for p in exc.problems:
            out.print(f"  - {p}", markup=False)
        return 1
    except (OnnxDataError, OSError) as exc:
        return _fail(str(exc))
    out.print(Text.assemble((printable(os.fspath(name)), "bold"), f"  {kind}"))
    with np.printoptions(threshold=64, edgeitems=3):
        _print_value(out, value, "", limit)
    return 0


def _part(progress: Callable[[float], None] | None, start: float, share: float
          ) -> Callable[[float], None] | None:
    """A step's progress callback, moving the whole bar from ``start`` by ``share``."""
    if progress is None:
        return None
    return lambda done: progress(start + share * done)


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"ndarray {value.dtype} shape {tuple(value.shape)}"
    if isinstance(value, list):
        return f"list of {len(value)}"
    if isinstance(value, dict):
        return f"dict of {len(value)}"
    if value is None:
        return "None (empty optional)"
    return type(value).__name__


def _print_value(out: Console, value: Any, indent: str, limit: int) -> None:
    """``value`` with at most ``limit`` items of each list or dict, then "… N more"."""
    out.print(Text(indent + _describe(value), "bold"))
    if isinstance(value, np.ndarray):
        for line in repr(value).splitlines():
            out.print(indent + "  " + line, markup=False, highlight=False)
        return
    items: list[tuple[str, Any]]
    if isinstance(value, list):
        items = [(f"[{i}]", value[i]) for i in range(min(limit, len(value)))]
    elif isinstance(value, dict):
        items = [(f"{k!r}:", v) for k, v in itertools.islice(value.items(), limit)]
    else:
        return
    for label, v in items:
        out.print(f"{indent}{label}", markup=False)
        _print_value(out, v, indent + "  ", limit)
    if len(value) > len(items):
        out.print(f"{indent}… {len(value) - len(items)} more (--limit N shows more)",
                  markup=False)


# --- explore --html ----------------------------------------------------------------------

def _write_html(result: Exploration, out: str, facts: dict[str, Any] | None, *,
                path_to_stderr: bool) -> int:
    """``--html OUT``: the page, written instead of the tables (it holds them), then its
    path; with ``--json`` the path goes to stderr so the JSON stays alone on stdout."""
    from onnxdata.page import write_page

    try:
        path = write_page(result, out, facts=facts)
    except OSError as exc:
        return _fail(f"cannot write {out}: {exc}")
    _console(stderr=path_to_stderr).print(f"wrote {path}", markup=False, highlight=False)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
