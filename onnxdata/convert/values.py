"""Numpy values from ONNX data messages, and messages from numpy values.

``to_numpy`` reads a message (ours or the onnx package's) into a Python value;
``from_numpy`` builds our message from one. This module holds the entry points;
the readers are in ``convert.tensor``, ``convert.sparse`` and
``convert.containers``, the builders in ``convert.build``, and what both share in
``convert.common``. The values are:

=================  ==========================================================
message            value
=================  ==========================================================
TensorProto        ``numpy.ndarray`` of the data type's dtype (ml_dtypes for
                   bfloat16, float8, float8e8m0, int4/uint4, int2/uint2,
                   float4e2m1, float6). STRING gives an object array of
                   ``bytes``. ``raw_data`` gives a read-only view of the bytes
                   protobuf hands out, with no further copy; external data a
                   read-only copy, read through one descriptor that is closed
                   before returning (``onnxdata.wire.external``).
SparseTensorProto  a dense ndarray (at most ``get_densify_limit()`` bytes);
                   ``sparse_parts`` gives ``SparseParts(values, indices,
                   shape)`` without densifying, and ``from_numpy`` takes one.
SequenceProto      ``list``.
MapProto           ``dict``: keys are Python ``int`` for the integer key types
                   (UINT64 keys as their unsigned value) and ``bytes`` for
                   STRING keys.
OptionalProto      ``None`` when absent (elem_type UNDEFINED, or a typed empty
                   optional), else the value.
=================  ==========================================================

``to_numpy`` checks each message with the rules of ``onnxdata.rules.validation`` as
it reads it (one pass: ``raw_data``, which protobuf copies on each access, is
read once for both), and checks every count again before it reshapes or
allocates: it never returns a wrong answer quietly. Any fault raises the
``ValidationError`` ``validate`` raises, every problem with its path.

The bytes ``from_numpy`` builds
-------------------------------
``onnxdata.write`` streams the very same bytes without building a message, so
this is a contract, followed exactly (protobuf writes the fields in field
number order):

* TensorProto: ``dims`` always (one entry per axis; none for a 0-d array);
  ``data_type`` always; ``name`` only when non-empty. Numeric data always goes
  to ``raw_data``, which is always present (even empty), as little-endian
  bytes; the 2-, 4- and 6-bit types are packed LSB-first (element 0 in the
  lowest bits of byte 0), the last byte padded with zero bits. STRING goes to
  ``string_data``, one entry per element in C order (``str`` encoded as
  UTF-8), with no ``raw_data``.
* SparseTensorProto: ``values`` (a tensor, named with ``name`` when
  non-empty), ``indices`` (an INT64 tensor, never named, as given: [NNZ] or
  [NNZ, rank]) and ``dims``.
* SequenceProto: ``name`` only when non-empty, ``elem_type`` always, the
  elements in the field that matches it. Elements get no name.
* OptionalProto: ``name`` only when non-empty, ``elem_type`` always, written
  explicitly even when it is UNDEFINED (an empty optional ends ``10 00``); the
  value, when present, in the field that matches it, with no name.
* MapProto: ``name`` only when non-empty, ``key_type`` always, integer keys in
  ``keys`` (UINT64 keys of 2**63 and above as their two's-complement int64),
  string keys in ``string_keys``, and ``values`` always, as a SequenceProto
  with ``elem_type`` set and no name.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias, cast, overload

import numpy as np

from onnxdata.convert.build import build_message, infer_kind, utf8
from onnxdata.convert.common import (
    ElemTypeArg,
    KeyType,
    SparseParts,
    StrPath,
    message_kind,
)
from onnxdata.convert.containers import READERS
from onnxdata.convert.sparse import read_sparse_parts
from onnxdata.core.budget import get_densify_limit, sparse_need
from onnxdata.core.messages import (
    Kind,
    MapProto,
    Message,
    OptionalProto,
    SequenceProto,
    SparseTensorProto,
    TensorProto,
    kind_name,
)
from onnxdata.core.strings import Strings, convert_strings
from onnxdata.errors import OnnxDataError, no_memory_error
from onnxdata.model.types import DeclaredType
from onnxdata.rules.validation import validate_reference

__all__ = ["from_numpy", "sparse_parts", "to_numpy_reference"]


def _raise_if_invalid(message: object, base_dir: StrPath | None) -> None:
    """``validate``'s ValidationError, listing every problem, when ``message`` has any."""
    validate_reference(cast(Message, message), base_dir=base_dir)


# ---------------------------------------------------------------- to_numpy

