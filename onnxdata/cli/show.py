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
from onnxdata.cli.array_text import batch_reprs
from onnxdata.cli.console import console, printable, write_checked, write_text
from onnxdata.cli.progress import progress_bar
from onnxdata.cli.validate import merged_note
from onnxdata.core.messages import kind_name
from onnxdata.core.strings import json_text
from onnxdata.errors import DecodeError, OnnxDataError, Problem, ValidationError
from onnxdata.explorer.readings import choose_kind, message_of_kind, other_valid, readings
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
            except (ValidationError, DecodeError) as exc:
                if declared_text is not None:
                    other = other_valid(src, kind) if kind else ""
                    if other:
                        return _invalid(args, name, kind, [], f"valid {other}, but the "
                                        f"model declares {declared_text}")
                if isinstance(exc, ValidationError):
                    return _invalid(args, name, kind, exc.problems, _merged(src, kind))
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


def _merged(src: Source, kind: str | None) -> str | None:
    """The headline of a ``kind`` value whose problems come of fields protobuf merged (see
    ``validate.merged_note``), else None (the plain "invalid as ...")."""
    mine = message_of_kind(kind) if kind else ""
    for r in readings(src):
        if r.kind == mine and r.merged_count:
            return f"as {kind} ({merged_note(r)}):"
    return None


def _invalid(args: argparse.Namespace, name: str, kind: str | None,
             problems: list[Problem], headline: str | None) -> int:
    """Print why the file is not a valid ``kind``: ``headline`` is the line's own ending,
    "as optional (...):" standing after "invalid" as "invalid as optional" does."""
    plain = headline is not None and headline.startswith("as ")
    if args.json:
        error = headline or f"invalid as {kind}"
        write_text(json.dumps({"file": name, "kind": kind, "value": None,
                               "problems": [{"path": p.path, "message": p.message}
                                            for p in problems],
                               "error": f"invalid {error.rstrip(':')}" if plain else error},
                              indent=2) + "\n")
        return 1
    out = console()
    if headline is not None:
        out.print(Text.assemble((printable(name), "bold"), ": ", ("invalid", "yellow"),
                                f" {headline}" if plain else f": {headline}"))
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
        return json_text(key)
    return key.item() if isinstance(key, np.generic) else key


def _json_scalar(x: Any) -> Any:
    if isinstance(x, bytes):
        return json_text(x)
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


#: "list of N" of short lists, made once
_LIST_OF: Final = tuple(f"list of {n}" for n in range(64))


@functools.lru_cache(maxsize=1024)
def _run_labels(indent: str, at: int, n: int) -> tuple[str, ...]:
    """The labels of a list's items ``at`` to ``at + n``: "[at]", "[at + 1]", ..."""
    return tuple(f"{indent}[{i}]" for i in range(at, at + n))


@functools.lru_cache(maxsize=1024)
def _run_lines(indent: str, at: int, n: int, describe: str) -> tuple[str, ...]:
    """The lines of a run of arrays of one description, items ``at`` to ``at + n`` of a
    list: each one's label, its description and its text's indent (the text added by
    ``_Preview.flush``)."""
    inner, deeper = indent + "  ", indent + "    "
    return tuple(line for label in _run_labels(indent, at, n)
                 for line in (label, inner + describe, deeper))


def _print_value(out: Console, value: Any, indent: str, limit: int | None) -> None:
    """``value`` with at most ``limit`` items of each list or dict, then "… N more"."""
    preview = _Preview(out, limit)
    preview.add(value, indent)
    preview.flush()


