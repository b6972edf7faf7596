"""``onnxdata diff A B``: compare two value files, or two test data set folders file by file.

A is the actual value, B the expected one (relative errors are relative to
B). Each file is read once, as one copy (``read_source`` of ``open_source(copy=True)``:
a pipe can be read only once), as the kind the explorer
picks: the model's declared kind in the ``test_data_set_N/input_K.pb``
layout, else the only valid reading; when only one side can tell (a
one-element sequence is also a valid optional), the other side is read as the
same kind, and ``--kind`` settles it for both. Exit 0 when everything is
equal, 1 when anything differs, 2 when anything cannot be read.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnxdata.convert.compare import Difference, collect
from onnxdata.core.messages import kind_name
from onnxdata.errors import DecodeError, OnnxDataError, ValidationError

if TYPE_CHECKING:
    from onnxdata.wire.source import Source

__all__ = ["JSON_LIMIT", "SHOWN", "FileDiff", "Noter", "diff_paths", "exit_code", "read_value"]

#: Differences printed per file.
SHOWN = 10
#: Differences kept per file for --json; the rest are counted (``count``, ``left_out``), so
#: memory is bounded whatever the files hold.
JSON_LIMIT = 1000
#: Told which reading was taken for a file that did not say: ``note(path, line)``.
Noter = Callable[[Path, str], None]


@dataclass
class FileDiff:
    """The comparison of one pair of files: ``status`` is "equal", "different",
    "missing" (on one side only) or "unreadable" (``error`` says why)."""

    name: str
    actual: str | None
    expected: str | None
    status: str
    differences: list[Difference] = field(default_factory=list)
    error: str = ""
    #: Differences found in all; ``differences`` holds the first of them.
    count: int | None = None
    #: Of those left out of ``differences``, how many of each kind.
    left_out: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.differences) if self.count is None else self.count

    def as_json(self) -> dict[str, Any]:
        return {"name": self.name, "actual": self.actual, "expected": self.expected,
                "status": self.status, "error": self.error or None,
                "count": self.total, "left_out": dict(self.left_out),
                "differences": [d.as_json() for d in self.differences]}


def _kind_of(path: Path) -> str:
    from onnxdata.explorer.readings import choose_kind, open_buffer

    return choose_kind(path, open_buffer(path))


def read_value(path: str | os.PathLike[str], kind: str | None = None) -> Any:
    """A file's numpy value through ``read``, the kind chosen as the explorer does."""
    from onnxdata.io.read import read

    return read(path, None if kind is None else kind_name(kind))


def _pair(name: str, a: Path, b: Path, kind: str | None, rtol: float,
          atol: float, keep: int | None = None, note: Noter | None = None) -> FileDiff:
    from onnxdata.explorer.readings import choose_kind
    from onnxdata.io.read import open_source

    try:
        with contextlib.ExitStack() as stack:  # each file opened once: it may be a pipe
            srcs = [stack.enter_context(contextlib.closing(open_source(p, copy=True)))
                    for p in (a, b)]
            kinds: list[str | None] = [kind, kind]
            if kind is None:
                errors: list[OnnxDataError] = []
                for i, (p, src) in enumerate(zip((a, b), srcs, strict=True)):
                    try:
                        told = None if note is None else functools.partial(note, p)
                        kinds[i] = choose_kind(p, src, how="--kind {}", note=told)
                    except DecodeError as exc:
                        errors.append(exc)
                if kinds[0] is None and kinds[1] is None:
                    if srcs[0].size == srcs[1].size and \
                            srcs[0].read(0, srcs[0].size) == srcs[1].read(0, srcs[1].size):
                        # the same bytes are the same value, whatever kind they are read as
                        return FileDiff(name, os.fspath(a), os.fspath(b), "equal", [])
                    raise errors[0]
                kinds = [kinds[0] or kinds[1], kinds[1] or kinds[0]]
            actual, expected = (_read(p, src, k, chosen=kind is None)
                                for p, src, k in zip((a, b), srcs, kinds, strict=True))
            found = collect(actual, expected, rtol=rtol, atol=atol, keep=keep)
    except (OnnxDataError, OSError) as exc:
        return FileDiff(name, os.fspath(a), os.fspath(b), "unreadable", error=_reason(exc))
    except MemoryError:
        return FileDiff(name, os.fspath(a), os.fspath(b), "unreadable",
                        error="out of memory comparing them")
    return FileDiff(name, os.fspath(a), os.fspath(b), "different" if found.count else "equal",
                    found.kept, count=found.count, left_out=found.left_out)


def _read(path: Path, src: Source, kind: str | None, chosen: bool) -> Any:
    """The value of ``path`` as ``kind``; where that kind is the model's (``chosen``) and
    the bytes are not one, DecodeError says what they are, as validate and show say it."""
    from onnxdata.explorer.readings import other_valid
    from onnxdata.io.read import read_source
    from onnxdata.model.file import declared_for

    try:
        return read_source(src, None if kind is None else kind_name(kind))
    except (DecodeError, ValidationError):
        other = other_valid(src, kind) if chosen and kind is not None else ""
        if not other:
            raise
        declared = declared_for(path).type
        raise DecodeError(f"valid {other}, but the model declares {declared or kind}",
                          source=os.fspath(path)) from None


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ValidationError):
        return str(exc).replace("\n", " ")
    return str(exc)


