"""Validation: every rule of the format, each fault reported with a path from the root.

``problems(message)`` walks a message (ours or the ``onnx`` package's, read in
place through their shared descriptors) and returns every :class:`Problem`;
``validate(message)`` raises :class:`ValidationError` carrying them all.

The rules themselves are pure functions over plain facts (data type codes,
dims, entry counts, keys...), so the fast ``read`` that walks the wire and the
explorer apply exactly the same rules without building messages:

- :func:`wire_field_problems` -- field numbers and wire types against the schema;
- :func:`tensor_storage_problems` -- data type, dims, which storage, and counts;
- :func:`typed_entry_problems` -- entries of a typed field within their range;
- :func:`external_data_problems` -- the external-data entries and the file;
- :func:`sparse_tensor_problems` / :func:`sparse_index_problems` -- shapes and indices;
- :func:`sequence_problems`, :func:`optional_problems`, :func:`map_problems`.

Choices where the spec leaves room (each is tested):

- A TensorProto's storage is the typed fields holding at least one entry plus
  ``raw_data`` when it is *present* (even empty): onnx reads a present
  ``raw_data`` in preference to everything else, so an empty one beside
  ``float_data`` is two storages, not one.
- Typed entries must fit the type they stand for (an INT8 in ``int32_data``
  lies in [-128, 127], BOOL is 0 or 1, FLOAT16 bits are 0..65535, 6-bit floats
  0..63): a conversion would otherwise truncate them silently.
- Strings are bytes: ``string_data`` and string keys are not checked for UTF-8.
- External data: ``data_location`` EXTERNAL and a non-empty ``external_data``
  go together (onnx ignores entries without EXTERNAL, which loses the data);
  keys are ``location`` (required), ``offset``, ``length`` and ``checksum``,
  each at most once; offset and length are decimal digits only; a ``length``
  must equal the bytes the tensor needs; STRING tensors cannot be external.
  With ``base_dir`` the file must exist inside it after resolving symlinks and
  hold ``offset + length`` bytes; the checksum is not verified.
- SparseTensorProto: ``values`` is required; ``indices`` may be absent only
  when NNZ is 0. Indices must be stored inline (not external data), must be
  ascending without duplicates (lexicographic for [NNZ, rank]), as the schema
  says, and are checked in chunks so no array larger than a chunk is made.
- MapProto: UINT64 keys are the 64 bits of the int64 in ``keys``, so every
  int64 is a valid UINT64 key; the values' ``elem_type`` may not be OPTIONAL.
- A message nested deeper than ``max_depth`` (default 100, so root plus 100
  levels, exactly what protobuf's parser accepts) is one problem at its path;
  the walk is iterative and never raises RecursionError.
- Cost: counts come from ``len()`` of the repeated fields, without copies,
  but protobuf's Python API has no view of a bytes field, so reading
  ``raw_data`` copies it once per tensor (``to_numpy`` reads it once for
  both the check and the array); the fast ``read`` calls the same pure rules
  on the wire and copies nothing. The common tensor (only dims, data_type,
  name and one storage) is checked by :func:`quick_tensor` with one
  ``ListFields`` and a verdict cached per (data_type, dims, storage size),
  typed entries with one numpy min/max pass, and paths are built only for
  problems found.
- Per-element faults (negative dims, keys, entries, indices) are reported for
  the first :data:`MAX_REPORTED` elements of a field, then one summary problem.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Final, TypeAlias, Union, cast

import numpy as np
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.unknown_fields import UnknownFieldSet

from onnxdata.dtypes import (
    DATA_TYPES,
    KEY_TYPES,
    STRING,
    key_range,
    raw_nbytes,
    typed_count,
    typed_entry_range,
)
from onnxdata.errors import Problem, ValidationError, no_memory_error
from onnxdata.messages import (
    MapProto,
    Message,
    OptionalProto,
    SequenceProto,
    SparseTensorProto,
    TensorProto,
    is_repeated,
)
from onnxdata.uniform import MIN_TENSORS, uniform_raw_tensors
from onnxdata.wire import I32, I64, LEN, VARINT, WIRE_TYPE_NAMES

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "ELEM_FIELDS",
    "ELEM_TYPE_NAMES",
    "EXTERNAL_KEYS",
    "FIELD_DTYPES",
    "MAP_VALUE_ELEM_TYPES",
    "MAX_REPORTED",
    "OPTIONAL_FIELDS",
    "TYPED_FIELDS",
    "MAX_PROBLEMS",
    "PlainTensor",
    "NestedType",
    "ProblemSink",
    "element_count",
    "element_type_problems",
    "entries_in_range",
    "external_data_problems",
    "location_problems",
    "map_problems",
    "nested_type",
    "node_problems",
    "numpy_shape_problems",
    "sequence_inner_type",
    "optional_problems",
    "problems",
    "quick_tensor",
    "repeated_array",
    "too_deep",
    "same_type_problems",
    "sequence_problems",
    "sparse_index_problems",
    "sparse_tensor_problems",
    "tensor_storage_problems",
    "typed_entry_problems",
    "validate",
    "wire_field_problems",
]

PathLike = Union[str, "os.PathLike[str]"]

#: Nesting allowed below the root, as protobuf's parser allows.
DEFAULT_MAX_DEPTH: Final = 100
#: Per-element faults reported for one field before a summary.
MAX_REPORTED: Final = 20
#: Problems listed per call before one "…and N more problems".
MAX_PROBLEMS: Final = 1000
#: Indices checked per chunk, bounding the temporary arrays of the sparse check.
_CHUNK: Final = 1 << 16
#: Element counts above this are "more than 2**64" (dims are not multiplied further).
_HUGE: Final = 1 << 64

#: SequenceProto/OptionalProto elem_type values and their names.
ELEM_TYPE_NAMES: Final[dict[int, str]] = {
    0: "UNDEFINED", 1: "TENSOR", 2: "SPARSE_TENSOR", 3: "SEQUENCE", 4: "MAP", 5: "OPTIONAL",
}
#: The SequenceProto field holding the elements of each elem_type.
ELEM_FIELDS: Final[dict[int, str]] = {
    1: "tensor_values", 2: "sparse_tensor_values", 3: "sequence_values", 4: "map_values",
    5: "optional_values",
}
#: The OptionalProto field holding the value of each elem_type.
OPTIONAL_FIELDS: Final[dict[int, str]] = {
    1: "tensor_value", 2: "sparse_tensor_value", 3: "sequence_value", 4: "map_value",
    5: "optional_value",
}
#: elem_types a MapProto's values may have.
MAP_VALUE_ELEM_TYPES: Final = frozenset({1, 2, 3, 4})
#: TensorProto's typed storage fields.
TYPED_FIELDS: Final = (
    "float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data",
)
#: The keys of TensorProto.external_data.
EXTERNAL_KEYS: Final = ("location", "offset", "length", "checksum")

_EXTERNAL: Final = 1  # TensorProto.DataLocation.EXTERNAL
_INT64: Final = 7


# --------------------------------------------------------------------------- helpers

def _join(path: str, name: str) -> str:
    if not path:
        return name
    return f"{path}{name}" if name.startswith("[") else f"{path}.{name}"


def _type_name(code: int) -> str:
    dt = DATA_TYPES.get(code)
    return dt.name if dt else str(code)


def _count_text(n: int) -> str:
    return "more than 2**64" if n > _HUGE else str(n)


def _elements(n: int) -> str:
    return f"{_count_text(n)} element{'' if n == 1 else 's'}"


def _capped(path: str, field: str, found: list[tuple[int, str]], total: int) -> list[Problem]:
    """Problems for the first MAX_REPORTED faulty elements of ``field``, then a summary."""
    out = [Problem(_join(path, f"{field}[{i}]"), msg) for i, msg in found[:MAX_REPORTED]]
    if total > MAX_REPORTED:
        out.append(Problem(_join(path, field),
                           f"{total - MAX_REPORTED} more faulty entries not listed"))
    return out


def dims_text(dims: Sequence[int]) -> str:
    """``[2, 3]``; a long list keeps its first dims (at most 8, about 60 characters):
    ``[1, 1, 1, 1, 1, 1, 1, 1, … (9000 dims)]``."""
    shown: list[str] = []
    width = 0
    for d in dims[:8]:
        shown.append(str(int(d)))
        width += len(shown[-1]) + 2
        if width > 60:
            break
    if len(shown) < len(dims):
        return "[" + ", ".join(shown) + f", … ({len(dims)} dims)]"
    return "[" + ", ".join(shown) + "]"


def short_repr(value: bytes, limit: int = 40) -> str:
    """``repr(value)``, cut to about ``limit`` characters with "…"."""
    text = repr(value[:limit + 1])
    return text if len(value) <= limit else text[:limit] + "…"


def _dims_problems(path: str, dims: Sequence[int]) -> list[Problem]:
    if not dims or _smallest(dims) >= 0:
        return []
    bad = [(i, f"{d} is negative; dims must be >= 0") for i, d in enumerate(dims) if d < 0]
    return _capped(path, "dims", bad, len(bad))


#: The most dimensions numpy gives an array, and the largest byte size it allows.
_MAX_NDIM: Final = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32
_MAX_INTP: Final = int(np.iinfo(np.intp).max)


def numpy_shape_problems(path: str, dims: Sequence[int], itemsize: int) -> list[Problem]:
    """Dims numpy cannot make an array of, so ``to_numpy`` and ``read`` could not either:
    more than numpy's dimensions, or non-zero dims whose product times ``itemsize`` passes
    the largest array size (numpy checks that even when another dim is 0)."""
    if len(dims) > _MAX_NDIM:
        return [Problem(_join(path, "dims"), f"{len(dims)} dimensions; numpy arrays hold at "
                                             f"most {_MAX_NDIM}")]
    size = itemsize
    for d in dims:
        if d < 0:
            return []  # reported as negative
        if d:
            size *= d
            if size > _MAX_INTP:
                return [Problem(_join(path, "dims"), f"dims {list(dims)} are too large for a "
                                                     "numpy array, even an empty one")]
    return []


def _smallest(dims: Sequence[int]) -> int:
    own = getattr(dims, "smallest", None)
    return cast(int, own()) if own is not None else min(dims)


def element_count(dims: Sequence[int]) -> int | None:
    """The number of elements ``dims`` declare, or None if a dim is negative.

    Computed with Python ints and never more than needed: once the product
    passes 2**64 it is not multiplied further (the result is then > 2**64, far
    more than any message can hold), so a bomb of many huge dims costs nothing.
    A sequence that knows its own count (the engine's long dims, ``count``)
    computes it in chunks, by the same rule.
    """
    own = getattr(dims, "element_count", None)
    if own is not None:
        return cast(int | None, own())
    total = 1
    for d in dims:
        if d < 0:
            return None
        if d == 0:
            total = 0
        elif 0 < total <= _HUGE:
            total *= d
    return total


class ProblemSink:
    """The problems of one call, at most ``cap`` of them, in document order, then a count.

    ``add`` appends; ``insert`` puts a message's own problems (known only after
    its children were walked) before its children's. Once one problem is
    dropped the list is full, so what is kept is always the first ``cap`` of
    the true order, and ``dropped`` counts the rest exactly.
    """

    def __init__(self, cap: int = MAX_PROBLEMS) -> None:
        if cap < 0:
            raise ValueError(f"max_problems must be >= 0, not {cap}")
        self.cap = cap
        self.items: list[Problem] = []
        self.dropped = 0

    def __bool__(self) -> bool:
        return bool(self.items) or self.dropped > 0

    def mark(self) -> int:
        return len(self.items)

    def add(self, found: list[Problem]) -> None:
        room = self.cap - len(self.items)
        if len(found) <= room:
            self.items += found
        else:
            self.items += found[:max(room, 0)]
            self.dropped += len(found) - max(room, 0)

    def insert(self, at: int, found: list[Problem]) -> None:
        if not found:
            return
        self.items[at:at] = found
        over = len(self.items) - self.cap
        if over > 0:
            del self.items[self.cap:]
            self.dropped += over

    def drop(self, n: int) -> None:
        """``n`` problems known to lie past the ones kept (only when the list will be full)."""
        self.dropped += n

    def result(self) -> list[Problem]:
        if not self.dropped:
            return list(self.items)
        return [*self.items, more_problems(self.dropped)]


def more_problems(n: int) -> Problem:
    """The last problem of a capped list."""
    return Problem("", f"…and {n:,} more problems")


# --------------------------------------------------------------------------- wire

_SCALAR_WIRE: Final[dict[int, int]] = {
    FieldDescriptor.TYPE_FLOAT: I32, FieldDescriptor.TYPE_FIXED32: I32,
    FieldDescriptor.TYPE_SFIXED32: I32, FieldDescriptor.TYPE_DOUBLE: I64,
    FieldDescriptor.TYPE_FIXED64: I64, FieldDescriptor.TYPE_SFIXED64: I64,
    FieldDescriptor.TYPE_STRING: LEN, FieldDescriptor.TYPE_BYTES: LEN,
    FieldDescriptor.TYPE_MESSAGE: LEN,
}



def _schema_of(desc: Descriptor, out: dict[str, dict[int, tuple[str, frozenset[int]]]]) -> None:
    if desc.name in out:
        return
    fields: dict[int, tuple[str, frozenset[int]]] = {}
    out[desc.name] = fields
    for fd in desc.fields:
        wire = _SCALAR_WIRE.get(fd.type, VARINT)
        allowed = {wire}
        if is_repeated(fd) and wire != LEN:
            allowed.add(LEN)  # packed
        fields[fd.number] = (fd.name, frozenset(allowed))
        if fd.message_type is not None:
            _schema_of(fd.message_type, out)


#: For each message name: field number -> (field name, wire types the field accepts).
_SCHEMA: Final[dict[str, dict[int, tuple[str, frozenset[int]]]]] = {}
for _cls in (SequenceProto, OptionalProto, MapProto, TensorProto, SparseTensorProto):
    _schema_of(_cls.DESCRIPTOR, _SCHEMA)


def _wire_names(types: frozenset[int]) -> str:
    packed = len(types) > 1
    return " or ".join("packed LEN" if t == LEN and packed else WIRE_TYPE_NAMES[t]
                       for t in sorted(types, key=lambda t: (t == LEN, t)))


def wire_field_problems(path: str, message_name: str,
                        fields: Iterable[tuple[int, int]]) -> list[Problem]:
    """Fields the schema of ``message_name`` lacks, or that carry the wrong wire type.

    ``message_name`` is a descriptor name ("TensorProto", "SequenceProto",
    "Segment", "StringStringEntryProto", ...); ``fields`` are ``(number,
    wire_type)`` pairs, either every field seen on the wire or only the ones
    protobuf kept as unknown. Either means the bytes were read as the wrong
    message, or were written by something else.
    """
    schema = _SCHEMA[message_name]
    out: list[Problem] = []
    for number, wire_type in fields:
        wname = WIRE_TYPE_NAMES.get(wire_type, str(wire_type))
        known = schema.get(number)
        if known is None:
            out.append(Problem(path, f"unknown field {number} ({wname}): {message_name} has "
                                     "no such field; were these bytes another message?"))
        elif wire_type not in known[1]:
            name, allowed = known
            out.append(Problem(_join(path, name),
                               f"field {number} ({name}) has wire type {wname}, but the schema "
                               f"says {_wire_names(allowed)}; were these bytes another message?"))
    return out


def _unknown_fields(message: Any) -> list[Any]:
    """The unknown fields protobuf kept (field_number, wire_type, data); 4.25 and 7.x alike."""
    found = UnknownFieldSet(message)
    return [found[i] for i in range(len(found))]


def _unknown_problems(path: str, message: Any) -> list[Problem]:
    """Problems for the unknown fields protobuf kept in ``message`` (not its children)."""
    name: str = message.DESCRIPTOR.name
    # A known field with an accepted wire type lands here only as a closed enum's
    # out-of-range value (TensorProto.data_location): tensor_storage_problems reports it.
    return wire_field_problems(path, name, [(f.field_number, f.wire_type)
                                            for f in _unknown_fields(message)])


# --------------------------------------------------------------------------- tensors

def tensor_storage_problems(
    path: str,
    data_type: int,
    dims: Sequence[int],
    counts_by_field: Mapping[str, int],
    raw_len: int | None,
    *,
    data_location: int = 0,
    external_entries: int = 0,
    has_segment: bool = False,
) -> list[Problem]:
    """The TensorProto rules that need only counts: type, dims, storage, sizes.

    ``data_type`` is the code (0 when absent); ``counts_by_field`` maps each
    typed field name (``TYPED_FIELDS``) to its number of entries (missing means
    0); ``raw_len`` is the length of ``raw_data`` or None when it is absent;
    ``data_location`` the DataLocation code and ``external_entries`` the number
    of ``external_data`` entries. Counts are compared with Python ints before
    anything is allocated, so 40 bytes declaring 2**40 floats cost nothing.
    """
    dt = DATA_TYPES.get(data_type)
    if dt is not None and not (data_location or external_entries or has_segment):
        n = element_count(dims)  # fast path: the common valid tensor, one storage that fits
        if n is not None and (n or len(dims) < 2) and len(dims) <= _MAX_NDIM:
            used_counts = [(f, c) for f, c in counts_by_field.items() if c]
            if raw_len is None:
                if (not used_counts and n == 0) or used_counts == [
                        (dt.field, typed_count(dt, n))]:
                    return []
            elif not used_counts and not dt.is_string and raw_len == raw_nbytes(dt, n):
                return []
    out = _storage_problems(path, data_type, dims, counts_by_field, raw_len,
                            data_location, external_entries, has_segment)
    if dt is not None and (len(dims) > _MAX_NDIM or element_count(dims) == 0):
        out += numpy_shape_problems(path, dims, dt.dtype.itemsize)  # what to_numpy can make
    return out


def _storage_problems(path: str, data_type: int, dims: Sequence[int],
                      counts_by_field: Mapping[str, int], raw_len: int | None,
                      data_location: int, external_entries: int,
                      has_segment: bool) -> list[Problem]:
    dt = DATA_TYPES.get(data_type)
    out: list[Problem] = []
    if data_type == 0:
        out.append(Problem(_join(path, "data_type"),
                           "data_type is UNDEFINED or missing; a tensor needs a data type"))
    elif dt is None:
        out.append(Problem(_join(path, "data_type"),
                           f"{data_type} is not an ONNX tensor data type (known: 1 to "
                           f"{max(DATA_TYPES)})"))
    out += _dims_problems(path, dims)
    if has_segment:
        out.append(Problem(_join(path, "segment"),
                           "segment is not supported: a tensor split into segments cannot be "
                           "read as one value; join the segments into one TensorProto"))
    external = data_location == _EXTERNAL
    if data_location not in (0, _EXTERNAL):
        out.append(Problem(_join(path, "data_location"),
                           f"{data_location} is not DEFAULT (0) or EXTERNAL (1)"))
    used = [f for f in TYPED_FIELDS if counts_by_field.get(f, 0) > 0]
    if raw_len is not None:
        used.append("raw_data")
    if external_entries and not external:
        out.append(Problem(_join(path, "external_data"),
                           f"{external_entries} external_data entries but data_location is not "
                           "EXTERNAL; readers would ignore them and lose the data"))
    if external:
        if dt is not None and dt.is_string:
            out.append(Problem(path, "STRING tensors cannot be stored in external data"))
        if not external_entries:
            out.append(Problem(_join(path, "external_data"),
                               "data_location is EXTERNAL but external_data is empty"))
        if used:
            out.append(Problem(path, f"data_location is EXTERNAL but the tensor also holds data "
                                     f"in {' and '.join(used)}"))
        return out
    if len(used) > 1:
        out.append(Problem(path, f"data in {' and '.join(used)}: only one storage may be used"))
        return out
    n = element_count(dims)
    if dt is None or n is None:
        return out
    what = f"dims {dims_text(dims)} declare {_elements(n)} of {dt.name}"
    if not used:
        if n > 0:
            where = (f"{_count_text(typed_count(dt, n))} entries of {dt.field}" if dt.is_string
                     else f"{_count_text(typed_count(dt, n))} entries of {dt.field} or "
                          f"{_count_text(raw_nbytes(dt, n))} bytes of raw_data")
            out.append(Problem(path, f"{what} but the tensor holds no data (expected {where})"))
        return out
    field = used[0]
    if field == "raw_data":
        assert raw_len is not None
        if dt.is_string:
            out.append(Problem(_join(path, "raw_data"),
                               "STRING tensors cannot use raw_data; strings go in string_data"))
        elif raw_len != raw_nbytes(dt, n):
            packing = f" packed {8 // dt.bits} to a byte" if dt.bits in (2, 4) else (
                " packed 4 to 3 bytes" if dt.bits == 6 else "")
            out.append(Problem(_join(path, "raw_data"),
                               f"{what}, {_count_text(raw_nbytes(dt, n))} bytes{packing}, but "
                               f"raw_data has {raw_len} bytes"))
        return out
    have = counts_by_field[field]
    if field != dt.field:
        out.append(Problem(_join(path, field),
                           f"{field} holds {have} entries but {dt.name} is stored in {dt.field}"
                           + ("" if dt.is_string else " or raw_data")))
        return out
    need = typed_count(dt, n)
    if have != need:
        packing = (f", {dt.per_entry} per entry" if dt.per_entry > 1 else
                   f", {dt.entries_per} entries each" if dt.entries_per > 1 else "")
        out.append(Problem(_join(path, field),
                           f"{what}, {_count_text(need)} entries of {field}{packing}, but "
                           f"{field} has {have}"))
    return out


def typed_entry_problems(path: str, data_type: int, field: str,
                         entries: Sequence[int] | np.ndarray[Any, Any]) -> list[Problem]:
    """Entries of the typed ``field`` outside the range their data type allows.

    ``entries`` is a repeated field, a list or an ndarray. It is read into one
    array of the field's own width (as large as protobuf's own storage of it),
    checked with a min/max pass, and scanned for the faulty entries only when
    one lies outside. Call only when ``field`` is the data type's own typed
    field (``tensor_storage_problems`` found no fault).
    """
    dt = DATA_TYPES.get(data_type)
    if dt is None or field != dt.field:
        return []
    bounds = typed_entry_range(dt)
    if bounds is None:
        return []
    lo, hi = bounds
    values = _entry_array(entries, field)
    if entries_in_range(values, lo, hi):
        return []
    bad = np.flatnonzero((values < lo) | (values > hi))
    found = [(int(i), f"{int(values[i])} is outside [{lo}, {hi}], the range of a {dt.name} "
                      f"entry of {field}") for i in bad[:MAX_REPORTED]]
    return _capped(path, field, found, len(bad))


#: The numpy dtype of each typed field's entries, as protobuf keeps them.
FIELD_DTYPES: Final[dict[str, np.dtype[Any]]] = {
    "float_data": np.dtype(np.float32), "double_data": np.dtype(np.float64),
    "int32_data": np.dtype(np.int32), "int64_data": np.dtype(np.int64),
    "uint64_data": np.dtype(np.uint64),
}


def repeated_array(field: Any, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """The entries of a repeated scalar field as one new ndarray of ``dtype``.

    protobuf >= 5 (upb) gives its repeated scalars ``__array__``, a C copy;
    older ones have none, and ``np.fromiter`` with a count is the fastest way
    there (no list of Python ints in between).
    """
    if hasattr(type(field), "__array__"):
        return np.array(field, dtype=dtype)
    return np.fromiter(field, dtype=dtype, count=len(field))


def _entry_array(entries: Any, field: str) -> np.ndarray[Any, Any]:
    wide = np.uint64 if field == "uint64_data" else np.int64
    if isinstance(entries, np.ndarray):
        return entries if entries.dtype.kind in "iu" else entries.astype(wide)
    if isinstance(entries, (list, tuple)):  # Python ints of any size: the wide type
        return np.array(entries, dtype=wide)
    return repeated_array(entries, FIELD_DTYPES.get(field, np.dtype(wide)))


def entries_in_range(values: np.ndarray[Any, Any], lo: int, hi: int) -> bool:
    """Every integer in ``values`` lies in [lo, hi]; one pass over the data when lo is 0."""
    if not values.size:
        return True
    if lo == 0 and hi < (1 << (8 * values.dtype.itemsize - 1)):
        # negatives seen as unsigned are >= 2**(bits-1) > hi: one max() checks both ends
        unsigned = values.view(f"u{values.dtype.itemsize}") if values.dtype.kind == "i" \
            else values
        return bool(unsigned.max() <= hi)
    return bool(values.min() >= lo and values.max() <= hi)


_DRIVE = re.compile(r"^[A-Za-z]:")


def location_problems(path: str, location: str) -> list[Problem]:
    """Lexical checks of an external-data location: relative, inside, no NUL."""
    if not location:
        return [Problem(path, "location is empty")]
    out: list[Problem] = []
    if "\0" in location:
        out.append(Problem(path, f"location {location!r} contains a NUL character"))
    if location.startswith(("/", "\\")) or _DRIVE.match(location):
        out.append(Problem(path, f"location {location!r} is absolute; it must be relative to "
                                 "the folder of the file holding the tensor"))
    if ".." in re.split(r"[/\\]", location):
        out.append(Problem(path, f"location {location!r} has a '..' part, which could leave "
                                 "the tensor's folder"))
    return out


def _as_text(value: str | bytes) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


def external_data_problems(path: str, entries: Sequence[tuple[str, str]],
                           base_dir: PathLike | None = None, *,
                           nbytes: int | None = None) -> list[Problem]:
    """The ``external_data`` (key, value) entries of one tensor, and with ``base_dir`` its file.

    ``path`` is the tensor's path; ``nbytes`` is the raw size the tensor needs
    (None when unknown). Keys come from EXTERNAL_KEYS, each once; ``location``
    is required and safe (see :func:`location_problems`); ``offset`` and
    ``length`` are decimal integers >= 0 and ``length`` equals ``nbytes``.
    With ``base_dir``, the file must resolve (symlinks followed) to a regular
    file inside ``base_dir`` holding ``offset + length`` bytes.
    """
    out: list[Problem] = []
    seen: dict[str, int] = {}
    values: dict[str, str] = {}
    # protobuf gives a string that is not UTF-8 as bytes: read it as the engine does
    entries = [(_as_text(key), _as_text(value)) for key, value in entries]
    for i, (key, value) in enumerate(entries):
        here = _join(path, f"external_data[{i}]")
        if key not in EXTERNAL_KEYS:
            out.append(Problem(here, f"unknown key {key!r}; expected one of "
                                     f"{', '.join(EXTERNAL_KEYS)}"))
            continue
        if key in seen:
            out.append(Problem(here, f"key {key!r} appears again (first at "
                                     f"external_data[{seen[key]}])"))
            continue
        seen[key] = i
        values[key] = value
        if key == "location":
            out += location_problems(here, value)
        elif key in ("offset", "length") and not (value.isascii() and value.isdigit()):
            out.append(Problem(here, f"{key} {value!r} is not an integer >= 0 written in "
                                     "decimal digits"))
    location = values.get("location")
    if location is None:
        out.append(Problem(_join(path, "external_data"),
                           "no location: external data needs a 'location' entry"))
    if out:
        return out
    offset = int(values.get("offset", "0"))
    length = int(values["length"]) if "length" in values else None
    if length is not None and nbytes is not None and length != nbytes:
        out.append(Problem(_join(path, f"external_data[{seen['length']}]"),
                           f"length {length} but the tensor needs {nbytes} bytes"))
    if base_dir is None or location is None:
        return out
    here = _join(path, f"external_data[{seen['location']}]")
    base = os.path.realpath(os.fspath(base_dir))
    target = os.path.realpath(os.path.join(base, location))
    if os.path.commonpath([base, target]) != base:
        out.append(Problem(here, f"location {location!r} resolves to {target}, outside "
                                 f"base_dir {base} (through a symlink)"))
        return out
    if not os.path.isfile(target):
        out.append(Problem(here, f"location {location!r} is not a file in {base}"))
        return out
    size = os.path.getsize(target)
    need = length if length is not None else nbytes
    if need is not None and offset + need > size:
        out.append(Problem(here, f"file {location!r} has {size} bytes but offset {offset} + "
                                 f"{need} bytes runs past its end"))
    elif offset > size:
        out.append(Problem(here, f"offset {offset} lies past the end of {location!r} "
                                 f"({size} bytes)"))
    return out


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
    out += _dims_problems(path, dims)
    if values_dims is None:
        out.append(Problem(_join(path, "values"), "values is missing; a sparse tensor needs it"))
        return out
    if len(values_dims) != 1:
        out.append(Problem(_join(path, "values.dims"),
                           f"values must be 1-D [NNZ], but dims are {dims_text(values_dims)}"))
        return out
    nnz = values_dims[0]
    if indices_dims is None:
        if nnz != 0:
            out.append(Problem(_join(path, "indices"),
                               f"indices is missing but values holds {nnz} elements"))
        return out
    if indices_data_type != _INT64:
        out.append(Problem(_join(path, "indices.data_type"),
                           f"indices must be INT64, not {_type_name(indices_data_type or 0)}"))
    rank = len(dims)
    if list(indices_dims) not in ([nnz], [nnz, rank]):
        out.append(Problem(_join(path, "indices.dims"),
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
    step = max(1, _CHUNK // rank)
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
    return _capped(path, "indices", sorted(found), nbad)


def _linear_fine(indices: Sequence[int] | np.ndarray[Any, Any], total: int) -> bool:
    """Linear indices all inside [0, total) and strictly ascending, in one numpy pass per
    chunk; False to let the caller find and word the faults."""
    for r0 in range(0, len(indices), _CHUNK):
        chunk = np.asarray(indices[max(0, r0 - 1):r0 + _CHUNK], dtype=np.int64)
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
        out.append(Problem(_join(path, "elem_type"),
                           "elem_type is missing; every sequence needs one, even an empty one"))
    elif elem_type == 0:
        out.append(Problem(_join(path, "elem_type"),
                           "elem_type is UNDEFINED; a sequence needs TENSOR, SPARSE_TENSOR, "
                           "SEQUENCE, MAP or OPTIONAL, even when empty"))
    elif elem_type not in ELEM_FIELDS:
        out.append(Problem(_join(path, "elem_type"),
                           f"{elem_type} is not an element type (1 to 5)"))
    want = ELEM_FIELDS.get(elem_type or 0)
    for field in ELEM_FIELDS.values():
        n = counts_by_field.get(field, 0)
        if n and field != want:
            expected = (f"elem_type {ELEM_TYPE_NAMES[elem_type or 0]} keeps its elements in "
                        f"{want}" if want else "elem_type names no field")
            out.append(Problem(_join(path, field),
                               f"{n} element{'s' if n != 1 else ''} here, but {expected}"))
    return out


def same_type_problems(path: str, field: str, data_types: Sequence[int]) -> list[Problem]:
    """Tensors (or sparse tensors' values) of one sequence share one data type."""
    if not data_types:
        return []
    first = data_types[0]
    bad = [(i, f"data type {_type_name(t)} differs from {_type_name(first)} of {field}[0]; "
               "the tensors of a sequence share one data type")
           for i, t in enumerate(data_types) if t != first]
    return _capped(path, field, bad, len(bad))


#: A value's type as far as the message shows it: ``(kind, ...)`` with a data type,
#: key type or inner type after the kind, each None where unknown (an empty
#: sequence's elements, an empty optional's value); None when nothing is known.
NestedType: TypeAlias = "tuple[Any, ...] | None"
_ELEM_KINDS: Final = {1: "tensor", 2: "sparse_tensor", 3: "sequence", 4: "map", 5: "optional"}


class _Mismatch(Exception):
    pass


def nested_type(message: Any, depth: int = 0) -> NestedType:
    """The type of a data message all the way down (see NestedType), for
    :func:`element_type_problems`. A tensor sequence's type is its first tensor's: that
    its tensors agree is the sequence's own rule (:func:`same_type_problems`)."""
    kind = message.DESCRIPTOR.name
    if depth > DEFAULT_MAX_DEPTH:
        return None
    if kind == "TensorProto":
        return ("tensor", message.data_type)
    if kind == "SparseTensorProto":
        return ("sparse_tensor", message.values.data_type if _has(message, "values") else None)
    if kind == "MapProto":
        values = nested_type(message.values, depth + 1) if _has(message, "values") else None
        return ("map", message.key_type, values[1] if values else None)
    code = message.elem_type
    if kind == "OptionalProto":
        field = OPTIONAL_FIELDS.get(code)
        if field is None:
            return ("optional", None)
        if not _has(message, field):
            return ("optional", (_ELEM_KINDS[code],))
        return ("optional", nested_type(getattr(message, field), depth + 1))
    field = ELEM_FIELDS.get(code)
    if field is None:
        return ("sequence", None)
    elements = getattr(message, field)
    return ("sequence", sequence_inner_type(
        code, (nested_type(e, depth + 1) for e in (elements[:1] if code == 1 else elements))))


def sequence_inner_type(code: int, element_types: Iterable[NestedType]) -> NestedType:
    """A sequence's element type from its elem_type ``code`` and its elements' types (for
    tensors only the first's): what they say together, up to the first disagreement
    (which the sequence's own check reports)."""
    inner: NestedType = (_ELEM_KINDS[code],)
    for t in element_types:
        try:
            inner = _merged(inner, t)
        except _Mismatch:
            break
    return inner


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
             "optional") else _type_name(x) for x in t[1:]]
    return f"{t[0]}({', '.join(parts) or '?'})"


