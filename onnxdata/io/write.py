"""Streaming writing: ``write`` sends the wire format straight from array buffers to the file.

``write(value, path, kind)`` writes the bytes ``save(from_numpy(value, kind),
path)`` writes, without building the message and without the whole file in
memory, so values over 2 GiB (which protobuf refuses to serialize) write too.

How: every large array (``STREAM_MIN`` bytes or more, numeric) in the value is
replaced by an empty array of its dtype, and ``from_numpy`` builds that
*skeleton* message: every rule of ``from_numpy`` (kinds, element types, keys,
names, errors) applies unchanged, at the cost of a few bytes per array. The
skeleton and the value are then walked together. A part of the message with no
large array below it is serialized by protobuf as is; a large tensor gets its
header (dims from the real array, data_type, name) from protobuf and its
``raw_data`` straight from the array's buffer; every enclosing message gets
its length prefix from sizes computed beforehand. The file is written through
``atomic_writer``, so it is replaced whole or not at all.

Only the raw bytes of a C-contiguous little-endian array are written as they
sit in memory; other arrays (strided, big-endian, the packed 2-, 4- and 6-bit
types) are converted ``WRITE_CHUNK`` bytes at a time.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import IO, Any, Final, TypeAlias

import numpy as np
import numpy.typing as npt

from onnxdata.convert.common import SparseParts, le_bytes
from onnxdata.convert.declared import prepare
from onnxdata.convert.values import from_numpy, with_arrays
from onnxdata.core.dtypes import DATA_TYPES, DataType, data_type_for_dtype, raw_nbytes
from onnxdata.core.messages import (
    ELEM_FIELDS,
    OPTIONAL_FIELDS,
    Kind,
    MapProto,
    Message,
    OptionalProto,
    SequenceProto,
    TensorProto,
)
from onnxdata.errors import no_memory_error
from onnxdata.io.atomic import atomic_writer
from onnxdata.wire.format import encode_varint

__all__ = ["STREAM_MIN", "WRITE_CHUNK", "write"]

#: Arrays of at least this many bytes are streamed; smaller ones go through protobuf.
STREAM_MIN: int = 1 << 16
#: Bytes converted or handed to one ``write`` call at a time.
WRITE_CHUNK: int = 1 << 26

_RAW_DATA_TAG: Final = b"\x4a"  # field 9, LEN


def _tag(number: int) -> bytes:
    return encode_varint(number << 3 | 2)


@dataclass
class _Payload:
    """A tensor's data, written from the array when the file is written."""

    array: npt.NDArray[Any]
    dt: DataType
    nbytes: int


_Part: TypeAlias = "bytes | _Payload"


def _size(parts: list[_Part]) -> int:
    return sum(p.nbytes if isinstance(p, _Payload) else len(p) for p in parts)


def _streamed(value: object) -> bool:
    """Whether ``value`` is an array written from its own buffer rather than by protobuf."""
    return (isinstance(value, np.ndarray) and value.dtype.kind not in "OSUV"
            and value.nbytes >= STREAM_MIN and data_type_for_dtype(value.dtype) is not None)


def _skeleton(value: Any) -> Any:
    """``value`` with each streamed array replaced by an empty one of its dtype."""
    if _streamed(value):
        return np.empty(0, dtype=value.dtype)
    if isinstance(value, SparseParts):
        return value
    if isinstance(value, (list, tuple)):
        return [_skeleton(v) for v in value]
    if isinstance(value, dict):
        return {k: _skeleton(v) for k, v in value.items()}
    return value


def _has_streamed(value: Any) -> bool:
    if _streamed(value):
        return True
    if isinstance(value, SparseParts):
        return False
    if isinstance(value, (list, tuple)):
        return any(_has_streamed(v) for v in value)
    if isinstance(value, dict):
        return any(_has_streamed(v) for v in value.values())
    return False


