"""Writing ONNX test data sets: ``test_data_set_N/{input,output}_K.pb``, typed as the model says.

``save_test_data_set`` is ``load_test_data_set`` backwards. Each value is
written as the kind the model declares for it (a list given for a
``sequence(optional(tensor(float)))`` input holds optionals even when none of
them is None), its arrays converted to the declared element types where that
loses nothing of their kind (``convert.exact_cast``: float64 for float32 rounds,
float64 for int64 is refused) and checked against the declared fixed dims, and
named as the model's input or output; without a model the kind comes from the
value, as ``from_numpy`` infers it. So a set it writes is one
``load_test_data_set`` reads back. An empty optional is written with elem_type
UNDEFINED, as ONNX's own test data has it.

The set is written into a temporary sibling folder and renamed into place
only when every file is written (``io.atomic.staged_folder``), so a failure leaves no
half-written set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError as _ProtobufDecodeError

from onnxdata.convert.common import SparseParts
from onnxdata.convert.exact_cast import exact_array
from onnxdata.convert.values import from_numpy
from onnxdata.core.dtypes import DATA_TYPES
from onnxdata.core.messages import kind_name
from onnxdata.errors import DecodeError, OnnxDataError
from onnxdata.generated.onnx_ml_pb2 import ModelProto
from onnxdata.io.atomic import staged_folder
from onnxdata.model.types import IO, DeclaredType, declared_type, shape_problems
from onnxdata.wire.source import read_checked

__all__ = ["as_model", "read_model", "save_test_data_set", "write_value"]

ModelArg = str | os.PathLike[str] | ModelProto | Any


def write_value(path: Path, value: Any, kind: str | None, *, name: str,
                elem_type: Any = None, key_type: Any = None) -> None:
    """The one call to ``onnxdata.write`` (streamed, atomic): its argument order lives here."""
    from onnxdata.io.write import write

    write(value, path, None if kind is None else kind_name(kind), name=name,
          elem_type=elem_type, key_type=key_type)


def as_model(model: ModelArg) -> ModelProto:
    """A ModelProto from a path, our ModelProto, or onnx's (re-read into ours).

    The whole model is parsed: writing a set or running one needs its graph,
    unlike reading a set, which learns the declared types in bounded memory
    (``model.file``).
    """
    if isinstance(model, ModelProto):
        return model
    if isinstance(model, (str, os.PathLike)):
        return read_model(model)[1]
    if hasattr(model, "SerializeToString") and hasattr(model, "graph"):
        ours = ModelProto()
        ours.ParseFromString(model.SerializeToString())
        return ours
    raise TypeError(f"model must be a path or a ModelProto, not {type(model).__name__}")


def read_model(path: str | os.PathLike[str]) -> tuple[bytes, ModelProto]:
    """The bytes of the model file at ``path`` as they were at one instant, and the model
    parsed from them: what a backend is given, so no later change to the file can reach
    it. A folder, FIFO or socket is refused and a device read only up to the stream limit
    (``--max-bytes``): DecodeError naming the path."""
    name = os.fspath(path)
    data = bytes(read_checked(name, kind="ModelProto", fifo=False))
    parsed = ModelProto()
    try:
        parsed.ParseFromString(data)
    except (_ProtobufDecodeError, RuntimeError, ValueError) as exc:
        raise DecodeError(str(exc), source=name, kind="ModelProto") from exc
    return data, parsed


def save_test_data_set(folder: str | os.PathLike[str],
                       inputs: Sequence[Any] | Mapping[str, Any],
                       outputs: Sequence[Any] | Mapping[str, Any], *,
                       model: ModelArg | None = None, overwrite: bool = False) -> Path:
    """Write ``inputs`` and ``outputs`` as ``input_K.pb`` / ``output_K.pb`` in ``folder``.

    ``inputs`` and ``outputs`` are lists (value K is the model's K-th input or
    output) or dicts keyed by the model's input/output names (without a model,
    a dict's keys name the values in order). With ``model`` (a path or a
    ModelProto) each value is written as its declared type; a value that
    cannot be, or not without loss (a list for a tensor, strings for floats,
    floats for int64, 300 for int8, a [2] array for a declared [3]), raises
    OnnxDataError naming it and the path inside it, and nothing is written. An
    existing non-empty ``folder`` is replaced only with ``overwrite=True``. Returns
    the folder's path.
    """
    target = Path(folder)
    m = as_model(model) if model is not None else None
    plan = _plan(inputs, "input", m) + _plan(outputs, "output", m)
    if os.path.lexists(target) and not overwrite and (
            target.is_symlink() or not target.is_dir() or any(target.iterdir())):
        raise OnnxDataError(f"{target} exists and is not empty (or not a folder); pass "
                            "overwrite=True to replace it")
    with staged_folder(target) as tmp:
        for file, value, name, declared in plan:
            try:
                _write_declared(tmp / file, value, name, declared)
            except OSError as exc:  # a full disk: name the user's folder, not ours
                raise OSError(exc.errno, exc.strerror, os.fspath(target / file)) from exc
            except OnnxDataError as exc:
                raise type(exc)(str(exc).replace(os.fspath(tmp), os.fspath(target))) from exc
    return target


def _plan(values: Sequence[Any] | Mapping[str, Any], io: IO, model: ModelProto | None
          ) -> list[tuple[str, Any, str, DeclaredType | None]]:
    """``(file name, value, name, declared type)`` for each value, in the model's order."""
    declared = list(model.graph.input if io == "input" else model.graph.output) \
        if model is not None else None
    if isinstance(values, Mapping):
        if declared is None:
            items = [(str(k), v) for k, v in values.items()]
            return [(f"{io}_{i}.pb", v, name, None) for i, (name, v) in enumerate(items)]
        names = [d.name for d in declared]
        unknown = [k for k in values if k not in names]
        if unknown:
            raise OnnxDataError(f"the model has no {io} named {', '.join(map(repr, unknown))} "
                                f"(its {io}s: {', '.join(map(repr, names))})")
        given = [i for i, n in enumerate(names) if n in values]
        count = max(given) + 1 if given else 0
        gaps = [names[i] for i in range(count) if names[i] not in values]
        if gaps:
            raise OnnxDataError(f"{io} {gaps[0]!r} is missing: the files are numbered by the "
                                f"model's {io}s, so every one before {names[count - 1]!r} "
                                "needs a value")
        values = [values[names[i]] for i in range(count)]
    if not isinstance(values, Sequence) or isinstance(values, (str, bytes)):
        raise TypeError(f"{io}s must be a list or a dict keyed by name, not "
                        f"{type(values).__name__}")
    if declared is not None and len(values) > len(declared):
        raise OnnxDataError(f"{len(values)} {io}s given but the model has {len(declared)}")
    out: list[tuple[str, Any, str, DeclaredType | None]] = []
    for i, v in enumerate(values):
        if declared is None:
            out.append((f"{io}_{i}.pb", v, "", None))
            continue
        try:
            dt = declared_type(declared[i].type)
        except ValueError as exc:
            raise OnnxDataError(f"{io} {i} ({declared[i].name!r}): {exc}") from exc
        out.append((f"{io}_{i}.pb", v, declared[i].name, dt))
    return out