def element_type_problems(path: str, field: str, types: Sequence[NestedType]) -> list[Problem]:
    """The elements of one sequence share one type all the way down (ONNX gives a sequence
    one ``elem_type``): a sequence of float sequences and int64 sequences, of optional
    tensors and optional sequences, or of maps with int and with string keys is refused."""
    merged: NestedType = None
    bad: list[tuple[int, str]] = []
    for i, t in enumerate(types):
        try:
            merged = _merged(merged, t)
        except _Mismatch:
            bad.append((i, f"{type_text(t)} differs from {type_text(merged)} of the elements "
                           "before it; the elements of a sequence share one type all the "
                           "way down"))
    return _capped(path, field, bad, len(bad))


def optional_problems(path: str, elem_type: int | None,
                      set_fields: Collection[str]) -> list[Problem]:
    """An OptionalProto's elem_type (None when absent) against the value fields set."""
    out: list[Problem] = []
    if elem_type is None:
        out.append(Problem(_join(path, "elem_type"),
                           "elem_type is missing; write UNDEFINED (0) for an absent value"))
    elif elem_type not in ELEM_TYPE_NAMES:
        out.append(Problem(_join(path, "elem_type"),
                           f"{elem_type} is not an element type (0 to 5)"))
    present = [f for f in OPTIONAL_FIELDS.values() if f in set_fields]
    if len(present) > 1:
        out.append(Problem(path, f"{' and '.join(present)} are all set; an optional holds at "
                                 "most one value"))
    want = OPTIONAL_FIELDS.get(elem_type or 0)
    for field in present:
        if field == want:
            continue
        if elem_type == 0:
            why = "elem_type is UNDEFINED, which means no value"
        elif want is None:
            why = "elem_type names no value field"
        else:
            why = f"elem_type {ELEM_TYPE_NAMES[elem_type or 0]} keeps its value in {want}"
        out.append(Problem(_join(path, field), f"set, but {why}"))
    return out


