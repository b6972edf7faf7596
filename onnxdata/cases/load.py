"""ONNX test data sets: ``test_data_set_N/{input,output}_K.pb`` read with the model's types.

onnx's backend runner reads each file by the kind the model declares, but skips
maps and sparse tensors (printing a message) and so shifts every later input by
one. ``load_test_data_set`` reads every kind, checks each value against its
declared type (element types and shapes included), and builds it with the engine, the
one route from bytes to a value that ``read`` takes (``io.read.read_source``), so a
file gives the same value, problems and errors through either.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

from onnxdata.cases.feeds import CheckedInputs
from onnxdata.core.messages import MESSAGE_CLASSES
from onnxdata.core.strings import Strings
from onnxdata.errors import (
    DecodeError,
    OnnxDataError,
    Problem,
    ValidationError,
    no_memory_error,
    path_error,
)
from onnxdata.explorer.readings import other_valid
from onnxdata.io.read import read_source
from onnxdata.model.file import ModelTypes, read_model_types
from onnxdata.model.type_walk import declared_problems
from onnxdata.model.types import IO, type_problems_reference
from onnxdata.wire.field_tree import field_tree
from onnxdata.wire.source import Buffer, Source, read_settled

__all__ = ["load_checked_set", "load_test_data_set", "test_data_files"]

_FILE = re.compile(r"^(input|output)_(\d+)\.pb$")
#: Loads tried while saves keep replacing the folder (or removing its files).
_TRIES = 8
#: What a set's folder holds, as path errors name it ("cannot read x as a test data set").
_SET = "a test data set"


def test_data_files(folder: str | os.PathLike[str]) -> tuple[list[Path], list[Path]]:
    """The input and output files of a test data set, by index; a gap, or one that is not a
    regular file (a FIFO would block the read forever), is a DecodeError."""
    inputs, outputs = _layout(os.listdir(folder), Path(folder))
    for p in inputs + outputs:
        _regular(os.stat(p).st_mode, p)
    return inputs, outputs


def _layout(names: list[str], folder: Path) -> tuple[list[Path], list[Path]]:
    found: dict[str, dict[int, Path]] = {"input": {}, "output": {}}
    for entry in names:
        m = _FILE.match(entry)
        if m is not None:
            found[m.group(1)][int(m.group(2))] = folder / entry
    out: list[list[Path]] = []
    for io in ("input", "output"):
        files = found[io]
        missing = [i for i in range(len(files)) if i not in files]
        if missing:
            raise DecodeError(f"{io}_{missing[0]}.pb is missing but {io}s up to "
                              f"{max(files)} exist", source=os.fspath(folder))
        out.append([files[i] for i in range(len(files))])
    return out[0], out[1]


def _regular(mode: int, path: Path) -> None:
    if not stat.S_ISREG(mode):
        raise DecodeError("not a regular file (a FIFO, device, socket or folder found in a "
                          "test data set is refused, not read)", source=os.fspath(path))


test_data_files.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def _read(path: Path, data: Buffer, model: ModelTypes, io: IO, index: int,
          strings: Strings) -> Any:
    declared = model.declared(io, index)
    src = Source.of_buffer(data, os.fspath(path))
    if declared_problems(src, declared.kind, declared) == []:
        # the declared type's check a layout group at a time (model.type_walk), which says
        # what the field tree's says of a value the engine reads without a problem
        try:
            return read_source(src, declared.kind, base_dir=path.parent, strings=strings)
        except (OnnxDataError, OSError):
            pass  # said below as it always was: the field tree's misfit comes first
    message = MESSAGE_CLASSES[declared.kind].DESCRIPTOR.name
    walked = field_tree(data, message)
    mismatch = [] if walked.misfit is not None else \
        type_problems_reference(walked.root, declared)
    if walked.misfit is not None or mismatch:
        other = other_valid(data, declared.kind)
        if other:  # what the file is, first, as validate and show say it
            raise DecodeError(f"valid {other}, but the model declares {declared}",
                              source=os.fspath(path), kind=message)
    if walked.misfit is not None:
        raise DecodeError(str(walked.misfit), source=os.fspath(path), kind=message,
                          offset=walked.misfit.offset)
    if mismatch:
        raise ValidationError(mismatch, source=f"{path} (model {io} {index}: {declared})")
    return read_source(Source.of_buffer(data, os.fspath(path)), declared.kind,
                       base_dir=path.parent, strings=strings)


class _Replaced(Exception):
    """The set's folder was replaced (and the old one removed) while it was read."""


def _read_set(folder: Path) -> tuple[list[tuple[Path, Buffer]], list[tuple[Path, Buffer]]]:
    """Every ``input_K.pb``/``output_K.pb`` of one version of the folder: it is opened once
    and each file opened relative to that descriptor, so a save that swaps the folder in
    meanwhile cannot give files of two versions (issue 23, finding 2). A file gone
    meanwhile (the save that swapped this version out is removing it, file by file), or
    a gap in the listing of a version no longer in place, is ``_Replaced``: read again."""
    try:
        dfd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)
                      | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:  # between a save's two renames (where none swaps in one)
        raise _Replaced from None
    except OSError as exc:
        raise path_error(exc, folder, kind=_SET, folder=True) from exc
    try:
        inputs, outputs = _layout(os.listdir(dfd), folder)
        if not inputs and not outputs and _swapped_out(dfd, folder):
            raise _Replaced  # emptied by the save that swapped it out, not yet removed
        read: list[list[tuple[Path, Buffer]]] = []
        for files in (inputs, outputs):
            read.append([(p, _read_in(dfd, p)) for p in files])
        return read[0], read[1]
    except FileNotFoundError:
        raise _Replaced from None
    except DecodeError:
        if _swapped_out(dfd, folder):
            raise _Replaced from None
        raise
    finally:
        os.close(dfd)


