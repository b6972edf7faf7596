"""The types a model declares for its inputs and outputs, and whether a value matches one.

A ``TypeProto`` becomes a small ``DeclaredType`` (``optional(sequence(tensor(float)))``);
``type_problems_reference`` checks a value's wire facts (a ``FitMessage`` from
``onnxdata.wire.field_tree``) against it, element types and shapes included, without parsing
payloads: the reference of ``onnxdata.model.type_walk``, which says the same over the
compiled walk a layout group at a time, without the tree.
``find_model`` finds ``model.onnx`` from ONNX's ``test_data_set_N/input_K.pb`` layout;
``onnxdata.model.file`` reads the declared types from it in bounded memory.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from onnxdata.core.dtypes import data_type
from onnxdata.core.messages import (
    ELEM_TYPE_OF_KIND,
    KIND_OF_ELEM_TYPE,
    KIND_OF_MESSAGE,
    ElemType,
    KindName,
)
from onnxdata.core.paths import join_path
from onnxdata.errors import Problem
from onnxdata.generated.onnx_ml_pb2 import TypeProto
from onnxdata.rules.common import MAX_PROBLEMS, ProblemSink
from onnxdata.wire.field_tree import FitMessage

__all__ = [
    "DeclaredType",
    "IO",
    "declared_type",
    "elem_type_problems",
    "find_model",
    "key_type_problems",
    "kind_problems",
    "map_values_type",
    "shape_problems",
    "sparse_problems",
    "tensor_problems",
    "type_name",
    "type_problems_reference",
]

IO = Literal["input", "output"]
Dim = int | str | None


def type_name(code: int) -> str:
    """ONNX's lower-case name of a tensor data type, as in ``tensor(float)``."""
    dt = data_type(code)
    return dt.name.lower() if dt is not None else f"<data type {code}>"


@dataclass(frozen=True)
class DeclaredType:
    """A declared type: ``kind``, the tensor/sparse element type or map key type
    (``elem_type``), a tensor's ``shape`` (None when not declared), and the
    ``element`` type of a sequence, optional or map value."""

    kind: KindName
    elem_type: int = 0
    shape: tuple[Dim, ...] | None = None
    element: DeclaredType | None = None

    def __str__(self) -> str:
        if self.kind in ("tensor", "sparse_tensor"):
            return f"{self.kind}({type_name(self.elem_type)})"
        if self.kind == "map":
            return f"map({type_name(self.elem_type)}, {self.element})"
        return f"{self.kind}({self.element})"


def declared_type(tp: TypeProto) -> DeclaredType:
    """The DeclaredType of a TypeProto (ours or onnx's); ValueError for opaque or empty types."""
    which = tp.WhichOneof("value")
    if which in ("tensor_type", "sparse_tensor_type"):
        t = tp.tensor_type if which == "tensor_type" else tp.sparse_tensor_type
        shape: tuple[Dim, ...] | None = None
        if t.HasField("shape"):
            dims: list[Dim] = []
            for d in t.shape.dim:
                w = d.WhichOneof("value")
                dims.append(d.dim_value if w == "dim_value" else d.dim_param if w else None)
            shape = tuple(dims)
        kind: KindName = "tensor" if which == "tensor_type" else "sparse_tensor"
        return DeclaredType(kind, t.elem_type, shape)
    if which == "sequence_type":
        return DeclaredType("sequence", element=declared_type(tp.sequence_type.elem_type))
    if which == "optional_type":
        return DeclaredType("optional", element=declared_type(tp.optional_type.elem_type))
    if which == "map_type":
        return DeclaredType("map", tp.map_type.key_type,
                            element=declared_type(tp.map_type.value_type))
    raise ValueError(f"type {which or 'with no value'} is not one of the data message types")


_LAYOUT = re.compile(r"^(input|output)_(\d+)\.pb$")
_DATA_SET = re.compile(r"^test_data_set_\d+$")


def find_model(file: str | os.PathLike[str]) -> tuple[Path, IO, int] | None:
    """``(model.onnx, "input"|"output", K)`` for a file at ``…/test_data_set_N/input_K.pb``.

    Only that exact layout counts: a model two folders up from any other file is not
    taken to declare its type.
    """
    head, tail = os.path.split(os.fspath(file))  # (a name Path would end otherwise, as
    m = _LAYOUT.match(tail)  # "input_0.pb/.", is not a file, so not one of a data set)
    model = _model_beside(head) if m is not None else None
    if m is None or model is None or not os.path.isfile(model):
        return None
    io: IO = "input" if m.group(1) == "input" else "output"
    return model, io, int(m.group(2))


@functools.lru_cache(maxsize=256)
def _model_beside(folder: str) -> Path | None:
    """``folder/../model.onnx`` when ``folder`` is a ``test_data_set_N``: a string's work,
    done once per folder (the file's existence is asked at every call)."""
    p = Path(folder)
    return p.parent / "model.onnx" if _DATA_SET.match(p.name) else None


def _kind_of(node: FitMessage) -> KindName:
    return KIND_OF_MESSAGE[node.type]


