"""The rules of the messages holding other values: SparseTensorProto (shapes and
indices), SequenceProto, OptionalProto and MapProto, and the nested type of a value
that the elements of one sequence share."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Final, TypeAlias

import numpy as np

from onnxdata.core.dtypes import KEY_TYPES, STRING, key_range
from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.messages import (
    ELEM_FIELDS,
    KIND_OF_ELEM_TYPE,
    OPTIONAL_FIELDS,
    ElemType,
    elem_type_name,
)
from onnxdata.core.paths import join_path
from onnxdata.errors import Problem
from onnxdata.rules.common import (
    CHUNK,
    INT64,
    MAP_VALUE_ELEM_TYPES,
    MAX_REPORTED,
    capped_problems,
    dims_text,
    has_field,
    short_repr,
    type_name,
)
from onnxdata.rules.tensor import dims_problems, element_count, entries_in_range, repeated_array

__all__ = [
    "NestedType",
    "element_type_problems",
    "map_problems",
    "nested_type",
    "optional_problems",
    "same_type_problems",
    "sequence_inner_type",
    "sequence_problems",
    "sparse_index_problems",
    "sparse_tensor_problems",
]

#: Every elem_type code an OptionalProto may have (UNDEFINED too).
_ELEM_TYPES: Final = frozenset(ElemType)


# --------------------------------------------------------------------------- sparse

def sparse_tensor_problems(path: str, dims: Sequence[int], values_dims: Sequence[int] | None,
                           indices_dims: Sequence[int] | None,
                           indices_data_type: int | None) -> list[Problem]:
    """The shape rules of a SparseTensorProto.

    ``values_dims``/``indices_dims`` are None when that tensor is absent, and
    ``indices_data_type`` is the indices' data type code. ``values`` is 1-D
    [NNZ]; ``indices`` is INT64 of shape [NNZ] (linear) or [NNZ, rank].
    """
    out: list[Problem] = []
    out += dims_problems(path, dims)
    if values_dims is None:
        out.append(Problem(join_path(path, "values"),
                           "values is missing; a sparse tensor needs it"))
        return out
    if len(values_dims) != 1:
        out.append(Problem(join_path(path, "values.dims"),
                           f"values must be 1-D [NNZ], but dims are {dims_text(values_dims)}"))
        return out
    nnz = values_dims[0]
    if indices_dims is None:
        if nnz != 0:
            out.append(Problem(join_path(path, "indices"),
                               f"indices is missing but values holds {nnz} elements"))
        return out
    if indices_data_type != INT64:
        out.append(Problem(join_path(path, "indices.data_type"),
                           f"indices must be INT64, not {type_name(indices_data_type or 0)}"))
    rank = len(dims)
    if list(indices_dims) not in ([nnz], [nnz, rank]):
        out.append(Problem(join_path(path, "indices.dims"),
                           f"indices dims {dims_text(indices_dims)} must be [NNZ] = [{nnz}] or "
                           f"[NNZ, rank] = [{nnz}, {rank}]"))
    return out


def sparse_index_problems(path: str, dims: Sequence[int], rank2: bool,
                          indices: Sequence[int] | np.ndarray[Any, Any]) -> list[Problem]:
    """Every index inside ``dims``, ascending without duplicates.

    ``indices`` is the flat int64 data of the indices tensor (a repeated field,
    or an ndarray view of raw_data); ``rank2`` says it is [NNZ, rank] rather
    than [NNZ] linear. Read in chunks of rows: nothing larger than a chunk is
    allocated. ``path`` is the sparse tensor's; faults name ``indices[row]``.
    """
    if any(d < 0 for d in dims):
        return []
    rank = len(dims) if rank2 else 1
    if rank2 and rank == 0:
        return []
    total = element_count(dims) or 0
    if not rank2 and _linear_fine(indices, total):
        return []
    bounds = np.array([min(d, (1 << 63) - 1) for d in dims] if rank2
                      else [min(total, (1 << 63) - 1)], dtype=np.int64)
    found: list[tuple[int, str]] = []
    nbad = 0
    prev: np.ndarray[Any, Any] | None = None  # the last row of the previous chunk
    prev_outside = np.zeros(0, dtype=bool)
    rows = len(indices) // rank
    step = max(1, CHUNK // rank)
    for r0 in range(0, rows, step):
        r1 = min(rows, r0 + step)
        chunk = np.asarray(indices[r0 * rank:r1 * rank], dtype=np.int64).reshape(r1 - r0, rank)
        outside = np.asarray(((chunk < 0) | (chunk >= bounds)).any(axis=1))
        for i in np.flatnonzero(outside):
            nbad += 1
            if len(found) < MAX_REPORTED:
                row = chunk[i]
                shown = str(tuple(int(x) for x in row)) if rank2 else str(int(row[0]))
                limit = f"dims {dims_text(dims)}" if rank2 else f"[0, {total})"
                found.append((r0 + int(i), f"index {shown} lies outside {limit}"))
        if prev is None:
            ordered, skip, base = chunk, outside, r0
        else:
            ordered = np.concatenate([prev, chunk])
            skip = np.concatenate([prev_outside, outside])
            base = r0 - 1
        if len(ordered) > 1:
            diff = ordered[1:] - ordered[:-1]
            nonzero = diff != 0
            first = nonzero.argmax(axis=1)
            sign = diff[np.arange(len(diff)), first]
            wrong = np.asarray(~nonzero.any(axis=1) | (sign < 0)) & ~(skip[1:] | skip[:-1])
            for i in np.flatnonzero(wrong):
                nbad += 1
                if len(found) < MAX_REPORTED:
                    found.append((base + int(i) + 1,
                                  f"not after indices[{base + int(i)}]: indices must be "
                                  "ascending without duplicates"))
        prev, prev_outside = chunk[-1:], outside[-1:]
    return capped_problems(path, "indices", sorted(found), nbad)


def _linear_fine(indices: Sequence[int] | np.ndarray[Any, Any], total: int) -> bool:
    """Linear indices all inside [0, total) and strictly ascending, in one numpy pass per
    chunk; False to let the caller find and word the faults."""
    for r0 in range(0, len(indices), CHUNK):
        chunk = np.asarray(indices[max(0, r0 - 1):r0 + CHUNK], dtype=np.int64)
        if chunk.size and (int(chunk[0]) < 0 or int(chunk[-1]) >= total):
            return False
        if chunk.size > 1 and not bool((chunk[1:] > chunk[:-1]).all()):
            return False  # (ascending, so first and last bound them all)
    return True


# --------------------------------------------------------------------------- containers

def sequence_problems(path: str, elem_type: int | None,
                      counts_by_field: Mapping[str, int]) -> list[Problem]:
    """A SequenceProto's elem_type (None when absent) against where its elements are."""
    out: list[Problem] = []
    if elem_type is None:
        out.append(Problem(join_path(path, "elem_type"),
                           "elem_type is missing; every sequence needs one, even an empty one"))
    elif elem_type == ElemType.UNDEFINED:
        out.append(Problem(join_path(path, "elem_type"),
                           "elem_type is UNDEFINED; a sequence needs TENSOR, SPARSE_TENSOR, "
                           "SEQUENCE, MAP or OPTIONAL, even when empty"))
    elif elem_type not in ELEM_FIELDS:
        out.append(Problem(join_path(path, "elem_type"),
                           f"{elem_type} is not an element type (1 to 5)"))
    want = ELEM_FIELDS.get(elem_type or 0)
    for field in ELEM_FIELDS.values():
        n = counts_by_field.get(field, 0)
        if n and field != want:
            expected = (f"elem_type {elem_type_name(elem_type or 0)} keeps its elements in "
                        f"{want}" if want else "elem_type names no field")
            out.append(Problem(join_path(path, field),
                               f"{n} element{'s' if n != 1 else ''} here, but {expected}"))
    return out