def map_problems(path: str, key_type: int | None, keys: Sequence[int],
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
        out.append(Problem(_join(path, "key_type"), "key_type is missing"))
    elif key_type not in KEY_TYPES:
        out.append(Problem(_join(path, "key_type"),
                           f"{_type_name(key_type)} is not a key type; expected {key_names}"))
    if not values_present:
        out.append(Problem(_join(path, "values"), "values is missing; a map needs its values "
                                                  "sequence, even when empty"))
    elif values_elem_type in ELEM_FIELDS and values_elem_type not in MAP_VALUE_ELEM_TYPES:
        out.append(Problem(_join(path, "values.elem_type"),
                           "map values cannot be OPTIONAL; expected TENSOR, SPARSE_TENSOR, "
                           "SEQUENCE or MAP"))
    valid_key = key_type in KEY_TYPES
    if valid_key and key_type == STRING:
        if keys:
            out.append(Problem(_join(path, "keys"), f"{len(keys)} integer keys, but key_type "
                                                    "STRING keeps its keys in string_keys"))
        dup: list[tuple[int, str]] = []
        first: dict[bytes, int] = {}
        unique = len(set(string_keys)) == len(string_keys)
        for at, skey in enumerate(string_keys if not unique else ()):
            was = first.setdefault(skey, at)
            if was != at:
                dup.append((at, f"{short_repr(skey)} appears again (first at string_keys[{was}])"))
        out += _capped(path, "string_keys", dup, len(dup))
    elif valid_key:
        assert key_type is not None
        name = _type_name(key_type)
        if string_keys:
            out.append(Problem(_join(path, "string_keys"),
                               f"{len(string_keys)} string keys, but key_type {name} keeps "
                               "its keys in keys"))
        lo, hi = key_range(key_type) or (0, -1)
        bad: list[tuple[int, str]] = []
        seen: dict[int, int] = {}
        for i, k in enumerate(keys if not _keys_fine(keys, lo, hi) else ()):
            if not lo <= k <= hi:
                bad.append((i, f"{k} is outside {name}'s range [{lo}, {hi}]"))
            j = seen.setdefault(k, i)
            if j != i:
                bad.append((i, f"{k} appears again (first at keys[{j}])"))
        out += _capped(path, "keys", bad, len(bad))
    n_keys = (len(string_keys) if key_type == STRING else len(keys)) if valid_key else (
        len(keys) + len(string_keys))
    if n_values is not None and n_keys != n_values:
        out.append(Problem(path, f"{n_keys} key{'s' if n_keys != 1 else ''} but {n_values} "
                                 f"value{'s' if n_values != 1 else ''}"))
    return out


def _keys_fine(keys: Sequence[int] | np.ndarray[Any, Any], lo: int, hi: int) -> bool:
    """Every key in [lo, hi] and none twice, in a few numpy passes (1M keys: ~0.1 s
    less than the loop that then finds and words each fault)."""
    if len(keys) < 64:
        return False  # the loop is as fast
    if isinstance(keys, np.ndarray):
        values = keys.astype(np.int64, copy=False)
    elif isinstance(keys, (list, tuple)):
        try:
            values = np.array(keys, dtype=np.int64)
        except OverflowError:
            return False
    else:
        values = repeated_array(keys, np.dtype(np.int64))
    if not entries_in_range(values, lo, hi):
        return False
    if bool((values[1:] > values[:-1]).all()):
        return True  # ascending, the common order: no sort needed
    ordered = np.sort(values)
    return not bool((ordered[1:] == ordered[:-1]).any())


# --------------------------------------------------------------------------- the walk

#: A message waiting in the walk: (message, depth, parent path, field, index). The path
#: is joined only when a problem needs it; ``index`` is -1 for a singular field, and
#: ``field`` is "" for the root.
_Node = tuple[Any, int, str, str, int]


def _node_path(parent: str, field: str, index: int) -> str:
    if not field:
        return parent
    return _join(parent, field if index < 0 else f"{field}[{index}]")


def too_deep(path: str, max_depth: int = DEFAULT_MAX_DEPTH) -> Problem:
    """The problem of a message nested deeper than ``max_depth`` below the root."""
    return Problem(path, f"nested deeper than {max_depth} levels (max_depth); not checked further")


def _has(message: Any, field: str) -> bool:
    return bool(message.HasField(field))


#: What :func:`quick_tensor` returns for a valid tensor: ``(data_type, dims, raw,
#: entries, array)``. ``raw`` is ``raw_data`` (protobuf copies it on every read, so it
#: is read once and shared); otherwise ``entries`` is the typed field holding the data
#: (None when the tensor has no elements) and ``array`` its entries as numpy when the
#: range check already made them (else None). A plain tuple: built 100,000 times.
PlainTensor: TypeAlias = tuple[int, list[int], "bytes | None", Any, "np.ndarray[Any, Any] | None"]

#: Where quick_tensor finds each fact in ListFields' values, by the tuple of field
#: descriptors set: (dims, data_type, raw_data, typed field) indices (-1: absent) and
#: the typed field's name; () for a layout with any other field.
_LAYOUTS: Final[dict[tuple[FieldDescriptor, ...], tuple[int, int, int, int, str] | tuple[()]]] = {}
#: Verdicts of tensor_storage_problems on plain tensors, by (typed field, raw_data's
#: index or -1, data_type, dims, storage size): 100,000 tensors of one shape cost one
#: call of the rule.
_PLAIN_OK: Final[dict[tuple[str, int, int, tuple[int, ...], int], bool]] = {}
_PLAIN_CAP: Final = 4096
_PLAIN_OTHER: Final = frozenset({"name", "doc_string"})


def _layout(fds: tuple[FieldDescriptor, ...]) -> tuple[int, int, int, int, str] | tuple[()]:
    where = {"dims": -1, "data_type": -1, "raw_data": -1}
    typed: list[tuple[int, str]] = []
    for i, fd in enumerate(fds):
        if fd.name in where:
            where[fd.name] = i
        elif fd.name in TYPED_FIELDS:
            typed.append((i, fd.name))
        elif fd.name not in _PLAIN_OTHER:
            return ()
    if len(typed) > 1 or (typed and where["raw_data"] >= 0):
        return ()
    at, field = typed[0] if typed else (-1, "")
    return where["dims"], where["data_type"], where["raw_data"], at, field


def quick_tensor(t: Any) -> PlainTensor | None:
    """The common valid tensor, checked fast with one ``ListFields``; None when unsure.

    Valid for sure means: no fields but ``dims``, ``data_type``, ``name``,
    ``doc_string`` and one storage (``raw_data`` or one typed field), no
    unknown fields, a clean cached verdict of :func:`tensor_storage_problems`
    and typed entries within their range. None says nothing either way:
    ``_tensor_problems`` then finds the problems, if there are any. No path is
    built here, so a valid tensor costs no string work.
    """
    fields = t.ListFields()
    fds = tuple([fd for fd, _ in fields])
    layout = _LAYOUTS.get(fds)
    if layout is None:
        layout = _layout(fds)
        if len(_LAYOUTS) < _PLAIN_CAP:
            _LAYOUTS[fds] = layout
    if not layout or len(UnknownFieldSet(t)):
        return None
    i_dims, i_type, i_raw, i_typed, field = layout
    dims: list[int] = fields[i_dims][1][:] if i_dims >= 0 else []
    data_type: int = fields[i_type][1] if i_type >= 0 else 0
    raw: bytes | None = fields[i_raw][1] if i_raw >= 0 else None
    entries = fields[i_typed][1] if i_typed >= 0 else None
    size = len(raw) if raw is not None else len(entries) if entries is not None else 0
    key = (field, i_raw, data_type, tuple(dims), size)
    ok = _PLAIN_OK.get(key)
    if ok is None:
        ok = not tensor_storage_problems("", data_type, dims, {field: size} if field else {},
                                         None if raw is None else size)
        if len(_PLAIN_OK) < _PLAIN_CAP:
            _PLAIN_OK[key] = ok
    if not ok:
        return None
    array = None
    if entries is not None:
        bounds = typed_entry_range(DATA_TYPES[data_type])
        if bounds is not None:
            array = repeated_array(entries, FIELD_DTYPES[field])
            if not entries_in_range(array, *bounds):
                return None
    return data_type, dims, raw, entries, array


def _tensor_problems(path: str, t: TensorProto, base_dir: PathLike | None) -> list[Problem]:
    # One ListFields call is the cheapest way through protobuf's API to every set field.
    fields: dict[str, Any] = {fd.name: v for fd, v in t.ListFields()}
    unknown = _unknown_fields(t)
    out = wire_field_problems(path, "TensorProto", [(f.field_number, f.wire_type)
                                                    for f in unknown]) if unknown else []
    location: int = fields.get("data_location", 0)
    for f in unknown:  # an out-of-range DataLocation is kept as unknown field 14
        if f.field_number == 14 and f.wire_type == VARINT:
            # as the int32 enum it is (protobuf 4 keeps the low 32 bits, 5+ all 64)
            location = (f.data & 0xFFFFFFFF) - ((f.data & 0x80000000) << 1)
    segment = fields.get("segment")
    if segment is not None:
        out += _unknown_problems(_join(path, "segment"), segment)
    external = fields.get("external_data", ())
    for name in ("external_data", "metadata_props"):
        for i, entry in enumerate(fields.get(name, ())):
            out += _unknown_problems(_join(path, f"{name}[{i}]"), entry)
    counts: dict[str, int] = {f: len(fields[f]) for f in TYPED_FIELDS if f in fields}
    raw = fields.get("raw_data")
    data_type: int = fields.get("data_type", 0)
    dims = list(fields.get("dims", ()))
    storage = tensor_storage_problems(
        path, data_type, dims, counts, None if raw is None else len(raw),
        data_location=location, external_entries=len(external),
        has_segment=segment is not None)
    out += storage
    dt = DATA_TYPES.get(data_type)
    if external and location == _EXTERNAL:
        n = element_count(dims)
        nbytes = raw_nbytes(dt, n) if dt is not None and n is not None and not dt.is_string \
            else None
        out += external_data_problems(path, [(e.key, e.value) for e in external],
                                      base_dir, nbytes=nbytes)
    elif not storage and dt is not None and dt.field in counts:
        out += typed_entry_problems(path, data_type, dt.field, fields[dt.field])
    return out


def _sparse_problems(path: str, s: SparseTensorProto, base_dir: PathLike | None) -> list[Problem]:
    out = _unknown_problems(path, s)
    dims = list(s.dims)
    has_values, has_indices = _has(s, "values"), _has(s, "indices")
    values_dims = list(s.values.dims) if has_values else None
    indices_dims = list(s.indices.dims) if has_indices else None
    shape = sparse_tensor_problems(path, dims, values_dims, indices_dims,
                                   s.indices.data_type if has_indices else None)
    shape += numpy_shape_problems(path, dims, 1)  # as sparse_parts needs; densify is capped
    out += shape
    if shape or not has_indices or indices_dims is None:
        return out
    ind = s.indices
    if ind.data_location == _EXTERNAL:
        out.append(Problem(_join(path, "indices"), "indices in external data are not "
                                                   "supported; store them inline"))
        return out
    counts = {f: len(getattr(ind, f)) for f in TYPED_FIELDS}
    raw = ind.raw_data if _has(ind, "raw_data") else None
    if tensor_storage_problems("", ind.data_type, indices_dims, counts,
                               None if raw is None else len(raw)):
        return out  # reported at path.indices by the tensor walk
    data: Sequence[int] | np.ndarray[Any, Any] = (
        ind.int64_data if raw is None else np.frombuffer(raw, dtype="<i8"))
    out += sparse_index_problems(path, dims, len(indices_dims) == 2, data)
    return out


def _sequence_problems(path: str, s: SequenceProto, base_dir: PathLike | None, *,
                       tensor_types: bool = True) -> list[Problem]:
    """A SequenceProto's own rules; without ``tensor_types`` the caller checks that the
    tensors share one data type (it reads each tensor anyway)."""
    out = _unknown_problems(path, s)
    counts = {f: len(getattr(s, f)) for f in ELEM_FIELDS.values()}
    out += sequence_problems(path, s.elem_type if _has(s, "elem_type") else None, counts)
    if tensor_types:
        out += same_type_problems(path, "tensor_values", [t.data_type for t in s.tensor_values])
    out += same_type_problems(path, "sparse_tensor_values",
                              [x.values.data_type for x in s.sparse_tensor_values
                               if _has(x, "values")])
    for field in ("sequence_values", "map_values", "optional_values"):
        if len(getattr(s, field)) > 1:
            out += element_type_problems(path, field,
                                         [nested_type(x) for x in getattr(s, field)])
    return out


def _sequence_walk(path: str, s: SequenceProto, depth: int, base_dir: PathLike | None,
                   max_depth: int) -> list[Problem]:
    """A sequence's own problems, then its tensors' (checked here, in order: no stack)."""
    own = _sequence_problems(path, s, base_dir, tensor_types=False)
    tensors = s.tensor_values
    if not len(tensors):
        return own
    inner: list[Problem] = []
    codes: list[int] = []
    deep = depth + 1 > max_depth
    if not deep and len(tensors) >= MIN_TENSORS:
        first = quick_tensor(tensors[0])
        if uniform_raw_tensors(s, tensors, first):
            return own  # every tensor valid, one data type
    for i, t in enumerate(tensors):
        plain = None if deep else quick_tensor(t)
        if plain is not None:
            codes.append(plain[0])
            continue
        codes.append(t.data_type)
        here = _join(path, f"tensor_values[{i}]")
        if deep:
            inner.append(too_deep(here, max_depth))
        else:
            inner += _tensor_problems(here, t, base_dir)
    return own + same_type_problems(path, "tensor_values", codes) + inner


def _optional_problems(path: str, o: OptionalProto, base_dir: PathLike | None) -> list[Problem]:
    out = _unknown_problems(path, o)
    set_fields = [f for f in OPTIONAL_FIELDS.values() if _has(o, f)]
    out += optional_problems(path, o.elem_type if _has(o, "elem_type") else None, set_fields)
    return out


def _map_problems(path: str, m: MapProto, base_dir: PathLike | None) -> list[Problem]:
    out = _unknown_problems(path, m)
    has_values = _has(m, "values")
    values_elem_type = None
    n_values: int | None = None
    if has_values:
        v = m.values
        values_elem_type = v.elem_type if _has(v, "elem_type") else None
        field = ELEM_FIELDS.get(values_elem_type or 0)
        n_values = (len(getattr(v, field)) if field else
                    sum(len(getattr(v, f)) for f in ELEM_FIELDS.values()))
    out += map_problems(path, m.key_type if _has(m, "key_type") else None, m.keys,
                        m.string_keys, values_elem_type=values_elem_type,
                        values_present=has_values, n_values=n_values)
    return out


_CHILD_FIELDS: Final = {
    "SequenceProto": tuple(ELEM_FIELDS.values())[1:],  # tensor_values: see _sequence_walk
    "OptionalProto": tuple(OPTIONAL_FIELDS.values()),
    "MapProto": ("values",),
    "SparseTensorProto": ("values", "indices"),
}


def _children(kind: str, path: str, message: Any, depth: int) -> list[_Node]:
    out: list[_Node] = []
    for field in _CHILD_FIELDS.get(kind, ()):
        if kind == "SequenceProto":
            out += [(x, depth, path, field, i) for i, x in enumerate(getattr(message, field))]
        elif _has(message, field):
            out.append((getattr(message, field), depth, path, field, -1))
    return out


@no_memory_error("message")
def problems(message: Message, *, base_dir: PathLike | None = None,
             max_depth: int = DEFAULT_MAX_DEPTH,
             max_problems: int = MAX_PROBLEMS) -> list[Problem]:
    """Every problem of ``message`` (ours or onnx's, read in place), in document order.

    ``base_dir`` is the folder external data locations are relative to; without
    it locations are checked only as text. ``max_depth`` bounds the nesting
    below the root; deeper messages are one problem, not a RecursionError.
    At most ``max_problems`` are listed, then one "…and N more problems".
    Raises TypeError for something that is not one of the five data messages.
    """
    desc = getattr(message, "DESCRIPTOR", None)
    root_kind = getattr(desc, "name", None)
    if root_kind not in _CHECKS:
        raise TypeError(f"not an ONNX data message: {type(message).__name__} (expected "
                        "TensorProto, SparseTensorProto, SequenceProto, OptionalProto or "
                        "MapProto, ours or onnx's)")
    sink = ProblemSink(max_problems)
    out: list[Problem] = []
    stack: list[_Node] = [(message, 0, "", "", -1)]
    while stack:
        if out:
            sink.add(out)
            out = []
        msg, depth, parent, field, index = stack.pop()
        if depth > max_depth:
            out.append(too_deep(_node_path(parent, field, index), max_depth))
            continue
        kind: str = msg.DESCRIPTOR.name
        if kind == "TensorProto":
            if quick_tensor(msg) is None:
                out += _tensor_problems(_node_path(parent, field, index), msg, base_dir)
            continue
        path = _node_path(parent, field, index)
        if kind == "SequenceProto":
            out += _sequence_walk(path, msg, depth, base_dir, max_depth)
        else:
            out += _CHECKS[kind](path, msg, base_dir)
        stack.extend(reversed(_children(kind, path, msg, depth + 1)))
    sink.add(out)
    return sink.result()


def node_problems(path: str, message: Any, base_dir: PathLike | None = None, *,
                  tensor_types: bool = True) -> list[Problem]:
    """The problems of one message itself, not of the messages inside it.

    ``to_numpy`` calls it on each message as it reads it (after
    :func:`quick_tensor` for tensors), so it checks exactly what ``problems``
    checks without a second walk. ``tensor_types=False`` leaves out that a
    sequence's tensors share one data type, for a caller that compares them
    as it reads them.
    """
    kind = message.DESCRIPTOR.name
    if kind == "SequenceProto":
        return _sequence_problems(path, message, base_dir, tensor_types=tensor_types)
    return _CHECKS[kind](path, message, base_dir)


_CHECKS: Final[dict[str, Callable[[str, Any, PathLike | None], list[Problem]]]] = {
    "TensorProto": _tensor_problems,
    "SparseTensorProto": _sparse_problems,
    "SequenceProto": _sequence_problems,
    "OptionalProto": _optional_problems,
    "MapProto": _map_problems,
}


@no_memory_error("message")
def validate(message: Message, *, base_dir: PathLike | None = None,
             max_depth: int = DEFAULT_MAX_DEPTH, max_problems: int = MAX_PROBLEMS) -> None:
    """Return None if ``message`` is valid, else raise ValidationError listing every problem.

    Accepts our messages and onnx's (``onnx.SequenceProto``, ...) without
    copying. See the module docstring for the rules and the choices made.
    """
    found = problems(message, base_dir=base_dir, max_depth=max_depth,
                     max_problems=max_problems)
    if found:
        raise ValidationError(found)
