"""The ``onnxdata`` command line: explore, validate, show and diff data message files; run,
make and locate ONNX test cases.

  onnxdata explore FILE [--kind KIND] [--json] [--limit N|all] [--html OUT.html]
                        [--model MODEL [--input K | --output K]]
  onnxdata validate FILE... [--kind KIND] [--json] [--model MODEL [--input K | --output K]]
  onnxdata show FILE [--kind KIND] [--json] [--limit N|all]
                     [--model MODEL [--input K | --output K]]
  onnxdata diff A B [--kind KIND] [--json] [--model MODEL] [--rtol R] [--atol A]
  onnxdata run CASE... [--set N] [--rtol R] [--atol A] [--jobs N] [--json] [--write-outputs]
  onnxdata make MODEL [-n N] [--seed S] [--shape INPUT=2,N] [--dim NAME=SIZE] [--out DIR]
                      [--json]
  onnxdata locate CASE [--set N] [--backend A] [--against B] [--reduce DIR] [--json]

Every command spells its options the same way: KIND is seq, opt, map, tensor or
sparse (or sequence, sparse_tensor, SequenceProto, …); --model names the
model.onnx declaring the value's type (found by itself in the
test_data_set_N/input_K.pb layout; --input/--output K default to the file's
name, input_K.pb); --json prints one JSON object on stdout, with an "error"
field that is null unless the command failed; FILE may be - for standard input.

Output is for people: rich tables with aligned columns, colour on a terminal,
plain text when piped, one record per line. ``onnxdata COMMAND --help`` says more.

Bytes valid as several messages (a one-element sequence is also an optional)
and no model to say which: ``validate`` says "valid as SequenceProto or
OptionalProto (the same bytes)" and exits 0, ``explore --json`` gives
``"ambiguous": true`` and every valid reading, ``show`` asks for ``--kind``.
When only one of the valid readings holds without merging a field given twice
(a sequence of two maps is also an optional with its maps merged), that one is
taken and a line says so. A ``model.onnx`` found in the
``test_data_set_N/input_K.pb`` layout that cannot be read is left out with a
warning; one named with ``--model`` must be readable. Files of 256 MiB or more
get a progress bar on a terminal.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from onnxdata.cli import diff as cli_diff
from onnxdata.cli import locate as cli_locate
from onnxdata.cli import make as cli_make
from onnxdata.cli import run_args
from onnxdata.cli.args import (
    data_problem,
    fail,
    file_arg,
    file_size,
    model_choice,
    model_problem,
)
from onnxdata.cli.console import console as _console
from onnxdata.cli.console import printable, write_text
from onnxdata.cli.console import silence as _silence
from onnxdata.cli.plain_table import PLAIN_ROWS, print_plain_table
from onnxdata.cli.progress import progress_bar
from onnxdata.core.messages import kind_word
from onnxdata.core.version import VERSION
from onnxdata.errors import OnnxDataError
from onnxdata.explorer.readings import Exploration, Reading, ambiguity, byte_table, explore
from onnxdata.explorer.table import DEFAULT_ROWS, ByteRow, elided_count
from onnxdata.wire.source import set_stream_limit

__all__ = ["EXIT_CODES", "build_parser", "main"]

#: The exit status of every command, said once (every --help shows it).
EXIT_CODES = """exit status (every command):
  0  all is well: valid, shown, equal, passed, written; explore: the file was read and
     reported
  1  a value is invalid, values differ, or a run did not pass
  2  something cannot be read or run: no such file, an unreadable model, bad
     arguments, or bytes valid as several kinds with nothing to say which"""

#: The most byte table rows ``--json`` (and the page's facts) carry, ``--limit all``
#: included: 100,000 rows are about 12 MB of JSON; the rest are counted in one row.
JSON_ROWS = 100_000


def _kind(value: str) -> str:
    try:
        return kind_word(value)
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


def _limit(value: str) -> int | None:
    if value == "all":
        return None
    return _whole(value, "--limit needs a whole number >= 0 or 'all', not {value!r}")


def _plain(text: str | None) -> str:
    """A docstring for --help: without reStructuredText's double backquotes."""
    return (text or "").replace("``", "")