def _write_declared(path: Path, value: Any, name: str, declared: DeclaredType | None
                    ) -> None:
    """One value file, as its declared type (or as ``from_numpy`` infers it without one)."""
    where = f"{path.stem} ({name!r})" if name else path.stem
    if declared is None:
        write_value(path, value, None, name=name)
        return
    conformed = _conform(value, declared, where, top=True)
    elem_type = declared.element.kind if declared.element is not None else None
    if declared.kind == "optional" and conformed is None:
        elem_type = None  # an empty optional is UNDEFINED, as ONNX writes it
    key_type = declared.elem_type if declared.kind == "map" else None
    write_value(path, conformed, declared.kind, name=name, elem_type=elem_type,
                key_type=key_type)


def _conform(value: Any, declared: DeclaredType, where: str, *, top: bool = False) -> Any:
    """``value`` made to fit ``declared``: arrays converted to the declared element type
    and checked against its shape, and the nested values whose kind ``from_numpy`` could
    not infer built as messages."""
    kind = declared.kind
    if kind == "optional":
        assert declared.element is not None
        if value is None:
            return None
        inner = _conform(value, declared.element, where)
        return inner if top else from_numpy(inner, "optional",
                                            elem_type=declared.element.kind)
    if kind == "tensor":
        return _shaped(_array(value, declared.elem_type, where), declared, where)
    if kind == "sparse_tensor":
        if isinstance(value, SparseParts):
            _shaped(value, declared, where)
            return value._replace(values=_array(value.values, declared.elem_type, where))
        dense = _shaped(_array(value, declared.elem_type, where), declared, where)
        flat = dense.reshape(-1)
        nz = np.flatnonzero(flat != 0) if dense.dtype.kind != "O" else np.arange(flat.size)
        return SparseParts(flat[nz], nz.astype(np.int64), tuple(dense.shape))
    assert declared.element is not None
    if kind == "sequence":
        if not isinstance(value, (list, tuple)):
            raise _mismatch(where, declared, value)
        items = [_conform(v, declared.element, f"{where}[{i}]") for i, v in enumerate(value)]
        if top:
            return items
        return from_numpy(items, "sequence", elem_type=declared.element.kind)
    # map
    if not isinstance(value, Mapping):
        raise _mismatch(where, declared, value)
    conformed = {k: _conform(v, declared.element, f"{where}[{k!r}]") for k, v in value.items()}
    if top:
        return conformed
    return from_numpy(conformed, "map", elem_type=declared.element.kind,
                      key_type=declared.elem_type)


def _array(value: Any, code: int, where: str) -> Any:
    """``value`` as an ndarray of data type ``code`` (0: as it is), converted only where
    that loses nothing (``exact_array``: float64 for float32 rounds, 1.5 for int64 is
    refused)."""
    if isinstance(value, (list, tuple, dict, SparseParts)) or value is None:
        raise OnnxDataError(f"{where}: a tensor is declared but the value is a "
                            f"{type(value).__name__}")
    if code not in DATA_TYPES:
        return np.asarray(value)
    return exact_array(value, code, where)


def _shaped(value: Any, declared: DeclaredType, where: str) -> Any:
    """``value`` (an ndarray or SparseParts) when its shape fits the declared one (each
    fixed dim; a named one fits any size), else the error ``validate`` would give its file,
    raised before the file is written."""
    problems = shape_problems([int(d) for d in value.shape], declared, "")
    if problems:
        raise OnnxDataError(f"{where}: {problems[0].message}")
    return value


def _mismatch(where: str, declared: DeclaredType, value: Any) -> OnnxDataError:
    return OnnxDataError(f"{where}: declared {declared} but the value is a "
                         f"{type(value).__name__}")
