"""The explorer: which messages a file's bytes can be, and what they say byte by byte.

A ``.pb`` file does not say which message it holds, and the same bytes can be
several. ``readings(data)`` tries all five: for each, whether the wire
structure fits (``onnxdata.fit``), whether the value is valid (the rules of
``onnxdata.validation``, applied to the parsed message), and a one-line summary
made from wire facts. ``byte_table`` lays a reading out field by field, the way
the format notes do. ``explore`` adds what a model declares.

Speed: the walk skips payloads by length, and validation parses a *skeleton*:
the message with every large fixed-width tensor payload (``raw_data``,
``float_data``, ``double_data`` of 64 KiB or more) left out and its dims set to
``[0]``. A payload is left out only when its wire facts already show the one
rule that depends on it holds (its byte count is exactly what dims and
data_type need, via ``dtypes.raw_nbytes``/``typed_count``), so the validator's
verdict on the skeleton is its verdict on the whole. A reading whose skeleton
would still exceed ``PARSE_LIMIT`` (64 MiB of packed keys, strings, typed
int32 entries) is not parsed: it gets one "not validated" problem, so it sorts
after the readings that were validated. A 1 GiB tensor or sequence
of tensors is therefore read without touching, parsing or copying its payload.
"""

from __future__ import annotations

import mmap
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
from google.protobuf.message import DecodeError as _ProtobufDecodeError

from onnxdata.dtypes import data_type
from onnxdata.errors import Problem, no_memory_error
from onnxdata.files import byte_buffer
from onnxdata.fit import (
    DEFAULT_MAX_DEPTH,
    MESSAGE_NAMES,
    Fit,
    FitField,
    FitMessage,
    Misfit,
    fit,
)
from onnxdata.messages import MESSAGE_CLASSES, KindName
from onnxdata.model_file import Declared, declared_for
from onnxdata.model_types import IO, DeclaredType, type_problems
from onnxdata.wire import (
    I32,
    I64,
    LEN,
    VARINT,
    WireBuffer,
    WireError,
    encode_varint,
    read_varint,
)

__all__ = [
    "ByteRow",
    "Exploration",
    "Reading",
    "PARSE_LIMIT",
    "STRIP_MIN",
    "ambiguity",
    "byte_table",
    "choose_kind",
    "explore",
    "kind_of_message",
    "message_of_kind",
    "readings",
    "summarize",
]

#: Tensor payloads at least this long are left out of the skeleton that is validated.
STRIP_MIN: Final = 1 << 16
#: A reading whose skeleton is larger than this is not parsed (1 GiB of packed map keys
#: read from a sequence's tensor bytes): it gets one "not validated" problem instead.
PARSE_LIMIT: Final = 64 << 20

_KIND_OF: Final[dict[str, KindName]] = {
    "SequenceProto": "sequence", "OptionalProto": "optional", "MapProto": "map",
    "TensorProto": "tensor", "SparseTensorProto": "sparse_tensor",
}
_MESSAGE_OF: Final[dict[str, str]] = {kind: name for name, kind in _KIND_OF.items()}
_ORDER: Final = {name: i for i, name in enumerate(MESSAGE_NAMES)}

_ELEM_NAMES: Final = {0: "UNDEFINED", 1: "TENSOR", 2: "SPARSE_TENSOR", 3: "SEQUENCE",
                      4: "MAP", 5: "OPTIONAL"}
_ELEM_KIND: Final = {1: "tensor", 2: "sparse_tensor", 3: "sequence", 4: "map", 5: "optional"}
_ELEM_WORDS: Final = {1: ("tensor", "tensors"), 2: ("sparse tensor", "sparse tensors"),
                      3: ("sequence", "sequences"), 4: ("map", "maps"),
                      5: ("optional", "optionals")}
_STORAGE: Final = ("float_data", "int32_data", "string_data", "int64_data", "raw_data",
                   "double_data", "uint64_data")
_STRIPPABLE: Final = {"raw_data": 1, "float_data": 4, "double_data": 8}