def same_type_problems(path: str, field: str, data_types: Sequence[int]) -> list[Problem]:
    """Tensors (or sparse tensors' values) of one sequence share one data type."""
    if not data_types:
        return []
    first = data_types[0]
    if isinstance(data_types, list) and data_types.count(first) == len(data_types):
        return []  # (one C pass: a sequence of a million tensors)
    bad = [(i, f"data type {type_name(t)} differs from {type_name(first)} of {field}[0]; "
               "the tensors of a sequence share one data type")
           for i, t in enumerate(data_types) if t != first]
    return capped_problems(path, field, bad, len(bad))


#: A value's type as far as the message shows it: ``(kind, ...)`` with a data type,
#: key type or inner type after the kind, each None where unknown (an empty
#: sequence's elements, an empty optional's value); None when nothing is known.
NestedType: TypeAlias = "tuple[Any, ...] | None"


class _Mismatch(Exception):
    pass


def nested_type(message: Any, depth: int = 0) -> NestedType:
    """The type of a data message all the way down (see NestedType), for
    :func:`element_type_problems`. A tensor sequence's type is its first tensor's: that
    its tensors agree is the sequence's own rule (:func:`same_type_problems`)."""
    kind = message.DESCRIPTOR.name
    if depth > MAX_DEPTH:
        return None
    if kind == "TensorProto":
        return ("tensor", message.data_type)
    if kind == "SparseTensorProto":
        return ("sparse_tensor", message.values.data_type if has_field(message, "values") else None)
    if kind == "MapProto":
        values = nested_type(message.values, depth + 1) if has_field(message, "values") else None
        return ("map", message.key_type, values[1] if values else None)
    code = message.elem_type
    if kind == "OptionalProto":
        field = OPTIONAL_FIELDS.get(code)
        if field is None:
            return ("optional", None)
        if not has_field(message, field):
            return ("optional", (KIND_OF_ELEM_TYPE[code],))
        return ("optional", nested_type(getattr(message, field), depth + 1))
    field = ELEM_FIELDS.get(code)
    if field is None:
        return ("sequence", None)
    elements = getattr(message, field)
    if code == ElemType.TENSOR:
        elements = elements[:1]
    return ("sequence", sequence_inner_type(code, (nested_type(e, depth + 1) for e in elements)))


