"""``onnxdata show FILE``: the numpy value of a file, with shapes, dtypes and a preview.

For people, a tree: each list or dict cut to ``--limit`` items, arrays as numpy
prints them, string keys as text when they are UTF-8. Under ``--json``, the
same tree as one JSON object (``value_json``), with an ``error`` field.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import itertools
import json
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from rich.console import Console
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
from onnxdata.core.messages import kind_name
from onnxdata.errors import DecodeError, OnnxDataError, Problem, ValidationError
from onnxdata.explorer.readings import choose_kind, message_of_kind, readings
from onnxdata.model.file import declared_for
from onnxdata.wire.source import Source

__all__ = ["key_text", "show_command", "value_json"]


def show_command(args: argparse.Namespace) -> int:
    from onnxdata.io.read import open_source, read_source

    name, kind, limit = args.file, args.kind, args.limit
    model, io, index = model_choice(args, name)
    gone = data_problem(name, kind) or (model and model_problem(model))
    if gone:
        return fail(gone, args, file=name)
    path = file_arg(name)
    notes: list[str] = []
    declared_text: str | None = None
    try:
        with progress_bar(file_size(path), f"reading {Path(name).name}") as progress, \
                contextlib.closing(open_source(path, copy=True)) as src:  # once: a pipe
            if kind is None:
                declared = declared_for(path, model=model, io=io, index=index)
                if declared.warning is not None:
                    console(stderr=True).print(
                        Text(f"onnxdata: warning: {declared.warning}", "yellow"))
                declared_text = None if declared.type is None else str(declared.type)
                try:
                    kind = choose_kind(path, src, declared=declared, how="--kind {}",
                                       progress=_part(progress, 0, 1 / 3), note=notes.append)
                except DecodeError as exc:
                    return fail(f"{exc} (onnxdata explore {name} shows every reading)",
                                args, file=name)
            for text in notes:
                console(stderr=True).print(f"onnxdata: {name}: {text}", markup=False)
            try:
                # read maps the file and makes views of its bytes: no tensor data is copied
                # or decoded, so a huge value costs little beyond the elements shown.
                value = read_source(src, kind_name(kind))
            except (ValidationError, DecodeError):
                if declared_text is not None:
                    other = _other_valid(src, kind)
                    if other:
                        return _invalid(args, name, kind, [], f"valid {other}, but the "
                                        f"model declares {declared_text}")
                raise
    except ValidationError as exc:
        return _invalid(args, name, kind, exc.problems, None)
    except (OnnxDataError, OSError) as exc:
        return fail(str(exc), args, file=name, kind=kind)
    if args.json:
        write_text(json.dumps({"file": name, "kind": kind, "note": notes[0] if notes else None,
                               "value": value_json(value, limit), "error": None},
                              indent=2) + "\n")
        return 0
    out = console()
    out.print(Text.assemble((printable(os.fspath(name)), "bold"), f"  {kind}"))
    with np.printoptions(threshold=64, edgeitems=3):
        _print_value(out, value, "", limit)
    return 0


def _other_valid(src: Source, kind: str | None) -> str:
    """The valid readings of ``src`` other than ``kind``, "SequenceProto or ..." ("" if none)."""
    mine = message_of_kind(kind) if kind else ""
    valid = [r for r in readings(src) if r.valid and r.kind != mine]
    plain = [r for r in valid if not r.merged_count]  # as Exploration.mismatch says it
    return " or ".join(r.kind for r in (plain or valid))


def _invalid(args: argparse.Namespace, name: str, kind: str | None,
             problems: list[Problem], headline: str | None) -> int:
    if args.json:
        write_text(json.dumps({"file": name, "kind": kind, "value": None,
                               "problems": [{"path": p.path, "message": p.message}
                                            for p in problems],
                               "error": headline or f"invalid as {kind}"}, indent=2) + "\n")
        return 1
    out = console()
    if headline is not None:
        out.print(Text.assemble((printable(name), "bold"), ": ", ("invalid", "yellow"),
                                f": {headline}"))
    else:
        out.print(Text.assemble((printable(name), "bold"), ": ", ("invalid", "yellow"),
                                f" as {kind}:" if kind else ":"))
    for p in problems:
        out.print(f"  - {p}", markup=False)
    return 1


def _part(progress: Callable[[float], None] | None, start: float, share: float
          ) -> Callable[[float], None] | None:
    """A step's progress callback, moving the whole bar from ``start`` by ``share``."""
    if progress is None:
        return None
    return lambda done: progress(start + share * done)


