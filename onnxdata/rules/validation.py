"""Validation: every rule of the format, each fault reported with a path from the root.

``problems_reference(message)`` walks a message (ours or the ``onnx`` package's, read in
place through their shared descriptors) and returns every :class:`Problem`;
``validate(message)`` raises :class:`ValidationError` carrying them all.

The rules themselves are pure functions over plain facts (data type codes,
dims, entry counts, keys...), so the fast ``read`` that walks the wire and the
explorer apply exactly the same rules without building messages. They live in
``rules.wire``, ``rules.tensor`` and ``rules.containers`` (what they share in
``rules.common``); this module is the walk over messages that applies them:

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

from collections.abc import Callable, Sequence
from typing import Any, Final, TypeAlias

import numpy as np
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.unknown_fields import UnknownFieldSet

from onnxdata.core.dtypes import DATA_TYPES, raw_nbytes, typed_entry_range
from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.messages import (
    ELEM_FIELDS,
    EXTERNAL,
    OPTIONAL_FIELDS,
    MapProto,
    Message,
    OptionalProto,
    SequenceProto,
    SparseTensorProto,
    TensorProto,
)
from onnxdata.core.paths import join_path
from onnxdata.errors import Problem, ValidationError, no_memory_error
from onnxdata.rules.common import (
    MAX_PROBLEMS,
    TYPED_FIELDS,
    PathLike,
    ProblemSink,
    has_field,
)
from onnxdata.rules.containers import (
    element_type_problems,
    map_problems,
    nested_type,
    optional_problems,
    same_type_problems,
    sequence_problems,
    sparse_index_problems,
    sparse_tensor_problems,
)
from onnxdata.rules.tensor import (
    FIELD_DTYPES,
    element_count,
    entries_in_range,
    external_data_problems,
    numpy_shape_problems,
    repeated_array,
    tensor_storage_problems,
    typed_entry_problems,
)
from onnxdata.rules.wire import unknown_field_list, unknown_field_problems, wire_field_problems
from onnxdata.wire.format import VARINT
from onnxdata.wire.unknown_fields import unknown_field_at

__all__ = [
    "PlainTensor",
    "node_problems",
    "problems_reference",
    "quick_tensor",
    "too_deep",
    "validate_reference",
]


# --------------------------------------------------------------------------- the walk

#: A message waiting in the walk: (message, depth, parent path, field, index). The path
#: is joined only when a problem needs it; ``index`` is -1 for a singular field, and
#: ``field`` is "" for the root.
_Node = tuple[Any, int, str, str, int]


def _node_path(parent: str, field: str, index: int) -> str:
    if not field:
        return parent
    return join_path(parent, field if index < 0 else f"{field}[{index}]")


def too_deep(path: str, max_depth: int = MAX_DEPTH) -> Problem:
    """The problem of a message nested deeper than ``max_depth`` below the root."""
    return Problem(path, f"nested deeper than {max_depth} levels (max_depth); not checked further")


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
#: A tensor with more external_data and metadata_props entries than this is first checked
#: for unknown fields whole, by one compiled walk of its bytes, not by one protobuf call an
#: entry (a tensor of 671,000 metadata entries: 0.79 s, the walk and its bytes 0.05 s).
_MANY_ENTRIES: Final = 64
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
    unknown = unknown_field_list(t)
    out = wire_field_problems(path, "TensorProto", [(f.field_number, f.wire_type)
                                                    for f in unknown]) if unknown else []
    location: int = fields.get("data_location", 0)
    for f in unknown:  # an out-of-range DataLocation is kept as unknown field 14
        if f.field_number == 14 and f.wire_type == VARINT:
            # as the int32 enum it is (protobuf 4 keeps the low 32 bits, 5+ all 64)
            location = (f.data & 0xFFFFFFFF) - ((f.data & 0x80000000) << 1)
    segment = fields.get("segment")
    external = fields.get("external_data", ())
    many = len(external) + len(fields.get("metadata_props", ())) > _MANY_ENTRIES
    if not many or unknown_field_at(t.SerializeToString(), "TensorProto") is not None:
        if segment is not None:
            out += unknown_field_problems(join_path(path, "segment"), segment)
        for name in ("external_data", "metadata_props"):
            for i, entry in enumerate(fields.get(name, ())):
                out += unknown_field_problems(join_path(path, f"{name}[{i}]"), entry)
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
    if external and location == EXTERNAL:
        n = element_count(dims)
        nbytes = raw_nbytes(dt, n) if dt is not None and n is not None and not dt.is_string \
            else None
        out += external_data_problems(path, [(e.key, e.value) for e in external],
                                      base_dir, nbytes=nbytes)
    elif not storage and dt is not None and dt.field in counts:
        out += typed_entry_problems(path, data_type, dt.field, fields[dt.field])
    return out


def _sparse_problems(path: str, s: SparseTensorProto, base_dir: PathLike | None) -> list[Problem]:
    out = unknown_field_problems(path, s)
    dims = list(s.dims)
    has_values, has_indices = has_field(s, "values"), has_field(s, "indices")
    values_dims = list(s.values.dims) if has_values else None
    indices_dims = list(s.indices.dims) if has_indices else None
    shape = sparse_tensor_problems(path, dims, values_dims, indices_dims,
                                   s.indices.data_type if has_indices else None)
    shape += numpy_shape_problems(path, dims, 1)  # as sparse_parts needs; densify is capped
    out += shape
    if shape or not has_indices or indices_dims is None:
        return out
    ind = s.indices
    if ind.data_location == EXTERNAL:
        out.append(Problem(join_path(path, "indices"), "indices in external data are not "
                                                   "supported; store them inline"))
        return out
    counts = {f: len(getattr(ind, f)) for f in TYPED_FIELDS}
    raw = ind.raw_data if has_field(ind, "raw_data") else None
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
    out = unknown_field_problems(path, s)
    counts = {f: len(getattr(s, f)) for f in ELEM_FIELDS.values()}
    out += sequence_problems(path, s.elem_type if has_field(s, "elem_type") else None, counts)
    if tensor_types:
        out += same_type_problems(path, "tensor_values", [t.data_type for t in s.tensor_values])
    out += same_type_problems(path, "sparse_tensor_values",
                              [x.values.data_type for x in s.sparse_tensor_values
                               if has_field(x, "values")])
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
    for i, t in enumerate(tensors):
        plain = None if deep else quick_tensor(t)
        if plain is not None:
            codes.append(plain[0])
            continue
        codes.append(t.data_type)
        here = join_path(path, f"tensor_values[{i}]")
        if deep:
            inner.append(too_deep(here, max_depth))
        else:
            inner += _tensor_problems(here, t, base_dir)
    return own + same_type_problems(path, "tensor_values", codes) + inner


def _optional_problems(path: str, o: OptionalProto, base_dir: PathLike | None) -> list[Problem]:
    out = unknown_field_problems(path, o)
    set_fields = [f for f in OPTIONAL_FIELDS.values() if has_field(o, f)]
    out += optional_problems(path, o.elem_type if has_field(o, "elem_type") else None, set_fields)
    return out


def _map_problems(path: str, m: MapProto, base_dir: PathLike | None) -> list[Problem]:
    out = unknown_field_problems(path, m)
    has_values = has_field(m, "values")
    values_elem_type = None
    n_values: int | None = None
    if has_values:
        v = m.values
        values_elem_type = v.elem_type if has_field(v, "elem_type") else None
        field = ELEM_FIELDS.get(values_elem_type or 0)
        n_values = (len(getattr(v, field)) if field else
                    sum(len(getattr(v, f)) for f in ELEM_FIELDS.values()))
    out += map_problems(path, m.key_type if has_field(m, "key_type") else None, m.keys,
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
        elif has_field(message, field):
            out.append((getattr(message, field), depth, path, field, -1))
    return out


@no_memory_error("message")
def problems_reference(message: Message, *, base_dir: PathLike | None = None,
             max_depth: int = MAX_DEPTH,
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
def validate_reference(message: Message, *, base_dir: PathLike | None = None,
             max_depth: int = MAX_DEPTH, max_problems: int = MAX_PROBLEMS) -> None:
    """Return None if ``message`` is valid, else raise ValidationError listing every problem.

    Accepts our messages and onnx's (``onnx.SequenceProto``, ...) without
    copying. See the module docstring for the rules and the choices made.
    """
    found = problems_reference(message, base_dir=base_dir, max_depth=max_depth,
                     max_problems=max_problems)
    if found:
        raise ValidationError(found)