@no_memory_error("message")
def to_numpy_reference(message: object, *, base_dir: StrPath | None = None,
             strings: Strings = "bytes") -> Any:
    """The numpy value of a message (see the module docstring for the mapping): the
    reference reader. ``onnxdata.to_numpy`` is ``io.message_values.to_numpy``, which reads
    containers through their bytes, falls back on this one, and carries the typed
    overloads (tensor -> ndarray, sequence -> list, map -> dict).

    ``base_dir`` is the folder external tensor data is read from. Any fault
    raises ``ValidationError`` with every problem ``validate`` finds.
    ``strings="str"`` gives STRING elements and string map keys as ``str``
    (UTF-8; what ONNX Runtime takes) instead of ``bytes``.

    One pass checks and reads: each message is checked with the very rules
    ``validate`` applies (``rules.validation.node_problems``, or ``quick_tensor``
    for the common tensor) before it is read, so ``raw_data``, which protobuf
    copies on every access, is read once. When anything fails, ``validate``
    runs on the whole message and its complete error is raised, so the error
    is the one validating first would give.
    """
    kind = message_kind(message)
    try:
        if kind not in ("tensor", "sparse_tensor"):  # holds one sparse tensor at most
            sparse_need(message, get_densify_limit())
        value = READERS[kind](message, "", base_dir, 0)
    except Exception:
        _raise_if_invalid(message, base_dir)  # validate's complete error, where it finds any
        raise
    return convert_strings(value, strings)


@no_memory_error("message")
def sparse_parts(message: object, *, base_dir: StrPath | None = None) -> SparseParts:
    """``SparseParts(values, indices, shape)`` of a SparseTensorProto, without densifying."""
    if message_kind(message) != "sparse_tensor":
        raise TypeError(f"sparse_parts takes a SparseTensorProto, not {type(message).__name__}")
    _raise_if_invalid(message, base_dir)
    return read_sparse_parts(message, "", base_dir)


# ---------------------------------------------------------------- from_numpy

KindArg: TypeAlias = "Kind | None"


@overload
def from_numpy(value: object, kind: None = None, *, declared: str | DeclaredType,
               name: str = "") -> Message: ...
@overload
def from_numpy(value: object, kind: Literal["sequence", "SequenceProto"] | type[SequenceProto], *,
               name: str = "", elem_type: ElemTypeArg | None = None,
               key_type: KeyType | None = None) -> SequenceProto: ...
@overload
def from_numpy(value: object, kind: Literal["optional", "OptionalProto"] | type[OptionalProto], *,
               name: str = "", elem_type: ElemTypeArg | None = None,
               key_type: KeyType | None = None) -> OptionalProto: ...
@overload
def from_numpy(value: object, kind: Literal["map", "MapProto"] | type[MapProto], *, name: str = "",
               elem_type: ElemTypeArg | None = None,
               key_type: KeyType | None = None) -> MapProto: ...
@overload
def from_numpy(value: object, kind: Literal["tensor", "TensorProto"] | type[TensorProto], *,
               name: str = "", elem_type: ElemTypeArg | None = None,
               key_type: KeyType | None = None) -> TensorProto: ...
@overload
def from_numpy(value: object,
               kind: Literal["sparse_tensor", "SparseTensorProto"] | type[SparseTensorProto],
               *, name: str = "", elem_type: ElemTypeArg | None = None,
               key_type: KeyType | None = None) -> SparseTensorProto: ...
@overload
def from_numpy(value: np.ndarray[Any, Any] | np.generic, kind: None = None, *, name: str = "",
               elem_type: ElemTypeArg | None = None,
               key_type: KeyType | None = None) -> TensorProto: ...
@overload
def from_numpy(value: SparseParts, kind: None = None, *, name: str = "",
               elem_type: ElemTypeArg | None = None,
               key_type: KeyType | None = None) -> SparseTensorProto: ...
@overload
def from_numpy(value: list[Any], kind: None = None, *, name: str = "",
               elem_type: ElemTypeArg | None = None,
               key_type: KeyType | None = None) -> SequenceProto: ...
@overload
def from_numpy(value: dict[Any, Any], kind: None = None, *, name: str = "",
               elem_type: ElemTypeArg | None = None,
               key_type: KeyType | None = None) -> MapProto: ...
@overload
def from_numpy(value: None, kind: None = None, *, name: str = "",
               elem_type: ElemTypeArg | None = None,
               key_type: KeyType | None = None) -> OptionalProto: ...
