"""The wire engine: one streaming walk over a buffer or file that checks every rule of
``onnxdata.validation`` as it goes and, when asked, builds the numpy value.

Every consumer of bytes uses it: ``read`` (``values=True``: zero-copy arrays),
validating a file or buffer for one kind or all five (``values=False``: nothing
materialized), the explorer's readings and their summaries. So the verdicts
agree everywhere, and with ``validate(load(b, kind))``: the same problems, in
the same order (validate's document order: a message's own problems, then its
children's, children by field number), capped at ``max_problems`` with one
"…and N more problems" at the end.

Memory is bounded by nesting depth, not by the file: a sequence's elements
are visited one at a time (``walk.occurrences``; their byte ranges are kept in
16 bytes each, up to a fixed cap, else found again), nothing is built per
element when validating, and a message's own problems that depend on its
children (a sequence's shared data type) are inserted before the children's
problems once known (``rules_common.ProblemSink``). Bytes that are not the kind's
wire format raise ``WireError`` (a ``DecodeError``), as protobuf's parser
refuses them: a message nested deeper than 100 too.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final, cast

import numpy as np
import numpy.typing as npt

from onnxdata.budget import spend
from onnxdata.convert import (
    SparseParts,
    densify,
    from_le_bytes,
    get_densify_limit,
    unpack_bits,
)
from onnxdata.convert_sparse import densify_cost
from onnxdata.dtypes import DATA_TYPES, KEY_TYPES, STRING, DataType, raw_nbytes, typed_entry_range
from onnxdata.errors import Problem, ValidationError
from onnxdata.payloads import WireInts, fixed, string_values, varint_count, varints
from onnxdata.plain_runs import MIN_RUN, plain_run_arrays, same_layout
from onnxdata.rules_common import (
    DEFAULT_MAX_DEPTH,
    ELEM_FIELDS,
    OPTIONAL_FIELDS,
    TYPED_FIELDS,
    ProblemSink,
)
from onnxdata.rules_containers import (
    NestedType,
    element_type_problems,
    map_problems,
    optional_problems,
    same_type_problems,
    sequence_inner_type,
    sequence_problems,
    sparse_index_problems,
    sparse_tensor_problems,
)
from onnxdata.rules_tensor import (
    element_count,
    external_data_problems,
    numpy_shape_problems,
    tensor_storage_problems,
    typed_entry_problems,
)
from onnxdata.rules_wire import wire_field_problems
from onnxdata.source import Source
from onnxdata.summaries import (
    SequenceFacts,
    map_summary,
    optional_summary,
    sequence_summary,
    sparse_detail,
    tensor_detail,
)
from onnxdata.validation import too_deep
from onnxdata.walk import (
    ENTRY,
    MAP,
    OPTIONAL,
    SEGMENT,
    SEQUENCE,
    SPARSE,
    TENSOR,
    Fields,
    Piece,
    RangeStore,
    Schema,
    Where,
    _varint,
    occurrences,
    scan,
    whole,
)
from onnxdata.wire import LEN, WireError

__all__ = ["PROTOBUF_DEPTH", "Engine", "Outcome"]

#: The nesting protobuf's parser allows (root plus 100 levels); deeper bytes are refused.
PROTOBUF_DEPTH: Final = 100
_LITTLE: Final = sys.byteorder == "little"
_U8: Final = np.dtype(np.uint8)
#: The one-byte tags the plain-tensor path reads: dims, data_type (VARINT), name, raw_data.
_PLAIN_KEYS: Final = frozenset({0x08, 0x10, 0x42, 0x4A})
_ELEM_KINDS: Final = {1: "tensor", 2: "sparse_tensor", 3: "sequence", 4: "map", 5: "optional"}
_EXTERNAL: Final = 1
_MESSAGE: Final = {"tensor": "TensorProto", "sparse_tensor": "SparseTensorProto",
                   "sequence": "SequenceProto", "optional": "OptionalProto", "map": "MapProto"}
#: Verdicts of tensor_storage_problems on plain tensors, by (data_type, dims, raw length).
_PLAIN_OK: dict[tuple[int, tuple[int, ...], int], bool] = {}
_DETAILS: dict[tuple[int, tuple[int, ...]], str] = {}
#: Above this many bytes a repeated int64 field is walked in chunks, not held as a list.
_LONG_INTS: Final = 1 << 16
#: Sequence elements up to this many bytes have their verdict cached by their bytes.
_SMALL: Final = 64


def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _join(path: str, name: str) -> str:
    if not path:
        return name
    return f"{path}{name}" if name.startswith("[") else f"{path}.{name}"


class Outcome:
    """What one message gave: its value (when built), data type code, summary line, and
    type all the way down (``rules_containers.nested_type``'s, for the sequence rule)."""

    __slots__ = ("code", "ntype", "summary", "value")

    def __init__(self, value: Any = None, code: int | None = None, summary: str = "",
                 ntype: NestedType = None) -> None:
        self.value = value
        self.code = code
        self.summary = summary
        self.ntype = ntype


class _Tensor:
    """One TensorProto scanned and checked; its data is not touched until ``tensor_value``."""

    __slots__ = ("code", "counts", "decoded", "dims", "external", "fields", "location", "path",
                 "problems", "raw_len", "where")

    def __init__(self, path: str, fields: Fields, where: Where) -> None:
        self.path = path
        self.where = where
        self.fields = fields
        self.dims: Sequence[int] = []
        self.code = 0
        self.location = 0
        self.counts: dict[str, int] = {}
        self.raw_len: int | None = None
        self.external: list[tuple[str, str]] = []
        self.problems: list[Problem] = []
        self.decoded: dict[str, npt.NDArray[Any]] = {}


#: An invalid element remembered by its bytes: its outcome, path, problems (None when
#: they cannot be added again under another path) and how many it added.
_Remembered = tuple[Outcome, str, list[Problem] | None, int]


class Deferred:
    """A sparse tensor's value, its bytes taken from the call's budget, not yet densified."""

    __slots__ = ("parts", "path")

    def __init__(self, parts: SparseParts, path: str) -> None:
        self.parts = parts
        self.path = path


def densify_deferred(value: Any) -> Any:
    """``value`` with every ``Deferred`` in it densified (read-only), once the whole walk
    has budgeted them all."""
    if isinstance(value, Deferred):
        with _shape_errors(value.path):
            return _read_only(densify(value.parts, value.path, spent=True, checked=True))
    if isinstance(value, list):
        return [densify_deferred(v) for v in value]
    if isinstance(value, dict):
        return {k: densify_deferred(v) for k, v in value.items()}
    return value


class Engine:
    """One walk of ``src`` as one kind. ``run`` returns the root's Outcome; the problems
    found are in ``problems`` (a capped ProblemSink); bad wire raises WireError."""

    def __init__(self, src: Source, *, base_dir: Path | None = None,
                 max_depth: int = DEFAULT_MAX_DEPTH, values: bool = False,
                 summaries: bool = False, max_problems: int = 1000) -> None:
        self.src = src
        self.base_dir = base_dir
        self.max_depth = max_depth
        self.values = values
        self.summaries = summaries
        self.problems = ProblemSink(max_problems)
        self.last_seq: tuple[int | None, dict[str, int]] = (None, {})
        #: Outcomes of small valid elements by their bytes (a million empty optionals are
        #: one walk of one optional), for elements whose value is None.
        self.small: dict[str, dict[bytes, Outcome]] = {}
        #: Outcomes of small invalid elements by their bytes, with the problems they added
        #: (``remember``), so 500,000 empty tensors are one walk of one tensor.
        self.small_bad: dict[str, dict[bytes, _Remembered]] = {}
        #: How many sparse values wait in the value as ``Deferred`` (see densify_deferred).
        self.deferred = 0
        #: Where the raw_data payload of the tensor ``plain`` last looked at lies.
        self.plain_payload = (-1, -1)
        #: Singular message fields given more than once, which protobuf merges into one
        #: (a sequence of two maps read as an optional): ``(path, occurrences)``, the first
        #: few; ``merged_count`` counts them all. Read off ``scan``'s counts, so it costs
        #: nothing per element.
        self.merged: list[tuple[str, int]] = []
        self.merged_count = 0

    def note_merged(self, path: str, f: Fields, name: str, field_name: str) -> None:
        """Record singular message field ``name`` of ``f`` if it occurred more than once."""
        n = f.counts.get(name, 0)
        if n > 1:
            self.merged_count += 1
            if len(self.merged) < 8:
                self.merged.append((_join(path, field_name), n))

    def remember(self, got: Outcome, before: tuple[int, int], path: str) -> _Remembered:
        """What the element at ``path`` added to the problems since ``before``: their count,
        and (when none was dropped, and each lies inside the element and names no path)
        the problems themselves, to add again for an element of the same bytes."""
        sink = self.problems
        items = sink.items[before[0]:]
        count = len(items) + sink.dropped - before[1]
        found: list[Problem] | None = items
        if sink.dropped != before[1] or any(
                not (p.path == path or p.path.startswith((path + ".", path + "[")))
                or path in p.message for p in items):
            found = None
        return got, path, found, count

    def replay(self, kept: _Remembered, path: str) -> Outcome | None:
        """The outcome of an element whose bytes equal a remembered one's, its problems
        added again under ``path`` (None: walk it, the problems cannot be told apart)."""
        got, old, found, count = kept
        sink = self.problems
        if len(sink.items) >= sink.cap:  # full: only the count of those dropped changes
            sink.drop(count)
            return got
        if found is None:
            return None
        cut = len(old)
        sink.add([Problem(path + p.path[cut:], p.message) for p in found])
        return got

    def run(self, kind: str) -> Outcome:
        return self.message(kind, whole(0, self.src.size), "", 0)

    # -- dispatch

    def message(self, kind: str, where: Where, path: str, depth: int) -> Outcome:
        try:
            return self._message(kind, where, path, depth)
        except WireError as exc:
            if not hasattr(exc, "path"):
                exc.path = path  # type: ignore[attr-defined]
            raise

    def _message(self, kind: str, where: Where, path: str, depth: int) -> Outcome:
        if depth > self.max_depth:
            if depth > PROTOBUF_DEPTH:
                raise WireError(f"messages nested deeper than {PROTOBUF_DEPTH}", where.first)
            self.problems.add([too_deep(path, self.max_depth)])
            code = None
            if kind == "tensor":  # a sequence still compares its data type
                code = _int32(scan(self.src, where, TENSOR).scalars.get("data_type", 0))
            return Outcome(None, code)
        if kind == "tensor":
            return self.tensor(where, path)
        if kind == "sequence":
            return self.sequence(where, path, depth)
        if kind == "optional":
            return self.optional(where, path, depth)
        if kind == "map":
            return self.map(where, path, depth)
        return self.sparse(where, path, depth)

    def _wire(self, path: str, message: str, f: Fields) -> list[Problem]:
        found = wire_field_problems(path, message, f.unknown) if f.unknown else []
        if f.unknown_more:
            self.problems.drop(f.unknown_more)
        return found

    # -- tensors

    def tensor(self, where: Where, path: str) -> Outcome:
        if where.ranges is not None and len(where.ranges) == 1:
            plain = self.plain(*where.ranges[0])
            if plain is not None:
                return plain
        t = self.scan_tensor(where, path)
        self.problems.add(t.problems)
        out = Outcome(None, t.code, ntype=("tensor", t.code))
        if self.summaries:
            out.summary = "tensor " + tensor_detail(t.code, t.dims, t.location == _EXTERNAL)
        if self.values and not self.problems:
            with _shape_errors(path):
                out.value = _read_only(self.tensor_value(t))
        return out

    def plain(self, start: int, end: int) -> Outcome | None:
        """The common tensor, fast: only dims, data_type, name and raw_data, and valid.

        None for anything else (another field, a bad size...): ``scan_tensor``
        then reads it and says what is wrong. Validity is
        ``tensor_storage_problems`` of the facts, cached per (data_type, dims,
        raw_data length), so a million tensors of one shape cost one call.
        """
        src = self.src
        buf, base = src.window(start, end if end < start + 64 else start + 64)
        hi = base + len(buf)
        pos = start
        dims: list[int] = []
        code = 0
        raw = -1
        raw_len = 0
        while pos < end:
            if pos + 16 > hi and hi < end:
                buf, base = src.window(pos, min(end, pos + 64))
                hi = base + len(buf)
            i = pos - base
            key = buf[i]
            if key not in _PLAIN_KEYS:  # before reading a value: it may not be a varint
                return None
            i += 1
            lim = (end if end < hi else hi) - base
            if i >= lim:
                return None
            b = buf[i]
            if b < 0x80:
                value = b
                i += 1
            else:
                try:
                    value, i = _varint(buf, i, lim, base)
                except WireError:
                    return None
            pos = i + base
            if key == 0x08:
                dims.append(value)
            elif key == 0x10:
                code = value
            else:
                if value > end - pos:
                    return None
                if key == 0x4A:
                    raw, raw_len = pos, value
                pos += value
        if raw < 0:
            return None
        self.plain_payload = (raw, raw + raw_len)
        facts = (code, tuple(dims), raw_len)
        ok = _PLAIN_OK.get(facts)
        if ok is None:
            ok = not tensor_storage_problems("", code, dims, {}, raw_len)
            if len(_PLAIN_OK) < 4096:
                _PLAIN_OK[facts] = ok
        if not ok:
            return None
        out = Outcome(None, code, ntype=("tensor", code))
        if self.summaries:
            key2 = (code, facts[1])
            detail = _DETAILS.get(key2)
            if detail is None:
                detail = tensor_detail(code, dims, False)
                if len(_DETAILS) < 4096:
                    _DETAILS[key2] = detail
            out.summary = "tensor " + detail
        if self.values:
            dt = DATA_TYPES[code]
            count = element_count(dims) or 0
            try:
                out.value = _read_only(_from_raw(src, dt, raw, count, dims))
            except ValueError:  # a shape numpy cannot hold: scan_tensor reports it
                return None
        return out

    def plain_run(self, ranges: RangeStore | list[tuple[int, int]]) -> tuple[int, list[Any]] | None:
        """(data type, arrays) of a sequence's tensors that are all the first plain one
        with other payload bytes (``plain_runs``); None: take them one by one."""
        first = self.plain(*ranges[0])
        if first is None or not isinstance(first.value, np.ndarray) or first.code is None:
            return None
        arrays = plain_run_arrays(self.src, ranges, first.value)
        return None if arrays is None else (first.code, arrays)

    def scan_tensor(self, where: Where, path: str) -> _Tensor:
        """Scan and check one TensorProto as ``validate`` checks it."""
        src = self.src
        f = scan(src, where, TENSOR, self.problems.cap)
        t = _Tensor(path, f, where)
        t.location = _int32(f.bad_enum if f.bad_enum is not None else
                            f.scalars.get("data_location", 0))
        problems = self._wire(path, "TensorProto", f)
        seg = f.where("segment", where, TENSOR)
        if seg is not None:
            problems += self._wire(_join(path, "segment"), "Segment",
                                   scan(src, seg, SEGMENT, self.problems.cap))
        for name in ("external_data", "metadata_props"):
            w = f.where(name, where, TENSOR)
            if w is None:
                continue
            for i, r in enumerate(occurrences(src, w)):
                e = scan(src, Where([r]), ENTRY, self.problems.cap)
                problems += self._wire(_join(path, f"{name}[{i}]"), "StringStringEntryProto", e)
                if name == "external_data":
                    t.external.append((self.text(e.last.get("key")),
                                       self.text(e.last.get("value"))))
        t.dims = self.ints(f, "dims", where, TENSOR)
        t.code = _int32(f.scalars.get("data_type", 0))
        raw = f.last.get("raw_data")
        t.raw_len = raw[1] - raw[0] if raw is not None else None
        dt = DATA_TYPES.get(t.code)
        for name in TYPED_FIELDS:
            t.counts[name] = self.count(t, name, dt)
        storage = tensor_storage_problems(
            path, t.code, t.dims, t.counts, t.raw_len, data_location=t.location,
            external_entries=len(t.external), has_segment=seg is not None)
        problems += storage
        if t.external and t.location == _EXTERNAL:
            n = element_count(t.dims)
            nbytes = raw_nbytes(dt, n) if dt is not None and n is not None and \
                not dt.is_string else None
            problems += external_data_problems(path, t.external, self.base_dir, nbytes=nbytes)
        elif not storage and dt is not None and dt.field in t.decoded:
            problems += typed_entry_problems(path, t.code, dt.field, t.decoded[dt.field])
        t.problems = problems
        return t

    def ints(self, f: Fields, name: str, where: Where, schema: Schema) -> Sequence[int]:
        """A repeated int64 field (dims): a list, or when long a WireInts decoded chunk by
        chunk each time it is walked, so bogus readings with millions of dims stay small."""
        kept = f.pieces.get(name)
        if not kept:
            return []
        src = self.src
        if name not in f.over:
            size = 0
            for wt, a, b in kept:  # stops once long: a bogus reading may hold 1M pieces
                size += b - a if wt == LEN else len(a)
                if size > _LONG_INTS:
                    break
            else:
                return cast(list[int], varints(src, kept).view(np.int64).tolist())

        def pieces() -> Iterable[Piece]:
            return f.pieces_of(name, where, schema, src)

        return WireInts.measured(src, pieces)

    def text(self, where: tuple[int, int] | None) -> str:
        if where is None:
            return ""
        return self.src.read(*where).decode("utf-8", "surrogateescape")

    def count(self, t: _Tensor, name: str, dt: DataType | None) -> int:
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

    def tensor_value(self, t: _Tensor) -> Any:
        """The ndarray of a tensor that passed every check."""
        dt = DATA_TYPES[t.code]
        count = element_count(t.dims) or 0
        dims = list(t.dims)
        if t.location == _EXTERNAL:
            from onnxdata.fast_read import external_value

            return external_value(t.path, dict(t.external), self.base_dir, dt, count, dims)
        if dt.is_string:
            return string_values(self.src, t.fields.where("string_data", t.where, TENSOR)
                                 ).reshape(dims)
        raw = t.fields.last.get("raw_data")
        if raw is not None:
            return _from_raw(self.src, dt, raw[0], count, dims)
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

    # -- containers

    def sequence(self, where: Where, path: str, depth: int) -> Outcome:
        src = self.src
        f = scan(src, where, SEQUENCE, self.problems.cap)
        at = self.problems.mark()
        raw_type = f.scalars.get("elem_type")
        elem_type = _int32(raw_type) if raw_type is not None else None
        counts = {ELEM_FIELDS[code]: f.counts.get(kind, 0) for code, kind in _ELEM_KINDS.items()}
        own = self._wire(path, "SequenceProto", f)
        own += sequence_problems(path, elem_type, counts)
        facts = SequenceFacts(elem_type or 0) if self.summaries else None
        out: list[Any] = []
        codes: dict[str, list[int]] = {"tensor": [], "sparse_tensor": []}
        types: dict[str, list[NestedType]] = {"sequence": [], "map": [], "optional": []}
        mine_types: list[NestedType] = []
        deep_ok = depth + 1 <= self.max_depth
        last: str | None = None
        for code, kind in _ELEM_KINDS.items():
            w = f.where(kind, where, SEQUENCE)
            if w is None:
                continue
            field_name = ELEM_FIELDS[code]
            mine = facts is not None and code == facts.elem_type
            small = self.small.setdefault(kind, {}) if kind != "tensor" and deep_ok else None
            if kind == "tensor" and deep_ok and self.values and facts is None and \
                    w.ranges is not None and len(w.ranges) >= MIN_RUN:
                bulk = self.plain_run(w.ranges)
                if bulk is not None:  # every tensor valid, of one data type: see plain_runs
                    codes[kind].append(bulk[0])
                    if code == elem_type:
                        mine_types.append(("tensor", bulk[0]))
                    out.extend(bulk[1])
                    continue
            if kind == "tensor" and deep_ok and not self.values and \
                    w.ranges is not None and len(w.ranges) >= MIN_RUN:
                # Validating: a run of tensors that are all the first plain, valid one but
                # for their payload bytes has its verdict and summary (plain_runs).
                a0, b0 = w.ranges[0]
                first = self.plain(a0, b0)
                if first is not None and self.plain_payload[1] == b0 and \
                        same_layout(src, w.ranges, self.plain_payload[0] - a0):
                    n = len(w.ranges)
                    if first.code is not None:
                        codes[kind].append(first.code)
                    if code == elem_type:
                        mine_types.append(first.ntype)
                    if mine:
                        assert facts is not None
                        last = first.summary
                        facts.add(first.summary.split(" ", 1)[-1], first.code, None)
                        facts.count += n - 1
                    continue
            # Elements that are all the same bytes (a million empty optionals) have the
            # first one's outcome when it is valid and built nothing (the ``small`` cache's
            # rule): checked in bulk (plain_runs.same_layout), taken once below.
            alike = small is not None and w.ranges is not None and len(w.ranges) >= MIN_RUN \
                and 0 < w.ranges[0][1] - w.ranges[0][0] <= _SMALL \
                and same_layout(src, w.ranges, w.ranges[0][1] - w.ranges[0][0])
            bad = self.small_bad.setdefault(kind, {})
            for i, (a, b) in enumerate(occurrences(src, w)):
                key = src.read(a, b) if deep_ok and b - a <= _SMALL else None
                got = None
                if key is not None:
                    got = small.get(key) if small is not None else None
                    if got is None and key in bad:
                        got = self.replay(bad[key], _join(path, f"{field_name}[{i}]"))
                if got is None and kind == "tensor" and deep_ok:
                    got = self.plain(a, b)
                if got is None:
                    before = (len(self.problems.items), self.problems.dropped)
                    at_path = _join(path, f"{field_name}[{i}]")
                    got = self.message(kind, Where([(a, b)]), at_path, depth + 1)
                    if key is not None and got.value is None:
                        if before == (len(self.problems.items), self.problems.dropped):
                            if small is not None and len(small) < 4096:
                                small[key] = got  # valid, nothing built: the same bytes, the same
                        elif len(bad) < 4096:
                            bad[key] = self.remember(got, before, at_path)
                if kind in codes and got.code is not None:
                    codes[kind].append(got.code)
                if kind in types:
                    types[kind].append(got.ntype)
                if code == elem_type and (code != 1 or i == 0):
                    mine_types.append(got.ntype)
                if self.values:
                    out.append(got.value)
                if mine and got.summary == last:
                    assert facts is not None
                    facts.count += 1
                elif mine:
                    assert facts is not None
                    last = got.summary
                    if code in (1, 2):
                        detail = got.summary.split(" ", 2 if code == 2 else 1)[-1]
                        facts.add(detail, got.code if code == 1 else None, None)
                    else:
                        facts.add(None, None, got.summary)
                if alike and i == 0 and key is not None and small is not None \
                        and small.get(key) is got:
                    rest = len(w.ranges or ()) - 1  # every other element: this one again
                    if kind in codes and got.code is not None:
                        codes[kind] += [got.code] * rest
                    if kind in types:
                        types[kind] += [got.ntype] * rest
                    if code == elem_type and code != 1:
                        mine_types += [got.ntype] * rest
                    if self.values:
                        out += [got.value] * rest
                    if mine:
                        assert facts is not None
                        facts.count += rest
                    break
        own += same_type_problems(path, "sparse_tensor_values", codes["sparse_tensor"])
        for kind, found in types.items():
            if len(found) > 1:
                own += element_type_problems(path, f"{kind}_values", found)
        # last, as validate's walk checks the tensors' shared data type as it reads them
        own += same_type_problems(path, "tensor_values", codes["tensor"])
        self.problems.insert(at, own)
        self.last_seq = (elem_type, counts)
        inner = sequence_inner_type(elem_type, mine_types) if elem_type in ELEM_FIELDS else None
        result = Outcome(out if self.values else None, ntype=("sequence", inner))
        if facts is not None:
            result.summary = sequence_summary(facts, sum(counts.values()))
        return result

    def optional(self, where: Where, path: str, depth: int) -> Outcome:
        f = scan(self.src, where, OPTIONAL, self.problems.cap)
        raw_type = f.scalars.get("elem_type")
        elem_type = _int32(raw_type) if raw_type is not None else None
        set_fields = [OPTIONAL_FIELDS[code] for code, kind in _ELEM_KINDS.items()
                      if kind in f.counts]
        own = self._wire(path, "OptionalProto", f)
        own += optional_problems(path, elem_type, set_fields)
        self.problems.add(own)
        code_of = elem_type or 0
        result = Outcome(ntype=("optional", (_ELEM_KINDS[code_of],)
                                if code_of in OPTIONAL_FIELDS else None))
        child_summary: str | None = None
        for code, kind in _ELEM_KINDS.items():
            w = f.where(kind, where, OPTIONAL)
            if w is not None:
                self.note_merged(path, f, kind, OPTIONAL_FIELDS[code])
                got = self.message(kind, w, _join(path, OPTIONAL_FIELDS[code]), depth + 1)
                result.value = got.value
                if code == elem_type:
                    child_summary = got.summary
                    result.ntype = ("optional", got.ntype)
        if self.summaries:
            result.summary = optional_summary(elem_type or 0, child_summary)
        return result

    def map(self, where: Where, path: str, depth: int) -> Outcome:
        src = self.src
        f = scan(src, where, MAP, self.problems.cap)
        at = self.problems.mark()
        raw_type = f.scalars.get("key_type")
        key_type = _int32(raw_type) if raw_type is not None else None
        int_keys = key_type in KEY_TYPES and key_type != STRING
        keys: Any
        if int_keys or self.values:
            keys = varints(src, f.pieces_of("keys", where, MAP, src)).view(np.int64)
        else:
            keys = range(varint_count(src, f.pieces_of("keys", where, MAP, src)))
        string_keys: Any
        sw = f.where("string_keys", where, MAP)
        if sw is not None and (key_type == STRING or self.values):
            string_keys = string_values(src, sw).tolist()
        else:
            string_keys = range(f.counts.get("string_keys", 0))
        w = f.where("values", where, MAP)
        self.note_merged(path, f, "values", "values")
        values: Any = None
        values_elem_type: int | None = None
        n_values: int | None = None
        values_summary: str | None = None
        values_type: NestedType = None
        if w is not None:
            got = self.message("sequence", w, _join(path, "values"), depth + 1)
            values, values_summary, values_type = got.value, got.summary, got.ntype
            values_elem_type, counts = self.last_seq
            field_name = ELEM_FIELDS.get(values_elem_type or 0)
            n_values = counts[field_name] if field_name else sum(counts.values())
        own = self._wire(path, "MapProto", f)
        if isinstance(keys, np.ndarray) and not int_keys:
            keys = range(keys.size)
        own += map_problems(path, key_type, keys.tolist() if int_keys else keys, string_keys,
                            values_elem_type=values_elem_type, values_present=w is not None,
                            n_values=n_values)
        self.problems.insert(at, own)
        result = Outcome(ntype=("map", key_type if key_type is not None else 0,
                                values_type[1] if values_type else None))
        if self.summaries:
            nkeys = len(string_keys) or len(keys)
            result.summary = map_summary(key_type or 0, nkeys, values_summary)
        if self.values and not self.problems:
            result.value = _map_value(key_type or 0, keys, string_keys, values or [])
        return result

    def sparse(self, where: Where, path: str, depth: int) -> Outcome:
        src = self.src
        f = scan(src, where, SPARSE, self.problems.cap)
        dims = self.ints(f, "dims", where, SPARSE)
        sub: list[_Tensor | None] = []
        for name in ("values", "indices"):
            w = f.where(name, where, SPARSE)
            self.note_merged(path, f, name, name)
            if w is not None and depth + 1 > self.max_depth:
                self.message("tensor", w, _join(path, name), depth + 1)  # raises or is too deep
                w = None
            sub.append(self.scan_tensor(w, _join(path, name)) if w is not None else None)
        vt, it = sub
        own = self._wire(path, "SparseTensorProto", f)
        shape = sparse_tensor_problems(path, dims, vt.dims if vt else None,
                                       it.dims if it else None, it.code if it else None)
        shape += numpy_shape_problems(path, dims, 1)  # as validate: what sparse_parts can make
        own += shape
        index_data: npt.NDArray[np.int64] | None = None
        if not shape and it is not None:
            if it.location == _EXTERNAL:
                own.append(Problem(_join(path, "indices"), "indices in external data are not "
                                                          "supported; store them inline"))
            elif not tensor_storage_problems("", it.code, it.dims, it.counts, it.raw_len):
                index_data = self.index_data(it)
                own += sparse_index_problems(path, dims, len(it.dims) == 2, index_data)
        self.problems.add(own)
        for t in (vt, it):
            if t is not None:
                self.problems.add(t.problems)
        code = vt.code if vt is not None else None
        result = Outcome(None, code, ntype=("sparse_tensor", code))
        if self.summaries:
            result.summary = "sparse tensor " + sparse_detail(
                vt.code if vt is not None else 0, dims, vt.dims if vt is not None else None)
        if self.values and not self.problems and vt is not None:
            with _shape_errors(path):
                values = self.tensor_value(vt)
                if index_data is None:
                    index_data = np.zeros(0, np.int64)
                indices = index_data.reshape(it.dims) if it is not None else index_data
                # Budgeted now, densified when the walk is done (densify_deferred): the
                # call's budget refuses a file of many sparse tensors before any is made.
                parts = SparseParts(values, indices, tuple(dims))
                nbytes, what = densify_cost(parts)
                spend(nbytes, get_densify_limit(), path, what)
                result.value = Deferred(parts, path)
                self.deferred += 1
        return result

    def index_data(self, t: _Tensor) -> npt.NDArray[np.int64]:
        raw = t.fields.last.get("raw_data")
        if raw is not None:
            a, b = raw
            return self.src.array("<i8", a, (b - a) // 8)
        if "int64_data" not in t.decoded:
            decoded = varints(self.src, t.fields.pieces_of("int64_data", t.where, TENSOR,
                                                           self.src)).view(np.int64)
            t.decoded["int64_data"] = decoded
        return t.decoded["int64_data"]


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


def _from_raw(src: Source, dt: DataType, start: int, count: int, dims: list[int]) -> Any:
    """A tensor's raw_data as an array: a view of memory or the mapping (making a view
    touches no page, so needs no size check), else read."""
    if not dt.sub_byte and _LITTLE:
        whole = src.whole()
        if whole is not None:
            return whole[start:start + count * dt.dtype.itemsize].view(dt.dtype).reshape(dims)
    buf = src.buffer()
    if buf is None:  # nothing mapped: read the payload's bytes
        data = src.read(start, start + raw_nbytes(dt, count))
        return from_le_bytes(data, dt, count, 0).reshape(dims)
    return from_le_bytes(buf, dt, count, start).reshape(dims)


def _map_value(key_type: int, keys: npt.NDArray[np.int64], string_keys: list[bytes],
               values: list[Any]) -> dict[Any, Any]:
    if key_type == STRING:
        return dict(zip(string_keys, values, strict=False))
    dt = DATA_TYPES[key_type]
    return dict(zip(keys.astype(dt.dtype).tolist(), values, strict=False))


def message_name(kind: str) -> str:
    return _MESSAGE[kind]
