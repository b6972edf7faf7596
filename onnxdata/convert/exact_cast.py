"""A value given for a declared tensor element type: converted when that loses nothing of
its kind, refused when it would.

One rule for every route that makes a value the type a model declares
(``from_numpy``/``write`` with ``declared=`` or a tensor's ``elem_type=``,
``as_declared``, ``save_test_data_set``), so none of them truncates 1.5 to 1:

- numbers convert along numpy's ``same_kind`` casts: a bool to any number type,
  an integer to a float or complex type, a float to any float type (float64 to
  float32, float16, bfloat16 or float8 rounds: that precision is what the model
  declares) or complex type, a complex only to a complex type. ml_dtypes' types
  count as what they are (int4 an integer, float8 a float): numpy's ``can_cast``
  says ``same_kind`` for every cast ml_dtypes registers, float32 to int4 included;
- an integer into an integer type converts when every value lies in that type's
  range, whatever the two signednesses (numpy's own cast would wrap 300 into int8);
- Python numbers and lists of them go the same way, by the numpy type they make,
  except that a Python float that is a whole number (2.0) may be an integer;
- strings (str, bytes, numpy string or object arrays) make only a tensor(string),
  and a tensor(string) only strings.

Anything else raises OnnxDataError naming the path and both types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np

from onnxdata.core.dtypes import DATA_TYPES, STRING, data_type_for_dtype
from onnxdata.errors import OnnxDataError

__all__ = ["exact_array"]

#: ml_dtypes' integer types by ONNX code (UINT4, INT4, UINT2, INT2); the others are floats.
_ML_INT_KINDS = {21: "u", 22: "i", 25: "u", 26: "i"}
#: The kinds each kind converts into without losing what it is (numpy's same_kind, with the
#: integers' range checked instead of their signedness).
_INTO = {"b": "buifc", "u": "uifc", "i": "uifc", "f": "fc", "c": "c"}
_STRINGS = (str, bytes, np.str_, np.bytes_)
_ALL_STRINGS = object()


def exact_array(value: Any, code: int, path: str) -> Any:
    """``value`` (an ndarray, numpy scalar, Python number, string or list of them) as an
    ndarray of ONNX data type ``code``, or OnnxDataError at ``path`` when converting it
    would lose something (see the module's rule)."""
    dt = DATA_TYPES[code]
    python = not isinstance(value, (np.ndarray, np.generic))
    if code == STRING:
        return _strings(value, python, path)
    arr = _as_array(value, python, code, path)
    if arr.dtype == dt.dtype:
        return arr
    src, dst = _kind(arr.dtype), _kind(dt.dtype)
    if src == "S" or src not in _INTO:
        raise _refused(path, arr, code, python=python)
    if dst not in _INTO[src]:
        if python and src == "f" and dst in "ui" and _whole(arr):
            _check_range(arr, dt.dtype, code, path, python)
            return arr.astype(dt.dtype)
        raise _refused(path, arr, code, _WHY.get((src, dst), ""), python=python)
    if src in "ui" and dst in "ui":
        _check_range(arr, dt.dtype, code, path, python)
    return arr.astype(dt.dtype)


_WHY = {("f", "u"): " without losing their fraction",
        ("f", "i"): " without losing their fraction",
        **{(k, "b"): ": only bools make one (compare them with 0 first)" for k in "uifc"},
        **{("c", k): " without losing their imaginary part" for k in "uif"}}


def _as_array(value: Any, python: bool, code: int, path: str) -> Any:
    """``value`` as an ndarray of its own type; Python values numpy makes no number type of
    (ints past 64 bits, None in a list) go straight to type ``code``, numpy's checks and
    all."""
    try:
        arr = np.asarray(value)
        if python and arr.dtype.kind == "O":
            arr = np.asarray(value, dtype=DATA_TYPES[code].dtype)
    except (TypeError, ValueError, OverflowError) as exc:
        raise OnnxDataError(f"{path}: cannot make a tensor({DATA_TYPES[code].name.lower()}) "
                            f"of {type(value).__name__}: {exc}") from None
    return arr


def _strings(value: Any, python: bool, path: str) -> Any:
    if python:
        items = value if isinstance(value, (list, tuple)) else [value]
        other = next((v for v in _flat(items) if not isinstance(v, _STRINGS)), _ALL_STRINGS)
        if other is _ALL_STRINGS:
            return np.asarray(value, dtype=object)
        raise OnnxDataError(f"{path}: cannot make a tensor(string) of "
                            f"{type(other).__name__} values")
    arr = np.asarray(value)
    if arr.dtype.kind not in "OSU":
        raise _refused(path, arr, STRING)
    return arr


def _flat(items: Any) -> Any:
    for v in items:
        if isinstance(v, (list, tuple)):
            yield from _flat(v)
        else:
            yield v


def _kind(dtype: np.dtype[Any]) -> str:
    """numpy's kind letter (b, u, i, f, c), "S" for strings, ml_dtypes' types by what they
    are; anything else ("M", "V", ...) converts into nothing."""
    if dtype.kind in "OSU":
        return "S"
    if dtype.kind != "V":
        return dtype.kind
    dt = data_type_for_dtype(dtype)
    return "V" if dt is None else _ML_INT_KINDS.get(dt.code, "f")


def _whole(arr: Any) -> bool:
    """Every value is a finite whole number (2.0, not 2.5, inf or nan)."""
    return bool(np.all(np.isfinite(arr) & (arr == np.trunc(arr))))


def _check_range(arr: Any, dtype: np.dtype[Any], code: int, path: str, python: bool
                 ) -> None:
    """OnnxDataError unless every value of ``arr`` lies in the integer ``dtype``'s range."""
    if arr.size == 0:
        return
    lo, hi = _int_range(dtype)
    if _kind(arr.dtype) in "ui":
        have_lo, have_hi = _int_range(arr.dtype)
        if have_lo >= lo and have_hi <= hi:
            return  # every value of the source type fits: no pass over the values
    for v in (arr.min(), arr.max()):
        n = int(v)
        if not lo <= n <= hi:
            raise _refused(path, arr, code, f": {n} is outside its range [{lo}, {hi}]",
                           python=python)


#: ml_dtypes' iinfo knows int4, uint2 ... as well as numpy's own integer types.
_IINFO: Callable[[np.dtype[Any]], Any] = ml_dtypes.iinfo


def _int_range(dtype: np.dtype[Any]) -> tuple[int, int]:
    info = _IINFO(dtype)
    return int(info.min), int(info.max)


_PYTHON_NAMES = {"b": "bool", "u": "int", "i": "int", "f": "float", "c": "complex", "S": "str"}


def _refused(path: str, arr: Any, code: int, why: str = "", *, python: bool = False
             ) -> OnnxDataError:
    """The error for ``arr``'s values, named by their Python type when they were Python
    values (``int``), else by their dtype (``float32``)."""
    kind = _kind(arr.dtype)
    src = _PYTHON_NAMES.get(kind, str(arr.dtype)) if python else \
        "string" if arr.dtype.kind in "SU" else str(arr.dtype)
    return OnnxDataError(f"{path}: cannot make a tensor({DATA_TYPES[code].name.lower()}) "
                         f"of {src} values{why}")

