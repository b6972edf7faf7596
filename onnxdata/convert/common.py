"""What ``to_numpy`` and ``from_numpy`` share: the value types, the element type codes
and the field holding each, paths and the one-problem error, the kind of a message,
the check each reader makes before reading, and little-endian bytes (the sub-byte
types packed LSB-first)."""

from __future__ import annotations

import os
import sys
from typing import Any, NamedTuple, TypeAlias, Union

import numpy as np
import numpy.typing as npt

from onnxdata.core.dtypes import DataType, raw_nbytes
from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.messages import KIND_OF_MESSAGE, KindName
from onnxdata.errors import Problem, ValidationError
from onnxdata.rules.validation import node_problems, too_deep

__all__ = ["SparseParts", "from_le_bytes", "le_bytes", "unpack_bits"]


Array: TypeAlias = "npt.NDArray[Any]"
StrPath: TypeAlias = Union[str, "os.PathLike[str]"]
#: An elem_type as from_numpy takes it: a code (an ElemType) or a kind's name.
ElemTypeArg: TypeAlias = "int | str"
KeyType: TypeAlias = Union[int, str, "npt.DTypeLike"]


class SparseParts(NamedTuple):
    """A sparse tensor without densifying: 1-D ``values``, INT64 ``indices``
    ([NNZ] linear, row-major, or [NNZ, rank] coordinates) and the dense ``shape``."""

    values: Array
    indices: Array
    shape: tuple[int, ...]


# ---------------------------------------------------------------- codes and paths

TYPED_FIELDS = ("float_data", "int32_data", "string_data", "int64_data", "double_data",
                 "uint64_data")
MAX_DIMS = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32
MAX_INTP = int(np.iinfo(np.intp).max)
FIELD_DTYPES = {"float_data": np.float32, "double_data": np.float64, "int32_data": np.int32,
                 "int64_data": np.int64, "uint64_data": np.uint64}
U64 = (1 << 64) - 1


def fail_at(path: str, message: str) -> ValidationError:
    return ValidationError([Problem(path, message)])


def message_kind(message: object) -> KindName:
    """The kind of a data message, ours or onnx's (by its descriptor's name); TypeError for
    anything else."""
    name = getattr(getattr(message, "DESCRIPTOR", None), "name", None)
    if isinstance(name, str) and name in KIND_OF_MESSAGE:
        return KIND_OF_MESSAGE[name]
    raise TypeError(
        f"to_numpy takes a TensorProto, SparseTensorProto, SequenceProto, MapProto or "
        f"OptionalProto (ours or onnx's), not {type(message).__name__}"
    )


def check_message(path: str, message: Any, base_dir: StrPath | None, depth: int) -> None:
    """Raise ValidationError when ``message`` itself breaks a rule of ``validate``."""
    if depth > MAX_DEPTH:
        raise ValidationError([too_deep(path)])
    found = node_problems(path, message, base_dir, tensor_types=False)
    if found:
        raise ValidationError(found)


# ---------------------------------------------------------------- little-endian bytes

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