def _swapped_out(dfd: int, folder: Path) -> bool:
    """Whether the folder open as ``dfd`` is no longer the one at ``folder``."""
    here = os.fstat(dfd)
    try:
        now = os.stat(folder)
    except FileNotFoundError:
        return True
    return here.st_nlink == 0 or (here.st_dev, here.st_ino) != (now.st_dev, now.st_ino)


def _read_in(dfd: int, path: Path) -> Buffer:
    try:
        fd = os.open(path.name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0), dir_fd=dfd)
    except OSError as exc:  # (gone: still a FileNotFoundError, for _read_set)
        raise path_error(exc, path) from exc
    try:
        _regular(os.fstat(fd).st_mode, path)
        return read_settled(fd, os.fspath(path))
    finally:
        os.close(fd)


@no_memory_error("folder")
def load_test_data_set(folder: str | os.PathLike[str], *,
                       model: str | os.PathLike[str] | None = None,
                       strings: Strings = "bytes") -> tuple[list[Any], list[Any]]:
    """``(inputs, outputs)`` of a test data set as numpy values, each read as its declared type.

    ``model`` defaults to ``model.onnx`` in the folder's parent. Tensors give
    ndarrays, sparse tensors dense ndarrays, sequences lists, maps dicts and
    optionals None or their value. A value whose kind, element type or shape
    disagrees with the model raises ValidationError; bytes that are not the
    declared message raise DecodeError. The model is required here: one that
    cannot be read (or lacks an input or output the folder has) raises
    DecodeError naming it, a missing one too (it is a FileNotFoundError as well). A
    ``folder`` that is missing, a file, or not permitted is ``errors.path_error``'s (a
    DecodeError that is also FileNotFoundError, NotADirectoryError, ...). A folder that
    holds no ``input_K.pb``/``output_K.pb`` (a test case folder, one level too
    high) raises DecodeError naming the folder rather than reading the model of
    the folder above. ``strings="str"`` gives STRING values as ``str`` (UTF-8),
    which ONNX Runtime needs: it reads bytes as ``"b'...'"``.
    """
    inputs, outputs = load_checked_set(folder, model=model, strings=strings)
    return list(inputs), outputs


@no_memory_error("folder")
def load_checked_set(folder: str | os.PathLike[str], *,
                     model: str | os.PathLike[str] | None = None,
                     strings: Strings = "bytes") -> tuple[CheckedInputs, list[Any]]:
    """``load_test_data_set``'s values, the inputs as ``CheckedInputs`` holding the
    declared types they were read with, so a backend's ``run`` (``feeds.fit_inputs``)
    checks only their count again; what the test loop (``case_run.run_set``) runs."""
    folder = Path(folder)
    name = os.fspath(folder)
    try:
        if not stat.S_ISDIR(os.stat(name).st_mode):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), name)
    except OSError as exc:
        raise path_error(exc, name, kind=_SET, folder=True) from exc
    for attempt in range(_TRIES):
        try:
            inputs, outputs = _read_set(folder)
            break
        except _Replaced:
            time.sleep(0.001 * attempt)  # as read_settled retries a file that changed
    else:
        raise DecodeError(f"the folder changed while it was read ({_TRIES} reads, each met "
                          "a save replacing it or a file removed)", source=name)
    if not inputs and not outputs:
        sets = sorted(p.name for p in folder.glob("test_data_set_*") if p.is_dir())
        hint = (f"; it looks like a test case folder: pass one of its data sets "
                f"({', '.join(sets[:3])}{', …' if len(sets) > 3 else ''})" if sets else "")
        raise DecodeError(f"no input_K.pb or output_K.pb files in it{hint}", source=name)
    if model is None:
        model = folder.parent / "model.onnx"
        if not model.exists():  # a set saved away from its model: say how to name it
            raise path_error(FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT)), model,
                             kind="ModelProto", hint="pass model= to name the model of the "
                             f"test data set {name}")
    m = read_model_types(model)
    for io, files, declared in (("input", inputs, m.inputs), ("output", outputs, m.outputs)):
        if len(files) > len(declared):
            raise ValidationError([Problem(os.fspath(files[len(declared)][0]),
                                           f"the model declares {len(declared)} {io}"
                                           f"{'' if len(declared) == 1 else 's'}, but "
                                           f"the folder has {len(files)} {io} files")],
                                  source=name)
    return (CheckedInputs([_read(p, d, m, "input", i, strings) for i, (p, d)
                           in enumerate(inputs)],
                          [m.declared("input", i) for i in range(len(inputs))]),
            [_read(p, d, m, "output", i, strings) for i, (p, d) in enumerate(outputs)])