def sequence_inner_type(code: int, element_types: Iterable[NestedType]) -> NestedType:
    """A sequence's element type from its elem_type ``code`` and its elements' types (for
    tensors only the first's): what they say together, up to the first disagreement
    (which the sequence's own check reports)."""
    inner: NestedType = (KIND_OF_ELEM_TYPE[code],)
    previous: Any = _NOTHING
    for t in element_types:
        if t == previous:  # merging a type again changes nothing (a million like elements)
            continue
        previous = t
        try:
            inner = _merged(inner, t)
        except _Mismatch:
            break
    return inner


_NOTHING: Final = object()


def _merged(a: Any, b: Any) -> Any:
    """What two partly known types say together; _Mismatch when they disagree."""
    if a is None:
        return b
    if b is None:
        return a
    if not isinstance(a, tuple) or not isinstance(b, tuple):
        if a != b:
            raise _Mismatch
        return a
    if a[0] != b[0]:
        raise _Mismatch
    return (a[0], *(_merged(x, y) for x, y in itertools.zip_longest(a[1:], b[1:])))


def type_text(t: NestedType) -> str:
    """``sequence(tensor(FLOAT))``, ``map(INT64, tensor(?))``: a NestedType for people."""
    if t is None:
        return "?"
    parts = [type_text(x) if isinstance(x, tuple) or x is None or t[0] in ("sequence",
             "optional") else type_name(x) for x in t[1:]]
    return f"{t[0]}({', '.join(parts) or '?'})"