@overload
def from_numpy(value: object, kind: KindArg = None, *, name: str = "",
               elem_type: ElemTypeArg | None = None,
               key_type: KeyType | None = None) -> Message: ...
@no_memory_error("value")
def from_numpy(value: object, kind: KindArg = None, *, name: str = "",
               elem_type: ElemTypeArg | None = None,
               key_type: KeyType | None = None,
               declared: str | DeclaredType | None = None) -> Message:
    """Build a message from a numpy value.

    ``value`` is an ndarray or numpy scalar (any dtype ONNX has, ml_dtypes ones
    included; str/bytes/object arrays give STRING), a ``SparseParts``, a list
    or tuple, a dict, None, or an already built message (ours or onnx's, copied
    in: the way to nest a typed empty value inside another).

    ``kind`` ("tensor", "sparse_tensor", "sequence", "map", "optional", the
    message name such as "SequenceProto", or the class) defaults to the value's
    own: ndarray -> tensor, SparseParts -> sparse_tensor, list -> sequence,
    dict -> map, None -> optional.
    ``kind="optional"`` wraps any value in an OptionalProto.

    ``elem_type`` ("tensor", ..., or the SequenceProto code) is the element kind
    of a sequence or optional, or the kind of a map's values. It is required
    for an empty list or dict and gives a typed empty optional with None;
    otherwise it is inferred from all elements, never from the first alone. A
    list holding None is a sequence of optionals; any other mix of kinds, or of
    tensor data types, is an error.

    ``key_type`` (a TensorProto code, a name such as "int8" or "string", or a
    numpy dtype) is the key type of a map; required for an empty dict. Without
    it, keys that are all numpy integers of one dtype take that type, all
    Python ints take INT64, all bytes/str take STRING.

    ``declared`` is an ONNX type as a model declares it, such as
    ``"seq(map(string, tensor(float)))"`` (ZipMap's output): plain Python
    numbers, lists and dicts are then built as that type (``convert/declared.py``).
    For ``kind="tensor"``, ``elem_type`` may name the data type ("float",
    TensorProto.FLOAT) to build a tensor from Python numbers.

    The bytes of the result follow the contract in the module docstring.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__} ({name!r})")
    utf8(name, "name", "the name")
    value = with_arrays(value)
    if declared is None:
        try:
            return _from_numpy(value, kind, name, elem_type, key_type, None)
        except OnnxDataError as exc:
            raise _plain_python(exc, value) from None
    return _from_numpy(value, kind, name, elem_type, key_type, declared)


def _from_numpy(value: object, kind: KindArg, name: str, elem_type: ElemTypeArg | None,
                key_type: KeyType | None, declared: str | DeclaredType | None) -> Message:
    if declared is not None or (kind is not None and elem_type is not None
                                and kind_name(kind) == "tensor"):
        from onnxdata.convert.declared import prepare, tensor_code

        if declared is None:
            declared = DeclaredType("tensor", tensor_code(elem_type, "elem_type"))
        value, kind, elem_type, key_type = prepare(value, declared)
    k = infer_kind(value, "") if kind is None else kind_name(kind)
    return build_message(value, k, elem_type, key_type, name)


def _plain_python(exc: OnnxDataError, value: object) -> OnnxDataError:
    """A value of plain Python numbers (ZipMap's [{"a": 0.25}]) has no ONNX type of its own:
    the error says which ``declared=`` builds it, else it is ``exc`` as it was."""
    from onnxdata.convert.declared import suggest_declared

    if "cannot convert a value of type" not in str(exc):
        return exc
    suggestion = suggest_declared(value)
    if suggestion is None:
        return exc
    return OnnxDataError(f"{exc.args[0] if exc.args else exc}; plain Python values have no "
                         f"ONNX type of their own: pass declared=\"{suggestion}\" (ZipMap's "
                         "output is seq(map(string, tensor(float))) or seq(map(int64, "
                         "tensor(float))))")


def with_arrays(value: object) -> object:
    """``value`` with every object that has ``__array__`` but is not numpy (an onnx_ir
    tensor, a torch tensor on the CPU) as its ndarray, inside lists and dicts too; the
    same object when there is none."""
    if isinstance(value, (np.ndarray, np.generic, str, bytes, SparseParts)) or value is None \
            or hasattr(value, "DESCRIPTOR"):
        return value
    if isinstance(value, (list, tuple)):
        items = [with_arrays(v) for v in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        pairs = {k: with_arrays(v) for k, v in value.items()}
        if all(pairs[k] is v for k, v in value.items()):
            return value
        return pairs
    if hasattr(value, "__array__"):
        return np.asarray(value)
    return value
