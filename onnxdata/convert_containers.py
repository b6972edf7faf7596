"""``to_numpy`` of the messages holding other values: a SequenceProto as a list (many
like tensors as views of one buffer), a MapProto as a dict, an OptionalProto as its
value or None; and the readers of all five kinds, by kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from onnxdata.convert_common import (
    _KINDS,
    _OPT_FIELDS,
    _SEQ_FIELDS,
    _U64,
    MAP,
    OPTIONAL,
    SEQUENCE,
    SPARSE_TENSOR,
    TENSOR,
    UNDEFINED,
    StrPath,
    _at,
    _check,
    _elem_name,
    _fail,
)
from onnxdata.convert_sparse import _read_sparse
from onnxdata.convert_tensor import (
    _PLAIN_RAW,
    _plain_raw,
    _plain_value,
    _read_tensor,
    _tensor_node,
)
from onnxdata.dtypes import DATA_TYPES, KEY_TYPES, STRING
from onnxdata.rules_common import DEFAULT_MAX_DEPTH
from onnxdata.validation import quick_tensor

__all__: list[str] = []  # the readers of convert.py's to_numpy; nothing public here


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