def key_text(key: Any) -> str:
    """A map key as show prints it: a string key as text when it is UTF-8 ('日本'), else
    its bytes (b'\\xff'); an integer as itself."""
    if isinstance(key, bytes):
        try:
            return repr(key.decode("utf-8"))
        except UnicodeDecodeError:
            return repr(key)
    return repr(key.item() if isinstance(key, np.generic) else key)


def _json_key(key: Any) -> Any:
    if isinstance(key, bytes):
        return key.decode("utf-8", "backslashreplace")
    return key.item() if isinstance(key, np.generic) else key


def _json_scalar(x: Any) -> Any:
    if isinstance(x, bytes):
        return x.decode("utf-8", "backslashreplace")
    if isinstance(x, (bool, int, str)) or x is None:
        return x
    if isinstance(x, float):
        return x if np.isfinite(x) else str(x)  # JSON has no inf or nan
    return str(x)  # ml_dtypes' scalars, complex


def value_json(value: Any, limit: int | None) -> Any:
    """``value`` as JSON: arrays as dtype, shape and their first ``limit`` values (flat),
    lists and dicts as their first ``limit`` items, None as an empty optional."""
    if isinstance(value, np.ndarray):
        flat = value.reshape(-1)
        cut = flat if limit is None else flat[:limit]
        items = [_json_scalar(x.item() if isinstance(x, np.generic) else x)
                 for x in (cut.tolist() if cut.dtype.kind in "biuf" and
                           cut.dtype.itemsize <= 8 else list(cut))]
        return {"type": "ndarray", "dtype": str(value.dtype), "shape": list(value.shape),
                "values": items, "more": int(flat.size - len(items))}
    if isinstance(value, list):
        shown = value if limit is None else value[:limit]
        return {"type": "list", "length": len(value),
                "items": [value_json(v, limit) for v in shown],
                "more": len(value) - len(shown)}
    if isinstance(value, dict):
        pairs = list(itertools.islice(value.items(), limit))
        return {"type": "dict", "length": len(value),
                "items": [{"key": _json_key(k), "value": value_json(v, limit)}
                          for k, v in pairs], "more": len(value) - len(pairs)}
    if value is None:
        return {"type": "none"}
    return {"type": type(value).__name__, "value": _json_scalar(value)}


@functools.lru_cache(maxsize=256)
def _array_describe(dtype: np.dtype[Any], shape: tuple[int, ...]) -> str:
    return f"ndarray {dtype} shape {tuple(shape)}"


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return _array_describe(value.dtype, value.shape)
    if isinstance(value, list):
        return f"list of {len(value)}"
    if isinstance(value, dict):
        return f"dict of {len(value)}"
    if value is None:
        return "None (empty optional)"
    return type(value).__name__


#: numpy's print options under which ``_small_float_repr`` is numpy's repr.
_DEFAULTS = {"floatmode": "maxprec", "precision": 8, "suppress": False, "linewidth": 75,
             "sign": "-", "formatter": None, "legacy": False, "override_repr": None}
#: numpy prints exponents when a value is below the first (0.0001 in the dtype) or at or
#: above the second (10 ** min(8, finfo.precision)).
_EXPONENT_BELOW = {np.dtype(np.float32): (float(np.float32(1e-4)), 1e6),
                   np.dtype(np.float64): (1e-4, 1e8)}
_FLOAT_SUFFIX = {np.dtype(np.float32): ", dtype=float32)", np.dtype(np.float64): ")"}


#: The rules ``_small_float_repr`` follows are numpy 2's.
_NUMPY_MAJOR: Final = int(np.__version__.split(".")[0])


def _default_print_options() -> bool:
    """Whether numpy's print options are those under which ``_small_float_repr`` is
    numpy's repr."""
    if _NUMPY_MAJOR < 2:  # numpy 1.x picks exponents by other rules (float32 1e-4: "1.e-04")
        return False
    options = np.get_printoptions()
    return all(options.get(k) == v for k, v in _DEFAULTS.items()) and \
        options["threshold"] >= 8