def kind_of_message(message: str) -> KindName:
    """"SequenceProto" -> "sequence" (and a kind name stays itself)."""
    if message in _MESSAGE_OF:
        return message  # type: ignore[return-value]
    try:
        return _KIND_OF[message]
    except KeyError:
        raise ValueError(f"unknown message {message!r}: expected one of "
                         f"{', '.join(MESSAGE_NAMES)}") from None


def message_of_kind(kind: str) -> str:
    """"sequence" -> "SequenceProto" (and a message name stays itself)."""
    return _MESSAGE_OF[kind_of_message(kind)]


@dataclass(frozen=True)
class Reading:
    """One way to read the bytes: as ``kind`` (a message name such as "SequenceProto").

    ``well_formed``: the wire structure fits; if not, ``misfit`` says why and at
    which byte. ``valid``: the value also passes validation; ``problems`` lists
    what does not (empty when valid or not well-formed). ``summary`` is one line
    about the value. ``fit`` is the walked tree, for byte tables.
    """

    kind: str
    well_formed: bool
    valid: bool
    problems: tuple[Problem, ...]
    summary: str
    misfit: Misfit | None
    fit: Fit = field(repr=False, compare=False)

    @property
    def kind_name(self) -> KindName:
        """The short kind name: "sequence", "optional", "map", "tensor", "sparse_tensor"."""
        return _KIND_OF[self.kind]

    def as_json(self) -> dict[str, Any]:
        m = self.misfit
        return {
            "kind": self.kind_name,
            "message": self.kind,
            "well_formed": self.well_formed,
            "valid": self.valid,
            "problems": [{"path": p.path, "message": p.message} for p in self.problems],
            "summary": self.summary,
            "misfit": None if m is None else {"offset": m.offset, "path": m.path,
                                              "reason": m.reason},
        }


@no_memory_error("data")
def readings(data: WireBuffer, /, *, base_dir: str | os.PathLike[str] | None = None,
             max_depth: int = DEFAULT_MAX_DEPTH,
             progress: Callable[[float], None] | None = None) -> list[Reading]:
    """The five readings of ``data``, most plausible first.

    Valid readings come first, then well-formed ones with the fewest problems,
    then those whose structure broke furthest into the bytes. Ties keep the
    order SequenceProto, OptionalProto, MapProto, TensorProto, SparseTensorProto.
    Bad bytes never raise: they give readings that say what broke and where.
    ``progress`` is called with the fraction of the work done, from 0 to 1.
    """
    data = byte_buffer(data, "readings")
    out = []
    for i, name in enumerate(MESSAGE_NAMES):
        out.append(reading(data, name, base_dir=base_dir, max_depth=max_depth))
        if progress is not None:
            progress((i + 1) / len(MESSAGE_NAMES))
    out.sort(key=_plausibility)
    return out


def reading(data: WireBuffer, kind: str, /, *,
            base_dir: str | os.PathLike[str] | None = None,
            max_depth: int = DEFAULT_MAX_DEPTH) -> Reading:
    """One reading of ``data`` as ``kind`` (message or kind name)."""
    name = message_of_kind(kind)
    data = byte_buffer(data, "reading")
    f = fit(data, name, max_depth=max_depth)
    if f.misfit is not None:
        return Reading(name, False, False, (), f"does not fit: {f.misfit}", f.misfit, f)
    probs = tuple(_merged_fields(f.root) + _validate(data, f, base_dir))
    return Reading(name, True, not probs, probs, summarize(f.root), None, f)


def _plausibility(r: Reading) -> tuple[int, int, int]:
    if r.valid:
        return (0, 0, _ORDER[r.kind])
    if r.well_formed:
        return (1, len(r.problems), _ORDER[r.kind])
    assert r.misfit is not None
    return (2, -r.misfit.offset, _ORDER[r.kind])