def type_problems_reference(node: FitMessage, declared: DeclaredType, path: str = "", *,
                            max_problems: int = MAX_PROBLEMS) -> list[Problem]:
    """How a value (its wire facts) disagrees with a declared type; [] when it matches.
    At most ``max_problems`` are listed, then one "…and N more problems", as for every
    other check."""
    sink = ProblemSink(max_problems)
    _type_problems(node, declared, path, sink)
    return sink.result()


def _type_problems(node: FitMessage, declared: DeclaredType, path: str,
                   sink: ProblemSink) -> None:
    kind = _kind_of(node)
    if kind != declared.kind:
        sink.add(kind_problems(kind, declared, path))
        return
    if kind == "tensor":
        sink.add(tensor_problems(node.get_int("data_type"), node.get_ints("dims"), declared,
                                 path))
        return
    if kind == "sparse_tensor":
        values = node.child("values")
        code = values.get_int("data_type") if values is not None else 0
        sink.add(sparse_problems(code, node.get_ints("dims"), declared, path))
        return
    assert declared.element is not None
    if kind == "sequence":
        code = node.get_int("elem_type")
        out = elem_type_problems(code, declared, path)
        if out:
            sink.add(out)
            return
        name = KIND_OF_ELEM_TYPE[code]
        for i, child in enumerate(node.children(f"{name}_values")):
            _type_problems(child, declared.element, join_path(path, f"{name}_values[{i}]"),
                           sink)
        return
    if kind == "optional":
        code = node.get_int("elem_type")
        if code == ElemType.UNDEFINED:
            return  # absent: fits any declared element type
        out = elem_type_problems(code, declared, path)
        if out:
            sink.add(out)
            return
        name = KIND_OF_ELEM_TYPE[code]
        value = node.child(f"{name}_value")
        if value is not None:
            _type_problems(value, declared.element, join_path(path, f"{name}_value"), sink)
        return
    # map
    sink.add(key_type_problems(node.get_int("key_type"), declared, path))
    values = node.child("values")
    if values is not None:
        _type_problems(values, map_values_type(declared), join_path(path, "values"), sink)


# What each kind of message is checked for (the reference above and ``type_walk`` alike).

def kind_problems(kind: KindName, declared: DeclaredType, path: str) -> list[Problem]:
    """A value of another kind than the declared one."""
    if kind == declared.kind:
        return []
    return [Problem(path, f"declared {declared} but the value is a {kind}")]


def map_values_type(declared: DeclaredType) -> DeclaredType:
    """The declared type of a declared map's ``values`` field: a sequence of its values."""
    return DeclaredType("sequence", element=declared.element)


def key_type_problems(key: int, declared: DeclaredType, path: str) -> list[Problem]:
    """A map's ``key_type`` other than the declared one."""
    if key == declared.elem_type:
        return []
    return [Problem(join_path(path, "key_type"),
                    f"declared {declared} but the keys are {type_name(key)}")]


def sparse_problems(code: int, dims: list[int] | None, declared: DeclaredType,
                    path: str) -> list[Problem]:
    """A sparse tensor's values' data type ``code`` and its ``dims`` against the declared
    ones."""
    out: list[Problem] = []
    if declared.elem_type and code != declared.elem_type:
        out.append(Problem(join_path(path, "values"), f"declared {declared} but holds "
                                                      f"{type_name(code)} values"))
    out.extend(shape_problems(dims, declared, path))
    return out


def elem_type_problems(code: int, declared: DeclaredType, path: str) -> list[Problem]:
    """A sequence's or optional's ``elem_type`` other than its declared element's kind."""
    assert declared.element is not None
    want = ELEM_TYPE_OF_KIND[declared.element.kind]
    if code != want:
        got = KIND_OF_ELEM_TYPE.get(code, f"elem_type {code}")
        return [Problem(join_path(path, "elem_type"),
                        f"declared {declared} but the elements are {got}")]
    return []


def tensor_problems(code: int, dims: list[int] | None, declared: DeclaredType,
                    path: str) -> list[Problem]:
    """A tensor's ``data_type`` ``code`` and ``dims`` against the declared ones."""
    out: list[Problem] = []
    if declared.elem_type and code != declared.elem_type:
        out.append(Problem(join_path(path, "data_type"),
                           f"declared {declared} but holds {type_name(code)}"))
    out.extend(shape_problems(dims, declared, path))
    return out


def shape_problems(dims: list[int] | None, declared: DeclaredType,
                   path: str) -> list[Problem]:
    """How a tensor's ``dims`` disagree with the declared shape (none when either is
    unknown)."""
    if declared.shape is None or dims is None:
        return []
    want = declared.shape
    shown = "[" + ", ".join("?" if d is None else str(d) for d in want) + "]"
    if len(dims) != len(want):
        return [Problem(join_path(path, "dims"),
                        f"declared shape {shown} has rank {len(want)} but dims are {dims}")]
    for i, (have, d) in enumerate(zip(dims, want, strict=True)):
        if isinstance(d, int) and d != have:
            return [Problem(join_path(path, "dims"),
                            f"declared shape {shown} but dims are {dims} (axis {i})")]
    return []
