"""``to_numpy`` of the messages holding other values: a SequenceProto as a list (many
like tensors as views of one buffer), a MapProto as a dict, an OptionalProto as its
value or None; and the readers of all five kinds, by kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from onnxdata.convert.common import (
    U64,
    StrPath,
    check_message,
    fail_at,
)
from onnxdata.convert.sparse import read_sparse
from onnxdata.convert.tensor import (
    PLAIN_RAW,
    plain_raw,
    plain_value,
    read_tensor,
    tensor_node,
)
from onnxdata.core.dtypes import DATA_TYPES, KEY_TYPES, STRING
from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.messages import (
    ELEM_FIELDS,
    KIND_OF_ELEM_TYPE,
    OPTIONAL_FIELDS,
    ElemType,
    elem_type_name,
)
from onnxdata.core.paths import join_path
from onnxdata.rules.common import MAP_VALUE_ELEM_TYPES
from onnxdata.rules.validation import quick_tensor

__all__: list[str] = []  # the readers of convert/values.py's to_numpy; nothing public here


def _read_sequence(s: Any, path: str, base_dir: StrPath | None, depth: int = 0) -> list[Any]:
    check_message(path, s, base_dir, depth)
    et = s.elem_type
    if et not in KIND_OF_ELEM_TYPE:
        raise fail_at(join_path(path, "elem_type"),
                    f"elem_type {elem_type_name(et)} is not an element kind")
    for code in KIND_OF_ELEM_TYPE:
        if code != et and len(getattr(s, ELEM_FIELDS[code])):
            raise fail_at(join_path(path, ELEM_FIELDS[code]), f"elements here, but elem_type is "
                        f"{elem_type_name(et)}")
    field = ELEM_FIELDS[et]
    elems = getattr(s, field)
    if et == ElemType.TENSOR:
        return _read_tensors(elems, join_path(path, field), base_dir, depth + 1)
    read = READERS[KIND_OF_ELEM_TYPE[et]]
    at = join_path(path, field)
    out = [read(e, f"{at}[{i}]", base_dir, depth + 1) for i, e in enumerate(elems)]
    if et == ElemType.SPARSE_TENSOR and out:
        codes = {e.values.data_type for e in elems}
        if len(codes) > 1:
            raise fail_at(join_path(path, field), f"elements of data types {sorted(codes)} in one "
                        "sequence")
    return out


def _read_tensors(elems: Any, where: str, base_dir: StrPath | None, depth: int) -> list[Any]:
    """A sequence's tensors, each checked (quick_tensor first) and read; one data type."""
    out: list[Any] = []
    append = out.append
    codes: set[int] = set()
    quick = quick_tensor if depth <= MAX_DEPTH else _unsure
    raw_formats = PLAIN_RAW
    for i, e in enumerate(elems):
        plain = quick(e)
        if plain is not None:
            code, dims, raw = plain[0], plain[1], plain[2]
            codes.add(code)
            fmt = raw_formats.get(code)
            # the common case inline: plain_raw's conditions, one dim
            if raw is not None and fmt is not None and len(dims) == 1 and dims[0] > 0:
                append(np.frombuffer(raw, dtype=fmt[0]))
                continue
            value = plain_raw(plain)
            append(value if value is not None else plain_value(plain, e, f"{where}[{i}]"))
            continue
        codes.add(e.data_type)
        here = f"{where}[{i}]"
        check_message(here, e, base_dir, depth)
        append(read_tensor(e, here, base_dir))
    if len(codes) > 1:
        raise fail_at(where, f"elements of data types {sorted(codes)} in one sequence")
    return out


def _unsure(t: Any) -> None:
    """Below max_depth nothing is vouched for: check_message reports the depth."""
    return None


def _read_map(m: Any, path: str, base_dir: StrPath | None, depth: int = 0) -> dict[Any, Any]:
    check_message(path, m, base_dir, depth)
    kt = m.key_type
    if kt not in KEY_TYPES:
        raise fail_at(join_path(path, "key_type"),
                      f"key_type {kt} is not an integer type or STRING")
    keys: list[Any]
    if kt == STRING:
        if len(m.keys):
            raise fail_at(join_path(path, "keys"), "STRING keys belong in string_keys")
        keys = list(m.string_keys)
    else:
        if len(m.string_keys):
            raise fail_at(join_path(path, "string_keys"), "integer keys belong in keys")
        keys = list(m.keys)
        dtype = DATA_TYPES[kt].dtype
        if dtype == np.uint64:
            keys = [k & U64 for k in keys]
        else:
            lo, hi = int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)
            for i, k in enumerate(keys):
                if not lo <= k <= hi:
                    raise fail_at(f"{join_path(path, 'keys')}[{i}]", f"key {k} is outside "
                                f"{lo}..{hi} for {DATA_TYPES[kt].name}")
    if not m.HasField("values"):
        raise fail_at(join_path(path, "values"), "a map needs values")
    vpath = join_path(path, "values")
    if m.values.elem_type not in MAP_VALUE_ELEM_TYPES:
        raise fail_at(join_path(vpath, "elem_type"), f"map values cannot be "
                    f"{elem_type_name(m.values.elem_type)}")
    values = _read_sequence(m.values, vpath, base_dir, depth + 1)
    if len(keys) != len(values):
        raise fail_at(path, f"{len(keys)} keys but {len(values)} values")
    out = dict(zip(keys, values, strict=True))
    if len(out) != len(keys):
        raise fail_at(path, "a key appears twice")
    return out


def _read_optional(o: Any, path: str, base_dir: StrPath | None, depth: int = 0) -> Any:
    check_message(path, o, base_dir, depth)
    et = o.elem_type
    if et != ElemType.UNDEFINED and et not in KIND_OF_ELEM_TYPE:
        raise fail_at(join_path(path, "elem_type"), f"elem_type {et} is not known")
    for code in KIND_OF_ELEM_TYPE:
        if code != et and o.HasField(OPTIONAL_FIELDS[code]):
            raise fail_at(join_path(path, OPTIONAL_FIELDS[code]), f"a value here, but elem_type is "
                        f"{elem_type_name(et)}")
    if et == ElemType.UNDEFINED or not o.HasField(OPTIONAL_FIELDS[et]):
        return None
    field = OPTIONAL_FIELDS[et]
    return READERS[KIND_OF_ELEM_TYPE[et]](getattr(o, field), join_path(path, field),
                                base_dir, depth + 1)


#: The readers to_numpy uses, by kind: (message, path, base_dir, depth) -> value. Each
#: checks its message with validate's rules before reading it.
READERS: dict[str, Callable[[Any, str, StrPath | None, int], Any]] = {
    "tensor": tensor_node,
    "sparse_tensor": read_sparse,
    "sequence": _read_sequence,
    "map": _read_map,
    "optional": _read_optional,
}