def _merged_fields(node: FitMessage) -> list[Problem]:
    """A singular message field written more than once: protobuf merges the copies into one
    value, which is how a sequence of several elements turns into a wrong OptionalProto."""
    out: list[Problem] = []
    seen: dict[str, int] = {}
    for x in node.fields:
        if x.child is not None and not x.spec.repeated:
            seen[x.path] = seen.get(x.path, 0) + 1
    for path, n in seen.items():
        if n > 1:
            out.append(Problem(path, f"{path} appears {n} times but holds one value; "
                                     "protobuf would merge the copies into one"))
    for x in node.fields:
        if x.child is not None:
            out.extend(_merged_fields(x.child))
    return out


# --- validation on a skeleton ------------------------------------------------------------

def _validate(data: WireBuffer, f: Fit, base_dir: str | os.PathLike[str] | None
              ) -> list[Problem]:
    from onnxdata.validation import problems  # lands with the validation issue

    strip: set[int] = set()
    keep: set[int] = set()
    left_out = _marks(f.root, False, strip, keep)
    size = f.root.end - f.root.start - left_out
    if size > PARSE_LIMIT:
        return [Problem("", f"not validated: {size} bytes that are not tensor payloads would "
                            f"have to be parsed, over the explorer's limit of {PARSE_LIMIT} "
                            "bytes; read it as this kind to check it")]
    skeleton = _skeleton(data, f.root, strip, keep) if left_out else None
    message = MESSAGE_CLASSES[_KIND_OF[f.message]]()
    try:
        if skeleton is not None:
            message.ParseFromString(skeleton)
        else:
            with memoryview(data) as view:  # protobuf takes memoryviews, not mmaps
                message.ParseFromString(view)  # type: ignore[arg-type]
    except (_ProtobufDecodeError, RuntimeError, ValueError, TypeError) as exc:
        return [Problem("", f"protobuf cannot parse it as {f.message}: {exc}")]
    return list(problems(message, base_dir=base_dir))


