"""``onnxdata run``'s arguments. The command itself (``cli/run.py``) is imported only when
it runs: it brings in worker processes, sockets and the scoreboard, which no other
command needs at start-up."""

from __future__ import annotations

import argparse
from typing import Any

from onnxdata.cli.args import seconds, whole_number
from onnxdata.cli.diff import add_tolerances

__all__ = ["add_parser", "main"]


def add_parser(sub: Any) -> None:
    """Add ``run`` to the ``onnxdata`` subcommands."""
    p = sub.add_parser(
        "run", help="run test cases on a backend (ONNX Runtime, onnx's reference, yours) "
                    "and compare",
        description="Feed each test_data_set_N's inputs, read with the model's declared "
                    "types, to a backend and compare its outputs with the expected ones. "
                    "One case: one line per set and output; many (folders of cases, "
                    "--jobs, --report): one line per set and a summary. Exit 0 when every "
                    "set passes (or is a known failure or skipped), 1 when any differs or "
                    "has no expected outputs (unless --allow-unchecked), 2 when a set "
                    "cannot be read or the backend cannot load or run a model.")
    p.add_argument("model", metavar="CASE", nargs="+",
                   help="a folder with model.onnx and test_data_set_N, the model file, one "
                        "test_data_set_N folder beside a model.onnx (that set only), or "
                        "folders holding case folders at any depth")
    p.add_argument("--set", type=whole_number(0), metavar="N", help="run test_data_set_N only")
    add_tolerances(p)
    p.add_argument("--backend", default="ort", metavar="NAME",
                   help="ort (ONNX Runtime, the default), reference (onnx's "
                        "ReferenceEvaluator) or module:attr (any onnx.backend.base.Backend)")
    p.add_argument("--providers", metavar="LIST",
                   help="ort's execution providers in order, comma-separated "
                        "(CPUExecutionProvider); a missing one skips every case, saying so")
    p.add_argument("--against", metavar="NAME",
                   help="a second backend: compare the outputs with its outputs too")
    p.add_argument("--expectations", metavar="FILE",
                   help="tolerances, known failures and skips (TOML or JSON; see "
                        "onnxdata.cases.expectations)")
    p.add_argument("--jobs", type=whole_number(0), default=0, metavar="N",
                   help="run the cases in N worker processes, one session per case, so a "
                        "crash or a hang fails that case only (0: in this process)")
    p.add_argument("--timeout", type=seconds, metavar="S",
                   help="seconds per case (in worker processes: implies --jobs 1 at least)")
    p.add_argument("--shard", metavar="I/N", help="run only shard I of N (by case name)")
    p.add_argument("--executor", choices=("processes", "dask"), default="processes",
                   help="dask: submit the cases to --scheduler (pip install "
                        "'onnxdata[dask]')")
    p.add_argument("--scheduler", metavar="ADDRESS", help="the Dask scheduler's address")
    p.add_argument("--report", metavar="OUT", help="write a scoreboard: OUT.html (one "
                   "page) or OUT.json")
    p.add_argument("--allow-unchecked", action="store_true",
                   help="exit 0 for sets without expected outputs (they are 'unchecked')")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--verbose", action="store_true",
                   help="let ONNX Runtime's own log lines (warnings and errors) through to "
                        "stderr; quiet by default, as its errors are each set's message "
                        "(or set $ONNXDATA_ORT_LOG_LEVEL, 0 verbose to 4 fatal only)")
    p.add_argument("--write-outputs", nargs="?", const="", metavar="DIR",
                   help="alone: add the backend's outputs to the sets that have no expected "
                        "outputs; with DIR: write each set's inputs and the backend's "
                        "outputs to DIR/test_data_set_N, with the model (a new test case)")


def main(args: argparse.Namespace) -> int:
    """Run ``onnxdata run`` with parsed arguments; the exit code."""
    import os

    from onnxdata.cases.backends import ORT_LOG_ENV
    from onnxdata.cli.run import run_command

    if not args.verbose or ORT_LOG_ENV in os.environ:
        return run_command(args)
    os.environ[ORT_LOG_ENV] = "2"  # in the environment: the worker processes started here
    try:
        return run_command(args)
    finally:
        del os.environ[ORT_LOG_ENV]
