"""Zero-copy reading: ``read`` maps a file and walks the wire format itself.

``read(path, kind)`` returns what ``to_numpy(load(path, kind))`` returns, but
never parses the file into messages. The file is memory-mapped read-only and
walked with the primitives of ``onnxdata.wire``; ``raw_data`` and packed
``float_data``/``double_data`` become read-only numpy views of the mapping,
and packed varint fields are decoded with numpy, a whole field at a time.
The mapping lives as long as any array still refers to it (each view's
``base`` chain ends at the ``mmap``), and is unmapped by the garbage collector
after that. Nothing in the walk depends on protobuf, so files over 2 GiB read
the same way as small ones.

Validation happens during the walk: every message's facts (field numbers and
wire types, element types, counts, keys, external-data locations) are checked
with the rules of ``onnxdata.validation``, and any problem raises the same
``ValidationError``.

Truncation (SIGBUS). A mapped file that another process truncates makes any
touch of a page past the new end raise SIGBUS, which Python cannot turn into
an exception. ``read`` maps only the size ``fstat`` reports, and asks the
mapping for the file's current size again (``mmap.size()``, an ``fstat``)
before the walk, before every payload it decodes itself (varints, strings,
densifying sparse tensors), and before it returns; a file found shorter
raises ``DecodeError``. Two windows remain that no user-space check can
close on Linux: a truncation in the microseconds between a check and a
header read, and a truncation after ``read`` has returned, when touching an
array that views the lost pages still raises SIGBUS. Copy the arrays
(``np.array(a)``) if the file may change under you.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from onnxdata.convert import SparseParts, densify, from_le_bytes, unpack_bits
from onnxdata.decode import decode_varints as vectorised_varints
from onnxdata.decode import split_strings, strings_array
from onnxdata.dtypes import DATA_TYPES, STRING, DataType, raw_nbytes
from onnxdata.errors import DecodeError, Problem, ValidationError
from onnxdata.files import load
from onnxdata.messages import Kind, KindName, kind_name
from onnxdata.validation import (
    ELEM_FIELDS,
    OPTIONAL_FIELDS,
    TYPED_FIELDS,
    element_count,
    external_data_problems,
    map_problems,
    optional_problems,
    same_type_problems,
    sequence_problems,
    sparse_index_problems,
    sparse_tensor_problems,
    tensor_storage_problems,
    typed_entry_problems,
    wire_field_problems,
)
from onnxdata.wire import (
    I32,
    I64,
    LEN,
    VARINT,
    WireBuffer,
    WireError,
    read_varint,
    signed64,
    skip_field,
)

__all__ = ["decode_varints", "read"]

#: The nesting protobuf's parser allows; deeper values are refused the same way.
MAX_DEPTH: Final = 100
#: Varints decoded per numpy pass, bounding the temporary arrays to a few tens of MiB.
VARINT_CHUNK: Final = 1 << 20
#: Below this size a failing file is re-checked with ``validate`` on the parsed
#: message, so the error lists exactly the problems ``validate`` lists.
PROTOBUF_LIMIT: Final = (1 << 31) - 1

_U8: Final = np.dtype(np.uint8)
_LITTLE: Final = sys.byteorder == "little"
_U64: Final = np.dtype(np.uint64)

# Field kinds in the per-message schemas below.
_SCALAR, _VARINTS, _BYTES, _FIXED32S, _FIXED64S = range(5)
_WIRE_OF = {_SCALAR: VARINT, _VARINTS: VARINT, _BYTES: LEN, _FIXED32S: I32, _FIXED64S: I64}

_TENSOR: Final = {
    1: ("dims", _VARINTS), 2: ("data_type", _SCALAR), 3: ("segment", _BYTES),
    4: ("float_data", _FIXED32S), 5: ("int32_data", _VARINTS), 6: ("string_data", _BYTES),
    7: ("int64_data", _VARINTS), 8: ("name", _BYTES), 9: ("raw_data", _BYTES),
    10: ("double_data", _FIXED64S), 11: ("uint64_data", _VARINTS), 12: ("doc_string", _BYTES),
    13: ("external_data", _BYTES), 14: ("data_location", _SCALAR),
    16: ("metadata_props", _BYTES),
}
_SPARSE: Final = {1: ("values", _BYTES), 2: ("indices", _BYTES), 3: ("dims", _VARINTS)}
_ELEMENTS: Final = {
    3: ("tensor", _BYTES), 4: ("sparse_tensor", _BYTES), 5: ("sequence", _BYTES),
    6: ("map", _BYTES), 7: ("optional", _BYTES),
}
_SEQUENCE: Final = {1: ("name", _BYTES), 2: ("elem_type", _SCALAR), **_ELEMENTS}
_OPTIONAL: Final = _SEQUENCE
_MAP: Final = {
    1: ("name", _BYTES), 2: ("key_type", _SCALAR), 3: ("keys", _VARINTS),
    4: ("string_keys", _BYTES), 5: ("values", _BYTES),
}
_ENTRY: Final = {1: ("key", _BYTES), 2: ("value", _BYTES)}
_SEGMENT: Final = {1: ("begin", _SCALAR), 2: ("end", _SCALAR)}

#: SequenceProto/OptionalProto elem_type codes and the field each fills.
#: The one-byte tags plain_tensor reads: dims, data_type (VARINT), name, raw_data (LEN).
_PLAIN_KEYS: Final = frozenset({0x08, 0x10, 0x42, 0x4A})
_ELEM_FIELDS: Final = {1: "tensor", 2: "sparse_tensor", 3: "sequence", 4: "map", 5: "optional"}
_EXTERNAL: Final = 1  # TensorProto.DataLocation.EXTERNAL
#: Repeated string fields, whose runs are split in bulk.
_STRINGS: Final = frozenset({"string_data", "string_keys"})

Ranges = list[tuple[int, int]]
Pieces = list[tuple[int, int, int]]  # (wire_type, start, end): one value or a packed run


# --------------------------------------------------------------------------- varints

def decode_varints(data: npt.NDArray[np.uint8], offset: int = 0,
                   dtype: npt.DTypeLike = _U64) -> npt.NDArray[Any]:
    """The unsigned values of a run of concatenated varints (a packed field), vectorised
    (``onnxdata.decode``): uint64, or uint32 for the low 32 bits (int32 fields).

    ``offset`` is where ``data`` starts in the file, for error messages. A
    10-byte varint keeps its low 64 bits, as protobuf's parser keeps them.
    """
    try:
        return vectorised_varints(data, dtype)
    except WireError as exc:
        raise WireError(exc.reason, offset + (exc.offset or 0)) from exc


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


# --------------------------------------------------------------------------- the source

@dataclass
class _Source:
    """The mapped bytes of one file, and the check that the file has not shrunk."""

    buf: WireBuffer
    name: str
    mapping: mmap.mmap | None = None
    size: int = 0

    def check(self) -> None:
        if self.mapping is not None and self.mapping.size() < self.size:
            raise DecodeError(
                f"the file shrank from {self.size} to {self.mapping.size()} bytes while it"
                " was being read (truncated by another process?)", source=self.name)

    def array(self, dtype: npt.DTypeLike, start: int, count: int) -> npt.NDArray[Any]:
        return np.frombuffer(self.buf, dtype=dtype, count=count, offset=start)

    def u8(self, start: int, end: int) -> npt.NDArray[np.uint8]:
        return np.frombuffer(self.buf, dtype=_U8, count=end - start, offset=start)


def _map_file(path: str, offset: int = 0, length: int | None = None) -> _Source:
    """Map ``length`` bytes of ``path`` at ``offset`` read-only (all of it by default).

    Files that cannot be mapped (pipes, empty files) are read into bytes.
    """
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if length is None:
            length = max(size - offset, 0)
        if offset + length > size:
            raise DecodeError(f"{offset + length} bytes needed but the file has {size}",
                              source=path)
        if length == 0:
            return _Source(b"", path)
        aligned = offset - offset % mmap.ALLOCATIONGRANULARITY
        try:
            mapping = mmap.mmap(f.fileno(), length + offset - aligned,
                                access=mmap.ACCESS_READ, offset=aligned)
        except (OSError, ValueError):
            f.seek(offset)
            return _Source(f.read(length), path)
    source = _Source(mapping, path, mapping, size)
    if aligned != offset:
        source.buf = memoryview(mapping)[offset - aligned:]
    return source


# --------------------------------------------------------------------------- the walk

@dataclass
class _Fields:
    """The fields of one message as scanned: scalars by value, the rest by where they are.

    ``unknown`` holds the ``(number, wire_type)`` of every field the schema
    refuses, in wire order, for ``validate.wire_field_problems``.
    ``bad_enum`` is the first out-of-range value of the one enum field
    (TensorProto.data_location): proto2 enums are closed, so protobuf keeps
    such a value aside as an unknown field, and a later valid one does not
    hide it from ``validate``.
    """

    scalars: dict[str, int] = field(default_factory=dict)
    bad_enum: int | None = None
    ranges: dict[str, Ranges] = field(default_factory=dict)
    pieces: dict[str, Pieces] = field(default_factory=dict)
    unknown: list[tuple[int, int]] = field(default_factory=list)
    #: Runs of string values split in bulk (``decode.split_strings``): (starts, ends).
    runs: dict[str, list[tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]]] = \
        field(default_factory=dict)

    def spans(self, name: str) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
        """Where each value of a repeated string field starts and ends, in order."""
        parts = [*self.runs.get(name, [])]
        ranges = self.ranges.get(name)
        if ranges:
            spans = np.array(ranges, np.intp).reshape(-1, 2)
            parts.append((spans[:, 0], spans[:, 1]))
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return np.zeros(0, np.intp), np.zeros(0, np.intp)
        return np.concatenate([a for a, _ in parts]), np.concatenate([b for _, b in parts])


@dataclass
class _Tensor:
    """One TensorProto scanned and checked; its data is not touched until ``tensor_value``."""

    path: str
    fields: _Fields
    dims: list[int]
    code: int
    location: int
    counts: dict[str, int]
    raw_len: int | None
    external: list[tuple[str, str]]
    problems: list[Problem]
    decoded: dict[str, npt.NDArray[Any]] = field(default_factory=dict)


#: Verdicts of ``tensor_storage_problems`` on plain tensors, by (data_type, dims, raw length).
_PLAIN_OK: dict[tuple[int, tuple[int, ...], int], bool] = {}


class _Walker:
    def __init__(self, source: _Source, base_dir: Path | None,
                 max_depth: int = MAX_DEPTH) -> None:
        self.src = source
        self.max_depth = max_depth
        self.buf = source.buf
        #: The whole mapping as bytes: slicing it and viewing the slice is the cheapest
        #: way to a zero-copy array (np.frombuffer exports the buffer again each time).
        self.u8 = np.frombuffer(source.buf, dtype=_U8)
        self.base_dir = base_dir
        self.problems: list[Problem] = []
        self.last_code: int | None = None
        self.last_seq: tuple[int | None, dict[str, int]] = (None, {})

    # -- scanning

    def scan(self, ranges: Ranges, schema: dict[int, tuple[str, int]]) -> _Fields:
        """One message's fields; several ranges are occurrences merged in order (as protobuf)."""
        buf = self.buf
        out = _Fields()
        for start, end in ranges:
            pos = start
            while pos < end:
                tag_at = pos
                b = buf[pos]
                if b < 0x80:
                    key = b
                    pos += 1
                else:
                    key, pos = read_varint(buf, pos, end)
                number, wt = key >> 3, key & 7
                if number == 0 or number > 0x1FFFFFFF or wt > 5 or pos - tag_at > 5:
                    raise WireError(f"invalid tag {key} (field {number}, wire type {wt})",
                                    tag_at)
                spec = schema.get(number)
                if spec is not None:
                    name, fkind = spec
                    want = _WIRE_OF[fkind]
                    if wt == VARINT == want:
                        if pos < end and buf[pos] < 0x80:
                            value = buf[pos]
                            pos += 1
                        else:
                            value, pos = read_varint(buf, pos, end)
                        if fkind != _SCALAR:
                            out.pieces.setdefault(name, []).append((VARINT, value, 0))
                        elif name == "data_location" and value not in (0, 1):
                            if out.bad_enum is None:
                                out.bad_enum = value
                        else:
                            out.scalars[name] = value
                        continue
                    if wt == LEN and name in _STRINGS and not out.ranges.get(name):
                        run = split_strings(self.u8, tag_at, end, key)
                        if run is not None:  # None: the walk below says what is wrong
                            out.runs.setdefault(name, []).append(run[:2])
                            pos = run[2]
                            continue
                    if wt == LEN and (want == LEN or fkind != _SCALAR):
                        length, p = read_varint(buf, pos, end)
                        if length > end - p:
                            raise WireError(
                                f"field {number} ({name}): length {length} runs past the"
                                f" end ({end - p} bytes left)", pos)
                        if want == LEN:
                            out.ranges.setdefault(name, []).append((p, p + length))
                        else:
                            out.pieces.setdefault(name, []).append((LEN, p, p + length))
                        pos = p + length
                        continue
                    if wt == want:  # one fixed-width value, not packed
                        new = skip_field(buf, pos, end, number, wt)
                        out.pieces.setdefault(name, []).append((wt, pos, new))
                        pos = new
                        continue
                out.unknown.append((number, wt))
                pos = skip_field(buf, pos, end, number, wt)
        return out

    def text(self, where: tuple[int, int]) -> str:
        return bytes(self.buf[where[0]:where[1]]).decode("utf-8", "surrogateescape")

    def varints(self, pieces: Pieces | None, dtype: np.dtype[Any] = _U64) -> npt.NDArray[Any]:
        """A repeated varint field's values, in order, from its packed and single pieces
        (``dtype`` uint32: their low 32 bits)."""
        if not pieces:
            return np.zeros(0, dtype)
        if len(pieces) == 1 and pieces[0][0] == LEN:
            self.src.check()
            return decode_varints(self.src.u8(pieces[0][1], pieces[0][2]), pieces[0][1], dtype)
        parts: list[npt.NDArray[Any]] = []
        singles: list[int] = []
        for wt, a, b in pieces:
            if wt == VARINT:
                singles.append(a)
                continue
            if singles:
                parts.append(np.array(singles, _U64).astype(dtype))
                singles = []
            self.src.check()
            parts.append(decode_varints(self.src.u8(a, b), a, dtype))
        if singles:
            parts.append(np.array(singles, _U64).astype(dtype))
        return np.concatenate(parts)

    def fixed(self, pieces: Pieces | None, dtype: np.dtype[Any]) -> npt.NDArray[Any]:
        """A repeated fixed-width field: a view of the mapping when it is one packed run."""
        if not pieces:
            return np.zeros(0, dtype)
        size = dtype.itemsize
        for _wt, a, b in pieces:
            if (b - a) % size:
                raise WireError(f"packed field of {b - a} bytes is not a whole number of"
                                f" {size}-byte values", a)
        if len(pieces) == 1:
            _, a, b = pieces[0]
            return self.src.array(dtype, a, (b - a) // size)
        return np.concatenate([self.src.array(dtype, a, (b - a) // size) for _, a, b in pieces])

    # -- messages

    def value(self, kind: str, ranges: Ranges, path: str, depth: int) -> Any:
        """The numpy value of one message; its problems go to ``self.problems`` as validate's."""
        if depth > self.max_depth:
            raise WireError(f"messages nested deeper than {self.max_depth}", ranges[0][0])
        if kind == "tensor":
            if len(ranges) == 1:
                plain = self.plain_tensor(*ranges[0])
                if plain is not None:
                    self.last_code = plain[0]
                    return plain[1]
            t = self.tensor(ranges, path)
            self.last_code = t.code
            self.problems += t.problems
            if self.problems:
                return None
            with _shape_errors(path):
                return _read_only(self.tensor_value(t))
        if kind == "sequence":
            return self.sequence(ranges, path, depth)
        if kind == "optional":
            return self.optional(ranges, path, depth)
        if kind == "map":
            return self.map(ranges, path, depth)
        with _shape_errors(path):
            return _read_only(self.sparse(ranges, path, depth))

    def plain_tensor(self, start: int, end: int) -> tuple[int, Any] | None:
        """The common tensor, fast: only dims, data_type, name and raw_data, and valid.

        Returns ``(data_type, array)``, or None for anything else (another
        field, a bad size...): ``tensor`` then reads it and says what is wrong.
        Validity is ``validate.tensor_storage_problems`` of the facts, cached
        per (data_type, dims, raw_data length), so 100,000 tensors of one
        shape cost one call of the rule.
        """
        buf = self.buf
        pos = start
        dims: list[int] = []
        code = 0
        raw = -1
        raw_len = 0
        while pos < end:
            key = buf[pos]
            if key not in _PLAIN_KEYS:  # before reading a value: it may not be a varint
                return None
            pos += 1
            if pos >= end:
                return None
            b = buf[pos]
            if b < 0x80:
                value = b
                pos += 1
            else:
                value, pos = read_varint(buf, pos, end)
            if key == 0x08:
                dims.append(value)
            elif key == 0x10:
                code = value
            elif key == 0x42 or key == 0x4A:
                if value > end - pos:
                    return None
                if key == 0x4A:
                    raw, raw_len = pos, value
                pos += value
            else:
                return None
        if raw < 0:
            return None
        facts = (code, tuple(dims), raw_len)
        ok = _PLAIN_OK.get(facts)
        if ok is None:
            ok = not tensor_storage_problems("", code, dims, {}, raw_len)
            if len(_PLAIN_OK) < 4096:
                _PLAIN_OK[facts] = ok
        if not ok:
            return None
        dt = DATA_TYPES[code]
        if dt.sub_byte or not _LITTLE:
            count = 1
            for d in dims:
                count *= d
            return code, _read_only(_from_raw(self.src, dt, raw, count, dims))
        arr = self.u8[raw:raw + raw_len].view(dt.dtype)
        if len(dims) == 1:
            return code, arr
        try:
            return code, arr.reshape(dims)
        except ValueError:  # a shape numpy cannot hold: ``tensor`` reports it
            return None

    def tensor(self, ranges: Ranges, path: str) -> _Tensor:
        """Scan and check one TensorProto as ``validate`` checks it."""
        f = self.scan(ranges, _TENSOR)
        location_raw = f.scalars.get("data_location", 0)
        problems = wire_field_problems(path, "TensorProto", f.unknown)
        if f.bad_enum is not None:  # protobuf keeps an out-of-range enum as unknown
            problems.append(Problem(_join(path, "data_location"),
                                    f"{f.bad_enum!r} is not a value of the field's enum"))
        if "segment" in f.ranges:
            problems += wire_field_problems(_join(path, "segment"), "Segment",
                                            self.scan(f.ranges["segment"], _SEGMENT).unknown)
        entries: list[tuple[str, str]] = []
        for name in ("external_data", "metadata_props"):
            for i, r in enumerate(f.ranges.get(name, [])):
                e = self.scan([r], _ENTRY)
                problems += wire_field_problems(_join(path, f"{name}[{i}]"),
                                                "StringStringEntryProto", e.unknown)
                if name == "external_data":
                    entries.append((self.text(e.ranges.get("key", [(0, 0)])[-1]),
                                    self.text(e.ranges.get("value", [(0, 0)])[-1])))
        dims = [signed64(int(d)) for d in self.varints(f.pieces.get("dims")).tolist()]
        code = _int32(f.scalars.get("data_type", 0))
        raw = f.ranges.get("raw_data")
        t = _Tensor(path, f, dims, code, location_raw, {}, raw[-1][1] - raw[-1][0]
                    if raw else None, entries, problems)
        for name in TYPED_FIELDS:
            t.counts[name] = self.count(t, name)
        storage = tensor_storage_problems(
            path, code, dims, t.counts, t.raw_len, data_location=location_raw,
            external_entries=len(entries), has_segment="segment" in f.ranges)
        problems += storage
        dt = DATA_TYPES.get(code)
        n = element_count(dims)
        if entries and location_raw == _EXTERNAL:
            nbytes = raw_nbytes(dt, n) if dt is not None and n is not None and \
                not dt.is_string else None
            problems += external_data_problems(path, entries, self.base_dir, nbytes=nbytes)
        elif not storage and dt is not None and dt.field in t.decoded:
            entries_ = t.decoded[dt.field]
            problems += typed_entry_problems(path, code, dt.field, entries_)
        return t

    def count(self, t: _Tensor, name: str) -> int:
        """Entries of a typed field, decoding it (varints) or viewing it (fixed) on the way."""
        f = t.fields
        if name == "string_data":
            return len(f.ranges.get(name, [])) + sum(len(a) for a, _ in f.runs.get(name, []))
        if name not in f.pieces:
            return 0
        if name in ("float_data", "double_data"):
            values = self.fixed(f.pieces[name], np.dtype("<f4" if name == "float_data"
                                                          else "<f8"))
        else:
            if name == "int32_data":  # protobuf reads an int32 as the low 32 bits
                values = self.varints(f.pieces[name], np.dtype(np.uint32)).view(np.int32)
            else:
                values = self.varints(f.pieces[name])
            if name == "int64_data":
                values = values.view(np.int64)
        t.decoded[name] = values
        return int(values.size)

    def tensor_value(self, t: _Tensor) -> Any:
        """The ndarray of a tensor that passed every check."""
        dt = DATA_TYPES[t.code]
        count = element_count(t.dims) or 0
        dims = t.dims
        if t.location == _EXTERNAL:
            return self.external(t, dt, count)
        if dt.is_string:
            self.src.check()
            return strings_array(self.buf, *t.fields.spans("string_data")).reshape(dims)
        raw = t.fields.ranges.get("raw_data")
        if raw is not None:
            return _from_raw(self.src, dt, raw[-1][0], count, dims)
        entries = t.decoded.get(dt.field)
        if entries is None:
            entries = np.zeros(0, np.int64)
        if dt.field in ("float_data", "double_data"):
            return entries.view(dt.dtype.newbyteorder("<")).reshape(dims)
        if dt.field == "int64_data":
            return entries.reshape(dims)
        if dt.field == "uint64_data":
            return entries.astype(dt.dtype).reshape(dims)
        if dt.bit_view is None:
            return entries.astype(dt.dtype).reshape(dims)
        if dt.per_entry > 1:
            return unpack_bits(entries.astype(_U8), dt.bits, count).view(dt.dtype).reshape(dims)
        return entries.astype(dt.bit_view).view(dt.dtype).reshape(dims)

    def external(self, t: _Tensor, dt: DataType, count: int) -> Any:
        values = dict(t.external)
        folder = self.base_dir if self.base_dir is not None else Path(".")
        target = os.path.realpath(os.path.join(os.fspath(folder), values["location"]))
        offset = int(values.get("offset", "0"))
        length = raw_nbytes(dt, count)
        try:
            source = _map_file(target, offset, length)
        except OSError as exc:
            raise ValidationError([Problem(t.path, f"external data {values['location']!r}"
                                           f" cannot be read: {exc}")]) from exc
        return _from_raw(source, dt, 0, count, t.dims)

    def sequence(self, ranges: Ranges, path: str, depth: int) -> list[Any]:
        f = self.scan(ranges, _SEQUENCE)
        at = len(self.problems)
        elem_type = _int32(f.scalars["elem_type"]) if "elem_type" in f.scalars else None
        counts = {ELEM_FIELDS[code]: len(f.ranges.get(kind, []))
                  for code, kind in _ELEM_FIELDS.items()}
        own = wire_field_problems(path, "SequenceProto", f.unknown)
        own += sequence_problems(path, elem_type, counts)
        out: list[Any] = []
        codes: dict[str, list[int]] = {"tensor": [], "sparse_tensor": []}
        for code, kind in _ELEM_FIELDS.items():
            field_name = ELEM_FIELDS[code]
            elements = f.ranges.get(kind, [])
            if kind == "tensor":  # the common case, without a path string per element
                plain = self.plain_tensor
                for i, r in enumerate(elements):
                    got = plain(r[0], r[1])
                    if got is None:
                        self.last_code = None
                        got = (0, self.value(kind, [r], _join(path, f"{field_name}[{i}]"),
                                             depth + 1))
                        if self.last_code is not None:
                            codes[kind].append(self.last_code)
                    else:
                        codes[kind].append(got[0])
                    out.append(got[1])
                continue
            for i, r in enumerate(elements):
                self.last_code = None
                out.append(self.value(kind, [r], _join(path, f"{field_name}[{i}]"), depth + 1))
                if kind in codes and self.last_code is not None:
                    codes[kind].append(self.last_code)
        own += same_type_problems(path, "tensor_values", codes["tensor"])
        own += same_type_problems(path, "sparse_tensor_values", codes["sparse_tensor"])
        self.problems[at:at] = own
        self.last_seq = (elem_type, counts)
        return out

    def optional(self, ranges: Ranges, path: str, depth: int) -> Any:
        f = self.scan(ranges, _OPTIONAL)
        elem_type = _int32(f.scalars["elem_type"]) if "elem_type" in f.scalars else None
        set_fields = [OPTIONAL_FIELDS[code] for code, kind in _ELEM_FIELDS.items()
                      if kind in f.ranges]
        self.problems += wire_field_problems(path, "OptionalProto", f.unknown)
        self.problems += optional_problems(path, elem_type, set_fields)
        value = None
        for code, kind in _ELEM_FIELDS.items():
            if kind in f.ranges:
                # A submessage given twice is merged: its occurrences are read in order.
                value = self.value(kind, f.ranges[kind], _join(path, OPTIONAL_FIELDS[code]),
                                   depth + 1)
        return value

    def map(self, ranges: Ranges, path: str, depth: int) -> Any:
        f = self.scan(ranges, _MAP)
        at = len(self.problems)
        key_type = _int32(f.scalars["key_type"]) if "key_type" in f.scalars else None
        keys = self.varints(f.pieces.get("keys")).view(np.int64)
        self.src.check()
        string_keys: list[bytes] = strings_array(self.buf, *f.spans("string_keys")).tolist()
        values: list[Any] = []
        has_values = "values" in f.ranges
        values_elem_type: int | None = None
        n_values: int | None = None
        if has_values:
            values = self.sequence(f.ranges["values"], _join(path, "values"), depth + 1)
            values_elem_type, counts = self.last_seq
            field_name = ELEM_FIELDS.get(values_elem_type or 0)
            n_values = counts[field_name] if field_name else sum(counts.values())
        own = wire_field_problems(path, "MapProto", f.unknown)
        own += map_problems(path, key_type, keys.tolist(), string_keys,
                            values_elem_type=values_elem_type, values_present=has_values,
                            n_values=n_values)
        self.problems[at:at] = own
        if self.problems:
            return None
        return _map_value(key_type or 0, keys, string_keys, values)

    def sparse(self, ranges: Ranges, path: str, depth: int) -> Any:
        f = self.scan(ranges, _SPARSE)
        dims = [signed64(int(d)) for d in self.varints(f.pieces.get("dims")).tolist()]
        vt = self.tensor(f.ranges["values"], _join(path, "values")) \
            if "values" in f.ranges else None
        it = self.tensor(f.ranges["indices"], _join(path, "indices")) \
            if "indices" in f.ranges else None
        own = wire_field_problems(path, "SparseTensorProto", f.unknown)
        shape = sparse_tensor_problems(path, dims, vt.dims if vt else None,
                                       it.dims if it else None, it.code if it else None)
        own += shape
        index_data: npt.NDArray[np.int64] | None = None
        if not shape and it is not None:
            if it.location == _EXTERNAL:
                own.append(Problem(_join(path, "indices"), "indices in external data are not "
                                                          "supported; store them inline"))
            elif not tensor_storage_problems("", it.code, it.dims, it.counts, it.raw_len):
                index_data = self.index_data(it)
                self.src.check()
                own += sparse_index_problems(path, dims, len(it.dims) == 2, index_data)
        self.problems += own
        for t in (vt, it):
            if t is not None:
                self.problems += t.problems
        self.last_code = vt.code if vt is not None else None
        if self.problems or vt is None:
            return None
        values = self.tensor_value(vt)
        if index_data is None:
            index_data = np.zeros(0, np.int64)
        indices = index_data.reshape(it.dims) if it is not None else index_data
        return densify(SparseParts(values, indices, tuple(dims)), path)

    def index_data(self, t: _Tensor) -> npt.NDArray[np.int64]:
        raw = t.fields.ranges.get("raw_data")
        if raw is not None:
            a, b = raw[-1]
            return self.src.array("<i8", a, (b - a) // 8)
        return t.decoded.get("int64_data", np.zeros(0, np.int64))


@contextlib.contextmanager
def _shape_errors(path: str) -> Iterator[None]:
    """numpy's refusal of a shape (rank over its limit, dims over intp) as a ValidationError."""
    try:
        yield
    except ValidationError:
        raise
    except ValueError as exc:
        raise ValidationError([Problem(path, f"dims cannot be an ndarray's shape: {exc}")]) \
            from exc


def _read_only(value: Any) -> Any:
    """Every array ``read`` returns is read-only, views of the mapping and decoded copies alike."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    return value


def _join(path: str, name: str) -> str:
    if not path:
        return name
    return f"{path}{name}" if name.startswith("[") else f"{path}.{name}"


def _from_raw(src: _Source, dt: DataType, start: int, count: int, dims: list[int]) -> Any:
    return from_le_bytes(src.buf, dt, count, start).reshape(dims)


def _map_value(key_type: int, keys: npt.NDArray[np.int64], string_keys: list[bytes],
               values: list[Any]) -> dict[Any, Any]:
    if key_type == STRING:
        return dict(zip(string_keys, values, strict=False))
    dt = DATA_TYPES[key_type]
    return dict(zip(keys.astype(dt.dtype).tolist(), values, strict=False))


# --------------------------------------------------------------------------- read

def read(path: str | os.PathLike[str], kind: Kind | str | None = None, *,
         base_dir: str | os.PathLike[str] | None = None, max_depth: int = MAX_DEPTH) -> Any:
    """The numpy value in the file at ``path``, as ``to_numpy(load(path, kind))`` gives it.

    The file is memory-mapped; tensor data comes back as read-only views of
    the mapping wherever its bytes are the array's bytes, and the mapping
    stays open while any of them is alive. ``kind`` is "tensor",
    "sparse_tensor", "sequence", "optional", "map" or the message class; when
    it is None the kind is chosen as the explorer chooses it (the model's
    declared type in the test-data layout, else the only valid reading).
    External data is looked up in ``base_dir``, by default the file's folder,
    and must stay inside it. Messages nest at most ``max_depth`` deep (100, as
    protobuf's parser allows). Bad bytes raise ``DecodeError``, bad values
    ``ValidationError`` with every problem found.
    """
    name = os.fspath(path)
    folder = Path(base_dir) if base_dir is not None else Path(name).parent
    source = _mapped(name)
    if kind is None:
        chosen: KindName = _choose_kind(name, source)
    else:
        chosen = kind_name(kind)
    source.check()
    walker = _Walker(source, folder, max_depth)
    end = len(source.buf)
    try:
        value = walker.value(chosen, [(0, end)], "", 0)
    except WireError as exc:
        raise DecodeError(exc.reason, source=name, kind=_MESSAGE_NAMES[chosen],
                          offset=exc.offset) from exc
    source.check()
    if walker.problems:
        raise _validation_error(name, chosen, folder, end, walker.problems)
    return value


_MESSAGE_NAMES: Final = {
    "tensor": "TensorProto", "sparse_tensor": "SparseTensorProto",
    "sequence": "SequenceProto", "optional": "OptionalProto", "map": "MapProto",
}

#: Called with the path after mapping; tests replace it to change the file then.
_mapped: Callable[[str], _Source] = _map_file


def _validation_error(name: str, kind: KindName, folder: Path, size: int,
                      problems: list[Problem]) -> ValidationError:
    """The error ``validate`` gives, word for word when protobuf can parse the file."""
    if size <= PROTOBUF_LIMIT:
        try:
            from onnxdata.validation import problems as validate_problems

            theirs = validate_problems(load(name, kind), base_dir=folder)
        except (ImportError, DecodeError):
            theirs = []
        if theirs:
            return ValidationError(theirs, source=name)
    return ValidationError(problems, source=name)


def _choose_kind(name: str, source: _Source) -> KindName:
    from onnxdata.explorer import choose_kind

    return choose_kind(name, source.buf)