def diff_paths(a: str | os.PathLike[str], b: str | os.PathLike[str], *,
               rtol: float = 1e-3, atol: float = 1e-7, kind: str | None = None,
               keep: int | None = JSON_LIMIT, note: Noter | None = None) -> list[FileDiff]:
    """Compare two files, or two folders' ``.pb`` files matched by name (A actual, B expected);
    two test case folders are compared data set by data set.

    Each file keeps its first ``keep`` differences (None: all) and counts the rest.
    ``note(path, line)`` hears which reading was taken for a file that did not say.
    A file found in a folder that is not a regular file (a FIFO would block) is
    "unreadable". Raises OnnxDataError when one is a folder and the other a file, and
    FileNotFoundError when one is a folder and the other does not exist.
    """
    pa, pb = Path(a), Path(b)
    if pa.is_dir() != pb.is_dir():
        for p in (pa, pb):  # a typo beside a folder: say so, not "is not a folder"
            if not p.exists():
                raise FileNotFoundError(errno.ENOENT, "no such file or folder", os.fspath(p))
        raise OnnxDataError(f"compare a folder with a folder or a file with a file: {pa} is "
                            f"{'a folder' if pa.is_dir() else 'not a folder'}, {pb} is "
                            f"{'a folder' if pb.is_dir() else 'not a folder'}")
    if not pa.is_dir():
        return [_pair(pa.name if pa.name == pb.name else f"{pa.name} vs {pb.name}",
                      pa, pb, kind, rtol, atol, keep, note)]
    names_a = {p.name for p in pa.glob("*.pb")}
    names_b = {p.name for p in pb.glob("*.pb")}
    cases = [_has_sets(pa), _has_sets(pb)]
    if cases[0] != cases[1] and (names_a if cases[1] else names_b):
        case, one = (pb, pa) if cases[1] else (pa, pb)
        raise OnnxDataError(f"{case} is a test case folder (test_data_set_N inside) and {one} "
                            f"is not: compare a data set with a data set, e.g. "
                            f"onnxdata diff {one} {case}/test_data_set_0")
    out: list[FileDiff] = []
    if any(cases) or not (names_a or names_b):  # test case folders (or nothing to compare)
        # and the loose .pb files beside their sets, below
        out += _diff_sets(pa, pb, rtol, atol, kind, keep, note)
    for name in sorted(names_a | names_b, key=_file_order):
        if name not in names_b:
            out.append(FileDiff(name, os.fspath(pa / name), None, "missing",
                                error=f"only in {pa}"))
        elif name not in names_a:
            out.append(FileDiff(name, None, os.fspath(pb / name), "missing",
                                error=f"only in {pb}"))
        else:
            odd = _not_regular(pa / name, pb / name)
            out.append(FileDiff(name, os.fspath(pa / name), os.fspath(pb / name),
                                "unreadable", error=odd) if odd is not None
                       else _pair(name, pa / name, pb / name, kind, rtol, atol, keep, note))
    return out


def _has_sets(folder: Path) -> bool:
    return any(p.is_dir() for p in folder.glob("test_data_set_*"))


def _not_regular(*paths: Path) -> str | None:
    """Why a file found by listing a folder is refused (not a regular file), or None."""
    for p in paths:
        try:
            if not stat.S_ISREG(os.stat(p).st_mode):
                return f"{p} is not a regular file (a FIFO or device found in a folder is " \
                       "refused, not read)"
        except OSError as exc:
            return str(exc)
    return None


def _diff_sets(pa: Path, pb: Path, rtol: float, atol: float, kind: str | None,
               keep: int | None, note: Noter | None) -> list[FileDiff]:
    """Two test case folders: their ``test_data_set_N`` folders matched by name, each file
    named ``test_data_set_N/input_K.pb``. Folders with neither ``.pb`` files nor data sets
    are an OnnxDataError, never a silent "equal"."""
    sets_a = {p.name for p in pa.glob("test_data_set_*") if p.is_dir()}
    sets_b = {p.name for p in pb.glob("test_data_set_*") if p.is_dir()}
    if not sets_a and not sets_b:
        raise OnnxDataError(f"no .pb files and no test_data_set_N folders in {pa} or {pb}: "
                            "pass two .pb files, two test_data_set_N folders or two test "
                            "case folders")
    out: list[FileDiff] = []
    for name in sorted(sets_a | sets_b, key=_file_order):
        if name not in sets_b:
            out.append(FileDiff(f"{name}/", os.fspath(pa / name), None, "missing",
                                error=f"only in {pa}"))
        elif name not in sets_a:
            out.append(FileDiff(f"{name}/", None, os.fspath(pb / name), "missing",
                                error=f"only in {pb}"))
        else:
            for f in diff_paths(pa / name, pb / name, rtol=rtol, atol=atol, kind=kind,
                                keep=keep, note=note):
                f.name = f"{name}/{f.name}"
                out.append(f)
    return out


def _file_order(name: str) -> tuple[str, int, str]:
    stem, _, number = name.removesuffix(".pb").rpartition("_")
    return (stem, int(number), name) if number.isdigit() else (name, -1, name)


def exit_code(statuses: list[str]) -> int:
    """2 when anything is unreadable, 1 when anything differs or is missing, else 0."""
    if "unreadable" in statuses:
        return 2
    return 1 if any(s != "equal" for s in statuses) else 0