def element_type_problems(path: str, field: str, types: Sequence[NestedType],
                          counts: Sequence[int] | None = None) -> list[Problem]:
    """The elements of one sequence share one type all the way down (ONNX gives a sequence
    one ``elem_type``): a sequence of float sequences and int64 sequences, of optional
    tensors and optional sequences, or of maps with int and with string keys is refused.
    With ``counts``, ``types[j]`` stands for ``counts[j]`` elements in a row (the engine's
    elements grouped by layout: the rule runs once per run, not once per element)."""
    merged: NestedType = None
    bad: list[tuple[int, str]] = []
    total = 0
    previous: Any = _NOTHING
    why = ""  # what was wrong with the previous type ("" when it merged)
    i = 0
    for j, t in enumerate(types):
        n = 1 if counts is None else counts[j]
        if t != previous:  # the same type again merges, or fails, as it did just before
            previous = t
            try:
                merged = _merged(merged, t)
                why = ""
            except _Mismatch:
                why = (f"{type_text(t)} differs from {type_text(merged)} of the elements "
                       "before it; the elements of a sequence share one type all the way "
                       "down")
        if why:
            bad += [(k, why) for k in range(i, i + min(n, MAX_REPORTED - len(bad)))]
            total += n
        i += n
    return capped_problems(path, field, bad, total)


def optional_problems(path: str, elem_type: int | None,
                      set_fields: Collection[str]) -> list[Problem]:
    """An OptionalProto's elem_type (None when absent) against the value fields set."""
    out: list[Problem] = []
    if elem_type is None:
        out.append(Problem(join_path(path, "elem_type"),
                           "elem_type is missing; write UNDEFINED (0) for an absent value"))
    elif elem_type not in _ELEM_TYPES:
        out.append(Problem(join_path(path, "elem_type"),
                           f"{elem_type} is not an element type (0 to 5)"))
    present = [f for f in OPTIONAL_FIELDS.values() if f in set_fields]
    if len(present) > 1:
        out.append(Problem(path, f"{' and '.join(present)} are all set; an optional holds at "
                                 "most one value"))
    want = OPTIONAL_FIELDS.get(elem_type or 0)
    for field in present:
        if field == want:
            continue
        if elem_type == ElemType.UNDEFINED:
            why = "elem_type is UNDEFINED, which means no value"
        elif want is None:
            why = "elem_type names no value field"
        else:
            why = f"elem_type {elem_type_name(elem_type or 0)} keeps its value in {want}"
        out.append(Problem(join_path(path, field), f"set, but {why}"))
    return out


