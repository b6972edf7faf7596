"""What every command shares: FILE arguments (``-`` is stdin), --model with
--input/--output, numeric options (``whole_number``, ``seconds``), the one wording of a
missing file, and the one failure line."""

from __future__ import annotations

import argparse
import json
import math
import os
import re
from collections.abc import Callable
from typing import Any

from rich.text import Text

from onnxdata.cases.case_folder import no_case_folder
from onnxdata.cli.console import console, write_text
from onnxdata.errors import FOLDER, MISSING, OnnxDataError, path_error
from onnxdata.model.types import IO

__all__ = ["NOT_DATA", "NOT_MODEL", "STDIN", "data_problem", "fail", "file_arg", "file_size",
           "missing", "model_choice", "model_problem", "seconds", "whole_number"]


#: What ``-`` stands for as a FILE: standard input, read once to its end.
STDIN = "/dev/stdin"


# A missing file (MISSING) and a folder where a file is wanted (FOLDER) are said in the
# library's own words (``errors.path_error``), by every command.

#: The words of a model where a data file is wanted (explore, validate, show, diff)
NOT_DATA = ("an ONNX model, not a data file: onnxdata reads the test_data_set_N/*.pb files "
            "beside it, and onnxdata run runs the model on them (--kind reads it as data "
            "anyway)")
#: ... a data file where a model is wanted (make, run, --model)
NOT_MODEL = ("a data file, not an ONNX model: pass the test case folder (model.onnx and "
             "test_data_set_N) or its model.onnx")


_SET_FILE = re.compile(r"(input|output)_(\d+)\.pb$")


def model_choice(args: argparse.Namespace, name: str
                 ) -> tuple[str | None, IO | None, int | None]:
    """``(model, io, index)`` from --model/--input/--output; the index defaults to the
    file's name (``input_K.pb``). Usage errors exit 2 through argparse."""
    parser: argparse.ArgumentParser = args.command_parser
    model = getattr(args, "model", None)
    io_index = [(io, k) for io, k in (("input", getattr(args, "input", None)),
                                      ("output", getattr(args, "output", None)))
                if k is not None]
    if model is None:
        if io_index:
            parser.error("--input/--output need --model")
        return None, None, None
    if io_index:
        io, k = io_index[0]
        return model, io, k  # type: ignore[return-value]
    m = _SET_FILE.search(os.path.basename(name))
    if m is None:
        parser.error("--model needs --input K or --output K (or a file named input_K.pb "
                     "or output_K.pb)")
    return model, m.group(1), int(m.group(2))  # type: ignore[return-value]


def whole_number(least: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number >= ``least``; anything else is a usage error
    naming the option and the value (exit 2), as ``--rtol -1`` is."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            n = least - 1
        if n < least:
            raise argparse.ArgumentTypeError(f"a whole number >= {least}, not {text!r}")
        return n
    parse.__name__ = f"whole number >= {least}"  # (argparse's name for the type)
    return parse


def seconds(text: str) -> float:
    """An argparse ``type`` for a time limit: a finite number of seconds > 0 (no command
    takes 0 or less to mean no limit: leave the option out)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"a number of seconds > 0, not {text!r}")
    return value


def file_arg(name: str) -> str:
    """The path to open for a FILE argument: ``-`` is standard input."""
    return STDIN if name == "-" else name


def missing(name: str) -> str | None:
    """The one wording of a file that is not there (None when it is, or is stdin): the
    library's (``errors.path_error``), a file in the path said as such."""
    if name == "-":
        return None
    try:
        os.lstat(name)
    except OSError as exc:
        error = path_error(exc, name)
        return f"{name}: {getattr(error, 'reason', MISSING)}"
    except ValueError:  # (a NUL in the name: no such file)
        return f"{name}: {MISSING}"
    return None


def data_problem(name: str, kind: str | None = None, folders: bool = False) -> str | None:
    """The one line for a FILE a data command cannot take, before it is opened: not
    there, a folder (unless ``folders``), or a .onnx model (unless ``kind`` says to read
    it as data); None when it can be read (or is stdin)."""
    if name == "-":
        return None
    gone = missing(name)
    if gone:
        return gone
    if os.path.isdir(name):
        return None if folders else f"{name}: {FOLDER}"
    if kind is None and name.lower().endswith(".onnx"):
        return f"{name}: {NOT_DATA}"
    return None


def model_problem(name: str, folders: bool = False) -> str | None:
    """The one line for a MODEL a command cannot take: not there, a folder (with
    ``folders``: one without model.onnx, in ``no_case_folder``'s words), or a data file
    (a .pb that does not read as a model); None when it may be one."""
    gone = missing(name)
    if gone:
        return gone
    if os.path.isdir(name):
        if not folders:
            return f"{name}: {FOLDER}"
        inside = os.path.join(name, "model.onnx")
        return None if os.path.isfile(inside) else no_case_folder([name], under=False)
    if name.lower().endswith(".pb") and not _is_model(name):
        return f"{name}: {NOT_MODEL}"
    return None


def _is_model(name: str) -> bool:
    """Whether the file ``name`` reads as a model (a graph's inputs and outputs): a .pb is
    usually a data file given by mistake, but ONNX also names models so."""
    from onnxdata.model.file import read_model_types

    try:
        read_model_types(name)
    except (OnnxDataError, OSError):
        return False
    return True


def fail(message: str, args: argparse.Namespace | None = None, **facts: Any) -> int:
    """A command that cannot go on: one red line on stderr and, under --json, one JSON
    object on stdout with an ``error`` field; exit 2."""
    console(stderr=True).print(Text(f"onnxdata: {message}", style="red"))
    if args is not None and getattr(args, "json", False):
        write_text(json.dumps({**facts, "error": message}, indent=2) + "\n")
    return 2


def file_size(name: str) -> int:
    try:
        return os.stat(name).st_size
    except OSError:
        return 0  # explore or validate says why it cannot be read
