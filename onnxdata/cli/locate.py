"""``onnxdata locate CASE``: the first node where two backends diverge (``cases/divergence.py``
searches, ``cases/reduce.py`` writes the reduced case, ``cases/locate_page.py`` the page)."""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from rich.text import Text

from onnxdata.cli.args import seconds, whole_number
from onnxdata.cli.console import console, write_text
from onnxdata.cli.diff import add_tolerances
from onnxdata.errors import OnnxDataError

__all__ = ["add_parser", "main"]


def add_parser(sub: Any) -> None:
    """Add ``locate`` to the ``onnxdata`` subcommands."""
    p = sub.add_parser(
        "locate", help="the first node where two backends' values differ, and a reduced case",
        description="Expose every intermediate value of the model as a graph output (typed "
                    "by onnx's shape inference), run both backends on the set's inputs, "
                    "compare every value as run does (tensors, sequences, maps, optionals) "
                    "and name the first node, in topological order, whose output differs "
                    "while its inputs agree: its output, the path inside it, the worst "
                    "errors, and how far the difference spreads. Exit 0 when the backends "
                    "agree on every value seen, 1 when a node is located (or the outputs "
                    "differ but no exposed value does), 2 when the case "
                    "cannot be read or a backend cannot run the model.")
    p.add_argument("model", metavar="CASE", help="a test case folder (model.onnx and "
                                                 "test_data_set_N) or its model file")
    p.add_argument("--set", type=whole_number(0), default=0, metavar="N",
                   help="the inputs of test_data_set_N (default 0)")
    p.add_argument("--backend", default="ort", metavar="NAME",
                   help="the backend under test: ort (default), reference or module:attr")
    p.add_argument("--against", default="reference", metavar="NAME",
                   help="the backend to compare with (default reference)")
    p.add_argument("--providers", metavar="LIST",
                   help="ort's execution providers in order, comma-separated")
    add_tolerances(p)
    p.add_argument("--expectations", metavar="FILE",
                   help="tolerances per case and value name, as run reads them")
    p.add_argument("--max-outputs", type=whole_number(1), default=256, metavar="N",
                   help="expose at most N values per run; more are halved until they fit "
                        "(memory stays bounded; default 256)")
    p.add_argument("--timeout", type=seconds, metavar="S",
                   help="seconds per run of a backend (its worker process is killed)")
    p.add_argument("--in-process", action="store_true",
                   help="run the backends in this process (no isolation from a crash)")
    p.add_argument("--into-subgraphs", action="store_true",
                   help="when the node holds bodies (Loop, If, Scan, SequenceMap), bring their "
                        "values out as extra outputs of the node and name the body node")
    p.add_argument("--reduce", metavar="DIR",
                   help="write the located node alone as a new test case in DIR (its inputs "
                        "as graph inputs, their values from --against's run)")
    p.add_argument("--report", metavar="OUT",
                   help="write OUT.html (the graph path and pictures) or OUT.json")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def main(args: argparse.Namespace) -> int:
    """Run ``onnxdata locate``: 0 the backends agree, 1 a node located (or the outputs
    differ and no exposed value does), 2 an error."""
    from onnxdata.cases.divergence import locate
    from onnxdata.cases.expectations import ATOL, RTOL, Expectations, read_expectations
    from onnxdata.cases.locate_page import write_locate_report

    if args.in_process and args.timeout is not None:
        args.command_parser.error("--timeout kills a backend's worker process: it cannot "
                                  "go with --in-process")
    try:
        if args.report and os.path.lexists(args.report) and not os.path.isfile(args.report):
            # said before the search, not after it (a folder, FIFO, device or dangling link)
            raise OnnxDataError(f"cannot write the report to {args.report}: not a regular file")
        exp = Expectations(args.rtol, args.atol)
        if args.expectations:  # as run reads it: --rtol/--atol win only when given
            exp = read_expectations(args.expectations)
            if (args.rtol, args.atol) != (RTOL, ATOL):
                exp = exp.with_defaults(args.rtol, args.atol)
        found = locate(args.model, set=args.set, backend=args.backend, against=args.against,
                       providers=[p for p in (args.providers or "").split(",") if p],
                       expectations=exp,
                       max_outputs=args.max_outputs, isolate=not args.in_process,
                       timeout=args.timeout, reduce=args.reduce,
                       into_subgraphs=args.into_subgraphs)
        if args.report:
            write_locate_report(args.report, found)
    except (OnnxDataError, OSError, ValueError) as exc:
        if args.json:
            write_text(json.dumps({"status": "error", "error": str(exc)}) + "\n")
        else:
            console(stderr=True).print(Text(f"onnxdata: {exc}", style="red"), soft_wrap=True)
        return 2
    if args.json:
        write_text(json.dumps(found.as_json(), indent=2) + "\n")
    else:
        out = console()
        for line in found.lines():
            out.print(line, markup=False, soft_wrap=True, highlight=False)
    return {"located": 1, "hidden": 1, "agree": 0}.get(found.status, 2)