def _small_float_repr(a: npt.NDArray[Any]) -> str | None:
    """numpy's repr of a small 1-D float32 or float64 array of finite values printed in
    positional notation on one line, made without numpy's per-call set-up (~0.2 ms, most
    of ``show --limit all`` of many tiny tensors); None for any other array.

    As numpy's FloatingFormat (floatmode "maxprec"): each value's shortest digits (at
    most 8 after the point), the integer parts padded left and the fractions right to
    the widest of the array. Only under ``_default_print_options()``."""
    suffix = _FLOAT_SUFFIX.get(a.dtype)
    if suffix is None or a.ndim != 1 or not 0 < a.size <= 8 or type(a) is not np.ndarray:
        return None
    values = a.tolist()  # exact as Python floats: numpy's tests below, without its calls
    if not all(map(math.isfinite, values)):
        return None
    nonzero = [abs(v) for v in values if v]
    if nonzero:
        high, low = max(nonzero), min(nonzero)
        small, cutoff = _EXPONENT_BELOW[a.dtype]
        # high / low rounded to float32 may be 1000 where the float64 quotient is just
        # above: then numpy's repr is asked, never a wrong text given
        if high >= cutoff or low < small or high / low > 1000.:
            return None  # numpy would print exponents
    fmt = np.format_float_positional
    parts = [fmt(x, precision=8, unique=True, fractional=True, trim=".").split(".")
             for x in a]
    left = max(len(p[0]) for p in parts)
    right = max(len(p[1]) for p in parts)
    # numpy pads both sides with spaces (pad_left, pad_right): the same done on the text
    text = "array([" + ", ".join(f"{i:>{left}}.{f:<{right}}" for i, f in parts) + "]" + suffix
    return text if len(text) <= 70 else None  # longer: numpy may wrap it


def _print_value(out: Console, value: Any, indent: str, limit: int | None) -> None:
    """``value`` with at most ``limit`` items of each list or dict, then "… N more".

    The lines are gathered into one Text and printed a batch at a time: a rich print per
    line cost ~0.3 ms, most of ``show --limit all`` of many tiny elements."""
    lines = _Lines(out)
    _value_lines(lines, value, indent, limit, _default_print_options())
    lines.flush()


class _Lines:
    """Lines for ``out``, printed ``BATCH`` at a time (or fewer, ``CHARS`` characters): on a
    terminal as one Text (bold where asked), piped as plain text, as rich prints it without
    colour. The batch is held beside the whole value, so it is kept small: 4,096 lines of
    a nested value's tiny tensors were 0.8 MiB at the peak, for a 1 MB file's 10 MiB."""

    BATCH = 4096
    CHARS = 1 << 15

    def __init__(self, out: Console) -> None:
        self.out = out
        self.lines: list[tuple[str, str | None]] = []
        self.chars = 0

    def add(self, line: str, style: str | None = None) -> None:
        self.lines.append((line, style))
        self.chars += len(line) + 1
        if len(self.lines) >= self.BATCH or self.chars >= self.CHARS:
            self.flush()

    def flush(self) -> None:
        if not self.lines:
            return
        if self.out.is_terminal:
            text = Text()
            for i, (line, style) in enumerate(self.lines):
                if i:
                    text.append("\n")
                text.append(line, style)
            self.out.print(text, soft_wrap=self.out.soft_wrap)
        else:
            write_text(printable("\n".join(line for line, _ in self.lines), newlines=True)
                       + "\n")
        self.lines = []
        self.chars = 0


def _value_lines(lines: _Lines, value: Any, indent: str, limit: int | None,
                 fast: bool) -> None:
    lines.add(indent + _describe(value), "bold")
    if isinstance(value, np.ndarray):
        text = _small_float_repr(value) if fast else None
        for line in (repr(value).splitlines() if text is None else (text,)):
            lines.add(indent + "  " + line)
        return
    items: list[tuple[str, Any]]
    if isinstance(value, list):
        n = len(value) if limit is None else min(limit, len(value))
        items = [(f"[{i}]", value[i]) for i in range(n)]
    elif isinstance(value, dict):
        items = [(f"{key_text(k)}:", v) for k, v in itertools.islice(value.items(), limit)]
    else:
        return
    for label, v in items:
        lines.add(f"{indent}{label}")
        _value_lines(lines, v, indent + "  ", limit, fast)
    if len(value) > len(items):
        lines.add(f"{indent}… {len(value) - len(items)} more (--limit N shows more)")
