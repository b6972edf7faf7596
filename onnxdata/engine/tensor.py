"""The engine's TensorProto walk (``engine.Engine`` inherits it): a plain tensor read
fast from its few fields, any other scanned and checked as ``validate`` checks it, and
its value built only once every check passed.

The ``WalkResult`` of one message lives here too: tensors make the most of them.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Any, Final, TypeAlias, cast

import numpy as np
import numpy.typing as npt

from onnxdata.convert.common import from_le_bytes, unpack_bits
from onnxdata.core.dtypes import DATA_TYPES, STRING, DataType, raw_nbytes, typed_entry_range
from onnxdata.core.messages import EXTERNAL
from onnxdata.core.paths import join_path
from onnxdata.engine.key_values import distinct_entries, plain_entries, plain_entry
from onnxdata.engine.one_line import tensor_detail
from onnxdata.errors import OnnxDataError, Problem, ValidationError
from onnxdata.rules.common import EXTERNAL_KEYS, TYPED_FIELDS, ProblemSink
from onnxdata.rules.containers import NestedType
from onnxdata.rules.tensor import (
    MAX_NDIM,
    element_count,
    external_data_clean,
    external_data_report,
    positive_product,
    tensor_storage_problems,
    typed_entry_problems,
)
from onnxdata.rules.wire import wire_field_problems
from onnxdata.wire.external import OpenFiles, read_external
from onnxdata.wire.field_values import fixed, string_values, varint_count, varints
from onnxdata.wire.fields import Occurrences, occurrences
from onnxdata.wire.format import LEN, WireError, read_length, read_varint
from onnxdata.wire.loops import walk_loop
from onnxdata.wire.occurrences import Compact, Piece
from onnxdata.wire.schema import Schema
from onnxdata.wire.source import Source
from onnxdata.wire.walk import ENTRY, SEGMENT, TENSOR, Fields, scan
from onnxdata.wire.wire_ints import WireInts

__all__ = ["PLAIN_LIMITS", "PlainFields", "WalkResult", "TensorWalk", "external_value"]

_LITTLE: Final = sys.byteorder == "little"
_U8: Final = np.dtype(np.uint8)
#: The one-byte tags the plain-tensor path reads: dims (VARINT or packed), data_type
#: (VARINT), string_data, name, raw_data, external_data and data_location (VARINT).
_PLAIN_KEYS: Final = frozenset({0x08, 0x0A, 0x10, 0x22, 0x32, 0x42, 0x4A, 0x52, 0x6A, 0x70})
#: A STRING tensor of more string_data than this is left to scan_tensor (its compiled walk).
_PLAIN_STRINGS: Final = 64
#: Packed float_data and double_data, whose bytes are those raw_data would hold: (field
#: name, bytes per value).
_PACKED_FIXED: Final = {0x22: ("float_data", 4), 0x52: ("double_data", 8)}
#: Packed dims longer than this are left to scan_tensor.
_PACKED_DIMS: Final = 640
#: The compiled ``plain_fields_reference`` of a message in memory, or None.
_plain_fields: Final = walk_loop.plain_fields if walk_loop is not None else None
#: What ``plain_fields`` is given after a tensor's range (``_walk.plain_container`` too).
PLAIN_LIMITS: Final = (MAX_NDIM, EXTERNAL, _PACKED_DIMS, _PLAIN_STRINGS, len(EXTERNAL_KEYS))
#: Verdicts of tensor_storage_problems on plain tensors, by (data_type, dims, raw length;
#: -1 for external data; (field, count) for packed float_data or double_data).
_PLAIN_OK: dict[tuple[int, tuple[int, ...], int | tuple[str, int]], bool] = {}
#: The element count of a valid plain tensor with raw_data or packed float_data or
#: double_data, -1 for an invalid one, by the same facts (``tensor_storage_problems``).
_PLAIN_COUNT: dict[tuple[int, tuple[int, ...], int | tuple[str, int]], int] = {}
_DETAILS: dict[tuple[int, tuple[int, ...], bool], str] = {}
#: Above this many bytes a repeated int64 field is walked in chunks, not held as a list.
_LONG_INTS: Final = 1 << 16


def as_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


class WalkResult:
    """What one message gave: its value (when built), data type code, summary line, and
    type all the way down (``rules.containers.nested_type``'s, for the sequence rule)."""

    __slots__ = ("code", "ntype", "summary", "value")

    def __init__(self, value: Any = None, code: int | None = None, summary: str = "",
                 ntype: NestedType = None) -> None:
        self.value = value
        self.code = code
        self.summary = summary
        self.ntype = ntype


class Tensor:
    """One TensorProto scanned and checked; its data is not touched until ``tensor_value``."""

    __slots__ = ("code", "counts", "decoded", "dims", "external", "fields", "location", "more",
                 "path", "problems", "raw_len", "where")

    def __init__(self, path: str, fields: Fields, where: Occurrences) -> None:
        self.path = path
        self.where = where
        self.fields = fields
        self.dims: Sequence[int] = []
        self.code = 0
        self.location = 0
        self.counts: dict[str, int] = {}
        self.raw_len: int | None = None
        self.external: Sequence[tuple[str, str]] = []
        self.problems: list[Problem] = []
        #: Problems past those worded in ``problems`` (which a capped list drops), counted.
        self.more = 0
        self.decoded: dict[str, npt.NDArray[Any]] = {}


#: Entries of this many bytes or fewer are remembered by their bytes, up to _ENTRY_KEPT.
_ENTRY_BYTES: Final = 256
_ENTRY_KEPT: Final = 4096


class TensorWalk:
    """The tensor half of ``engine.Engine``: what it reads of the engine's state."""

    src: Source
    base_dir: Path | None
    values: bool
    summaries: bool
    problems: ProblemSink
    #: ``to_numpy``'s values: float_data and double_data copied, not views of the bytes,
    #: and arrays left as made (decoded ones writable), not made read-only.
    fixed_copies: bool = False
    entries: dict[bytes, tuple[str, str]]
    #: External files opened once for the walk (read_external), and their facts (rules).
    files: OpenFiles
    file_facts: dict[tuple[str, str], Any]

    def _wire(self, path: str, message: str, f: Fields) -> list[Problem]:
        found = wire_field_problems(path, message, f.unknown) if f.unknown else []
        if f.unknown_more:
            self.problems.drop(f.unknown_more)
        return found

    def tensor(self, where: Occurrences, path: str, depth: int = 0) -> WalkResult:
        if where.ranges is not None and len(where.ranges) == 1:
            plain = self.plain(*where.ranges[0], path)
            if plain is not None:
                return plain
        sink = self.problems
        t = self.scan_tensor(where, path, sink.cap - len(sink.items), depth)
        sink.add(t.problems)
        if t.more:
            sink.drop(t.more)
        out = WalkResult(None, t.code, ntype=("tensor", t.code))
        if self.summaries:
            out.summary = "tensor " + tensor_detail(t.code, t.dims, t.location == EXTERNAL)
        if self.values and not self.problems:
            with shape_errors(path):
                value = self.tensor_value(t)
                out.value = value if self.fixed_copies else read_only(value)
        return out

    def plain(self, start: int, end: int, path: str | None = None) -> WalkResult | None:
        """The common tensor, fast: only dims, data_type, name and raw_data (or float_data
        or double_data packed once: the same bytes; or a STRING tensor's string_data, up to
        _PLAIN_STRINGS of them), and valid; or with external_data and data_location
        EXTERNAL instead (``_external``).

        None for anything else (another field, a bad size, more dims than numpy holds or
        more external_data entries than there are keys: never valid, so it stops there
        and takes no Python step per field of a tensor of 100,000 dims or entries):
        ``scan_tensor`` then reads it, by the compiled walk, and says what is wrong. Validity is
        ``tensor_storage_problems`` of the facts, cached per (data_type, dims,
        raw_data length), so a million tensors of one shape cost one call.
        """
        src = self.src
        memory = src.in_memory()
        found = _plain_fields(memory, start, end, *PLAIN_LIMITS) \
            if _plain_fields is not None and memory is not None \
            else plain_fields_reference(src, start, end)
        if found is None:
            return None
        return self.plain_of(found, path)

    def plain_of(self, found: PlainFields, path: str | None = None) -> WalkResult | None:
        """``plain`` of a tensor's fields as ``plain_fields_reference`` gives them (also
        those of ``Engine``'s compiled twin of a small container's walk)."""
        src = self.src
        code, dims, raw, raw_len, location, entries, strings, typed = found
        if entries or location > 0:
            if location != EXTERNAL or not entries or raw >= 0 or typed is not None \
                    or strings:
                return None
            return self._external(code, dims, entries, path)
        storage: int | tuple[str, int] = raw_len
        typed_counts: dict[str, int] | None = None  # (None: raw_data's length is storage)
        if code == STRING:  # string_data, as many as there are (none: no elements)
            if raw >= 0 or typed is not None:
                return None
            storage = ("string_data", len(strings))
            typed_counts = {"string_data": len(strings)}
        elif strings:
            return None
        elif typed is not None:  # float_data or double_data, packed once
            field, width = _PACKED_FIXED[typed[0]]
            if raw >= 0 or raw_len % width:
                return None
            raw, storage = typed[1], (field, raw_len // width)
            typed_counts = {field: raw_len // width}
        elif raw < 0:  # no data field at all: valid only for no elements
            storage, typed_counts, raw, typed = ("", 0), {}, 0, (0, 0)  # (typed: to copy)
        shape = tuple(dims)
        facts = (code, shape, storage)
        count = _PLAIN_COUNT.get(facts)
        if count is None:
            ok = not (tensor_storage_problems("", code, dims, {}, raw_len) if typed_counts is None
                      else tensor_storage_problems("", code, dims, typed_counts, None))
            count = (element_count(dims) or 0) if ok else -1
            if len(_PLAIN_COUNT) < 4096:
                _PLAIN_COUNT[facts] = count
        if count < 0:
            return None
        out = WalkResult(None, code, "", ("tensor", code))  # (positional: 0.1 us less)
        if self.summaries:
            out.summary = _summary(code, shape, False)
        if self.values:
            try:
                if code == STRING:  # (string_values: as tensor_value decodes them)
                    value = string_values(src, Occurrences(strings) if strings else None,
                                          len(strings)).reshape(shape)
                else:
                    dt = DATA_TYPES[code]
                    data = src.in_memory() if _LITTLE and not dt.sub_byte else None
                    value = np.ndarray(shape, dt.dtype, data, raw) if data is not None \
                        else _from_raw(src, dt, raw, count, shape)  # (_from_raw's, inline)
                if self.fixed_copies:
                    if typed is not None:
                        value = value.copy()  # (as tensor_value copies float_data)
                elif value.flags.writeable:  # (read_only, inline; a view of bytes is already)
                    value.flags.writeable = False
                out.value = value
            except ValueError:  # a shape numpy cannot hold: scan_tensor reports it
                return None
        return out

    def _external(self, code: int, dims: list[int], at: list[tuple[int, int]],
                  path: str | None) -> WalkResult | None:
        """``plain`` of a tensor whose data is external: valid when its storage is (cached
        per data_type and dims), each external_data entry is a key and a value as protobuf
        writes them (remembered by their bytes), and ``external_data_problems`` finds
        nothing (the file's facts looked up once per walk). Reading, the data is read as
        ``tensor`` reads it, so only with the tensor's path (None: ``tensor`` reads it)."""
        facts = (code, tuple(dims), -1)
        ok = _PLAIN_OK.get(facts)
        if ok is None:
            ok = not tensor_storage_problems("", code, dims, {}, None, data_location=EXTERNAL,
                                             external_entries=1)
            if len(_PLAIN_OK) < 4096:
                _PLAIN_OK[facts] = ok
        if not ok or (self.values and path is None):
            return None
        src = self.src
        known = self.entries
        entries = []
        for a, b in at:
            if b - a > _ENTRY_BYTES:
                return None
            data = src.read(a, b)
            got = known.get(data)
            if got is None:
                got = plain_entry(data)
                if got is None:
                    return None  # (scan_tensor reads it)
                if len(known) < _ENTRY_KEPT:
                    known[data] = got
            entries.append(got)
        dt = DATA_TYPES[code]
        count = element_count(dims) or 0
        if not external_data_clean(entries, self.base_dir, nbytes=raw_nbytes(dt, count),
                                   facts=self.file_facts):
            return None
        out = WalkResult(None, code, ntype=("tensor", code))
        if self.summaries:
            out.summary = _summary(code, facts[1], True)
        if self.values and path is not None and not self.problems:
            with shape_errors(path):
                value = external_value(path, dict(entries), self.base_dir, dt, count, dims,
                                       self.files)
                out.value = value if self.fixed_copies else read_only(value)
        return out

    def scan_tensor(self, where: Occurrences, path: str, room: int | None = None,
                    depth: int = 0) -> Tensor:
        """Scan and check one TensorProto (at ``depth``) as ``validate`` checks it; of the
        problems of its external_data, only those that fit in ``room`` (None: all) are
        worded (``more`` counts the rest: a capped list would drop them)."""
        src = self.src
        f = scan(src, where, TENSOR, self.problems.cap, depth)
        t = Tensor(path, f, where)
        t.location = as_int32(f.bad_enum if f.bad_enum is not None else
                            f.scalars.get("data_location", 0))
        problems = self._wire(path, "TensorProto", f)
        seg = f.where("segment", where, TENSOR)
        if seg is not None:
            problems += self._wire(join_path(path, "segment"), "Segment",
                                   scan(src, seg, SEGMENT, self.problems.cap, depth + 1))
        w = f.where("external_data", where, TENSOR)
        if w is not None:
            t.external = self.entry_list(w, path, "external_data", problems, depth + 1)
        w = f.where("metadata_props", where, TENSOR)
        if w is not None and not self.entries_clean(w, depth + 1):
            self.entry_list(w, path, "metadata_props", problems, depth + 1)
        t.dims = self.ints(f, "dims", where, TENSOR)
        t.code = as_int32(f.scalars.get("data_type", 0))
        raw = f.last.get("raw_data")
        t.raw_len = raw[1] - raw[0] if raw is not None else None
        dt = DATA_TYPES.get(t.code)
        for name in TYPED_FIELDS:
            t.counts[name] = self.count(t, name, dt)
        storage = tensor_storage_problems(
            path, t.code, t.dims, t.counts, t.raw_len, data_location=t.location,
            external_entries=len(t.external), has_segment=seg is not None)
        problems += storage
        if t.external and t.location == EXTERNAL:
            n = element_count(t.dims)
            nbytes = raw_nbytes(dt, n) if dt is not None and n is not None and \
                not dt.is_string else None
            found, t.more = external_data_report(
                path, t.external, self.base_dir, nbytes=nbytes, facts=self.file_facts,
                room=None if room is None else max(room - len(problems), 0))
            problems += found
        elif not storage and dt is not None and dt.field in t.decoded:
            problems += typed_entry_problems(path, t.code, dt.field, t.decoded[dt.field])
        t.problems = problems
        return t

    def ints(self, f: Fields, name: str, where: Occurrences, schema: Schema) -> Sequence[int]:
        """A repeated int64 field (dims): a list, or when long a WireInts decoded chunk by
        chunk each time it is walked, so bogus readings with millions of dims stay small."""
        kept = f.pieces.get(name)
        if not kept:
            return []
        src = self.src
        if name not in f.over:
            if isinstance(kept, Compact):  # a bogus reading may hold 1M pieces
                size = kept.varint_bytes()
            else:
                size = 0
                for wt, a, b in kept:
                    size += b - a if wt == LEN else len(a)
            if size <= _LONG_INTS:
                values = varints(src, kept).view(np.int64)
                listed = cast(list[int], values.tolist())
                if len(listed) <= _CHUNK_DIMS:
                    return listed
                low = int(values.min())
                return _Dims(listed, low, None if low < 0 else 0 if low == 0 else
                             positive_product(listed))

        def pieces() -> Iterable[Piece]:
            return f.pieces_of(name, where, schema, src)

        return WireInts.measured(src, pieces)

    def entries_clean(self, w: Occurrences, depth: int) -> bool:
        """Whether none of the StringStringEntryProto at ``w`` (at ``depth``) has anything
        to say: walked at once, by the compiled walk, as one message merged from them
        (``scan``), they have no field but keys and values. (metadata_props has no rule of
        its own, so its texts are never needed: 1 MB of them cost 30 ms as entries, 1 ms
        so.) False where some other field is there or the bytes break: ``entry_list`` then
        says which entry, one by one."""
        try:
            found = scan(self.src, w, ENTRY, 1, depth)
        except WireError:
            return False
        return not found.unknown and not found.unknown_more

    def entry_list(self, w: Occurrences, path: str, name: str, problems: list[Problem],
                   depth: int = 0) -> Sequence[tuple[str, str]]:
        """The key and value of each StringStringEntryProto of field ``name`` (``entry``);
        many written as protobuf writes them checked at once and decoded where asked
        (``key_values.plain_entries``), many others at once by their distinct bytes
        (``key_values.distinct_entries``)."""
        src = self.src
        ranges = w.ranges
        if ranges is not None:
            lazy = plain_entries(src, ranges)
            if lazy is not None:
                return lazy
        got = distinct_entries(src, ranges) if ranges is not None else None
        if got is None or ranges is None:
            return [self.entry(r, join_path(path, f"{name}[{i}]"), problems, depth)
                    for i, r in enumerate(occurrences(src, w))]
        distinct, which = got
        known = self.entries
        said: list[tuple[str, str] | None] = []
        for data in distinct:
            one = known.get(data)
            if one is None:
                one = plain_entry(data)
                if one is not None and len(known) < _ENTRY_KEPT:
                    known[data] = one
            said.append(one)
        out = list(itemgetter(*which)(said)) if len(which) > 1 else [said[which[0]]]
        if None in said:  # scanned (and said wrong) in document order
            for i, one in enumerate(out):
                if one is None:
                    out[i] = self.entry(ranges[i], join_path(path, f"{name}[{i}]"), problems,
                                        depth)
        return cast(list[tuple[str, str]], out)

    def entry(self, at: tuple[int, int], path: str, problems: list[Problem],
              depth: int = 0) -> tuple[str, str]:
        """A StringStringEntryProto's key and value, its problems added to ``problems``;
        one scan per distinct small entry without problems (a tensor merged from 1,000
        occurrences has 3,000 external_data entries, most alike)."""
        data = self.src.read(*at) if at[1] - at[0] <= _ENTRY_BYTES else None
        got = self.entries.get(data) if data is not None else None
        if got is None and data is not None:
            got = plain_entry(data)  # (a key and a value: nothing to say, no scan)
            if got is not None and len(self.entries) < _ENTRY_KEPT:
                self.entries[data] = got
        if got is not None:
            return got
        e = scan(self.src, Occurrences([at]), ENTRY, self.problems.cap, depth)
        found = self._wire(path, "StringStringEntryProto", e)
        got = self.text(e.last.get("key")), self.text(e.last.get("value"))
        if data is not None and not found and len(self.entries) < _ENTRY_KEPT:
            self.entries[data] = got
        problems += found
        return got

    def text(self, where: tuple[int, int] | None) -> str:
        if where is None:
            return ""
        return self.src.read(*where).decode("utf-8", "surrogateescape")

    def count(self, t: Tensor, name: str, dt: DataType | None) -> int:
        """Entries of a typed field; decoded (kept in ``t.decoded``) when the value or the
        range rule needs them, else only counted."""
        f = t.fields
        if name == "string_data":
            return f.counts.get(name, 0)
        if name not in f.pieces:
            return 0
        pieces = f.pieces_of(name, t.where, TENSOR, self.src)
        mine = dt is not None and dt.field == name
        if name in ("float_data", "double_data"):
            n, values = fixed(self.src, pieces, np.dtype("<f4" if name == "float_data"
                                                         else "<f8"), self.values and mine)
            if values is not None:
                t.decoded[name] = values
            return n
        if not (mine and (self.values or typed_entry_range(dt) is not None)):  # type: ignore[arg-type]
            return varint_count(self.src, pieces)
        if name == "int32_data":  # the low 32 bits, decoded as such (no uint64 temporaries)
            decoded = varints(self.src, pieces, np.uint32).view(np.int32)
        else:
            decoded = varints(self.src, pieces)
        if name == "int64_data":
            decoded = decoded.view(np.int64)
        t.decoded[name] = decoded
        return int(decoded.size)

    def tensor_value(self, t: Tensor) -> Any:
        """The ndarray of a tensor that passed every check."""
        dt = DATA_TYPES[t.code]
        count = element_count(t.dims) or 0
        dims = list(t.dims)
        if t.location == EXTERNAL:
            return external_value(t.path, dict(t.external), self.base_dir, dt, count, dims,
                                  self.files)
        if dt.is_string:
            return string_values(self.src, t.fields.where("string_data", t.where, TENSOR),
                                 t.fields.counts.get("string_data")).reshape(dims)
        raw = t.fields.last.get("raw_data")
        if raw is not None:
            return _from_raw(self.src, dt, raw[0], count, dims)
        entries = t.decoded.get(dt.field)
        if entries is None:
            entries = np.zeros(0, np.int64)
        if dt.field in ("float_data", "double_data"):
            fixed = entries.view(dt.dtype.newbyteorder("<")).reshape(dims)
            return fixed.copy() if self.fixed_copies else fixed
        if dt.field == "int64_data":
            return entries.reshape(dims)
        if dt.field == "uint64_data":
            return entries.astype(dt.dtype).reshape(dims)
        if dt.bit_view is None:
            return entries.astype(dt.dtype).reshape(dims)
        if dt.per_entry > 1:
            return unpack_bits(entries.astype(_U8), dt.bits, count).view(dt.dtype).reshape(dims)
        return entries.astype(dt.bit_view).view(dt.dtype).reshape(dims)

    def index_data(self, t: Tensor) -> npt.NDArray[np.int64]:
        raw = t.fields.last.get("raw_data")
        if raw is not None:
            a, b = raw
            return self.src.array("<i8", a, (b - a) // 8)
        if "int64_data" not in t.decoded:
            decoded = varints(self.src, t.fields.pieces_of("int64_data", t.where, TENSOR,
                                                           self.src)).view(np.int64)
            t.decoded["int64_data"] = decoded
        return t.decoded["int64_data"]


def _summary(code: int, dims: tuple[int, ...], external: bool) -> str:
    """A plain tensor's summary, remembered by data_type, dims and where its data is."""
    key = (code, dims, external)
    detail = _DETAILS.get(key)
    if detail is None:
        detail = tensor_detail(code, dims, external)
        if len(_DETAILS) < 4096:
            _DETAILS[key] = detail
    return "tensor " + detail


@contextlib.contextmanager
def shape_errors(path: str) -> Iterator[None]:
    """numpy's refusal of a shape (rank over its limit, dims over intp) as a ValidationError."""
    try:
        yield
    except ValidationError:
        raise
    except ValueError as exc:
        raise ValidationError([Problem(path, f"dims cannot be an ndarray's shape: {exc}")]) \
            from exc


def read_only(value: Any) -> Any:
    """Every array ``read`` returns is read-only, views of the mapping and decoded copies alike."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    return value


def _from_raw(src: Source, dt: DataType, start: int, count: int, dims: Sequence[int]) -> Any:
    """A tensor's raw_data as an array: a view of memory or the mapping (making a view
    touches no page, so needs no size check), else read."""
    if not dt.sub_byte and _LITTLE:
        data = src.in_memory()
        if data is not None:  # one call, where a slice, view and reshape took three
            return np.ndarray(dims, dt.dtype, data, start)
        whole = src.whole()
        if whole is not None:
            return whole[start:start + count * dt.dtype.itemsize].view(dt.dtype).reshape(dims)
    buf = src.buffer()
    if buf is None:  # nothing mapped: read the payload's bytes
        data = src.read(start, start + raw_nbytes(dt, count))
        return from_le_bytes(data, dt, count, 0).reshape(dims)
    return from_le_bytes(buf, dt, count, start).reshape(dims)


def external_value(path: str, entries: dict[str, str], base_dir: Path | None, dt: DataType,
                   count: int, dims: list[int], files: OpenFiles | None = None) -> Any:
    """A tensor's external data (already checked by ``external_data_problems``), read once
    through one descriptor that is checked to lie inside ``base_dir`` (``wire/external.py``)."""
    if base_dir is None:  # (to_numpy without base_dir: convert.to_numpy says so)
        raise OnnxDataError(f"{path or 'tensor'}: its data is in an external file; pass "
                            "base_dir, the folder that holds it")
    data = read_external(base_dir, entries["location"], int(entries.get("offset", "0")),
                         raw_nbytes(dt, count),
                         where=f"{path}.external_data" if path else "external_data",
                         files=files)
    return from_le_bytes(data, dt, count, 0).reshape(dims)


class _Dims(list[int]):
    """Dims past ``_CHUNK_DIMS`` (a bogus reading's 35,000), listed, with what the rules ask
    of them four times a reading worked out once (``rules.tensor.element_count`` and its
    smallest dim take them so)."""

    def __init__(self, values: list[int], smallest: int, count: int | None) -> None:
        super().__init__(values)
        self._smallest = smallest
        self._count = count

    def smallest(self) -> int:
        return self._smallest

    def element_count(self) -> int | None:
        return self._count


#: Dims longer than this are a _Dims.
_CHUNK_DIMS: Final = 256


PlainFields: TypeAlias = tuple[int, list[int], int, int, int, list[tuple[int, int]],
                              list[tuple[int, int]], "tuple[int, int] | None"]


def plain_fields_reference(src: Source, start: int, end: int) -> PlainFields | None:
    """The fields ``TensorWalk.plain`` reads of the TensorProto at ``[start, end)``:
    ``(data_type, dims, raw_data's start, its length, data_location (-1: none),
    external_data's ranges, string_data's ranges, (tag, start) of a packed float_data or
    double_data)``; None at a field, size or count it does not take. The Python reference
    of ``_walk.plain_fields`` (which reads a message held in memory), and the one of a
    mapped file, read a window at a time."""
    buf, base = src.window(start, end if end < start + 64 else start + 64)
    hi = base + len(buf)
    pos = start
    dims: list[int] = []
    code = 0
    raw = -1
    raw_len = 0
    location = -1
    entries: list[tuple[int, int]] = []
    strings: list[tuple[int, int]] = []
    typed: tuple[int, int] | None = None  # (its tag, where its bytes start)
    keys = _PLAIN_KEYS
    lim = (end if end < hi else hi) - base  # (the window's end, or the message's)
    while pos < end:
        if hi < end and pos + 16 > hi:  # (a message in memory: never)
            buf, base = src.window(pos, min(end, pos + 64))
            hi = base + len(buf)
            lim = (end if end < hi else hi) - base
        i = pos - base
        key = buf[i]
        if key not in keys:  # before reading a value: it may not be a varint
            return None
        i += 1
        if i >= lim:
            return None
        b = buf[i]
        if b < 0x80:
            value = b
            i += 1
        else:
            try:  # (a LEN field's length: refused written overlong, as upb does)
                value, i = (read_length if key & 7 == LEN else read_varint)(buf, i, lim,
                                                                            base)
            except WireError:
                return None
        pos = i + base
        if key == 0x08:
            if value >> 63 or len(dims) >= MAX_NDIM:
                return None  # a negative dim, or too many (scan_tensor says so)
            dims.append(value)
        elif key == 0x10:
            code = value
        elif key == 0x70:
            if value > EXTERNAL:  # out of the closed enum: kept aside (scan_tensor's)
                return None
            location = value
        elif key == 0x0A:  # packed dims
            stop = pos + value
            if value > _PACKED_DIMS or stop > end:
                return None
            if stop > hi:
                buf, base = src.window(pos, stop)
                hi = base + len(buf)
            i, run_end = pos - base, stop - base
            try:
                while i < run_end:
                    value, i = read_varint(buf, i, run_end, base)
                    if value >> 63 or len(dims) >= MAX_NDIM:
                        return None
                    dims.append(value)
            except WireError:
                return None
            pos = stop
            lim = (end if end < hi else hi) - base
        else:
            if value > end - pos:
                return None
            if key == 0x4A:
                raw, raw_len = pos, value
            elif key == 0x6A:
                if len(entries) >= len(EXTERNAL_KEYS):
                    return None  # a key again, or an unknown one
                entries.append((pos, pos + value))
            elif key == 0x32:
                strings.append((pos, pos + value))
                if len(strings) > _PLAIN_STRINGS:
                    return None
            elif key in _PACKED_FIXED:  # (a second one: scan_tensor joins them)
                if typed is not None:
                    return None
                typed = (key, pos)
                raw_len = value
            pos += value
    return code, dims, raw, raw_len, location, entries, strings, typed
