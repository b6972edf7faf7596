"""ONNX test data sets: ``test_data_set_N/{input,output}_K.pb`` read with the model's types.

onnx's backend runner reads each file by the kind the model declares, but skips
maps and sparse tensors (printing a message) and so shifts every later input by
one. ``load_test_data_set`` reads every kind, checks each value against its
declared type (element types and shapes included), and converts it with
``to_numpy``.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path
from typing import Any

from onnxdata.errors import DecodeError, ValidationError
from onnxdata.files import load
from onnxdata.fit import fit
from onnxdata.generated.onnx_ml_pb2 import ModelProto
from onnxdata.messages import MESSAGE_CLASSES
from onnxdata.model_types import IO, io_type, load_model, type_problems
from onnxdata.strings import Strings, convert_strings

__all__ = ["load_test_data_set", "test_data_files"]

_FILE = re.compile(r"^(input|output)_(\d+)\.pb$")


def test_data_files(folder: str | os.PathLike[str]) -> tuple[list[Path], list[Path]]:
    """The input and output files of a test data set, by index; a gap is a DecodeError."""
    found: dict[str, dict[int, Path]] = {"input": {}, "output": {}}
    for p in Path(folder).iterdir():
        m = _FILE.match(p.name)
        if m is not None:
            found[m.group(1)][int(m.group(2))] = p
    out: list[list[Path]] = []
    for io in ("input", "output"):
        files = found[io]
        missing = [i for i in range(len(files)) if i not in files]
        if missing:
            raise DecodeError(f"{io}_{missing[0]}.pb is missing but {io}s up to "
                              f"{max(files)} exist", source=os.fspath(folder))
        out.append([files[i] for i in range(len(files))])
    return out[0], out[1]


test_data_files.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def _read(path: Path, model: ModelProto, io: IO, index: int, strings: Strings) -> Any:
    from onnxdata.convert import to_numpy

    declared = io_type(model, io, index)
    data = path.read_bytes()
    walked = fit(data, MESSAGE_CLASSES[declared.kind].DESCRIPTOR.name)
    if walked.misfit is not None:
        raise DecodeError(str(walked.misfit), source=os.fspath(path),
                          kind=MESSAGE_CLASSES[declared.kind].DESCRIPTOR.name,
                          offset=walked.misfit.offset)
    mismatch = type_problems(walked.root, declared)
    if mismatch:
        raise ValidationError(mismatch, source=f"{path} (model {io} {index}: {declared})")
    return convert_strings(to_numpy(load(data, declared.kind), base_dir=path.parent), strings,
                           os.fspath(path))


def load_test_data_set(folder: str | os.PathLike[str], *,
                       model: str | os.PathLike[str] | None = None,
                       strings: Strings = "bytes") -> tuple[list[Any], list[Any]]:
    """``(inputs, outputs)`` of a test data set as numpy values, each read as its declared type.

    ``model`` defaults to ``model.onnx`` in the folder's parent. Tensors give
    ndarrays, sparse tensors dense ndarrays, sequences lists, maps dicts and
    optionals None or their value. A value whose kind, element type or shape
    disagrees with the model raises ValidationError; bytes that are not the
    declared message raise DecodeError. ``strings="str"`` gives STRING values
    as ``str`` (UTF-8), which ONNX Runtime needs: it reads bytes as ``"b'...'"``.
    """
    folder = Path(folder)
    if not folder.is_dir():  # say so before looking for a model.onnx beside it
        raise FileNotFoundError(errno.ENOENT, "no test data set folder", os.fspath(folder))
    sets = sorted(p.name for p in folder.glob("test_data_set_*") if p.is_dir())
    if sets and not any(folder.glob("*put_*.pb")):  # a case folder, not one of its sets
        raise DecodeError(f"this is a test case folder; pass one of its data sets "
                          f"({', '.join(sets[:3])}{', …' if len(sets) > 3 else ''})",
                          source=os.fspath(folder))
    m = load_model(model if model is not None else folder.parent / "model.onnx")
    inputs, outputs = test_data_files(folder)
    return ([_read(p, m, "input", i, strings) for i, p in enumerate(inputs)],
            [_read(p, m, "output", i, strings) for i, p in enumerate(outputs)])