def map_problems(path: str, key_type: int | None, keys: Sequence[int] | np.ndarray[Any, Any],
                 string_keys: Sequence[bytes], *, values_elem_type: int | None,
                 values_present: bool = True, n_values: int | None = None) -> list[Problem]:
    """A MapProto's key rules, and keys against values.

    ``key_type`` is None when absent; ``keys``/``string_keys`` are the two
    repeated fields; ``values_elem_type`` is the values sequence's elem_type
    (None when absent) and ``n_values`` its element count (None to skip).
    """
    out: list[Problem] = []
    key_names = "INT8, INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64 or STRING"
    if key_type is None:
        out.append(Problem(join_path(path, "key_type"), "key_type is missing"))
    elif key_type not in KEY_TYPES:
        out.append(Problem(join_path(path, "key_type"),
                           f"{type_name(key_type)} is not a key type; expected {key_names}"))
    if not values_present:
        out.append(Problem(join_path(path, "values"), "values is missing; a map needs its values "
                                                  "sequence, even when empty"))
    elif values_elem_type in ELEM_FIELDS and values_elem_type not in MAP_VALUE_ELEM_TYPES:
        out.append(Problem(join_path(path, "values.elem_type"),
                           "map values cannot be OPTIONAL; expected TENSOR, SPARSE_TENSOR, "
                           "SEQUENCE or MAP"))
    valid_key = key_type in KEY_TYPES
    if valid_key and key_type == STRING:
        if keys:
            out.append(Problem(join_path(path, "keys"), f"{len(keys)} integer keys, but key_type "
                                                    "STRING keeps its keys in string_keys"))
        dup: list[tuple[int, str]] = []
        first: dict[bytes, int] = {}
        repeats = len(string_keys) - len(set(string_keys))  # every key after its first
        for at, skey in enumerate(string_keys if repeats else ()):
            was = first.setdefault(skey, at)
            if was != at:
                dup.append((at, f"{short_repr(skey)} appears again (first at string_keys[{was}])"))
                if len(dup) == MAX_REPORTED:  # the rest are counted, not worded
                    break
        out += capped_problems(path, "string_keys", dup, repeats)
    elif valid_key:
        assert key_type is not None
        name = type_name(key_type)
        if string_keys:
            out.append(Problem(join_path(path, "string_keys"),
                               f"{len(string_keys)} string keys, but key_type {name} keeps "
                               "its keys in keys"))
        lo, hi = key_range(key_type) or (0, -1)
        bad: list[tuple[int, str]] = []
        seen: dict[int, int] = {}
        total = _key_faults(keys, lo, hi)  # None: count them in the loop
        listed = keys.tolist() if isinstance(keys, np.ndarray) and total != 0 else keys
        for i, k in enumerate(listed if total != 0 else ()):
            if not lo <= k <= hi:
                bad.append((i, f"{k} is outside {name}'s range [{lo}, {hi}]"))
            j = seen.setdefault(k, i)
            if j != i:
                bad.append((i, f"{k} appears again (first at keys[{j}])"))
            if total is not None and len(bad) >= MAX_REPORTED:
                break  # the rest are counted, not worded
        out += capped_problems(path, "keys", bad, len(bad) if total is None else total)
    n_keys = (len(string_keys) if key_type == STRING else len(keys)) if valid_key else (
        len(keys) + len(string_keys))
    if n_values is not None and n_keys != n_values:
        out.append(Problem(path, f"{n_keys} key{'s' if n_keys != 1 else ''} but {n_values} "
                                 f"value{'s' if n_values != 1 else ''}"))
    return out


def _key_faults(keys: Sequence[int] | np.ndarray[Any, Any], lo: int, hi: int) -> int | None:
    """How many faults the key loop finds (a key outside [lo, hi], a key again), in a few
    numpy passes (1M keys: ~0.1 s less than the loop that then finds and words each
    fault); None where the loop must count them (few keys, or ones past int64)."""
    if len(keys) < 64:
        return None  # the loop is as fast
    if isinstance(keys, np.ndarray):
        values = keys.astype(np.int64, copy=False)
    elif isinstance(keys, (list, tuple)):
        try:
            values = np.array(keys, dtype=np.int64)
        except OverflowError:
            return None
    else:
        values = repeated_array(keys, np.dtype(np.int64))
    if entries_in_range(values, lo, hi):
        if bool((values[1:] > values[:-1]).all()):
            return 0  # ascending, the common order: no sort needed
        outside = 0
    else:
        outside = int(np.count_nonzero((values < lo) | (values > hi)))
    return outside + _repeats(values)


def _repeats(values: np.ndarray[Any, Any]) -> int:
    """How many of the int64 ``values`` repeat an earlier one: by a count of each value
    where they span little (a uint16 key's 65,536 at most: 71,000 keys in 0.2 ms, not
    the 2 ms of a sort), else by a sort."""
    low, high = int(values.min()), int(values.max())
    if high - low <= max(4 * values.size, _SPAN):
        seen = np.bincount((values - low).astype(np.intp), minlength=0)
        return int(values.size - np.count_nonzero(seen))
    ordered = np.sort(values)
    return int(np.count_nonzero(ordered[1:] == ordered[:-1]))


#: Keys spanning this many values or fewer are counted, not sorted (``_repeats``).
_SPAN = 1 << 16