class _Preview:
    """show's lines for a value, printed ``BATCH`` at a time: on a terminal as one Text
    (bold where asked), piped as plain text, as rich prints it without colour.

    An array's line is its indent until the batch is printed; then the arrays of each
    dtype and shape are formatted together (``batch_reprs``): numpy's repr of each
    tiny array, called one by one, was most of ``show --limit all`` of a nested value
    (1.0 s per MB, now 0.33). The batch is held beside the whole value (which read
    built whole): it is kept small, 0.4 MiB at the peak for the nested set's tiny
    tensors, their formatting included (512 lines: 0.3 MiB, 8 % slower)."""

    BATCH = 1024
    #: a list's items taken at a time (a run of alike tiny arrays: 3 lines each), so a
    #: batch is at most 3 * RUN lines over BATCH
    RUN = 8
    #: arrays of more than 8 values (numpy's repr: up to 64 values and lines each) in a
    #: batch at most, so a batch of them holds a few hundred KiB of text, not MiB
    LARGE = 64

    def __init__(self, out: Console, limit: int | None) -> None:
        self.out = out
        self.limit = limit
        self.lines: list[str] = []
        self.large = 0  # the arrays of more than 8 values waiting
        self.bold: list[int] = []  # the lines printed bold on a terminal
        #: the arrays waiting for their text and their lines, by their description
        self.alike: dict[str, tuple[list[npt.NDArray[Any]], list[int]]] = {}

    def add(self, value: Any, indent: str) -> None:
        lines, bold = self.lines, self.bold
        if isinstance(value, list):
            self._list(value, indent)
            return
        bold.append(len(lines))
        lines.append(indent + _describe(value))
        if isinstance(value, np.ndarray):  # a subclass's own group: numpy's repr of each
            key = _array_describe(value.dtype, value.shape) if type(value) is np.ndarray \
                else str(type(value))
            arrays, where = self._wait(key)
            arrays.append(value)
            where.append(len(lines))
            lines.append(indent + "  ")
            self.large += 1
            return
        if not isinstance(value, dict):
            if value is not None:  # a type's name: any text
                lines[-1] = self._checked(lines[-1])
            return
        n = len(value) if self.limit is None else min(self.limit, len(value))
        inner, deeper = indent + "  ", indent + "    "
        # a key's repr is any text (its type's __repr__)
        for k, v in itertools.islice(value.items(), n):
            lines.append(self._checked(f"{indent}{key_text(k)}:"))
            self._item(v, inner, deeper)
        if len(value) > n:
            lines.append(f"{indent}… {len(value) - n} more (--limit N shows more)")

    def _list(self, value: list[Any], indent: str) -> None:
        """A list and its first ``limit`` items, ``RUN`` at a time: a run of tiny arrays of
        one dtype and shape (the leaves of a nested value) added as one block of lines."""
        lines, bold = self.lines, self.bold
        total = len(value)
        n = total if self.limit is None or self.limit >= total else self.limit
        bold.append(len(lines))
        lines.append(indent + (_LIST_OF[total] if total < 64 else f"list of {total}"))
        inner = deeper = ""
        for at in range(0, n, self.RUN):
            run = value if n == total <= self.RUN else value[at:min(n, at + self.RUN)]
            first = run[0]
            if type(first) is np.ndarray and first.size <= 8:
                dtype, shape = first.dtype, first.shape
                for v in run:
                    if type(v) is not np.ndarray or v.dtype is not dtype or v.shape != shape:
                        break
                else:
                    describe = _array_describe(dtype, shape)
                    base = len(lines)
                    lines.extend(_run_lines(indent, at, len(run), describe))
                    arrays, where = self.alike.get(describe) or self._wait(describe)
                    arrays.extend(run)
                    end = base + 3 * len(run)
                    where.extend(range(base + 2, end, 3))
                    bold.extend(range(base + 1, end, 3))
                    if len(lines) >= self.BATCH:
                        self.flush()
                    continue
            if not inner:
                inner, deeper = indent + "  ", indent + "    "
            for label, v in zip(_run_labels(indent, at, len(run)), run, strict=True):
                lines.append(label)
                self._item(v, inner, deeper)
        if total > n:
            lines.append(f"{indent}… {total - n} more (--limit N shows more)")

    def _item(self, v: Any, inner: str, deeper: str) -> None:
        """One item of a list or dict, under its label."""
        lines = self.lines
        if type(v) is list:  # a nested list: straight to its lines
            self._list(v, inner)
        elif type(v) is np.ndarray:  # the usual leaf, made here without a call more
            describe = _array_describe(v.dtype, v.shape)
            self.bold.append(len(lines))
            lines.append(inner + describe)
            arrays, where = self.alike.get(describe) or self._wait(describe)
            arrays.append(v)
            where.append(len(lines))
            lines.append(deeper)
            if v.size > 8:
                self.large += 1
        else:
            self.add(v, inner)
        if len(lines) >= self.BATCH or self.large >= self.LARGE:
            self.flush()

    def _checked(self, text: str) -> str:
        """``text`` as it is printed, piped: escaped (``printable``), and each line
        without the spaces at its end (``Stream.write``), for ``write_checked``."""
        if self.out.is_terminal:
            return text  # rich escapes it
        text = printable(text, newlines=True)
        if self.out.file.isatty():  # a terminal rich was told is none (TTY_COMPATIBLE=0)
            return text
        return "\n".join(line.rstrip() for line in text.split("\n"))

    def _wait(self, key: str) -> tuple[list[npt.NDArray[Any]], list[int]]:
        """The arrays described by ``key`` that wait for their text, and their lines."""
        return self.alike.setdefault(key, ([], []))

    def flush(self) -> None:
        lines = self.lines
        for arrays, where in self.alike.values():
            texts, own = batch_reprs(arrays)
            for j in own:  # numpy's own text: of any kind, on several lines
                i = where[j]
                lines[i] = "\n".join(self._checked(lines[i] + part)
                                     for part in texts[j].splitlines())
                texts[j] = ""
            for i, text in zip(where, texts, strict=True):
                lines[i] += text  # one line of printable ASCII, as write_checked takes it
        if not lines:
            return
        if self.out.is_terminal:
            bold = set(self.bold)
            styled = Text()
            for i, line in enumerate(lines):
                if i:
                    styled.append("\n")
                styled.append(line, "bold" if i in bold else None)
            self.out.print(styled, soft_wrap=self.out.soft_wrap)
        else:
            write_checked("\n".join(lines) + "\n")
        # emptied, not replaced: the callers of add hold these lists
        lines.clear()
        self.bold.clear()
        self.alike.clear()
        self.large = 0
