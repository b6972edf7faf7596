"""``onnxdata make MODEL``: the command's arguments (``cases/make.py`` makes the sets)."""

from __future__ import annotations

import argparse
import json
import os
import re
from typing import Any

from onnxdata.cases.draw import Dim
from onnxdata.cases.make import make_test_data_sets
from onnxdata.cli.args import fail, model_problem, whole_number
from onnxdata.cli.console import console, printable, write_text
from onnxdata.errors import OnnxDataError

__all__ = ["add_parser", "main"]

_SHAPE = re.compile(r"^([^=]+)=(.*)$")


def _shape_arg(text: str) -> tuple[str, tuple[Dim, ...]]:
    m = _SHAPE.match(text)
    if m is None:
        raise argparse.ArgumentTypeError(f"--shape takes NAME=2,N (an input and its dims), "
                                         f"not {text!r}")
    dims = [d.strip() for d in m.group(2).split(",")] if m.group(2).strip() else []
    return m.group(1), tuple(int(d) if d.isdigit() else d for d in dims)


def _dim_arg(text: str) -> tuple[str, int]:
    m = _SHAPE.match(text)
    if m is None or not m.group(2).isdigit():
        raise argparse.ArgumentTypeError(f"--dim takes NAME=SIZE (a named dim and its size), "
                                         f"not {text!r}")
    return m.group(1), int(m.group(2))


def add_parser(sub: Any) -> None:
    """Add ``make`` to the ``onnxdata`` subcommands."""
    p = sub.add_parser(
        "make", help="generate test data sets for a model (inputs drawn, outputs computed)",
        description="Draw inputs of the model's declared types (tensors, sequences, maps, "
                    "optionals) from a seed, compute the outputs on a backend, and write "
                    "test_data_set_0..N-1 beside the model, or a new test case with --out, "
                    "each set atomically, with onnxdata-make.json recording the seed. Exit 0 "
                    "when written, 2 when an input cannot be generated (the error names it), "
                    "the backend fails, or a set exists.")
    p.add_argument("model", metavar="MODEL", help="model.onnx, or the folder holding it")
    p.add_argument("-n", type=whole_number(1), default=3, metavar="N",
                   help="how many sets (default 3)")
    p.add_argument("--seed", type=whole_number(0), default=0, help="the seed (default 0)")
    p.add_argument("--backend", default="reference", metavar="reference|ort|module:attr",
                   help="what computes the outputs (default reference: onnx's "
                        "ReferenceEvaluator)")
    p.add_argument("--out", metavar="DIR", help="write a new test case folder DIR (the model "
                                                "and the sets) instead of beside the model")
    p.add_argument("--inputs-only", action="store_true",
                   help="write inputs without outputs (for a runtime under test)")
    p.add_argument("--shape", type=_shape_arg, action="append", default=[],
                   metavar="INPUT=2,N", help="the shape of an input's tensors where the model "
                                             "declares none (repeat for several inputs)")
    p.add_argument("--dim", type=_dim_arg, action="append", default=[], metavar="NAME=SIZE",
                   help="fix a named dim (others are drawn once per set, shared by inputs)")
    p.add_argument("--length", type=whole_number(0), metavar="K",
                   help="every sequence and map K long (default: 0 to 3, drawn each time)")
    p.add_argument("--budget", type=whole_number(0), default=4096, metavar="ELEMENTS",
                   help="tensor elements per set at most (default 4096)")
    p.add_argument("--style", choices=["small", "any"], default="small",
                   help="small integers and quarter-step floats (default), or any bit pattern")
    p.add_argument("--overwrite", action="store_true", help="replace existing sets")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: the sets written, and an \"error\" field, "
                        "null unless the command failed")


def main(args: argparse.Namespace) -> int:
    """Run ``onnxdata make``: 0 written, 2 refused or failed."""
    gone = model_problem(args.model, folders=True)
    if gone:
        return fail(gone, args, written=[])
    try:
        written = make_test_data_sets(
            args.model, args.n, seed=args.seed, backend=args.backend, out=args.out,
            inputs_only=args.inputs_only, shapes=dict(args.shape), dims=dict(args.dim),
            length=args.length, budget=args.budget, style=args.style, overwrite=args.overwrite)
    except (OnnxDataError, OSError, ValueError) as exc:
        return fail(str(exc), args, written=[])
    if args.json:
        write_text(json.dumps({"written": [os.fspath(w) for w in written], "error": None},
                              indent=2) + "\n")
        return 0
    for w in written:
        console().print(f"wrote {printable(str(w))}", markup=False, soft_wrap=True)
    return 0


