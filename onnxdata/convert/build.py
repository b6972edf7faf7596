"""``from_numpy``'s builders: each kind of message filled from its numpy value (or
copied from a built one), with the element kind, key type and data types inferred
or checked along the way. The bytes follow the contract in ``convert/values.py``."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np

from onnxdata.convert.common import (
    Array,
    ElemTypeArg,
    KeyType,
    SparseParts,
    le_bytes,
    message_kind,
)
from onnxdata.core.dtypes import DATA_TYPES, KEY_TYPES, STRING, data_type_for_dtype
from onnxdata.core.messages import (
    ELEM_FIELDS,
    ELEM_TYPE_OF_KIND,
    KIND_OF_ELEM_TYPE,
    MESSAGE_CLASSES,
    OPTIONAL_FIELDS,
    ElemType,
    KindName,
    Message,
)
from onnxdata.core.paths import join_path
from onnxdata.errors import OnnxDataError, ValidationError
from onnxdata.rules.common import MAP_VALUE_ELEM_TYPES
from onnxdata.rules.containers import element_type_problems, nested_type

__all__ = ["build_message"]  # the builders of convert/values.py's from_numpy


def infer_kind(value: object, path: str) -> KindName:
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
            return message_kind(value)
        except TypeError:
            pass
    raise OnnxDataError(f"{path or 'value'}: cannot convert a value of type "
                        f"{type(value).__name__}; expected an ndarray or numpy scalar, "
                        "SparseParts, list, dict, None or a message"
                        + (" (wrap Python numbers and strings in np.asarray)"
                           if isinstance(value, (int, float, complex, str, bytes)) else ""))


def _elem_code(elem_type: ElemTypeArg, what: str) -> int:
    if isinstance(elem_type, str):
        name = elem_type.lower()
        if name in ELEM_TYPE_OF_KIND:
            return ELEM_TYPE_OF_KIND[name]
        if name == "undefined":
            return ElemType.UNDEFINED
    elif isinstance(elem_type, (int, np.integer)) and not isinstance(elem_type, bool) \
            and 0 <= elem_type <= ElemType.OPTIONAL:
        return int(elem_type)
    raise OnnxDataError(f"{what}: elem_type {elem_type!r} is not one of "
                        f"{', '.join(ELEM_TYPE_OF_KIND)} (or their codes 1..5)")


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
    if message_kind(value) != kind:
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


def utf8(text: str, where: str, what: str) -> bytes:
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
            out.append(utf8(s, f"{path or 'value'}[{i}]", "the string"))
        else:
            raise OnnxDataError(f"{path or 'value'}: element {i} of a string tensor is a "
                                f"{type(s).__name__}, not bytes or str")
    return out


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
    _fill_tensor(sp.values, values, join_path(path, "values"), name, None, None)
    _fill_tensor(sp.indices, indices.astype(np.int64, copy=False), join_path(path, "indices"), "",
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
    if value and (elem_type is None or _elem_code(elem_type, where) == ElemType.TENSOR) and all(
            type(v) is np.ndarray for v in value):
        _fill_tensors(s, value, where)
        return
    kinds = [infer_kind(v, f"{where}[{i}]") for i, v in enumerate(value)]
    found = set(kinds)
    if elem_type is not None:
        et = _elem_code(elem_type, where)
        if et == ElemType.UNDEFINED:
            raise OnnxDataError(f"{where}: a sequence's elem_type cannot be UNDEFINED")
        if et != ElemType.OPTIONAL and found - {KIND_OF_ELEM_TYPE[et]}:
            i = next(i for i, k in enumerate(kinds) if k != KIND_OF_ELEM_TYPE[et])
            raise OnnxDataError(f"{where}[{i}]: a {kinds[i]} in a sequence of "
                                f"{KIND_OF_ELEM_TYPE[et]}")
    elif not value:
        raise OnnxDataError(f"{where}: an empty list needs elem_type (tensor, sparse_tensor, "
                            "sequence, map or optional)")
    elif "optional" in found:
        et = ElemType.OPTIONAL
    elif len(found) > 1:
        firsts = {k: kinds.index(k) for k in sorted(found)}
        raise OnnxDataError(f"{where}: mixed element kinds: " + ", ".join(
            f"{k} at [{i}]" for k, i in firsts.items()) + "; a sequence holds one kind")
    else:
        et = ELEM_TYPE_OF_KIND[kinds[0]]
    s.elem_type = et
    field = getattr(s, ELEM_FIELDS[et])
    fill = _FILLERS[KIND_OF_ELEM_TYPE[et]]
    add = field.add
    for i, v in enumerate(value):
        fill(add(), v, f"{where}[{i}]", "", None, None)
    # one type all the way down
    if et in (ElemType.SEQUENCE, ElemType.MAP, ElemType.OPTIONAL) and len(field) > 1:
        mixed = element_type_problems(where, "", [nested_type(e) for e in field])
        if mixed:
            raise ValidationError(mixed)
    if et in (ElemType.TENSOR, ElemType.SPARSE_TENSOR) and len(field) > 1:
        codes = [e.data_type if et == ElemType.TENSOR else e.values.data_type for e in field]
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
    s.elem_type = ElemType.TENSOR
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
                encoded.append(utf8(k, where, "key"))
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
    if elem_type is not None and _elem_code(elem_type, where) not in MAP_VALUE_ELEM_TYPES:
        raise OnnxDataError(f"{where}: map values cannot be {elem_type!r}")
    if any(v is None for v in values):
        raise OnnxDataError(f"{where}: map values cannot be None (a map holds no optionals)")
    _fill_sequence(m.values, values, join_path(where, "values"), "", elem_type, None)
    if m.values.elem_type == ElemType.OPTIONAL:
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
        if et == ElemType.UNDEFINED:
            raise OnnxDataError(f"{where}: elem_type UNDEFINED means no value, but one is given")
    elif value is None:
        o.elem_type = ElemType.UNDEFINED
        return
    elif _copy_message(o, value, "optional", where) if infer_kind(value, where) == "optional" \
            else False:
        if name:
            o.name = name
        return
    else:
        et = ELEM_TYPE_OF_KIND[infer_kind(value, where)]
    o.elem_type = et
    field = OPTIONAL_FIELDS[et]
    _FILLERS[KIND_OF_ELEM_TYPE[et]](getattr(o, field), value, join_path(where, field), "",
                                    None, key_type if et == ElemType.MAP else None)


_FILLERS: dict[str, Callable[[Any, Any, str, str, Any, Any], None]] = {
    "tensor": _fill_tensor,
    "sparse_tensor": _fill_sparse,
    "sequence": _fill_sequence,
    "map": _fill_map,
    "optional": _fill_optional,
}


def build_message(value: Any, kind: str, elem_type: Any = None, key_type: Any = None,
                  name: str = "") -> Message:
    """A message of ``kind`` ("tensor", "sequence", ...) filled from ``value``, which is
    already prepared: from_numpy's last step, and how ``declared`` builds the messages it
    nests."""
    message = MESSAGE_CLASSES[kind]()
    _FILLERS[kind](message, value, "", name, elem_type, key_type)
    return message