def _strippable(node: FitMessage) -> bool:
    """True when the tensor's payload may be left out without changing the verdict."""
    if node.type != "TensorProto":
        return False
    if node.has("segment") or node.has("external_data") or node.has("data_location"):
        return False
    storage = [x for x in node.fields if x.name in _STORAGE]
    if len(storage) != 1:
        return False
    s = storage[0]
    size = _STRIPPABLE.get(s.name)
    if size is None or s.length < STRIP_MIN or (s.name != "raw_data" and not s.packed):
        return False
    from onnxdata.validation import tensor_storage_problems

    dims = node.get_ints("dims")
    if dims is None:
        return False
    counts = {} if s.name == "raw_data" else {s.name: s.length // size}
    raw_len = s.length if s.name == "raw_data" else None
    return not tensor_storage_problems("", node.get_int("data_type"), dims, counts, raw_len)


def _marks(node: FitMessage, in_sparse: bool, strip: set[int], keep: set[int]) -> int:
    """Mark tensors to strip (``strip``) and their ancestors (``keep``); returns the
    payload bytes left out below ``node``."""
    if not in_sparse and _strippable(node):
        strip.add(id(node))
        return sum(x.length for x in node.fields if x.name in _STRIPPABLE)
    found = 0
    for x in node.fields:
        if x.child is not None:
            found += _marks(x.child, in_sparse or node.type == "SparseTensorProto", strip, keep)
    if found:
        keep.add(id(node))
    return found


def _skeleton(data: WireBuffer, root: FitMessage, strip: set[int], keep: set[int]) -> bytes:

    def build(node: FitMessage) -> bytes:
        if id(node) in strip:
            parts = [bytes(data[x.offset:x.end]) for x in node.fields
                     if x.name != "dims" and x.name not in _STRIPPABLE]
            parts.append(b"\x0a\x01\x00")  # dims [0]: nothing left for the count rule to see
            return b"".join(parts)
        parts = []
        for x in node.fields:
            if x.child is not None and (id(x.child) in keep or id(x.child) in strip):
                sub = build(x.child)
                parts.append(encode_varint((x.number << 3) | LEN) + encode_varint(len(sub)) + sub)
            else:
                parts.append(bytes(data[x.offset:x.end]))
        return b"".join(parts)

    return build(root)


# --- summaries -----------------------------------------------------------------------------

def dtype_name(code: int) -> str:
    """A short name for a tensor data type: float32, int64, bfloat16, string, …"""
    dt = data_type(code)
    if dt is None:
        return "no data type" if code == 0 else f"data type {code}"
    return "string" if dt.is_string else dt.dtype.name


def _dims_text(dims: list[int] | None) -> str:
    if dims is None:
        return "[…]"
    if len(dims) > 6:
        return "[" + ", ".join(map(str, dims[:4])) + f", … ({len(dims)} dims)]"
    return "[" + ", ".join(map(str, dims)) + "]"


def _tensor_detail(node: FitMessage) -> str:
    text = f"{dtype_name(node.get_int('data_type'))} {_dims_text(node.get_ints('dims'))}"
    if node.get_int("data_location") == 1:
        text += " (external data)"
    return text


def _sparse_detail(node: FitMessage) -> str:
    values = node.child("values")
    code = values.get_int("data_type") if values is not None else 0
    text = f"{dtype_name(code)} {_dims_text(node.get_ints('dims'))}"
    if values is not None:
        vdims = values.get_ints("dims")
        if vdims:
            text += f", {vdims[0]} non-zero"
    return text


def summarize(node: FitMessage) -> str:
    """One line about a value, from its wire facts: ``sequence of 3 tensors, float32 [2, 3]``."""
    t = node.type
    if t == "TensorProto":
        return f"tensor {_tensor_detail(node)}"
    if t == "SparseTensorProto":
        return f"sparse tensor {_sparse_detail(node)}"
    if t == "OptionalProto":
        code = node.get_int("elem_type")
        if code == 0:
            return "empty optional"
        if code not in _ELEM_KIND:
            return f"optional of unknown elem_type {code}"
        child = node.child(f"{_ELEM_KIND[code]}_value")
        if child is None:
            return f"empty optional ({_ELEM_WORDS[code][0]})"
        return f"optional {summarize(child)}"
    if t == "SequenceProto":
        code = node.get_int("elem_type")
        if code not in _ELEM_KIND:
            n = sum(len(node.every(f"{k}_values")) for k in _ELEM_KIND.values())
            what = "no elem_type" if code == 0 else f"unknown elem_type {code}"
            return f"sequence with {what}, {n} element{'s' if n != 1 else ''}"
        elements = node.children(f"{_ELEM_KIND[code]}_values")
        one, many = _ELEM_WORDS[code]
        if not elements:
            return f"empty sequence of {many}"
        head = f"sequence of {len(elements)} {one if len(elements) == 1 else many}"
        if code in (1, 2):
            detail = _tensor_detail if code == 1 else _sparse_detail
            details = {detail(e) for e in elements}
            if len(details) == 1:
                return f"{head}, {details.pop()}"
            codes = {e.get_int("data_type") for e in elements} if code == 1 else set()
            if len(codes) == 1:
                return f"{head}, {dtype_name(codes.pop())}, shapes vary"
            return f"{head}, mixed"
        inner = {summarize(e) for e in elements}
        if len(inner) == 1:
            return f"{head} ({inner.pop()})" if len(elements) == 1 else \
                f"{head}, each {inner.pop()}"
        return head
    # MapProto
    key = node.get_int("key_type")
    keys = node.count_of("keys")
    skeys = node.count_of("string_keys") or 0
    nkeys = skeys if skeys else keys
    count = "" if nkeys is None else f"{nkeys} "
    values = node.child("values")
    if values is None:
        return f"map of {count}{dtype_name(key)} keys, no values"
    return f"map of {count}{dtype_name(key)} keys to {summarize(values)}"


# --- the byte table ------------------------------------------------------------------------

@dataclass(frozen=True)
class ByteRow:
    """One row of a byte table: the bytes in hex, the field path, and what they mean."""

    offset: int
    depth: int
    bytes: str
    field: str
    value: str


def _hex(data: WireBuffer, a: int, b: int) -> str:
    return " ".join(f"{x:02X}" for x in bytes(data[a:b]))


@no_memory_error("data")
def byte_table(data: WireBuffer, kind_or_reading: str | Reading, /, *,
               max_depth: int = DEFAULT_MAX_DEPTH) -> list[ByteRow]:
    """The rows of the byte table for reading ``data`` as one message.

    A well-formed reading gives one row per field (a nested message's header row
    before its own rows); a misfit ends the table with a row saying what broke.
    """
    data = byte_buffer(data, "byte_table")
    if isinstance(kind_or_reading, Reading):
        f = kind_or_reading.fit
    else:
        f = fit(data, message_of_kind(kind_or_reading), max_depth=max_depth)
    rows: list[ByteRow] = []
    _rows(data, f.root, 0, rows)
    if f.misfit is not None:
        m = f.misfit
        rows.append(ByteRow(m.offset, 0, _hex(data, m.offset, min(m.offset + 4, len(data))),
                            m.path or "(message)", f"does not fit: {m.reason}"))
    return rows


def _rows(data: WireBuffer, node: FitMessage, depth: int, rows: list[ByteRow]) -> None:
    for x in node.fields:
        if x.wire_type == LEN:
            head = _hex(data, x.offset, x.start)
            n = x.length
            shown = f"{head} + {n} byte{'s' if n != 1 else ''}" if n else head
        else:
            shown = _hex(data, x.offset, x.end)
        rows.append(ByteRow(x.offset, depth, shown, x.path, _meaning(data, node, x)))
        if x.child is not None:
            _rows(data, x.child, depth + 1, rows)


def _text(raw: bytes, limit: int = 60) -> str:
    s = raw.decode("utf-8", errors="backslashreplace")
    return s if len(s) <= limit else s[:limit] + "…"


def _meaning(data: WireBuffer, node: FitMessage, x: FitField) -> str:
    spec = x.spec
    if x.child is not None:
        return f"{x.child.type}, {x.length} bytes"
    if spec.name == "elem_type" and node.type in ("SequenceProto", "OptionalProto"):
        return _elem_type_meaning(node, spec.as_int(x.value or 0))
    if spec.name in ("data_type", "key_type") and x.value is not None:
        code = spec.as_int(x.value)
        dt = data_type(code)
        if dt is None:
            return f"{code}, {'UNDEFINED' if code == 0 else 'not a data type'}"
        return f"{code}, {dt.name} ({dtype_name(code)})"
    if spec.enum is not None and x.value is not None:
        v = spec.as_int(x.value)
        return f"{v}, {spec.enum.get(v, 'not a known value')}"
    if x.wire_type == VARINT and x.value is not None:
        return str(spec.as_int(x.value))
    if spec.name == "raw_data":
        return _payload_meaning(data, node, x)
    if x.wire_type == LEN and spec.packable:
        return _packed_meaning(data, x)
    if x.wire_type in (I32, I64):
        fmt = {2: "<f4", 1: "<f8"}.get(spec.type, "<u4" if x.wire_type == I32 else "<u8")
        return str(np.frombuffer(bytes(data[x.start:x.end]), dtype=fmt)[0].item())
    return _text(bytes(data[x.start:min(x.end, x.start + 256)]))


def _elem_type_meaning(node: FitMessage, code: int) -> str:
    name = _ELEM_NAMES.get(code)
    if name is None:
        return f"{code}, not an element type"
    if node.type == "OptionalProto":
        if code == 0:
            return "0, UNDEFINED: the value is absent"
        where = f"{_ELEM_KIND[code]}_value"
        if node.has(where):
            return f"{code}, {name}: the value is in {where}"
        return f"{code}, {name}: a {_ELEM_WORDS[code][0]} type, the value is absent"
    if code == 0:
        return "0, UNDEFINED: no element type (a sequence needs one)"
    return f"{code}, {name}: the elements are in {_ELEM_KIND[code]}_values"


_PREVIEW: Final = 6


def _payload_meaning(data: WireBuffer, node: FitMessage, x: FitField) -> str:
    code = node.get_int("data_type")
    dt = data_type(code)
    dims = node.get_ints("dims")
    head = f"{x.length} bytes"
    if dt is None or dt.is_string:
        return f"{head} of {dtype_name(code)}"
    head = f"{dtype_name(code)} {_dims_text(dims)}, {head}"
    if x.length == 0:
        return head
    if dt.bits % 8:
        return f"{head}: packed {dt.bits}-bit, " + _hex(data, x.start, min(x.end, x.start + 4))
    size = dt.bits // 8
    n = min(_PREVIEW, x.length // size)
    try:
        values = np.frombuffer(bytes(data[x.start:x.start + n * size]),
                               dtype=dt.dtype.newbyteorder("<"))
        shown = ", ".join(str(v) for v in values)
    except (TypeError, ValueError):
        shown = _hex(data, x.start, x.start + n * size)
    more = ", …" if x.length > n * size else ""
    return f"{head}: {shown}{more}"


def _packed_meaning(data: WireBuffer, x: FitField) -> str:
    if x.spec.name == "dims" and x.values is not None:
        return _dims_text([x.spec.as_int(v) for v in x.values])
    if x.spec.wire_type == VARINT:
        values: list[int] = []
        pos = x.start
        try:
            while pos < x.end and len(values) < _PREVIEW:
                v, pos = read_varint(data, pos, x.end)
                values.append(x.spec.as_int(v))
        except WireError:
            pass
        more = ", …" if pos < x.end else ""
        count = f"{x.count} values" if x.count is not None else f"{x.length} bytes"
        return f"{count}: " + ", ".join(map(str, values)) + more
    size = 4 if x.spec.wire_type == I32 else 8
    dt = {2: "<f4", 1: "<f8"}.get(x.spec.type, "<u4" if size == 4 else "<u8")
    n = min(_PREVIEW, x.length // size)
    vals = np.frombuffer(bytes(data[x.start:x.start + n * size]), dtype=dt).tolist()
    more = ", …" if x.length > n * size else ""
    return f"{x.length // size} values: " + ", ".join(map(str, vals)) + more


# --- exploring a file, with or without a model --------------------------------------------

@dataclass
class Exploration:
    """What ``explore`` found: the readings, the declared type if a model was given or
    found, the chosen reading, and how the value disagrees with the declared type."""

    file: str
    size: int
    readings: list[Reading]
    data: WireBuffer = field(repr=False)
    declared: DeclaredType | None = None
    model: str | None = None
    io: IO | None = None
    index: int | None = None
    chosen: Reading | None = None
    type_problems: list[Problem] = field(default_factory=list)
    model_warning: str | None = None

    @property
    def valid_readings(self) -> list[Reading]:
        return [r for r in self.readings if r.valid]

    @property
    def ambiguous(self) -> bool:
        """Several readings are valid and neither a model nor the caller said which: the
        bytes are all of them (a one-element sequence is also an optional)."""
        return self.chosen is None and len(self.valid_readings) > 1

    def as_json(self) -> dict[str, Any]:
        """Kinds are short names everywhere ("sequence"); each reading also gives its
        ``message`` name ("SequenceProto")."""
        return {
            "file": self.file,
            "size": self.size,
            "readings": [r.as_json() for r in self.readings],
            "declared": None if self.declared is None else self.declared.kind,
            "declared_type": None if self.declared is None else str(self.declared),
            "model": self.model,
            "io": self.io,
            "index": self.index,
            "model_warning": self.model_warning,
            "chosen": None if self.chosen is None else self.chosen.kind_name,
            "ambiguous": self.ambiguous,
            "valid_readings": [r.kind_name for r in self.valid_readings],
            "type_problems": [{"path": p.path, "message": p.message}
                              for p in self.type_problems],
        }

    def byte_table(self) -> list[ByteRow]:
        """The byte table of the chosen reading (or [] when none was chosen)."""
        return [] if self.chosen is None else byte_table(self.data, self.chosen)


def choose_kind(file: str | os.PathLike[str] | None, data: WireBuffer, *,
                declared: Declared | None = None, how: str = 'kind="{}"',
                progress: Callable[[float], None] | None = None) -> KindName:
    """The kind to read a file as when none is given: the model's declared kind in the
    ``test_data_set_N/input_K.pb`` layout, else the only valid reading.

    ``declared`` is the model lookup when the caller made it (and showed its
    warning); otherwise it is made here and a model found but unusable is left
    out with a UserWarning. Several valid readings (a one-element sequence is also
    an optional) raise DecodeError naming each and how to pick one (``how``
    formats a kind name, e.g. ``--kind {}``); with none valid the first
    well-formed one is taken, and with none well-formed DecodeError names the nearest.
    ``progress`` is as for ``readings``.
    """
    from onnxdata.errors import DecodeError

    name = "<bytes>" if file is None else os.fspath(file)
    if declared is None:
        declared = declared_for(file)
        if declared.warning is not None:
            warnings.warn(declared.warning, UserWarning, stacklevel=3)
    if declared.type is not None:
        return declared.type.kind
    base = None if file is None else Path(name).parent
    rs = readings(data, base_dir=base, progress=progress)
    valid = [r for r in rs if r.valid]
    if len(valid) == 1:
        return valid[0].kind_name
    if valid:
        raise DecodeError(f"{ambiguity(valid)}: say which with "
                          f"{' or '.join(how.format(r.kind_name) for r in valid)}", source=name)
    formed = [r for r in rs if r.well_formed]
    if formed:
        return formed[0].kind_name
    best = rs[0]
    assert best.misfit is not None
    raise DecodeError(f"no message fits; nearest is {best.kind}: {best.misfit.reason}",
                      source=name, offset=best.misfit.offset)


def ambiguity(valid: list[Reading]) -> str:
    """"valid as SequenceProto or OptionalProto (the same bytes)"."""
    return f"valid as {' or '.join(r.kind for r in valid)} (the same bytes)"


def open_buffer(path: str | os.PathLike[str]) -> WireBuffer:
    """A file's bytes as a read-only mmap (b"" for an empty file): nothing is read up front."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0:
            return b""
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


@no_memory_error("source")
def explore(source: str | os.PathLike[str] | WireBuffer, *,
            model: str | os.PathLike[str] | None = None, io: IO | None = None,
            index: int | None = None, reading: str | None = None,
            base_dir: str | os.PathLike[str] | None = None,
            find: bool = True, progress: Callable[[float], None] | None = None
            ) -> Exploration:
    """Readings of a file (or buffer), with the model's declared type when one is given
    or found from the ``test_data_set_N/input_K.pb`` layout (``find``).

    The chosen reading is ``reading`` if given, else the declared kind's, else the
    only valid one; with several valid readings none is chosen and the exploration
    is ``ambiguous``. A ``model`` given here must be usable (its OSError or
    DecodeError propagates); a model found beside the file that is not usable is
    left out, and ``model_warning`` says why. ``progress`` is as for ``readings``.
    """
    file: str | None = None
    if isinstance(source, (bytes, bytearray, memoryview, mmap.mmap)):
        data: WireBuffer = source
        name = "<bytes>"
    else:
        name = file = os.fspath(source)
        data = open_buffer(name)
        if base_dir is None:
            base_dir = Path(name).parent
    declared = declared_for(file, model=model, io=io, index=index, find=find)
    result = Exploration(name, len(data), readings(data, base_dir=base_dir, progress=progress),
                         data,
                         declared.type, declared.model, declared.io, declared.index,
                         model_warning=declared.warning)
    by_kind = {r.kind: r for r in result.readings}
    if reading is not None:
        result.chosen = by_kind[message_of_kind(reading)]
    elif result.declared is not None:
        result.chosen = by_kind[message_of_kind(result.declared.kind)]
    else:
        valid = result.valid_readings
        result.chosen = valid[0] if len(valid) == 1 else None
    if result.declared is not None and result.chosen is not None and result.chosen.well_formed:
        result.type_problems = type_problems(result.chosen.fit.root, result.declared)
    return result
