"""``onnxdata validate FILE...``: one verdict per file, then its problems with their paths.

Each file gets one record (``status`` valid, invalid or unreadable), printed as
one line (then its problems) for people, or gathered into one JSON object
under ``--json``; the exit status is the worst of them (0, 1 invalid, 2
unreadable).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.text import Text

from onnxdata.cli.args import (
    data_problem,
    fail,
    file_arg,
    file_size,
    model_choice,
    model_problem,
)
from onnxdata.cli.console import console, printable, write_text
from onnxdata.cli.progress import progress_bar
from onnxdata.errors import DecodeError, OnnxDataError, PathError, Problem
from onnxdata.explorer.readings import Exploration, Reading, explore
from onnxdata.rules.common import joined_problems

__all__ = ["Verdict", "validate_command", "verdict"]

_CODE = {"valid": 0, "invalid": 1, "unreadable": 2}
_STYLE = {"valid": "green", "invalid": "yellow", "unreadable": "red"}


@dataclass
class Verdict:
    """One file's verdict: ``status``, the kind it was read as, and what ``text`` says
    after "FILE: valid" (or invalid, cannot read); ``problems`` for an invalid one."""

    file: str
    status: str
    text: str
    kind: str | None = None
    problems: list[Problem] = field(default_factory=list)
    declared: str | None = None
    warning: str | None = None
    note: str | None = None
    path: str | None = None  # the file (or --model) cannot be taken at all: this line

    def as_json(self) -> dict[str, Any]:
        return {"file": self.file, "status": self.status, "kind": self.kind,
                "declared": self.declared, "summary": self.text, "note": self.note,
                "warning": self.warning,
                "problems": [{"path": p.path, "message": p.message} for p in self.problems],
                "error": self.text if self.status == "unreadable" else None}


def merged_note(r: Reading) -> str:
    """Why a reading's problems may name values no field of the file holds: protobuf merged
    fields the bytes give more than once (a sequence of 6 tensors read as an optional:
    one tensor_value whose dims are all six tensors' dims)."""
    return f"{r.merged_text()}, which protobuf merges into one"


def verdict(name: str, result: Exploration, kind: str | None) -> Verdict:
    """What validate says of one explored file."""
    v = _verdict(name, result, kind)
    v.warning, v.note = result.model_warning, result.note
    v.declared = None if result.declared is None else str(result.declared)
    return v


def _verdict(name: str, result: Exploration, kind: str | None) -> Verdict:
    if result.ambiguous:
        valid = result.valid_readings
        return Verdict(name, "valid", f"as {' or '.join(r.kind for r in valid)} (the same "
                                      f"bytes): {valid[0].summary}")
    chosen = result.chosen
    if chosen is None and result.size == 0 and kind is None:
        return Verdict(name, "invalid", "the file is empty (0 bytes); no data message is "
                                        "valid empty")
    if result.mismatch is not None and chosen is not None:
        # the bytes are a good value of another kind: say that first, then what breaks
        return Verdict(name, "invalid", result.mismatch, chosen.kind_name,
                       joined_problems(chosen.problems, result.type_problems))
    if chosen is None:
        formed = [r for r in result.readings if r.well_formed]
        if not formed:
            best = result.readings[0]
            return Verdict(name, "unreadable", f"no message fits; nearest is {best.kind}: "
                                               f"{best.misfit}")
        chosen = formed[0]
    if not chosen.well_formed:
        return Verdict(name, "unreadable", f"as {chosen.kind}: {chosen.misfit}",
                       chosen.kind_name)
    found: list[Problem] = joined_problems(chosen.problems, result.type_problems)
    if found:
        merged = f" ({merged_note(chosen)})" if chosen.merged_count else ""
        return Verdict(name, "invalid", f"as {chosen.kind}, {len(found)} problem"
                                        f"{'s' if len(found) != 1 else ''}{merged}:",
                       chosen.kind_name, found)
    how = f" (declared {result.declared})" if result.declared is not None else ""
    also = " (the only valid reading that needs no merging)" if result.note else ""
    return Verdict(name, "valid", f"{chosen.kind}: {chosen.summary}{how}{also}",
                   chosen.kind_name)


def _one(name: str, args: argparse.Namespace) -> Verdict:
    model, io, index = model_choice(args, name)
    gone = data_problem(name, args.kind) or (model and model_problem(model))
    if gone:  # said as every command says it (validate_command prints it so)
        return Verdict(name, "unreadable", gone.removeprefix(f"{name}: "), path=gone)
    path = file_arg(name)
    try:
        with progress_bar(file_size(path), f"validating {Path(name).name}") as progress:
            result = explore(path, reading=args.kind, model=model, io=io, index=index,
                             progress=progress)
    except PathError as exc:  # one line on stderr, as show and explore say it
        return Verdict(name, "unreadable", getattr(exc, "reason", str(exc)), path=str(exc))
    except (OnnxDataError, OSError, IndexError, ValueError) as exc:
        return Verdict(name, "unreadable", _unread(exc, (name, path)))
    return verdict(name, result, args.kind)


def _unread(exc: Exception, names: tuple[str, ...]) -> str:
    """Why the file could not be read, after "FILE: cannot read": a DecodeError about the
    file itself without its own "cannot read FILE" (said once, not twice), keeping where
    and as what it failed; anything else as it is."""
    if not isinstance(exc, DecodeError) or exc.source not in names:
        return str(exc)
    where = " ".join(([f"at byte {exc.offset}"] if exc.offset is not None else []) +
                     ([f"as {exc.kind}"] if exc.kind else []))
    return f"{where}: {exc.reason}" if where else exc.reason


def validate_command(args: argparse.Namespace) -> int:
    verdicts: list[Verdict] = []
    out = console()
    warned: set[str] = set()  # one broken model.onnx beside many files: said once
    for name in args.files:
        v = _one(name, args)
        verdicts.append(v)
        if args.json:
            continue
        if v.path is not None:
            fail(v.path)
            continue
        if v.warning is not None and v.warning not in warned:
            warned.add(v.warning)
            out.print(Text.assemble((printable(name), "bold"), ": ", ("warning", "yellow"),
                                    f": {v.warning}"))
        word = "cannot read" if v.status == "unreadable" else v.status
        sep = " " if v.text.startswith(("as ", "at byte ")) or v.status == "valid" else ": "
        out.print(Text.assemble((printable(name), "bold"), ": ", (word, _STYLE[v.status]),
                                f"{sep}{v.text}"))
        if v.problems:  # one print for them all: rich's work per print, 50 us, was most
            # of validating a file read as the wrong message (1,000 problems)
            out.print("\n".join(f"  - {p}" for p in v.problems), markup=False)
    worst = max((_CODE[v.status] for v in verdicts), default=0)
    if args.json:
        first = next((v for v in verdicts if v.status == "unreadable"), None)
        write_text(json.dumps({
            "valid": worst == 0, "files": [v.as_json() for v in verdicts],
            "error": None if first is None else f"{first.file}: {first.text}"},
            indent=2) + "\n")
    return worst
