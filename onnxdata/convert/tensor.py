"""``to_numpy`` of a TensorProto: the shape, ``raw_data`` (a view where it can be), the
typed fields with each entry checked to fit its type, and external data."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from onnxdata.convert.common import (
    FIELD_DTYPES,
    MAX_DIMS,
    MAX_INTP,
    TYPED_FIELDS,
    Array,
    StrPath,
    check_message,
    fail_at,
    from_le_bytes,
    unpack_bits,
)
from onnxdata.core.dtypes import DATA_TYPES, DataType, raw_nbytes, typed_count
from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.messages import EXTERNAL
from onnxdata.core.paths import join_path
from onnxdata.errors import OnnxDataError
from onnxdata.rules.tensor import entries_in_range, repeated_array
from onnxdata.rules.validation import PlainTensor, quick_tensor
from onnxdata.wire.external import read_external

__all__: list[str] = []  # the tensor reader of convert/values.py's to_numpy; nothing public here


def checked_shape(dims: Sequence[int], path: str, itemsize: int = 1) -> tuple[tuple[int, ...], int]:
    shape = tuple(dims)
    for i, d in enumerate(shape):
        if d < 0:
            raise fail_at(join_path(path, f"dims[{i}]"), f"dimension {d} is negative")
    if len(shape) > MAX_DIMS:
        raise fail_at(join_path(path, "dims"), f"{len(shape)} dimensions; numpy holds at most "
                    f"{MAX_DIMS}")
    # numpy refuses a shape whose nonzero dims times the item size pass intp, even with
    # a 0 among them (densify checks a sparse tensor's once its values' dtype is known).
    if math.prod(d for d in shape if d) * itemsize > MAX_INTP:
        raise fail_at(join_path(path, "dims"),
                      f"dims {list(shape)} are too large for a numpy array")
    return shape, math.prod(shape)


_LITTLE = sys.byteorder == "little"
# The data types whose raw_data numpy reads as it stands: whole bytes per element.
PLAIN_RAW: dict[int, tuple[np.dtype[Any], int]] = {
    code: (dt.dtype, dt.dtype.itemsize) for code, dt in DATA_TYPES.items()
    if not dt.is_string and not dt.sub_byte and (_LITTLE or dt.dtype.itemsize == 1)
}


def tensor_node(t: Any, path: str, base_dir: StrPath | None, depth: int = 0) -> Array:
    """A tensor, checked as ``validate`` checks it, then read."""
    plain = quick_tensor(t) if depth <= MAX_DEPTH else None
    if plain is None:
        check_message(path, t, base_dir, depth)
        return read_tensor(t, path, base_dir)
    fast = plain_raw(plain)
    return fast if fast is not None else plain_value(plain, t, path)


def plain_raw(plain: PlainTensor) -> Array | None:
    """The common tensor's array from the raw_data quick_tensor read: whole-byte elements,
    no zero dims (so the size check made the shape right); None for anything else."""
    code, dims, raw, _, _ = plain
    if raw is None:
        return None
    fmt = PLAIN_RAW.get(code)
    if fmt is None or len(dims) > MAX_DIMS or (dims and min(dims) <= 0):
        return None
    arr = np.frombuffer(raw, dtype=fmt[0])
    return arr if len(dims) == 1 else arr.reshape(dims)


def plain_value(plain: PlainTensor, t: Any, path: str) -> Array:
    """A tensor quick_tensor found valid, from what it read (raw_data or the typed array)."""
    code, dims, raw, entries, array = plain
    dt = DATA_TYPES[code]
    shape, count = checked_shape(dims, path, dt.dtype.itemsize)
    if raw is not None:
        return from_le_bytes(raw, dt, count, 0).reshape(shape)
    if dt.is_string:
        out = np.empty(count, dtype=object)
        if count:
            out[:] = list(entries)
        return out.reshape(shape)
    return _from_typed(t, path, dt, shape, count, array)


def read_tensor(t: Any, path: str, base_dir: StrPath | None) -> Array:
    # The common case first, with the checks that make the reshape right:
    # raw_data of whole-byte elements whose length is exactly what dims need.
    plain = PLAIN_RAW.get(t.data_type)
    if plain is not None and t.HasField("raw_data") and not t.data_location:
        shape = tuple(t.dims)
        raw = t.raw_data
        count = math.prod(shape)
        if count > 0 and len(shape) <= MAX_DIMS and min(shape, default=1) > 0 \
                and len(raw) == count * plain[1]:
            return np.frombuffer(raw, dtype=plain[0]).reshape(shape)
    return _read_tensor_checked(t, path, base_dir)


def _read_tensor_checked(t: Any, path: str, base_dir: StrPath | None) -> Array:
    code = t.data_type
    dt = DATA_TYPES.get(code)
    if dt is None:
        raise fail_at(join_path(path, "data_type"),
                      f"data type {code} is not a known ONNX data type")
    shape, count = checked_shape(t.dims, path, dt.dtype.itemsize)
    if t.HasField("segment"):
        raise fail_at(join_path(path, "segment"), "segmented tensors are not supported")
    external = t.data_location == EXTERNAL
    has_raw = t.HasField("raw_data")
    for field in TYPED_FIELDS:
        if (external or has_raw or field != dt.field) and len(getattr(t, field)):
            other = "external data" if external else "raw_data" if has_raw else dt.field
            raise fail_at(join_path(path, field),
                          f"{dt.name} data is in {other}, but {field} holds "
                        f"{len(getattr(t, field))} entries too")
    if dt.is_string:
        if external or has_raw:
            raise fail_at(join_path(path, "raw_data"),
                        "STRING tensors keep their data in string_data")
        n = len(t.string_data)
        if n != count:
            raise fail_at(join_path(path, "string_data"),
                        f"{n} strings, but dims {list(shape)} need {count}")
        out = np.empty(count, dtype=object)
        if count:
            out[:] = list(t.string_data)
        return out.reshape(shape)
    if external:
        if has_raw:
            raise fail_at(join_path(path, "raw_data"), "an external tensor must not hold raw_data")
        buf, offset = _external(t, path, dt, count, base_dir)
        return from_le_bytes(buf, dt, count, offset).reshape(shape)
    if has_raw:
        raw = t.raw_data
        need = raw_nbytes(dt, count)
        if len(raw) != need:
            raise fail_at(join_path(path, "raw_data"),
                          f"{len(raw)} bytes, but dims {list(shape)} of "
                        f"{dt.name} need {need}")
        return from_le_bytes(raw, dt, count, 0).reshape(shape)
    return _from_typed(t, path, dt, shape, count)


def _from_typed(t: Any, path: str, dt: DataType, shape: tuple[int, ...], count: int,
                values: Array | None = None) -> Array:
    """The array of a tensor stored in its typed field. ``values`` are the entries as
    numpy when quick_tensor already read them and found them in range."""
    check = _check_range if values is None else _in_range_already
    field = getattr(t, dt.field)
    n = len(field)
    need = typed_count(dt, count)
    fpath = join_path(path, dt.field)
    if n != need:
        raise fail_at(fpath, f"{n} entries, but dims {list(shape)} of {dt.name} need {need}")
    if values is None or len(values) != n:
        check = _check_range
        values = repeated_array(field, np.dtype(FIELD_DTYPES[dt.field]))
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
        raise fail_at(f"{path}[{i}]", f"{values[i]} is outside {lo}..{hi} for {what}"
                    + (f" ({bad.size} entries are)" if bad.size > 1 else ""))


def _external(t: Any, path: str, dt: DataType, count: int,
              base_dir: StrPath | None) -> tuple[Any, int]:
    """A read-only buffer over the external file and the offset of the data in it."""
    entries = {e.key: e.value for e in t.external_data}
    epath = join_path(path, "external_data")
    location = entries.get("location")
    if not location:
        raise fail_at(epath, "external data has no location")
    numbers: dict[str, int] = {}
    for key in ("offset", "length"):
        text = entries.get(key)
        if text is None:
            continue
        if not text.isdigit():
            raise fail_at(epath, f"{key} {text!r} is not an integer >= 0")
        numbers[key] = int(text)
    if base_dir is None:
        raise OnnxDataError(f"{path or 'tensor'}: its data is in the external file {location!r}; "
                            "pass base_dir, the folder that holds it")
    if Path(location).is_absolute():
        raise fail_at(epath, f"location {location!r} is absolute; it must be relative to base_dir")
    need = raw_nbytes(dt, count)
    offset = numbers.get("offset", 0)
    if numbers.get("length", need) != need:
        raise fail_at(epath, f"length {numbers['length']}, but {dt.name} dims need {need} bytes")
    return read_external(base_dir, location, offset, need, where=epath), 0
