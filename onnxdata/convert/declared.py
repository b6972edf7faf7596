"""Python values with a declared type: ``from_numpy``/``write`` with ``declared=``.

ONNX Runtime gives some outputs as plain Python values: ZipMap returns
``list[dict[str, float]]``. A value like that has no dtype of its own, but the
model declares one (``"seq(map(string, tensor(float)))"``), so ``prepare``
turns it into the numpy value that builds exactly the declared type: Python
numbers, lists of them and arrays of another type become arrays of the declared
element type, map keys numpy scalars of the key type, and empty lists, dicts or
None typed empty messages. A value converts only when that loses nothing of its
kind (``exact_cast``: an int64 array or 2.0 for ``tensor(float)`` or
``tensor(int64)``, float32 for ``tensor(bfloat16)``); 1.5 for ``tensor(int64)``,
300 for ``tensor(int8)`` or a string for a number raise OnnxDataError naming
the path and both types.

``as_declared`` does the same for comparing: a runtime's plain Python output
becomes the value ``to_numpy`` would give for the declared type (Python floats in
a ZipMap's maps become float32 0-d arrays, lists of numbers arrays), so
``compare(..., declared=)`` sees the types the model promises. Its arrays stay as
they are: an array of another type is what the runtime gave, for ``compare`` to
report.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from onnxdata.convert.build import build_message
from onnxdata.convert.common import SparseParts
from onnxdata.convert.exact_cast import exact_array
from onnxdata.core.dtypes import DATA_TYPES, KEY_TYPES, STRING
from onnxdata.core.messages import KindName
from onnxdata.errors import OnnxDataError
from onnxdata.model.types import DeclaredType

__all__ = ["as_declared", "parse_type", "prepare", "suggest_declared", "tensor_code"]

_NAMES = {dt.name.lower(): code for code, dt in DATA_TYPES.items()}
_TOKEN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*|[(),])")
_KINDS = {"tensor": "tensor", "sparse_tensor": "sparse_tensor", "sequence": "sequence",
          "seq": "sequence", "map": "map", "optional": "optional"}


def tensor_code(elem_type: object, what: str) -> int:
    """A tensor data type given as "float", "FLOAT", TensorProto.FLOAT or a numpy dtype."""
    if isinstance(elem_type, str) and elem_type.lower() in _NAMES:
        return _NAMES[elem_type.lower()]
    if isinstance(elem_type, (int, np.integer)) and not isinstance(elem_type, bool) \
            and int(elem_type) in DATA_TYPES:
        return int(elem_type)
    try:
        dtype = np.dtype(elem_type)  # type: ignore[call-overload]
    except TypeError:
        dtype = None
    if dtype is not None:
        from onnxdata.core.dtypes import data_type_for_dtype

        dt = data_type_for_dtype(dtype)
        if dt is not None:
            return dt.code
    raise OnnxDataError(f"{what}: {elem_type!r} is not an ONNX tensor data type "
                        "(float, int64, string, ...)")


def parse_type(text: str) -> DeclaredType:
    """``"map(string, tensor(float))"`` as a DeclaredType (ONNX's own spelling, as
    onnxruntime's ``NodeArg.type`` and ``onnxdata explore`` print it; ``seq`` too)."""
    tokens = _TOKEN.findall(text)
    if "".join(tokens) != re.sub(r"\s", "", text):
        raise OnnxDataError(f"declared type {text!r}: cannot read it")
    pos = 0

    def take(expected: str | None = None) -> str:
        nonlocal pos
        if pos >= len(tokens) or (expected is not None and tokens[pos] != expected):
            found = tokens[pos] if pos < len(tokens) else "the end"
            raise OnnxDataError(f"declared type {text!r}: expected {expected or 'a type'}, "
                                f"found {found}")
        pos += 1
        return str(tokens[pos - 1])

    def node() -> DeclaredType:
        word = take().lower()
        if word not in _KINDS:
            raise OnnxDataError(f"declared type {text!r}: {word!r} is not tensor, "
                                "sparse_tensor, seq(uence), map or optional")
        kind = _KINDS[word]
        take("(")
        if kind in ("tensor", "sparse_tensor"):
            out = DeclaredType(kind, tensor_code(take(), f"declared type {text!r}"))  # type: ignore[arg-type]
        elif kind == "map":
            key = tensor_code(take(), f"declared type {text!r}")
            if key not in KEY_TYPES:
                raise OnnxDataError(f"declared type {text!r}: {DATA_TYPES[key].name.lower()} "
                                    "is not a map key type")
            take(",")
            out = DeclaredType("map", key, element=node())
        else:
            out = DeclaredType(kind, element=node())  # type: ignore[arg-type]
        take(")")
        return out

    result = node()
    if pos != len(tokens):
        raise OnnxDataError(f"declared type {text!r}: unexpected {tokens[pos]!r} at the end")
    return result


def prepare(value: Any, declared: str | DeclaredType) -> tuple[Any, KindName, Any, Any]:
    """``(value, kind, elem_type, key_type)`` for ``from_numpy`` to build ``declared``.

    Nested optionals and typed empty lists and dicts become messages here (the
    way ``from_numpy`` nests them); everything else stays numpy, so ``write``
    still streams the large arrays. Every tensor's values are converted to its
    declared element type, or refused where that would lose something
    (``exact_array``).
    """
    t = parse_type(declared) if isinstance(declared, str) else declared
    key = t.elem_type if t.kind == "map" else None
    elem = t.element.kind if t.element is not None else None
    if t.kind == "optional" and t.element is not None:  # from_numpy makes the optional itself
        inner = None if value is None else _value(value, t.element, "value")
        return inner, t.kind, elem, key
    return _value(value, t, "value"), t.kind, elem, key


def _value(value: Any, t: DeclaredType, path: str) -> Any:
    if hasattr(value, "DESCRIPTOR"):
        return value  # a built message: from_numpy checks its kind
    if t.kind == "sparse_tensor":
        if isinstance(value, SparseParts):
            return value._replace(values=exact_array(value.values, t.elem_type, path))
        return exact_array(value, t.elem_type, path)
    if t.kind == "tensor":
        return exact_array(value, t.elem_type, path)
    assert t.element is not None
    if t.kind == "optional":
        if value is None:
            return build_message(None, "optional", t.element.kind)
        return build_message(_value(value, t.element, path), "optional", t.element.kind)
    if t.kind == "sequence":
        if not isinstance(value, (list, tuple)):
            raise OnnxDataError(f"{path}: declared {t} but got a {type(value).__name__}")
        if not value:
            return build_message([], "sequence", t.element.kind)
        return [_value(v, t.element, f"{path}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, dict):
        raise OnnxDataError(f"{path}: declared {t} but got a {type(value).__name__}")
    if not value:
        return build_message({}, "map", t.element.kind, t.elem_type)
    return {_key(k, t.elem_type, path): _value(v, t.element, f"{path}[{k!r}]")
            for k, v in value.items()}


def _key(key: Any, code: int, path: str) -> Any:
    if code == STRING:
        return key
    dtype = DATA_TYPES[code].dtype
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        info = np.iinfo(dtype)  # checked here: numpy 1.x wraps np.int8(1000) silently
        if info.min <= int(key) <= info.max:
            return dtype.type(key)
    raise OnnxDataError(f"{path}: key {key!r} is not a {DATA_TYPES[code].name.lower()}")


def as_declared(value: Any, declared: str | DeclaredType) -> Any:
    """``value`` (plain Python values from a runtime, such as ONNX Runtime's ZipMap output
    ``[{"a": 0.25}]``) as the numpy value a file of the ``declared`` type reads as.

    ``declared`` is ONNX's spelling of a type ("seq(map(string, tensor(float)))",
    what onnxruntime's ``NodeArg.type`` says) or a DeclaredType. Python numbers,
    bools and lists of them become ndarrays of the declared element type (0.25 in a
    ``tensor(float)`` place: a float32 0-d array), numpy scalars of that type 0-d
    arrays, tuples lists; None stays None (an empty optional); map keys, strings and
    ndarrays are left as they are, so a real mismatch (an int32 array where float is
    declared) is still reported by ``compare``. A Python number that the declared
    type cannot hold without loss (1.5 for ``tensor(int64)``, 300 for
    ``tensor(int8)``; ``exact_cast`` says which) or a value of the wrong shape of
    container (a dict where a sequence is declared) raises OnnxDataError naming its
    path.
    """
    t = parse_type(declared) if isinstance(declared, str) else declared
    return _as(value, t, "value")


def _as(value: Any, t: DeclaredType, path: str) -> Any:
    if value is None and t.kind in ("optional", "sequence", "map"):
        return None if t.kind == "optional" else value
    if t.kind == "optional":
        assert t.element is not None
        return _as(value, t.element, path)
    if t.kind == "sparse_tensor" or isinstance(value, np.ndarray) or hasattr(value,
                                                                             "DESCRIPTOR"):
        return value
    if t.kind == "tensor":
        dt = DATA_TYPES[t.elem_type]
        if isinstance(value, np.generic):
            return np.asarray(value) if value.dtype == dt.dtype else value
        if t.elem_type == STRING:
            return np.asarray(value, dtype=object) if isinstance(value, (list, tuple)) \
                else value
        if isinstance(value, (bool, int, float, complex, list, tuple)):
            return exact_array(value, t.elem_type, path)
        return value
    assert t.element is not None
    if t.kind == "sequence":
        if not isinstance(value, (list, tuple)):
            raise OnnxDataError(f"{path}: declared {t} but got a {type(value).__name__}")
        return [_as(v, t.element, f"{path}[{i}]") for i, v in enumerate(value)]
    if not isinstance(value, dict):
        raise OnnxDataError(f"{path}: declared {t} but got a {type(value).__name__}")
    return {k: _as(v, t.element, f"{path}[{k!r}]") for k, v in value.items()}


_PLAIN = {bool: "bool", int: "int64", float: "float", str: "string", bytes: "string"}


def suggest_declared(value: Any) -> str | None:
    """The ONNX type to pass as ``declared=`` for a value holding plain Python numbers or
    strings ([{"a": 0.25}] -> "seq(map(string, tensor(float)))", ZipMap's output), from
    its first items; None when it holds none."""
    if type(value) in _PLAIN:
        return f"tensor({_PLAIN[type(value)]})"
    if isinstance(value, (list, tuple)) and value:
        inner = suggest_declared(value[0])
        if inner is not None and all(type(v) in _PLAIN for v in value):
            return inner  # a list of numbers is one tensor
        return None if inner is None else f"seq({inner})"
    if isinstance(value, dict) and value:
        key, item = next(iter(value.items()))
        inner = suggest_declared(item)
        if inner is None or type(key) not in (int, str, bytes):
            return None
        return f"map({_PLAIN[type(key)]}, {inner})"
    return None
