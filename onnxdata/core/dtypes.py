"""ONNX tensor data types: numpy dtype, bit width and typed-field storage of each.

One table answers every question the other modules ask about a data type, so
the storage rules of ``onnx-ml.proto`` (which typed field holds which type, and
how FLOAT16, FLOAT8, the 4-, 2- and 6-bit types, BOOL and COMPLEX are packed
into it) are written down once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import ml_dtypes
import numpy as np

__all__ = [
    "DATA_TYPES",
    "KEY_TYPES",
    "STRING",
    "DataType",
    "data_type",
    "data_type_for_dtype",
    "key_range",
    "raw_nbytes",
    "typed_count",
    "typed_entry_range",
]


@dataclass(frozen=True)
class DataType:
    """One ``TensorProto.DataType``.

    ``bits`` is the width of one element in ``raw_data`` (0 for STRING).
    ``field`` is the typed field that holds it when ``raw_data`` is not used.
    ``per_entry`` is how many elements one entry of that field holds (2 for the
    4-bit types, 4 for the 2-bit types), and ``entries_per`` how many entries one
    element takes (2 for complex: real then imaginary).
    ``bit_view`` is the unsigned integer dtype whose bits the element's are, for
    the types stored bit-wise in ``int32_data`` (float16, bfloat16, float8, ...).
    """

    code: int
    name: str
    dtype: np.dtype[Any]
    bits: int
    field: str
    per_entry: int = 1
    entries_per: int = 1
    bit_view: np.dtype[np.generic] | None = None

    @property
    def is_string(self) -> bool:
        return self.code == STRING

    @property
    def sub_byte(self) -> bool:
        """Packed several to a byte in raw_data (the 2-, 4- and 6-bit types)."""
        return 0 < self.bits < 8


def _dt(x: object) -> np.dtype[np.generic]:
    return np.dtype(x)  # type: ignore[call-overload, no-any-return]


_U8, _U16 = _dt(np.uint8), _dt(np.uint16)

STRING: Final = 8

_TABLE: tuple[DataType, ...] = (
    DataType(1, "FLOAT", _dt(np.float32), 32, "float_data"),
    DataType(2, "UINT8", _dt(np.uint8), 8, "int32_data"),
    DataType(3, "INT8", _dt(np.int8), 8, "int32_data"),
    DataType(4, "UINT16", _dt(np.uint16), 16, "int32_data"),
    DataType(5, "INT16", _dt(np.int16), 16, "int32_data"),
    DataType(6, "INT32", _dt(np.int32), 32, "int32_data"),
    DataType(7, "INT64", _dt(np.int64), 64, "int64_data"),
    DataType(8, "STRING", _dt(object), 0, "string_data"),
    DataType(9, "BOOL", _dt(np.bool_), 8, "int32_data"),
    DataType(10, "FLOAT16", _dt(np.float16), 16, "int32_data", bit_view=_U16),
    DataType(11, "DOUBLE", _dt(np.float64), 64, "double_data"),
    DataType(12, "UINT32", _dt(np.uint32), 32, "uint64_data"),
    DataType(13, "UINT64", _dt(np.uint64), 64, "uint64_data"),
    DataType(14, "COMPLEX64", _dt(np.complex64), 64, "float_data", entries_per=2),
    DataType(15, "COMPLEX128", _dt(np.complex128), 128, "double_data", entries_per=2),
    DataType(16, "BFLOAT16", _dt(ml_dtypes.bfloat16), 16, "int32_data", bit_view=_U16),
    DataType(17, "FLOAT8E4M3FN", _dt(ml_dtypes.float8_e4m3fn), 8, "int32_data", bit_view=_U8),
    DataType(18, "FLOAT8E4M3FNUZ", _dt(ml_dtypes.float8_e4m3fnuz), 8, "int32_data",
             bit_view=_U8),
    DataType(19, "FLOAT8E5M2", _dt(ml_dtypes.float8_e5m2), 8, "int32_data", bit_view=_U8),
    DataType(20, "FLOAT8E5M2FNUZ", _dt(ml_dtypes.float8_e5m2fnuz), 8, "int32_data",
             bit_view=_U8),
    DataType(21, "UINT4", _dt(ml_dtypes.uint4), 4, "int32_data", per_entry=2, bit_view=_U8),
    DataType(22, "INT4", _dt(ml_dtypes.int4), 4, "int32_data", per_entry=2, bit_view=_U8),
    DataType(23, "FLOAT4E2M1", _dt(ml_dtypes.float4_e2m1fn), 4, "int32_data", per_entry=2,
             bit_view=_U8),
    DataType(24, "FLOAT8E8M0", _dt(ml_dtypes.float8_e8m0fnu), 8, "int32_data", bit_view=_U8),
    DataType(25, "UINT2", _dt(ml_dtypes.uint2), 2, "int32_data", per_entry=4, bit_view=_U8),
    DataType(26, "INT2", _dt(ml_dtypes.int2), 2, "int32_data", per_entry=4, bit_view=_U8),
    DataType(27, "FLOAT6E2M3", _dt(ml_dtypes.float6_e2m3fn), 6, "int32_data", bit_view=_U8),
    DataType(28, "FLOAT6E3M2", _dt(ml_dtypes.float6_e3m2fn), 6, "int32_data", bit_view=_U8),
)

DATA_TYPES: Final[dict[int, DataType]] = {t.code: t for t in _TABLE}
_BY_DTYPE: Final[dict[np.dtype[Any], DataType]] = {
    t.dtype: t for t in _TABLE if t.code != STRING
}

#: The key types a MapProto allows: the eight integer types and STRING.
KEY_TYPES: Final[frozenset[int]] = frozenset({2, 3, 4, 5, 6, 7, 12, 13, STRING})


def data_type(code: int) -> DataType | None:
    """The data type with this ``TensorProto.DataType`` code, or None if unknown/UNDEFINED."""
    return DATA_TYPES.get(code)


def data_type_for_dtype(dtype: np.dtype[Any]) -> DataType | None:
    """The ONNX data type of a numpy dtype (object, str and bytes give STRING), or None."""
    if dtype.kind in "OSU":
        return DATA_TYPES[STRING]
    return _BY_DTYPE.get(dtype.newbyteorder("=") if dtype.byteorder not in "=|" else dtype)


def raw_nbytes(dt: DataType, count: int) -> int:
    """The bytes ``count`` elements take in raw_data, packing the sub-byte types."""
    return (count * dt.bits + 7) // 8


def typed_count(dt: DataType, count: int) -> int:
    """The entries ``count`` elements take in the typed field (``dt.field``)."""
    return (count + dt.per_entry - 1) // dt.per_entry * dt.entries_per


def typed_entry_range(dt: DataType) -> tuple[int, int] | None:
    """The values one entry of ``dt.field`` may hold, or None when any value is fine.

    Integers narrower than their field must fit their own type (an INT8 in
    int32_data lies in [-128, 127]); BOOL entries are 0 or 1; types stored
    bit-wise (``bit_view``) hold their unsigned bits: 0..255 for float8 and the
    packed 4-/2-bit bytes, 0..65535 for (b)float16, and 0..63 for the 6-bit
    floats (bits 6-31 MUST be zero). FLOAT, DOUBLE, INT32, INT64, UINT64 and
    STRING entries are unrestricted.
    """
    if dt.code == 9:  # BOOL
        return (0, 1)
    if dt.bits == 6:
        return (0, 63)
    if dt.bit_view is not None:
        return (0, (1 << (8 * dt.bit_view.itemsize)) - 1)
    if (dt.field == "int32_data" and dt.bits < 32) or dt.code == 12:  # narrow ints, UINT32
        info = np.iinfo(dt.dtype)
        return (int(info.min), int(info.max))
    return None


def key_range(code: int) -> tuple[int, int] | None:
    """The int64 values MapProto ``keys`` may hold for integer key type ``code``.

    None for STRING and for codes that are not key types. UINT64 keys are the 64
    bits of the int64 written as the varint, so every int64 is a valid UINT64
    key (a key >= 2**63 reads back as a negative int64: reinterpret, don't refuse).
    """
    if code not in KEY_TYPES or code == STRING:
        return None
    if code == 13:  # UINT64
        return (-(1 << 63), (1 << 63) - 1)
    info = np.iinfo(DATA_TYPES[code].dtype)
    return (int(info.min), int(info.max))
