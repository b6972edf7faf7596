"""onnxdata's values to ONNX Runtime's Python API and back, for every data type ORT has.

What ORT's Python API wants, and onnxdata's values are not:

* strings as ``str``: given ``bytes``, ORT stores their repr (``"b'abc'"``);
* map keys as ``str`` and map values as Python scalars (ORT's maps are
  ``map(string, float)`` and the like, each value one number);
* bfloat16, the float8 types, float4, e8m0 and the 2- and 4-bit integers as an
  ``OrtValue`` made with ``ortvalue_from_numpy_with_onnx_type`` from the bits:
  ORT's numpy bridge does not know ml_dtypes, whatever numpy kind ml_dtypes
  gives the type (``float8_e5m2`` is kind ``'f'`` in ml_dtypes 0.6, the others
  ``'V'``). The sub-byte types go packed at the front of a buffer of one byte
  per element, as ORT reads them;
* an empty optional as ``None``, a sequence as a list (as onnxdata has them).

On the way back, ``session.run`` cannot return those types ("No corresponding
Numpy type for Tensor Type. bfloat16"; float8e4m3fn comes back as uint8), so
outputs declared as one of them are fetched as OrtValues
(``run_with_ort_values``) and read from their bytes by the output's declared
element type (``read_ort_value``).
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from onnxdata.cases.backend_errors import BackendCannotTake
from onnxdata.convert.common import from_le_bytes, le_bytes
from onnxdata.core.dtypes import DATA_TYPES, STRING, DataType, data_type_for_dtype
from onnxdata.errors import OnnxDataError
from onnxdata.model.types import DeclaredType, type_name

__all__ = ["needs_ort_value", "read_ort_value", "to_ort", "uses_ml_dtypes"]


def uses_ml_dtypes(code: int) -> bool:
    """Whether ONNX data type ``code`` is one that numpy has only through ml_dtypes."""
    dt = DATA_TYPES.get(code)
    return dt is not None and dt.dtype.type.__module__.split(".")[0] == "ml_dtypes"


def needs_ort_value(t: DeclaredType) -> bool:
    """Whether a value of declared type ``t`` must come back from ORT as an OrtValue."""
    return t.kind == "tensor" and uses_ml_dtypes(t.elem_type)


def to_ort(ort: Any, value: Any, t: DeclaredType, where: str) -> Any:
    """An onnxdata value as ORT's Python API takes it for declared type ``t``."""
    if value is None:
        return None
    if t.kind == "optional":
        assert t.element is not None
        return to_ort(ort, value, t.element, where)
    if t.kind == "sequence":
        assert t.element is not None
        return [to_ort(ort, v, t.element, f"{where}[{i}]") for i, v in enumerate(value)]
    if t.kind == "map":
        assert t.element is not None
        return {text(k, where) if isinstance(k, bytes) else k:
                _map_value(to_ort(ort, v, t.element, f"{where}[{k!r}]"), f"{where}[{k!r}]")
                for k, v in value.items()}
    if t.kind == "sparse_tensor":
        raise BackendCannotTake(f"{where}: a sparse tensor input; ONNX Runtime's Python "
                                "API takes sparse tensors only as OrtValues, which onnxdata "
                                "does not make yet")
    return _tensor_to_ort(ort, np.asarray(value), t.elem_type, where)


def text(b: bytes, where: str) -> str:
    """``b`` as UTF-8 text, or OnnxDataError naming ``where``."""
    try:
        return b.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise OnnxDataError(f"{where}: a string that is not UTF-8 ({b[:20]!r}); the backend "
                            "takes str") from exc


def strings_as_text(arr: Any, where: str) -> Any:
    """An object array of bytes as one of str (what ORT and onnx's reference take)."""
    flat = [text(x, where) if isinstance(x, bytes) else x for x in arr.reshape(-1).tolist()]
    return np.array(flat, dtype=object).reshape(arr.shape)


def _map_value(v: Any, where: str) -> Any:
    if not isinstance(v, np.ndarray):
        return v
    if v.ndim:  # ORT would raise a bare TypeError ("only 0-dimensional arrays ...")
        raise BackendCannotTake(f"{where}: a map value of shape {list(v.shape)}; ONNX "
                                "Runtime's maps hold one number per value (a 0-d tensor; "
                                "onnxdata make draws those with --shape NAME=)")
    return v.item()


def _tensor_to_ort(ort: Any, arr: Any, code: int, where: str) -> Any:
    if arr.dtype.kind in "OSU":
        return strings_as_text(arr, where)
    dt = data_type_for_dtype(arr.dtype)
    if dt is None or not uses_ml_dtypes(dt.code):
        return arr  # numpy's own dtypes go as they are; ORT checks them against the model
    if code and dt.code != code:
        raise OnnxDataError(f"{where}: dtype {arr.dtype}, but the model declares "
                            f"tensor({type_name(code)})")
    if dt.sub_byte:
        # ORT reads the packed bytes from the front of a buffer of the array's shape
        packed = np.frombuffer(le_bytes(arr, dt), np.uint8)
        buf = np.zeros(arr.size, np.uint8)
        buf[:packed.size] = packed
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(buf.reshape(arr.shape), dt.code)
    # not np.ascontiguousarray: it makes a 0-d array 1-d, and ORT then runs on shape [1]
    bits = np.array(arr, order="C", copy=True).view(np.dtype(f"u{arr.dtype.itemsize}"))
    return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, dt.code)


def as_ort_value(ort: Any, fed: Any, where: str) -> Any:
    """A fed value (array or OrtValue) as an OrtValue, for ``run_with_ort_values``."""
    if isinstance(fed, ort.OrtValue):
        return fed
    if isinstance(fed, np.ndarray):
        return ort.OrtValue.ortvalue_from_numpy(fed)
    raise OnnxDataError(f"{where}: ONNX Runtime's Python API returns bfloat16, float8 and "
                        "sub-byte outputs only through OrtValues, and takes only tensors "
                        f"there, not a {type(fed).__name__}")


def read_ort_value(value: Any, t: DeclaredType, where: str) -> Any:
    """A tensor OrtValue as an array of the declared element type, read from its bytes."""
    if not value.is_tensor():
        raise OnnxDataError(f"{where}: ONNX Runtime returned a non-tensor for {t}")
    code = int(value.element_type())
    dt: DataType | None = DATA_TYPES.get(code)
    if dt is None or code != t.elem_type:
        raise OnnxDataError(f"{where}: ONNX Runtime returned {value.data_type()}, but the "
                            f"model declares {t}")
    if code == STRING or not uses_ml_dtypes(code):
        return value.numpy()
    if value.device_name().lower() != "cpu":
        raise OnnxDataError(f"{where}: ONNX Runtime returned {t} on {value.device_name()}; "
                            "onnxdata reads these types from host memory only")
    shape = tuple(int(d) for d in value.shape())
    count = int(np.prod(shape, dtype=np.int64))
    size = int(value.tensor_size_in_bytes())
    need = (count * dt.bits + 7) // 8
    if size < need:
        raise OnnxDataError(f"{where}: ONNX Runtime's {t} of shape {list(shape)} holds "
                            f"{size} bytes, fewer than the {need} it needs")
    raw = ctypes.string_at(value.data_ptr(), need) if need else b""
    return from_le_bytes(raw, dt, count, 0).reshape(shape)