def _parts(node: Message, value: Any) -> list[_Part]:
    """The body of ``node`` (without its own tag and length), with streamed arrays as payloads."""
    if not _has_streamed(value) or hasattr(value, "DESCRIPTOR"):
        return [node.SerializeToString()]
    if isinstance(node, TensorProto):
        return _tensor_parts(node, value)
    if isinstance(node, (SequenceProto, OptionalProto)):
        head = type(node)()
        if node.HasField("name"):
            head.name = node.name
        head.elem_type = node.elem_type
        one = isinstance(node, OptionalProto)  # its value, where a sequence has elements
        field = (OPTIONAL_FIELDS if one else ELEM_FIELDS)[node.elem_type]
        tag = _tag(node.DESCRIPTOR.fields_by_name[field].number)
        children = [getattr(node, field)] if one else getattr(node, field)
        out: list[_Part] = [head.SerializeToString()]
        for child, v in zip(children, [value] if one else value, strict=True):
            out += _nested(tag, _parts(child, v))
        return out
    if isinstance(node, MapProto):
        head_map = MapProto()
        head_map.CopyFrom(node)
        head_map.ClearField("values")
        return [head_map.SerializeToString(),
                *_nested(_tag(5), _parts(node.values, list(value.values())))]
    return [node.SerializeToString()]  # pragma: no cover (sparse tensors are never streamed)


def _nested(tag: bytes, body: list[_Part]) -> list[_Part]:
    return [tag + encode_varint(_size(body)), *body]


def _tensor_parts(node: TensorProto, array: npt.NDArray[Any]) -> list[_Part]:
    head = TensorProto()
    head.dims.extend(array.shape)
    head.data_type = node.data_type
    if node.HasField("name"):
        head.name = node.name
    dt = DATA_TYPES[node.data_type]
    nbytes = raw_nbytes(dt, array.size)
    return [head.SerializeToString() + _RAW_DATA_TAG + encode_varint(nbytes),
            _Payload(array, dt, nbytes)]


def _write_payload(f: IO[bytes], p: _Payload) -> None:
    arr, dt = np.asarray(p.array), p.dt  # a masked array or matrix as from_numpy takes it
    if dt.sub_byte:
        flat = np.ascontiguousarray(arr).reshape(-1)
        step = max(8, WRITE_CHUNK // 8 * 8)  # whole groups of 8 elements pack to whole bytes
        for i in range(0, flat.size, step):
            f.write(le_bytes(flat[i:i + step], dt))
        return
    native = arr.dtype.itemsize == 1 or arr.dtype.byteorder == "<" or (
        arr.dtype.byteorder in "=|" and np.little_endian)
    if native and arr.flags.c_contiguous:
        data = arr.reshape(-1).view(np.uint8).data
        for i in range(0, len(data), WRITE_CHUNK):
            f.write(data[i:i + WRITE_CHUNK])
        return
    if arr.ndim == 0:
        f.write(le_bytes(arr, dt))
        return
    row = max(1, arr[:1].nbytes)
    rows = max(1, WRITE_CHUNK // row)
    for i in range(0, arr.shape[0], rows):
        f.write(le_bytes(np.ascontiguousarray(arr[i:i + rows]), dt))


@no_memory_error("path")
def write(value: Any, path: str | os.PathLike[str], kind: Kind | None = None, *,
          name: str = "", elem_type: int | str | None = None,
          key_type: Any = None, declared: str | None = None) -> None:
    """Write ``value`` to ``path`` as ``save(from_numpy(value, kind, ...), path)`` would.

    The value comes first and the path second, as in ``save``, ``onnx.save``
    and ``torch.save``.

    The bytes are the same, byte for byte, but large arrays go from their own
    buffers to the file with no message and no whole-file ``bytes`` in
    between, so values over 2 GiB work. ``kind``, ``name``, ``elem_type`` and
    ``key_type`` mean what they mean to ``from_numpy``, and it raises what
    ``from_numpy`` raises. The file is replaced atomically. ``declared``
    (``"seq(map(string, tensor(float)))"``) builds plain Python values as that
    ONNX type, as in ``from_numpy``; numpy arrays inside still stream.
    """
    if not isinstance(path, (str, os.PathLike)):
        hint = (" (write takes the value first, then the path: write(value, path))"
                if isinstance(value, (str, os.PathLike)) else "")
        raise TypeError(f"write's path must be a str or os.PathLike, not "
                        f"{type(path).__name__}{hint}")
    value = with_arrays(value)  # an onnx_ir tensor (anything with __array__) as its ndarray
    if declared is not None:
        value, kind, elem_type, key_type = prepare(value, declared)
    skeleton = from_numpy(_skeleton(value), kind, name=name, elem_type=elem_type,
                          key_type=key_type)
    parts = _parts(skeleton, value)
    with atomic_writer(path) as f:
        for part in parts:
            if isinstance(part, _Payload):
                _write_payload(f, part)
            else:
                f.write(part)
