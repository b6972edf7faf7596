"""``onnxdata diff A B``: the command's arguments and its printing
(``cases/diff.py`` compares)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from onnxdata.cases.diff import JSON_LIMIT, SHOWN, FileDiff, diff_paths, exit_code
from onnxdata.cli.console import console, printable, write_text
from onnxdata.core.messages import kind_word
from onnxdata.errors import OnnxDataError

__all__ = ["add_parser", "add_tolerances", "kind_argument", "main", "print_file"]


def add_parser(sub: Any) -> None:
    """Add ``diff`` to the ``onnxdata`` subcommands."""
    p = sub.add_parser(
        "diff", help="compare two value files, or two test_data_set folders",
        description="Compare A (actual) with B (expected): two .pb files, two folders "
                    "whose .pb files are matched by name, or two test case folders whose "
                    "test_data_set_N are matched by name. Each difference is printed with "
                    "its path, e.g. [3]['k'][0, 2]: actual 0.3984 vs expected 0.3979. Exit "
                    "0 when equal, 1 when anything differs or is missing on one side, 2 when "
                    "a file cannot be read.")
    p.add_argument("actual", metavar="A",
                   help="a .pb file, a test_data_set folder or a test case folder (actual)")
    p.add_argument("expected", metavar="B", help="the same for the expected values")
    add_tolerances(p)
    p.add_argument("--kind", type=kind_argument, metavar="KIND",
                   help="read both files as this kind (sequence, SequenceProto, …); default: "
                        "the model's, else the only valid reading")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def kind_argument(text: str) -> str:
    """``--kind``'s value as a kind name; "seq", "sequence" and "SequenceProto" all work,
    as in every command."""
    try:
        return kind_word(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _tolerance(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"a tolerance is a number >= 0, not {text!r}")
    return value


def add_tolerances(p: argparse.ArgumentParser) -> None:
    """``--rtol`` and ``--atol``, as ``diff`` and ``run`` take them."""
    p.add_argument("--rtol", type=_tolerance, default=1e-3,
                   help="relative tolerance for floating-point values (1e-3); integers, "
                        "bools and strings compare exactly")
    p.add_argument("--atol", type=_tolerance, default=1e-7,
                   help="absolute tolerance for floating-point values (1e-7)")


def main(args: argparse.Namespace) -> int:
    """Run ``onnxdata diff`` with parsed arguments; the exit code."""
    try:
        found = diff_paths(args.actual, args.expected, rtol=args.rtol, atol=args.atol,
                           kind=args.kind, keep=JSON_LIMIT if args.json else SHOWN,
                           note=_note)
    except (OnnxDataError, OSError, ValueError) as exc:
        console(stderr=True).print(Text(f"onnxdata: {exc}", style="red"))
        if args.json:  # a program reading the JSON still gets an object, with the reason
            write_text(json.dumps({"equal": False, "error": str(exc), "files": []}) + "\n")
        return 2
    code = exit_code([f.status for f in found])
    if args.json:
        write_text(json.dumps({"equal": code == 0, "error": None, "rtol": args.rtol,
                               "atol": args.atol,
                               "files": [f.as_json() for f in found]}, indent=2) + "\n")
        return code
    out = console()
    for f in found:
        print_file(out, f)
    return code


_STYLE = {"equal": "green", "different": "yellow", "missing": "yellow", "unreadable": "red"}


def print_file(out: Console, f: FileDiff, label: str | None = None) -> None:
    """One line for a file, then its first differences by path."""
    head = Text.assemble((printable(label or f.name), "bold"), ": ", (f.status, _STYLE[f.status]))
    if f.error:
        head.append(f": {f.error}")
    elif f.total:
        n = f.total
        head.append(f", {n} difference{'s' if n != 1 else ''}")
    out.print(head, soft_wrap=True)
    for d in f.differences[:SHOWN]:
        out.print(f"  {d}", markup=False, soft_wrap=True)
    if f.total > SHOWN:
        out.print(f"  … {f.total - SHOWN} more (--json lists the first {JSON_LIMIT})")


def _note(path: Path, text: str) -> None:
    """Which reading diff took for a file that did not say: one line on stderr."""
    console(stderr=True).print(f"onnxdata: {path}: {text}", markup=False)