def _parser(json_errors: bool = False) -> argparse.ArgumentParser:
    class Parser(argparse.ArgumentParser):
        """argparse, whose usage errors are also one JSON object on stdout under --json."""

        def error(self, message: str) -> NoReturn:
            if json_errors:
                write_text(json.dumps({"error": f"{self.prog}: {message}"}) + "\n")
            super().error(message)

    parser = Parser(prog="onnxdata", description=_plain(__doc__), epilog=EXIT_CODES,
                    formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"onnxdata {VERSION}")
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser(
        "explore", help="which messages a file's bytes can be, byte by byte",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Read FILE's bytes as each of the five messages: whether they fit, "
                    "whether the value is valid, a summary, then the byte table of the "
                    "reading used (the model's declared type, else the only valid one). "
                    "It exits 0 when FILE was read and reported, whatever it holds (even "
                    "no reading that fits).")
    ex.add_argument("file", metavar="FILE", help="a .pb file (TensorProto, SequenceProto, …), "
                                                 "or - for standard input")
    _kind_option(ex, "show this reading's byte table")
    _model_options(ex)
    ex.add_argument("--limit", "--rows", dest="limit", type=_limit, default=DEFAULT_ROWS,
                    metavar="N|all",
                    help=f"byte table rows to show (default {DEFAULT_ROWS}); the rest are "
                         f"counted in one row (--rows is the same); --json and --html keep "
                         f"at most {JSON_ROWS:,} even with all")
    _json_option(ex)
    ex.add_argument("--html", metavar="OUT.html",
                    help="write the exploration as one self-contained HTML page "
                         "instead of the table (with --json: the page and the JSON)")
    va = sub.add_parser(
        "validate", help="check files against the format's rules",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Check each FILE against every rule of the format (and the model's "
                    "declared type, beside a model.onnx or with --model); one line per "
                    "file, then its problems with their paths.")
    va.add_argument("files", nargs="+", metavar="FILE", help=".pb files (- for standard input)")
    _kind_option(va, "read as this kind")
    _model_options(va)
    _json_option(va)
    sh = sub.add_parser(
        "show", help="print the numpy value of a file",
        epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Print FILE's value as numpy gives it (ndarrays, lists, dicts, None), "
                    "with shapes, dtypes and a preview.")
    sh.add_argument("file", metavar="FILE", help="a .pb file, or - for standard input")
    _kind_option(sh, "read as this kind")
    _model_options(sh)
    sh.add_argument("--limit", type=_limit, default=20, metavar="N|all",
                    help="show at most N items of each list or dict (default 20)")
    _json_option(sh)
    cli_diff.add_parser(sub)
    diff_parser = sub.choices["diff"]
    diff_parser.add_argument("--model", help="model.onnx declaring both files' type "
                                             "(two files named input_K.pb or output_K.pb, or "
                                             "with --kind's default for folders: their own)")
    run_args.add_parser(sub)
    cli_make.add_parser(sub)
    cli_locate.add_parser(sub)
    for p in sub.choices.values():  # usage errors show the command's usage, not the top's
        p.set_defaults(command_parser=p)
        p.epilog = EXIT_CODES  # and every command's --help says the exit statuses
        p.formatter_class = argparse.RawDescriptionHelpFormatter
    _add_max_bytes(sub)
    return parser


def _kind_option(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--kind", "--reading", dest="kind", type=_kind, metavar="KIND",
                   help=f"{what}: seq, opt, map, tensor or sparse (or sequence, "
                        "SequenceProto, …); default: the model's, else the only valid "
                        "reading (--reading is the same)")


def _model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", help="model.onnx declaring the value's type (found by itself "
                                   "in the test_data_set_N/input_K.pb layout)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--input", type=int, metavar="K",
                       help="the value is the model's input K (default: from the file's "
                            "name, input_K.pb)")
    which.add_argument("--output", type=int, metavar="K",
                       help="the value is the model's output K (default: from output_K.pb)")


