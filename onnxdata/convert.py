"""Numpy values from ONNX data messages, and messages from numpy values.

``to_numpy`` reads a message (ours or the onnx package's) into a Python value;
``from_numpy`` builds our message from one. The values are:

=================  ==========================================================
message            value
=================  ==========================================================
TensorProto        ``numpy.ndarray`` of the data type's dtype (ml_dtypes for
                   bfloat16, float8, float8e8m0, int4/uint4, int2/uint2,
                   float4e2m1, float6). STRING gives an object array of
                   ``bytes``. ``raw_data`` gives a read-only view of the bytes
                   protobuf hands out, with no further copy; external data a
                   read-only copy, read through one descriptor that is closed
                   before returning (``onnxdata.external``).
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

``to_numpy`` checks each message with the rules of ``onnxdata.validation`` as
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

import math
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeAlias, Union, cast, overload

import numpy as np
import numpy.typing as npt

from onnxdata.budget import sparse_need, spend
from onnxdata.dtypes import (
    DATA_TYPES,
    KEY_TYPES,
    STRING,
    DataType,
    data_type_for_dtype,
    raw_nbytes,
    typed_count,
)
from onnxdata.errors import OnnxDataError, Problem, ValidationError, no_memory_error
from onnxdata.external import read_external
from onnxdata.messages import (
    Kind,
    MapProto,
    Message,
    OptionalProto,
    SequenceProto,
    SparseTensorProto,
    TensorProto,
    kind_name,
)
from onnxdata.model_types import DeclaredType
from onnxdata.rules_common import DEFAULT_MAX_DEPTH
from onnxdata.rules_containers import element_type_problems, nested_type
from onnxdata.rules_tensor import entries_in_range, repeated_array
from onnxdata.strings import Strings, convert_strings
from onnxdata.uniform import MIN_TENSORS, uniform_raw_arrays
from onnxdata.validation import PlainTensor, node_problems, quick_tensor, too_deep, validate

__all__ = [
    "SparseParts",
    "from_numpy",
    "get_densify_limit",
    "set_densify_limit",
    "sparse_parts",
    "to_numpy",
    # helpers the fast reader and writer share (not exported from the package)
    "densify",
    "from_le_bytes",
    "le_bytes",
    "unpack_bits",
]

Array: TypeAlias = "npt.NDArray[Any]"
StrPath: TypeAlias = Union[str, "os.PathLike[str]"]
ElemType: TypeAlias = "int | str"
KeyType: TypeAlias = Union[int, str, "npt.DTypeLike"]


class SparseParts(NamedTuple):
    """A sparse tensor without densifying: 1-D ``values``, INT64 ``indices``
    ([NNZ] linear, row-major, or [NNZ, rank] coordinates) and the dense ``shape``."""

    values: Array
    indices: Array
    shape: tuple[int, ...]


# ---------------------------------------------------------------- the densify cap

_limit_lock = threading.Lock()
_densify_limit = 1 << 30


def get_densify_limit() -> int:
    """The most bytes one ``to_numpy`` or ``read`` call allocates to densify sparse
    tensors, all of them together (``onnxdata.budget``)."""
    return _densify_limit


def set_densify_limit(nbytes: int) -> int:
    """Set the densify cap in bytes (default 1 GiB); returns the previous cap."""
    global _densify_limit
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
        raise ValueError(f"the densify limit must be an int >= 0, not {nbytes!r}")
    with _limit_lock:
        previous, _densify_limit = _densify_limit, nbytes
    return previous


# ---------------------------------------------------------------- codes and paths

# SequenceProto / OptionalProto element types, and the field holding each.
UNDEFINED, TENSOR, SPARSE_TENSOR, SEQUENCE, MAP, OPTIONAL = range(6)
_ELEM_NAMES = ("UNDEFINED", "TENSOR", "SPARSE_TENSOR", "SEQUENCE", "MAP", "OPTIONAL")
_KINDS = ("", "tensor", "sparse_tensor", "sequence", "map", "optional")
_SEQ_FIELDS = ("", "tensor_values", "sparse_tensor_values", "sequence_values", "map_values",
               "optional_values")
_OPT_FIELDS = ("", "tensor_value", "sparse_tensor_value", "sequence_value", "map_value",
               "optional_value")
_TYPED_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data",
                 "uint64_data")
_EXTERNAL = 1
_MAX_DIMS = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32
_MAX_INTP = int(np.iinfo(np.intp).max)
_FIELD_DTYPES = {"float_data": np.float32, "double_data": np.float64, "int32_data": np.int32,
                 "int64_data": np.int64, "uint64_data": np.uint64}
_U64 = (1 << 64) - 1


def _at(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _fail(path: str, message: str) -> ValidationError:
    return ValidationError([Problem(path, message)])


def _elem_name(code: int) -> str:
    return _ELEM_NAMES[code] if 0 <= code < len(_ELEM_NAMES) else str(code)


def _message_kind(message: object) -> str:
    descriptor = getattr(message, "DESCRIPTOR", None)
    name = getattr(descriptor, "name", None)
    for kind, cls in (("tensor", TensorProto), ("sparse_tensor", SparseTensorProto),
                      ("sequence", SequenceProto), ("optional", OptionalProto),
                      ("map", MapProto)):
        if name == cls.DESCRIPTOR.name:
            return kind
    raise TypeError(
        f"to_numpy takes a TensorProto, SparseTensorProto, SequenceProto, MapProto or "
        f"OptionalProto (ours or onnx's), not {type(message).__name__}"
    )


def _validate(message: object, base_dir: StrPath | None) -> None:
    validate(cast(Message, message), base_dir=base_dir)


# ---------------------------------------------------------------- to_numpy

@overload
def to_numpy(message: TensorProto, *, base_dir: StrPath | None = None,
             strings: Strings = "bytes") -> Array: ...
@overload
def to_numpy(message: SparseTensorProto, *, base_dir: StrPath | None = None,
             strings: Strings = "bytes") -> Array: ...
@overload
def to_numpy(message: SequenceProto, *, base_dir: StrPath | None = None,
             strings: Strings = "bytes") -> list[Any]: ...
@overload
def to_numpy(message: MapProto, *, base_dir: StrPath | None = None,
             strings: Strings = "bytes") -> dict[Any, Any]: ...
@overload
def to_numpy(message: object, *, base_dir: StrPath | None = None,
             strings: Strings = "bytes") -> Any: ...
@no_memory_error("message")
def to_numpy(message: object, *, base_dir: StrPath | None = None,
             strings: Strings = "bytes") -> Any:
    """The numpy value of a message (see the module docstring for the mapping).

    ``base_dir`` is the folder external tensor data is read from. Any fault
    raises ``ValidationError`` with every problem ``validate`` finds.
    ``strings="str"`` gives STRING elements and string map keys as ``str``
    (UTF-8; what ONNX Runtime takes) instead of ``bytes``.

    One pass checks and reads: each message is checked with the very rules
    ``validate`` applies (``validation.node_problems``, or ``quick_tensor``
    for the common tensor) before it is read, so ``raw_data``, which protobuf
    copies on every access, is read once. When anything fails, ``validate``
    runs on the whole message and its complete error is raised, so the error
    is the one validating first would give.
    """
    kind = _message_kind(message)
    try:
        if kind not in ("tensor", "sparse_tensor"):  # holds one sparse tensor at most
            sparse_need(message, _densify_limit)
        value = _READERS[kind](message, "", base_dir, 0)
    except Exception:
        _validate(message, base_dir)  # raises ValidationError when validate finds problems
        raise
    return convert_strings(value, strings)


@no_memory_error("message")
def sparse_parts(message: object, *, base_dir: StrPath | None = None) -> SparseParts:
    """``SparseParts(values, indices, shape)`` of a SparseTensorProto, without densifying."""
    if _message_kind(message) != "sparse_tensor":
        raise TypeError(f"sparse_parts takes a SparseTensorProto, not {type(message).__name__}")
    _validate(message, base_dir)
    return _sparse_parts(message, "", base_dir)


def _dims(dims: Sequence[int], path: str, itemsize: int = 1) -> tuple[tuple[int, ...], int]:
    shape = tuple(dims)
    for i, d in enumerate(shape):
        if d < 0:
            raise _fail(_at(path, f"dims[{i}]"), f"dimension {d} is negative")
    if len(shape) > _MAX_DIMS:
        raise _fail(_at(path, "dims"), f"{len(shape)} dimensions; numpy holds at most "
                    f"{_MAX_DIMS}")
    # numpy refuses a shape whose nonzero dims times the item size pass intp, even with
    # a 0 among them (densify checks a sparse tensor's once its values' dtype is known).
    if math.prod(d for d in shape if d) * itemsize > _MAX_INTP:
        raise _fail(_at(path, "dims"), f"dims {list(shape)} are too large for a numpy array")
    return shape, math.prod(shape)


_LITTLE = sys.byteorder == "little"
# The data types whose raw_data numpy reads as it stands: whole bytes per element.
_PLAIN_RAW: dict[int, tuple[np.dtype[Any], int]] = {
    code: (dt.dtype, dt.dtype.itemsize) for code, dt in DATA_TYPES.items()
    if not dt.is_string and not dt.sub_byte and (_LITTLE or dt.dtype.itemsize == 1)
}


def _check(path: str, message: Any, base_dir: StrPath | None, depth: int) -> None:
    """Raise ValidationError when ``message`` itself breaks a rule of ``validate``."""
    if depth > DEFAULT_MAX_DEPTH:
        raise ValidationError([too_deep(path)])
    found = node_problems(path, message, base_dir, tensor_types=False)
    if found:
        raise ValidationError(found)


def _tensor_node(t: Any, path: str, base_dir: StrPath | None, depth: int = 0) -> Array:
    """A tensor, checked as ``validate`` checks it, then read."""
    plain = quick_tensor(t) if depth <= DEFAULT_MAX_DEPTH else None
    if plain is None:
        _check(path, t, base_dir, depth)
        return _read_tensor(t, path, base_dir)
    fast = _plain_raw(plain)
    return fast if fast is not None else _plain_value(plain, t, path)


def _plain_raw(plain: PlainTensor) -> Array | None:
    """The common tensor's array from the raw_data quick_tensor read: whole-byte elements,
    no zero dims (so the size check made the shape right); None for anything else."""
    code, dims, raw, _, _ = plain
    if raw is None:
        return None
    fmt = _PLAIN_RAW.get(code)
    if fmt is None or len(dims) > _MAX_DIMS or (dims and min(dims) <= 0):
        return None
    arr = np.frombuffer(raw, dtype=fmt[0])
    return arr if len(dims) == 1 else arr.reshape(dims)


def _plain_value(plain: PlainTensor, t: Any, path: str) -> Array:
    """A tensor quick_tensor found valid, from what it read (raw_data or the typed array)."""
    code, dims, raw, entries, array = plain
    dt = DATA_TYPES[code]
    shape, count = _dims(dims, path, dt.dtype.itemsize)
    if raw is not None:
        return from_le_bytes(raw, dt, count, 0).reshape(shape)
    if dt.is_string:
        out = np.empty(count, dtype=object)
        if count:
            out[:] = list(entries)
        return out.reshape(shape)
    return _from_typed(t, path, dt, shape, count, array)


def _read_tensor(t: Any, path: str, base_dir: StrPath | None) -> Array:
    # The common case first, with the checks that make the reshape right:
    # raw_data of whole-byte elements whose length is exactly what dims need.
    plain = _PLAIN_RAW.get(t.data_type)
    if plain is not None and t.HasField("raw_data") and not t.data_location:
        shape = tuple(t.dims)
        raw = t.raw_data
        count = math.prod(shape)
        if count > 0 and len(shape) <= _MAX_DIMS and min(shape, default=1) > 0 \
                and len(raw) == count * plain[1]:
            return np.frombuffer(raw, dtype=plain[0]).reshape(shape)
    return _read_tensor_checked(t, path, base_dir)


def _read_tensor_checked(t: Any, path: str, base_dir: StrPath | None) -> Array:
    code = t.data_type
    dt = DATA_TYPES.get(code)
    if dt is None:
        raise _fail(_at(path, "data_type"), f"data type {code} is not a known ONNX data type")
    shape, count = _dims(t.dims, path, dt.dtype.itemsize)
    if t.HasField("segment"):
        raise _fail(_at(path, "segment"), "segmented tensors are not supported")
    external = t.data_location == _EXTERNAL
    has_raw = t.HasField("raw_data")
    for field in _TYPED_FIELDS:
        if (external or has_raw or field != dt.field) and len(getattr(t, field)):
            other = "external data" if external else "raw_data" if has_raw else dt.field
            raise _fail(_at(path, field), f"{dt.name} data is in {other}, but {field} holds "
                        f"{len(getattr(t, field))} entries too")
    if dt.is_string:
        if external or has_raw:
            raise _fail(_at(path, "raw_data"), "STRING tensors keep their data in string_data")
        n = len(t.string_data)
        if n != count:
            raise _fail(_at(path, "string_data"),
                        f"{n} strings, but dims {list(shape)} need {count}")
        out = np.empty(count, dtype=object)
        if count:
            out[:] = list(t.string_data)
        return out.reshape(shape)
    if external:
        if has_raw:
            raise _fail(_at(path, "raw_data"), "an external tensor must not hold raw_data")
        buf, offset = _external(t, path, dt, count, base_dir)
        return from_le_bytes(buf, dt, count, offset).reshape(shape)
    if has_raw:
        raw = t.raw_data
        need = raw_nbytes(dt, count)
        if len(raw) != need:
            raise _fail(_at(path, "raw_data"), f"{len(raw)} bytes, but dims {list(shape)} of "
                        f"{dt.name} need {need}")
        return from_le_bytes(raw, dt, count, 0).reshape(shape)
    return _from_typed(t, path, dt, shape, count)


def from_le_bytes(buf: Any, dt: DataType, count: int, offset: int) -> Array:
    """``count`` elements of ``dt`` from little-endian bytes at ``offset``, a view if it can be."""
    if dt.sub_byte:
        packed = np.frombuffer(buf, dtype=np.uint8, count=raw_nbytes(dt, count), offset=offset)
        return unpack_bits(packed, dt.bits, count).view(dt.dtype)
    dtype = dt.dtype
    if dtype.itemsize == 1 or sys.byteorder == "little":
        return np.frombuffer(buf, dtype=dtype, count=count, offset=offset)
    part = dtype.itemsize // (2 if dtype.kind == "c" else 1)  # pragma: no cover (big-endian)
    words = np.frombuffer(buf, dtype=f"<u{part}", count=count * dtype.itemsize // part,
                          offset=offset)
    return words.astype(f"=u{part}").view(dtype)


def unpack_bits(packed: Array, bits: int, count: int) -> Array:
    """Unpack LSB-first ``bits``-wide codes: one uint8 per element."""
    if 8 % bits == 0:
        shifts = np.arange(0, 8, bits, dtype=np.uint8)
        codes = (packed[:, None] >> shifts) & np.uint8((1 << bits) - 1)
        return np.ascontiguousarray(codes.reshape(-1)[:count])
    stream = np.unpackbits(packed, bitorder="little")[: count * bits].reshape(count, bits)
    return np.packbits(stream, axis=1, bitorder="little").reshape(count)


def _pack_bits(codes: Array, bits: int) -> bytes:
    """Pack uint8 codes (their low ``bits`` bits) LSB-first, the last byte zero-padded."""
    mask = np.uint8((1 << bits) - 1)
    if 8 % bits == 0:
        per = 8 // bits
        padded = np.zeros(-(-codes.size // per) * per, dtype=np.uint8)
        padded[: codes.size] = codes & mask
        shifts = np.arange(0, 8, bits, dtype=np.uint8)
        packed: Array = np.bitwise_or.reduce(padded.reshape(-1, per) << shifts, axis=1)
        return packed.tobytes()
    stream = np.unpackbits((codes & mask)[:, None], axis=1, bitorder="little")[:, :bits]
    return np.packbits(stream.reshape(-1), bitorder="little").tobytes()


def _from_typed(t: Any, path: str, dt: DataType, shape: tuple[int, ...], count: int,
                values: Array | None = None) -> Array:
    """The array of a tensor stored in its typed field. ``values`` are the entries as
    numpy when quick_tensor already read them and found them in range."""
    check = _check_range if values is None else _in_range_already
    field = getattr(t, dt.field)
    n = len(field)
    need = typed_count(dt, count)
    fpath = _at(path, dt.field)
    if n != need:
        raise _fail(fpath, f"{n} entries, but dims {list(shape)} of {dt.name} need {need}")
    if values is None or len(values) != n:
        check = _check_range
        values = repeated_array(field, np.dtype(_FIELD_DTYPES[dt.field]))
    if dt.field in ("float_data", "double_data"):
        return values.view(dt.dtype).reshape(shape)
    if dt.field == "int64_data":
        return values.reshape(shape)
    if dt.field == "uint64_data":
        if dt.dtype.itemsize < 8:
            check(values, 0, 2**32 - 1, fpath, dt.name)
        return values.astype(dt.dtype).reshape(shape)
    # int32_data: small integers and bool, or the bits of the types stored bit-wise.
    if dt.bit_view is None:
        info = (0, 1) if dt.dtype == np.bool_ else (
            int(np.iinfo(dt.dtype).min), int(np.iinfo(dt.dtype).max))
        check(values, info[0], info[1], fpath, dt.name)
        return _narrow(values, dt.dtype).reshape(shape)
    width = dt.bits * dt.per_entry
    check(values, 0, (1 << width) - 1, fpath, f"{dt.name} bits")
    if dt.per_entry > 1:
        codes = unpack_bits(values.astype(np.uint8), dt.bits, count)
        return codes.view(dt.dtype).reshape(shape)
    return _narrow(values, dt.dtype).reshape(shape)


def _narrow(values: Array, dtype: np.dtype[Any]) -> Array:
    """int32 entries already checked to fit ``dtype``'s bits, as ``dtype``.

    On a little-endian host each entry's low bytes are the element, so this is
    a strided view of them: no second pass over the data (the entries were
    just copied out of protobuf for this array alone, so nothing else shares them).
    """
    step = values.dtype.itemsize // dtype.itemsize
    if _LITTLE and values.ndim == 1 and values.flags.c_contiguous:
        return values.view(dtype)[::step]
    if dtype.kind in "iub":  # pragma: no cover (big-endian hosts)
        return values.astype(dtype)
    return values.astype(f"u{dtype.itemsize}").view(dtype)  # pragma: no cover


def _in_range_already(values: Array, lo: int, hi: int, path: str, what: str) -> None:
    """quick_tensor checked these entries against the same range (typed_entry_range)."""


def _check_range(values: Array, lo: int, hi: int, path: str, what: str) -> None:
    if entries_in_range(values, lo, hi):
        return
    bad = np.flatnonzero((values < lo) | (values > hi))
    if bad.size:
        i = int(bad[0])
        raise _fail(f"{path}[{i}]", f"{values[i]} is outside {lo}..{hi} for {what}"
                    + (f" ({bad.size} entries are)" if bad.size > 1 else ""))


def _external(t: Any, path: str, dt: DataType, count: int,
              base_dir: StrPath | None) -> tuple[Any, int]:
    """A read-only buffer over the external file and the offset of the data in it."""
    entries = {e.key: e.value for e in t.external_data}
    epath = _at(path, "external_data")
    location = entries.get("location")
    if not location:
        raise _fail(epath, "external data has no location")
    numbers: dict[str, int] = {}
    for key in ("offset", "length"):
        text = entries.get(key)
        if text is None:
            continue
        if not text.isdigit():
            raise _fail(epath, f"{key} {text!r} is not an integer >= 0")
        numbers[key] = int(text)
    if base_dir is None:
        raise OnnxDataError(f"{path or 'tensor'}: its data is in the external file {location!r}; "
                            "pass base_dir, the folder that holds it")
    if Path(location).is_absolute():
        raise _fail(epath, f"location {location!r} is absolute; it must be relative to base_dir")
    need = raw_nbytes(dt, count)
    offset = numbers.get("offset", 0)
    if numbers.get("length", need) != need:
        raise _fail(epath, f"length {numbers['length']}, but {dt.name} dims need {need} bytes")
    return read_external(base_dir, location, offset, need, where=epath), 0


def _sparse_parts(sp: Any, path: str, base_dir: StrPath | None, *,
                  known: dict[str, Array] | None = None, checked: bool = False) -> SparseParts:
    """Values, indices and shape; ``known`` holds parts already read, and ``checked`` says
    the indices were found inside dims (``validate``'s rules) so are not looked at again."""
    known = known or {}
    shape, total = _dims(sp.dims, path)
    vpath, ipath = _at(path, "values"), _at(path, "indices")
    if not sp.HasField("values"):
        raise _fail(vpath, "a sparse tensor needs values")
    values = known.get("values")
    if values is None:
        values = _read_tensor(sp.values, vpath, base_dir)
    if values.ndim != 1:
        raise _fail(_at(vpath, "dims"), f"values must be 1-D, not {values.ndim}-D")
    nnz = values.shape[0]
    if not sp.HasField("indices"):
        if nnz:
            raise _fail(ipath, f"{nnz} values but no indices")
        return SparseParts(values, np.zeros((0,), dtype=np.int64), shape)
    if sp.indices.data_type != 7:
        raise _fail(_at(ipath, "data_type"), f"indices must be INT64 (7), not "
                    f"{sp.indices.data_type}")
    indices = known.get("indices")
    if indices is None:
        indices = _read_tensor(sp.indices, ipath, base_dir)
    rank = len(shape)
    if indices.ndim == 1 and indices.shape[0] == nnz:
        bounds: Any = total
    elif indices.ndim == 2 and indices.shape == (nnz, rank):
        bounds = np.asarray(shape, dtype=np.int64)
    else:
        raise _fail(_at(ipath, "dims"), f"indices must be [{nnz}] or [{nnz}, {rank}] for "
                    f"{nnz} values in dims {list(shape)}, not {list(indices.shape)}")
    bad = np.zeros((0, 1)) if checked else np.argwhere((indices < 0) | (indices >= bounds))
    if bad.size:
        where = "[" + ", ".join(str(int(i)) for i in bad[0]) + "]"
        raise _fail(f"{ipath}{where}", f"index {indices[tuple(bad[0])]} lies outside dims "
                    f"{list(shape)}")
    return SparseParts(values, indices, shape)


def densify_cost(parts: SparseParts) -> tuple[int, str]:
    """The bytes densifying ``parts`` allocates, and what they are for the budget's message."""
    values, _, shape = parts
    return math.prod(shape) * values.dtype.itemsize, f"dims {list(shape)} of {values.dtype}"


def densify(parts: SparseParts, path: str, *, spent: bool = False,
            checked: bool = False) -> Array:
    """The dense array of ``parts``; ``spent`` when the caller already took its bytes from
    the call's budget (``read`` does, for every sparse tensor, before densifying any);
    ``checked`` when the indices were found ascending and inside dims (``validate``'s
    rules: ``to_numpy`` and ``read`` check them first), so they are not looked at again."""
    values, indices, shape = parts
    total = math.prod(shape)
    itemsize = values.dtype.itemsize
    nbytes, what = densify_cost(parts)
    if not spent:
        spend(nbytes, _densify_limit, path, what)
    if math.prod(d for d in shape if d) * itemsize > _MAX_INTP:  # a 0 among huge dims
        raise _fail(_at(path, "dims"), f"dims {list(shape)} are too large for a numpy array "
                    f"of {values.dtype}")
    try:
        if values.dtype == object:
            out = np.full(total, b"", dtype=object)
        else:
            out = np.zeros(total, dtype=values.dtype)
    except MemoryError as exc:
        raise OnnxDataError(f"{path or 'sparse tensor'}: out of memory densifying "
                            f"{list(shape)} of {values.dtype} ({nbytes} bytes)") from exc
    if indices.ndim == 2:
        if shape and indices.size and not checked and (bool((indices < 0).any())
                                       or bool((indices >= np.array(shape)).any())):
            raise _fail(_at(path, "indices"), f"an index lies outside dims {list(shape)}")
        linear = (np.ravel_multi_index(tuple(indices.T), shape) if shape
                  else np.zeros(len(indices), dtype=np.intp))
    else:
        linear = indices
    # The rule is strictly ascending (lexicographic rows are ascending linear indices),
    # which rules out duplicates too: one comparison pass, not a sort.
    if not checked and linear.size > 1 and not bool((linear[1:] > linear[:-1]).all()):
        raise _fail(_at(path, "indices"), "indices must be ascending without duplicates")
    if not checked and linear.size and (int(linear[0]) < 0 or int(linear[-1]) >= total):
        raise _fail(_at(path, "indices"), f"an index lies outside [0, {total})")
    out[linear] = values
    return out.reshape(shape)


def _read_sparse(sp: Any, path: str, base_dir: StrPath | None, depth: int = 0) -> Array:
    """A sparse tensor checked as ``validate`` checks it (its index rules included), then
    densified without checking its indices again; parts the check read are used as read."""
    _check(path, sp, base_dir, depth)
    known: dict[str, Array] = {}
    for field in ("values", "indices"):
        if sp.HasField(field):
            child = getattr(sp, field)
            plain = quick_tensor(child) if depth + 1 <= DEFAULT_MAX_DEPTH else None
            if plain is None:
                _check(_at(path, field), child, base_dir, depth + 1)
            elif (fast := _plain_raw(plain)) is not None:
                known[field] = fast
    return densify(_sparse_parts(sp, path, base_dir, known=known, checked=True), path,
                   checked=True)


def _read_sequence(s: Any, path: str, base_dir: StrPath | None, depth: int = 0) -> list[Any]:
    _check(path, s, base_dir, depth)
    et = s.elem_type
    if not TENSOR <= et <= OPTIONAL:
        raise _fail(_at(path, "elem_type"), f"elem_type {_elem_name(et)} is not an element kind")
    for code in range(TENSOR, OPTIONAL + 1):
        if code != et and len(getattr(s, _SEQ_FIELDS[code])):
            raise _fail(_at(path, _SEQ_FIELDS[code]), f"elements here, but elem_type is "
                        f"{_elem_name(et)}")
    field = _SEQ_FIELDS[et]
    elems = getattr(s, field)
    if et == TENSOR:
        if depth + 1 <= DEFAULT_MAX_DEPTH and len(elems) >= MIN_TENSORS:
            arrays = uniform_raw_arrays(s, elems, quick_tensor(elems[0]), _PLAIN_RAW)
            if arrays is not None:  # every tensor valid, one layout: views of one buffer
                return arrays
        return _read_tensors(elems, _at(path, field), base_dir, depth + 1)
    read = _READERS[_KINDS[et]]
    out = [read(e, f"{_at(path, field)}[{i}]", base_dir, depth + 1) for i, e in enumerate(elems)]
    if et == SPARSE_TENSOR and out:
        codes = {e.values.data_type for e in elems}
        if len(codes) > 1:
            raise _fail(_at(path, field), f"elements of data types {sorted(codes)} in one "
                        "sequence")
    return out


def _read_tensors(elems: Any, where: str, base_dir: StrPath | None, depth: int) -> list[Any]:
    """A sequence's tensors, each checked (quick_tensor first) and read; one data type."""
    out: list[Any] = []
    append = out.append
    codes: set[int] = set()
    quick = quick_tensor if depth <= DEFAULT_MAX_DEPTH else _unsure
    raw_formats = _PLAIN_RAW
    for i, e in enumerate(elems):
        plain = quick(e)
        if plain is not None:
            code, dims, raw = plain[0], plain[1], plain[2]
            codes.add(code)
            fmt = raw_formats.get(code)
            # the common case inline: _plain_raw's conditions, one dim
            if raw is not None and fmt is not None and len(dims) == 1 and dims[0] > 0:
                append(np.frombuffer(raw, dtype=fmt[0]))
                continue
            value = _plain_raw(plain)
            append(value if value is not None else _plain_value(plain, e, f"{where}[{i}]"))
            continue
        codes.add(e.data_type)
        here = f"{where}[{i}]"
        _check(here, e, base_dir, depth)
        append(_read_tensor(e, here, base_dir))
    if len(codes) > 1:
        raise _fail(where, f"elements of data types {sorted(codes)} in one sequence")
    return out


def _unsure(t: Any) -> None:
    """Below max_depth nothing is vouched for: _check reports the depth."""
    return None


def _read_map(m: Any, path: str, base_dir: StrPath | None, depth: int = 0) -> dict[Any, Any]:
    _check(path, m, base_dir, depth)
    kt = m.key_type
    if kt not in KEY_TYPES:
        raise _fail(_at(path, "key_type"), f"key_type {kt} is not an integer type or STRING")
    keys: list[Any]
    if kt == STRING:
        if len(m.keys):
            raise _fail(_at(path, "keys"), "STRING keys belong in string_keys")
        keys = list(m.string_keys)
    else:
        if len(m.string_keys):
            raise _fail(_at(path, "string_keys"), "integer keys belong in keys")
        keys = list(m.keys)
        dtype = DATA_TYPES[kt].dtype
        if dtype == np.uint64:
            keys = [k & _U64 for k in keys]
        else:
            lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
            for i, k in enumerate(keys):
                if not lo <= k <= hi:
                    raise _fail(f"{_at(path, 'keys')}[{i}]", f"key {k} is outside "
                                f"{lo}..{hi} for {DATA_TYPES[kt].name}")
    if not m.HasField("values"):
        raise _fail(_at(path, "values"), "a map needs values")
    vpath = _at(path, "values")
    if m.values.elem_type not in (TENSOR, SPARSE_TENSOR, SEQUENCE, MAP):
        raise _fail(_at(vpath, "elem_type"), f"map values cannot be "
                    f"{_elem_name(m.values.elem_type)}")
    values = _read_sequence(m.values, vpath, base_dir, depth + 1)
    if len(keys) != len(values):
        raise _fail(path, f"{len(keys)} keys but {len(values)} values")
    out = dict(zip(keys, values, strict=True))
    if len(out) != len(keys):
        raise _fail(path, "a key appears twice")
    return out


def _read_optional(o: Any, path: str, base_dir: StrPath | None, depth: int = 0) -> Any:
    _check(path, o, base_dir, depth)
    et = o.elem_type
    if not UNDEFINED <= et <= OPTIONAL:
        raise _fail(_at(path, "elem_type"), f"elem_type {et} is not known")
    for code in range(TENSOR, OPTIONAL + 1):
        if code != et and o.HasField(_OPT_FIELDS[code]):
            raise _fail(_at(path, _OPT_FIELDS[code]), f"a value here, but elem_type is "
                        f"{_elem_name(et)}")
    if et == UNDEFINED or not o.HasField(_OPT_FIELDS[et]):
        return None
    return _READERS[_KINDS[et]](getattr(o, _OPT_FIELDS[et]), _at(path, _OPT_FIELDS[et]),
                                base_dir, depth + 1)


#: The readers to_numpy uses, by kind: (message, path, base_dir, depth) -> value. Each
#: checks its message with validate's rules before reading it.
_READERS: dict[str, Callable[[Any, str, StrPath | None, int], Any]] = {
    "tensor": _tensor_node,
    "sparse_tensor": _read_sparse,
    "sequence": _read_sequence,
    "map": _read_map,
    "optional": _read_optional,
}


# ---------------------------------------------------------------- from_numpy

KindArg: TypeAlias = "Kind | None"


@overload
def from_numpy(value: object, kind: None = None, *, declared: str | DeclaredType,
               name: str = "") -> Message: ...
@overload
def from_numpy(value: object, kind: Literal["sequence", "SequenceProto"] | type[SequenceProto], *,
               name: str = "", elem_type: ElemType | None = None,
               key_type: KeyType | None = None) -> SequenceProto: ...
@overload
def from_numpy(value: object, kind: Literal["optional", "OptionalProto"] | type[OptionalProto], *,
               name: str = "", elem_type: ElemType | None = None,
               key_type: KeyType | None = None) -> OptionalProto: ...
@overload
def from_numpy(value: object, kind: Literal["map", "MapProto"] | type[MapProto], *, name: str = "",
               elem_type: ElemType | None = None,
               key_type: KeyType | None = None) -> MapProto: ...
@overload
def from_numpy(value: object, kind: Literal["tensor", "TensorProto"] | type[TensorProto], *,
               name: str = "", elem_type: ElemType | None = None,
               key_type: KeyType | None = None) -> TensorProto: ...
@overload
def from_numpy(value: object,
               kind: Literal["sparse_tensor", "SparseTensorProto"] | type[SparseTensorProto],
               *, name: str = "", elem_type: ElemType | None = None,
               key_type: KeyType | None = None) -> SparseTensorProto: ...
@overload
def from_numpy(value: np.ndarray[Any, Any] | np.generic, kind: None = None, *, name: str = "",
               elem_type: ElemType | None = None,
               key_type: KeyType | None = None) -> TensorProto: ...
@overload
def from_numpy(value: SparseParts, kind: None = None, *, name: str = "",
               elem_type: ElemType | None = None,
               key_type: KeyType | None = None) -> SparseTensorProto: ...
@overload
def from_numpy(value: list[Any], kind: None = None, *, name: str = "",
               elem_type: ElemType | None = None,
               key_type: KeyType | None = None) -> SequenceProto: ...
@overload
def from_numpy(value: dict[Any, Any], kind: None = None, *, name: str = "",
               elem_type: ElemType | None = None,
               key_type: KeyType | None = None) -> MapProto: ...
@overload
def from_numpy(value: None, kind: None = None, *, name: str = "",
               elem_type: ElemType | None = None,
               key_type: KeyType | None = None) -> OptionalProto: ...
@overload
def from_numpy(value: object, kind: KindArg = None, *, name: str = "",
               elem_type: ElemType | None = None,
               key_type: KeyType | None = None) -> Message: ...
@no_memory_error("value")
def from_numpy(value: object, kind: KindArg = None, *, name: str = "",
               elem_type: ElemType | None = None,
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
    numbers, lists and dicts are then built as that type (``declared.py``).
    For ``kind="tensor"``, ``elem_type`` may name the data type ("float",
    TensorProto.FLOAT) to build a tensor from Python numbers.

    The bytes of the result follow the contract in the module docstring.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, not {type(name).__name__} ({name!r})")
    _utf8(name, "name", "the name")
    if declared is not None or (kind is not None and elem_type is not None
                                and kind_name(kind) == "tensor"):
        from onnxdata.declared import prepare, tensor_code

        if declared is None:
            declared = DeclaredType("tensor", tensor_code(elem_type, "elem_type"))
        value, kind, elem_type, key_type = prepare(value, declared)
    k = _infer_kind(value, "") if kind is None else kind_name(kind)
    message = _CLASSES[k]()
    _FILLERS[k](message, value, "", name, elem_type, key_type)
    return message


_CLASSES: dict[str, type[Message]] = {
    "tensor": TensorProto, "sparse_tensor": SparseTensorProto, "sequence": SequenceProto,
    "map": MapProto, "optional": OptionalProto,
}


def _infer_kind(value: object, path: str) -> str:
    if isinstance(value, (np.ndarray, np.generic)):
        return "tensor"
    if isinstance(value, SparseParts):
        return "sparse_tensor"
    if isinstance(value, (list, tuple)):
        return "sequence"
    if isinstance(value, dict):
        return "map"
    if value is None:
        return "optional"
    if hasattr(value, "DESCRIPTOR"):
        try:
            return _message_kind(value)
        except TypeError:
            pass
    raise OnnxDataError(f"{path or 'value'}: cannot convert a value of type "
                        f"{type(value).__name__}; expected an ndarray or numpy scalar, "
                        "SparseParts, list, dict, None or a message"
                        + (" (wrap Python numbers and strings in np.asarray)"
                           if isinstance(value, (int, float, complex, str, bytes)) else ""))


def _elem_code(elem_type: ElemType, what: str) -> int:
    if isinstance(elem_type, str):
        name = elem_type.lower()
        if name in _KINDS[1:]:
            return _KINDS.index(name)
        if name == "undefined":
            return UNDEFINED
    elif isinstance(elem_type, (int, np.integer)) and not isinstance(elem_type, bool) \
            and 0 <= elem_type <= OPTIONAL:
        return int(elem_type)
    raise OnnxDataError(f"{what}: elem_type {elem_type!r} is not one of "
                        f"{', '.join(_KINDS[1:])} (or their codes 1..5)")


def _key_code(key_type: KeyType, what: str) -> int:
    code: int | None = None
    if isinstance(key_type, (int, np.integer)) and not isinstance(key_type, bool):
        code = int(key_type)
    elif isinstance(key_type, str) and key_type.upper() in {
            DATA_TYPES[c].name for c in KEY_TYPES}:
        code = next(c for c in KEY_TYPES if DATA_TYPES[c].name == key_type.upper())
    else:
        try:
            dt = data_type_for_dtype(np.dtype(cast(Any, key_type)))
        except TypeError:
            dt = None
        code = dt.code if dt is not None else None
    if code not in KEY_TYPES:
        names = ", ".join(sorted(DATA_TYPES[c].name.lower() for c in KEY_TYPES))
        raise OnnxDataError(f"{what}: key_type {key_type!r} is not a map key type ({names})")
    return code


def _copy_message(target: Any, value: Any, kind: str, path: str) -> bool:
    """Copy a ready-made message in; False when ``value`` is not a message."""
    if isinstance(value, (np.ndarray, np.generic, list, tuple, dict)) or value is None \
            or not hasattr(value, "DESCRIPTOR"):
        return False
    if _message_kind(value) != kind:
        raise OnnxDataError(f"{path or 'value'}: a {type(value).__name__} where a {kind} "
                            "belongs")
    if type(value) is type(target):
        target.CopyFrom(value)
    else:  # onnx's class: same schema, another pool
        target.MergeFromString(value.SerializeToString())
    return True


def _fill_tensor(t: Any, value: Any, path: str, name: str, elem_type: Any,
                 key_type: Any) -> None:
    if _copy_message(t, value, "tensor", path):
        return
    if not isinstance(value, (np.ndarray, np.generic)):
        raise OnnxDataError(f"{path or 'value'}: a tensor needs an ndarray or numpy scalar, "
                            f"not a {type(value).__name__}")
    arr = np.asarray(value)
    dt = data_type_for_dtype(arr.dtype)
    if dt is None:
        raise OnnxDataError(f"{path or 'value'}: dtype {arr.dtype} has no ONNX data type")
    t.dims.extend(arr.shape)
    t.data_type = dt.code
    if name:
        t.name = name
    if dt.is_string:
        t.string_data.extend(_strings(arr, path))
    else:
        t.raw_data = le_bytes(arr, dt)


def _utf8(text: str, where: str, what: str) -> bytes:
    """``text`` in UTF-8; a lone surrogate (from a bad decode) is our error, with where."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise OnnxDataError(f"{where}: {what} {text!r} cannot be written as UTF-8 "
                            f"({exc.reason} at position {exc.start})") from exc


def _strings(arr: Array, path: str) -> list[bytes]:
    items = arr.reshape(-1).tolist()
    if arr.dtype.kind == "S":
        return list(items)
    out: list[bytes] = []
    for i, s in enumerate(items):
        if isinstance(s, bytes):
            out.append(s)
        elif isinstance(s, str):
            out.append(_utf8(s, f"{path or 'value'}[{i}]", "the string"))
        else:
            raise OnnxDataError(f"{path or 'value'}: element {i} of a string tensor is a "
                                f"{type(s).__name__}, not bytes or str")
    return out


def le_bytes(arr: Array, dt: DataType) -> bytes:
    """The little-endian bytes of ``arr`` in C order (packed for the sub-byte types)."""
    if dt.sub_byte:
        return _pack_bits(arr.reshape(-1).view(np.uint8), dt.bits)
    dtype = arr.dtype
    if dtype.itemsize == 1 or dtype.byteorder == "<" or (
            dtype.byteorder in "=|" and sys.byteorder == "little"):
        return arr.tobytes()
    part = dtype.itemsize // (2 if dtype.kind == "c" else 1)
    words = np.ascontiguousarray(arr).reshape(-1).view(
        np.dtype(f"u{part}").newbyteorder(dtype.byteorder))
    return words.astype(f"<u{part}").tobytes()


def _fill_sparse(sp: Any, value: Any, path: str, name: str, elem_type: Any,
                 key_type: Any) -> None:
    if _copy_message(sp, value, "sparse_tensor", path):
        return
    if not isinstance(value, SparseParts):
        raise OnnxDataError(f"{path or 'value'}: a sparse tensor needs SparseParts(values, "
                            f"indices, shape), not a {type(value).__name__}")
    values, indices = np.asarray(value.values), np.asarray(value.indices)
    shape = _sparse_shape(value.shape, path or "value")
    nnz = values.shape[0] if values.ndim == 1 else -1
    if not shape and indices.ndim == 2:
        raise OnnxDataError(f"{path or 'value'}: SparseParts of shape () (a scalar) take "
                            f"linear indices [NNZ], not {indices.shape}")
    if nnz < 0 or indices.dtype.kind not in "iu" or not (
            indices.shape == (nnz,) or indices.shape == (nnz, len(shape))):
        raise OnnxDataError(f"{path or 'value'}: SparseParts needs 1-D values and integer "
                            f"indices [NNZ] or [NNZ, rank], not values {values.shape}, indices "
                            f"{indices.shape} {indices.dtype} for shape {shape}")
    rows = (indices.reshape(nnz, 1) if indices.ndim == 1 else indices).astype(np.int64,
                                                                             copy=False)
    bound = np.asarray([math.prod(shape)] if indices.ndim == 1 else shape, dtype=object)
    if nnz and (rows.min() < 0 or (rows.max(axis=0).astype(object) >= bound).any()):
        raise OnnxDataError(f"{path or 'value'}: SparseParts indices lie outside shape {shape}")
    if nnz > 1:
        step = np.diff(rows, axis=0)
        first = np.where(step != 0, np.arange(step.shape[1]), step.shape[1]).min(axis=1)
        row = np.arange(nnz - 1)
        ok = first < step.shape[1]
        ok[ok] = step[row[ok], first[ok]] > 0
        if not ok.all():
            i = int(np.flatnonzero(~ok)[0]) + 1
            raise OnnxDataError(f"{path or 'value'}: SparseParts indices[{i}] is not after "
                                f"indices[{i - 1}]: indices must be ascending (row-major) "
                                "without duplicates")
    _fill_tensor(sp.values, values, _at(path, "values"), name, None, None)
    _fill_tensor(sp.indices, indices.astype(np.int64, copy=False), _at(path, "indices"), "",
                 None, None)
    sp.dims.extend(shape)


def _sparse_shape(shape: object, where: str) -> tuple[int, ...]:
    """SparseParts' dense shape: a sequence of ints >= 0 (a str is not one)."""
    if isinstance(shape, (str, bytes)) or not isinstance(shape, (tuple, list, np.ndarray)):
        raise TypeError(f"{where}: SparseParts shape must be a tuple of ints, not "
                        f"{type(shape).__name__} {shape!r}")
    out: list[int] = []
    for i, d in enumerate(shape):
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"{where}: SparseParts shape[{i}] must be an int, not "
                            f"{type(d).__name__} {d!r}")
        if d < 0:
            raise OnnxDataError(f"{where}: SparseParts shape {tuple(shape)} has a negative "
                                f"dimension {d} at [{i}]")
        out.append(int(d))
    return tuple(out)


def _fill_sequence(s: Any, value: Any, path: str, name: str, elem_type: Any,
                   key_type: Any) -> None:
    if _copy_message(s, value, "sequence", path):
        return
    if not isinstance(value, (list, tuple)):
        raise OnnxDataError(f"{path or 'value'}: a sequence needs a list or tuple, not a "
                            f"{type(value).__name__}")
    if name:
        s.name = name
    where = path or "value"
    if value and (elem_type is None or _elem_code(elem_type, where) == TENSOR) and all(
            type(v) is np.ndarray for v in value):
        _fill_tensors(s, value, where)
        return
    kinds = [_infer_kind(v, f"{where}[{i}]") for i, v in enumerate(value)]
    found = set(kinds)
    if elem_type is not None:
        et = _elem_code(elem_type, where)
        if et == UNDEFINED:
            raise OnnxDataError(f"{where}: a sequence's elem_type cannot be UNDEFINED")
        if et != OPTIONAL and found - {_KINDS[et]}:
            i = next(i for i, k in enumerate(kinds) if k != _KINDS[et])
            raise OnnxDataError(f"{where}[{i}]: a {kinds[i]} in a sequence of {_KINDS[et]}")
    elif not value:
        raise OnnxDataError(f"{where}: an empty list needs elem_type (tensor, sparse_tensor, "
                            "sequence, map or optional)")
    elif "optional" in found:
        et = OPTIONAL
    elif len(found) > 1:
        firsts = {k: kinds.index(k) for k in sorted(found)}
        raise OnnxDataError(f"{where}: mixed element kinds: " + ", ".join(
            f"{k} at [{i}]" for k, i in firsts.items()) + "; a sequence holds one kind")
    else:
        et = _KINDS.index(kinds[0])
    s.elem_type = et
    field = getattr(s, _SEQ_FIELDS[et])
    fill = _FILLERS[_KINDS[et]]
    add = field.add
    for i, v in enumerate(value):
        fill(add(), v, f"{where}[{i}]", "", None, None)
    if et in (SEQUENCE, MAP, OPTIONAL) and len(field) > 1:  # one type all the way down
        mixed = element_type_problems(where, "", [nested_type(e) for e in field])
        if mixed:
            raise ValidationError(mixed)
    if et in (TENSOR, SPARSE_TENSOR) and len(field) > 1:
        codes = [e.data_type if et == TENSOR else e.values.data_type for e in field]
        if len(set(codes)) > 1:
            j = next(j for j, c in enumerate(codes) if c != codes[0])
            raise OnnxDataError(f"{where}: mixed data types: {DATA_TYPES[codes[0]].name} at "
                                f"[0], {DATA_TYPES[codes[j]].name} at [{j}]; the tensors of a "
                                "sequence share one data type")


def _fill_tensors(s: Any, arrays: Sequence[Array], where: str) -> None:
    """A sequence of ndarrays: the common case, in one tight loop."""
    dtypes = {a.dtype for a in arrays}
    found = {d: data_type_for_dtype(d) for d in dtypes}
    for d, dt in found.items():
        if dt is None:
            i = next(i for i, a in enumerate(arrays) if a.dtype == d)
            raise OnnxDataError(f"{where}[{i}]: dtype {d} has no ONNX data type")
    codes = {dt.code for dt in found.values() if dt is not None}
    if len(codes) > 1:
        first = found[arrays[0].dtype]
        j = next(j for j, a in enumerate(arrays) if found[a.dtype] is not first)
        raise OnnxDataError(f"{where}: mixed data types: {first.name} at [0], "  # type: ignore[union-attr]
                            f"{found[arrays[j].dtype].name} at [{j}]; the tensors of a "  # type: ignore[union-attr]
                            "sequence share one data type")
    s.elem_type = TENSOR
    add = s.tensor_values.add
    for a in arrays:
        dt = found[a.dtype]
        assert dt is not None
        t = add()
        t.dims.extend(a.shape)
        t.data_type = dt.code
        if dt.is_string:
            t.string_data.extend(_strings(a, where))
        else:
            t.raw_data = le_bytes(a, dt)


def _fill_map(m: Any, value: Any, path: str, name: str, elem_type: Any,
              key_type: Any) -> None:
    if _copy_message(m, value, "map", path):
        return
    where = path or "value"
    if not isinstance(value, dict):
        raise OnnxDataError(f"{where}: a map needs a dict, not a {type(value).__name__}")
    if name:
        m.name = name
    keys = list(value)
    kt = _key_code(key_type, where) if key_type is not None else _infer_key_type(keys, where)
    m.key_type = kt
    if kt == STRING:
        encoded: list[bytes] = []
        for k in keys:
            if isinstance(k, str):
                encoded.append(_utf8(k, where, "key"))
            elif isinstance(k, (bytes, np.bytes_)):
                encoded.append(bytes(k))
            else:
                raise OnnxDataError(f"{where}: key {k!r} is not bytes or str, for STRING keys")
        if len(set(encoded)) != len(encoded):
            raise OnnxDataError(f"{where}: a key appears twice once str keys are encoded "
                                "as UTF-8")
        m.string_keys.extend(encoded)
    else:
        dtype = DATA_TYPES[kt].dtype
        lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
        ints: list[int] = []
        for k in keys:
            if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
                raise OnnxDataError(f"{where}: key {k!r} is not an integer, for "
                                    f"{DATA_TYPES[kt].name} keys")
            n = int(k)
            if not lo <= n <= hi:
                raise OnnxDataError(f"{where}: key {n} is outside {lo}..{hi} for "
                                    f"{DATA_TYPES[kt].name}")
            ints.append(n - (1 << 64) if n > 2**63 - 1 else n)
        m.keys.extend(ints)
    values = list(value.values())
    if elem_type is None and not values:
        raise OnnxDataError(f"{where}: an empty dict needs elem_type, the kind of its values "
                            "(tensor, sparse_tensor, sequence or map), and key_type")
    if elem_type is not None and _elem_code(elem_type, where) not in (TENSOR, SPARSE_TENSOR,
                                                                        SEQUENCE, MAP):
        raise OnnxDataError(f"{where}: map values cannot be {elem_type!r}")
    if any(v is None for v in values):
        raise OnnxDataError(f"{where}: map values cannot be None (a map holds no optionals)")
    _fill_sequence(m.values, values, _at(where, "values"), "", elem_type, None)
    if m.values.elem_type == OPTIONAL:
        raise OnnxDataError(f"{where}: map values cannot be optionals")


def _infer_key_type(keys: list[Any], where: str) -> int:
    if not keys:
        raise OnnxDataError(f"{where}: an empty dict needs key_type and elem_type")
    if all(isinstance(k, (str, bytes, np.bytes_, np.str_)) for k in keys):
        return STRING
    if all(isinstance(k, int) and not isinstance(k, (bool, np.integer)) for k in keys):
        return 7
    dtypes = {k.dtype for k in keys if isinstance(k, np.integer)}
    if len(dtypes) == 1 and all(isinstance(k, np.integer) for k in keys):
        return _key_code(dtypes.pop(), where)
    kinds = sorted({type(k).__name__ for k in keys})
    raise OnnxDataError(f"{where}: keys of mixed or unsupported types ({', '.join(kinds)}); "
                        "pass key_type, or use keys of one integer type or strings")


def _fill_optional(o: Any, value: Any, path: str, name: str, elem_type: Any,
                   key_type: Any) -> None:
    where = path or "value"
    if name:
        o.name = name
    if elem_type is not None:
        et = _elem_code(elem_type, where)
        if value is None:
            o.elem_type = et
            return
        if et == UNDEFINED:
            raise OnnxDataError(f"{where}: elem_type UNDEFINED means no value, but one is given")
    elif value is None:
        o.elem_type = UNDEFINED
        return
    elif _copy_message(o, value, "optional", where) if _infer_kind(value, where) == "optional" \
            else False:
        if name:
            o.name = name
        return
    else:
        et = _KINDS.index(_infer_kind(value, where))
    o.elem_type = et
    field = _OPT_FIELDS[et]
    _FILLERS[_KINDS[et]](getattr(o, field), value, _at(where, field), "", None,
                         key_type if et == MAP else None)


_FILLERS: dict[str, Callable[[Any, Any, str, str, Any, Any], None]] = {
    "tensor": _fill_tensor,
    "sparse_tensor": _fill_sparse,
    "sequence": _fill_sequence,
    "map": _fill_map,
    "optional": _fill_optional,
}