def _json_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true",
                   help="print one JSON object (with an \"error\" field, null unless the "
                        "command failed)")


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


def build_parser() -> argparse.ArgumentParser:
    """The ``onnxdata`` command's parser, every subcommand in it (tools/cli_pages.py writes
    the documentation's CLI pages from it)."""
    return _parser()


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
        return fail("out of memory (a smaller --max-bytes, --limit or input helps)")


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
    words = list(sys.argv[1:] if argv is None else argv)
    parser = _parser(json_errors="--json" in words)
    args = parser.parse_args(words)
    if getattr(args, "max_bytes", None) is not None:
        set_stream_limit(args.max_bytes)
    if args.command == "explore":
        return _explore(args)
    if args.command == "validate":
        from onnxdata.cli.validate import validate_command

        return validate_command(args)
    if args.command == "diff":
        return _diff(args)
    if args.command == "run":
        return run_args.main(args)
    if args.command == "make":
        return cli_make.main(args)
    if args.command == "locate":
        return cli_locate.main(args)
    from onnxdata.cli.show import show_command

    return show_command(args)





def _diff(args: argparse.Namespace) -> int:
    for name in (args.actual, args.expected):
        gone = data_problem(name, args.kind, folders=True)
        if gone:
            return fail(gone, args, equal=False, files=[])
    args.actual, args.expected = file_arg(args.actual), file_arg(args.expected)
    if args.model is not None and args.kind is None:
        try:
            args.kind = _model_kind(args)
        except (OnnxDataError, OSError) as exc:
            return fail(str(exc), args, equal=False, files=[])
    return cli_diff.main(args)


def _model_kind(args: argparse.Namespace) -> str:
    """diff --model: the kind the model declares for A (a file named input_K.pb or
    output_K.pb, or a folder: then the model is found beside the sets as always)."""
    from onnxdata.model.file import declared_for

    gone = model_problem(args.model)
    if gone:
        raise OnnxDataError(gone)
    if os.path.isdir(args.actual):
        args.command_parser.error("--model compares two files; folders of test sets find "
                                  "their model.onnx themselves")
    model, io, index = model_choice(args, args.actual)
    declared = declared_for(args.actual, model=model, io=io, index=index)
    assert declared.type is not None
    return declared.type.kind


# --- explore -------------------------------------------------------------------------------

def _explore(args: argparse.Namespace) -> int:
    model, io, index = model_choice(args, args.file)
    gone = data_problem(args.file, args.kind) or (model and model_problem(model))
    if gone:
        return fail(gone, args, file=args.file)
    path = file_arg(args.file)
    try:
        with progress_bar(file_size(path), f"exploring {Path(args.file).name}") as progress:
            result = explore(path, model=model, io=io, index=index,
                             reading=args.kind, progress=progress)
    except (OnnxDataError, OSError, IndexError, ValueError) as exc:
        return fail(str(exc), args, file=args.file)
    result.file = args.file
    facts = _exploration_json(result, args.limit) if args.json or args.html else None
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
    _print_exploration(_console(), result, args.limit)
    return 0


def _exploration_json(result: Exploration, limit: int | None) -> dict[str, Any]:
    """What ``--json`` prints and ``--html`` embeds: one dict, so they never disagree."""
    out = result.as_json()
    shown = _shown(result)
    limit = JSON_ROWS if limit is None else min(limit, JSON_ROWS)
    head, elided, tail = _capped_rows(result, shown, limit)
    rows: list[dict[str, Any]] = [_row_json(r) for r in head]
    if elided:
        rows.append({"elided": elided, "value": _elided(elided)})
    rows.extend(_row_json(r) for r in tail)
    out["table"] = None if shown is None else {"reading": shown.kind_name, "rows": rows}
    out["error"] = None
    return out


def _row_json(row: ByteRow) -> dict[str, Any]:
    return {"offset": row.offset, "depth": row.depth, "bytes": row.bytes, "field": row.field,
            "value": row.value}


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
           "fits: the bytes parse as that message · valid: the value also keeps every rule "
           "· merged: valid only because protobuf merges a field the bytes give twice")


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
        weak = " (merged)" if r.valid and r.merged_count else ""
        fits = Text("yes", "green") if r.well_formed else Text("no", "red")
        valid = (Text("yes", "green") if r.valid else
                 Text(f"no ({len(r.problems)})", "yellow") if r.well_formed else Text("-"))
        what = r.summary
        if weak:
            what += f"\n  valid only by merging {r.merged_text()} (protobuf merges them)"
        noise = not mark and not r.valid  # a reading that fits only by chance, or not at all
        if r.well_formed and not r.valid and (result.chosen is None or not noise):
            what += "\n" + "\n".join(f"  {p}" for p in r.problems[:3])
            if len(r.problems) > 3:
                what += f"\n  … {len(r.problems) - 3} more"
        table.add_row(Text(r.kind + mark, "bold" if mark else ""), fits,
                      Text.assemble(valid, (weak, "yellow")), Text(what),
                      style="dim" if noise else None)
    out.print(table)
    out.print(Text(_LEGEND, "dim"))
    if result.note is not None:
        out.print(Text(result.note, "yellow"))
    if result.declared is not None:
        out.print(f"declared: {result.declared}  (model {result.model}, {result.io} "
                  f"{result.index})", markup=False)
        if result.mismatch is not None:
            out.print(Text(result.mismatch, "yellow"))
        if result.type_problems:
            out.print(Text("the value does not match the declared type:", "yellow"))
            for p in result.type_problems:
                out.print(f"  {p}", markup=False)
        elif result.chosen is not None and result.chosen.well_formed:
            out.print(Text("the value matches the declared type", "green"))
    shown = _shown(result)
    if shown is None:
        out.print("no valid reading; pick one with --kind KIND to see its bytes")
        return
    if result.chosen is None:
        out.print(Text(f"{ambiguity(result.valid_readings)}; pick one with --kind KIND",
                       "yellow"))
        out.print(Text.assemble("\nbytes as ", (shown.kind, "bold"),
                                " (one of the valid readings)"))
    else:
        out.print(Text.assemble("\nbytes as ", (shown.kind, "bold")))
    head, elided, tail = _capped_rows(result, shown, limit)
    if len(head) + len(tail) > PLAIN_ROWS:  # rich costs about a millisecond a row
        cells = [(r.bytes, r.field, r.value) for r in head]
        if elided:
            cells.append(("…", _elided(elided), "--limit all shows them"))
        cells.extend((r.bytes, r.field, r.value) for r in tail)
        print_plain_table(("Bytes", "Field", "Value"), cells)
        return
    rows = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    rows.add_column("Bytes", no_wrap=True)
    rows.add_column("Field", overflow="fold")  # a path folds onto more lines, never cut with …
    rows.add_column("Value", overflow="fold")
    for i, row in enumerate(head + tail):
        if elided and i == len(head):
            rows.add_row(Text("…", "dim"), Text(_elided(elided), "dim"),
                         Text("--limit all shows them", "dim"))
        style = "red" if row.value.startswith("does not fit") else ""
        rows.add_row(Text(row.bytes, "cyan"), Text(row.field), Text(row.value, style))
    if elided and not tail:
        rows.add_row(Text("…", "dim"), Text(_elided(elided), "dim"),
                     Text("--limit all shows them", "dim"))
    out.print(rows)


# --- explore --html ----------------------------------------------------------------------

def _write_html(result: Exploration, out: str, facts: dict[str, Any] | None, *,
                path_to_stderr: bool) -> int:
    """``--html OUT``: the page, written instead of the tables (it holds them), then its
    path; with ``--json`` the path goes to stderr so the JSON stays alone on stdout."""
    from onnxdata.page.page import write_page

    if not out:
        return fail("--html takes the page's file name (--html OUT.html), not ''")
    try:
        path = write_page(result, out, facts=facts)
    except OSError as exc:
        return fail(f"cannot write {out}: {exc}")
    except OnnxDataError as exc:  # a folder, FIFO or device where the page would go
        return fail(str(exc))
    _console(stderr=path_to_stderr).print(f"wrote {path}", markup=False, highlight=False)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
