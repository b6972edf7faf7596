"""The wire engine: one streaming walk over a buffer or file that checks every rule of
``onnxdata.rules.validation`` as it goes and, when asked, builds the numpy value.

Every consumer of bytes uses it: ``read`` (``values=True``: zero-copy arrays),
validating a file or buffer for one kind or all five (``values=False``: nothing
materialized), the explorer's readings and their summaries. So the verdicts
agree everywhere, and with ``validate(load(b, kind))``: the same problems, in
the same order (validate's document order: a message's own problems, then its
children's, children by field number), capped at ``max_problems`` with one
"…and N more problems" at the end.

Memory is bounded by nesting depth, not by the file: a sequence's elements
are visited one at a time (``fields.occurrences``; their byte ranges are kept in
16 bytes each, up to a fixed cap, else found again), nothing is built per
element when validating, and a message's own problems that depend on its
children (a sequence's shared data type) are inserted before the children's
problems once known (``rules.common.ProblemSink``). Bytes that are not the kind's
wire format raise ``WireError`` (a ``DecodeError``), as protobuf's parser
refuses them: a message nested deeper than 100 too.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from onnxdata.convert.common import SparseParts
from onnxdata.convert.sparse import densify, densify_cost
from onnxdata.core.budget import get_densify_limit, spend
from onnxdata.core.dtypes import DATA_TYPES, KEY_TYPES, STRING
from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.messages import (
    ELEM_FIELDS,
    EXTERNAL,
    KIND_OF_ELEM_TYPE,
    MESSAGE_OF_KIND,
    OPTIONAL_FIELDS,
    ElemType,
)
from onnxdata.core.paths import join_path
from onnxdata.engine.by_layout import MIN_GROUPED, GroupWalk, TypeRuns, add_run, min_grouped
from onnxdata.engine.one_line import (
    SequenceFacts,
    map_summary,
    optional_summary,
    sequence_summary,
    sparse_detail,
)
from onnxdata.engine.tensor import (
    PLAIN_LIMITS,
    Tensor,
    TensorWalk,
    WalkResult,
    as_int32,
    read_only,
    shape_errors,
)
from onnxdata.errors import Problem
from onnxdata.rules.common import ProblemSink
from onnxdata.rules.containers import (
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
from onnxdata.rules.tensor import (
    numpy_shape_problems,
    tensor_storage_problems,
)
from onnxdata.rules.validation import too_deep
from onnxdata.wire.external import OpenFiles
from onnxdata.wire.field_values import string_values, varint_count, varints
from onnxdata.wire.fields import Occurrences, occurrence_batches, occurrences, whole
from onnxdata.wire.format import WireError
from onnxdata.wire.loops import COMPILED, walk_loop
from onnxdata.wire.source import Source
from onnxdata.wire.walk import MAP, OPTIONAL, SEQUENCE, SPARSE, TENSOR, Fields, scan

__all__ = ["Engine"]

#: Sequence elements up to this many bytes have their verdict cached by their bytes.
_SMALL: Final = 64


#: A sequence's element counts by field, all 0 (``_plain_tensors`` sets tensor_values).
_NO_ELEMENTS: Final = {field: 0 for field in ELEM_FIELDS.values()}
#: ``_NO_ELEMENTS`` but n tensor_values, by n (read, never changed: ``map`` reads them).
_TENSOR_COUNTS: dict[int, dict[str, int]] = {}
#: The inner type of a sequence of tensors, by their data type (None: no tensor).
_TENSORS_INNER: dict[int | None, NestedType] = {}
_TENSOR: Final = int(ElemType.TENSOR)  # (an int compares faster than the IntEnum)
#: The compiled twin of ``run``'s walk of a small optional or sequence of plain tensors
#: held in memory (``_walk.plain_container``: their fields, or None), or None.
_plain_container: Final = walk_loop.plain_container if walk_loop is not None else None


#: An invalid element remembered by its bytes: its outcome, path, problems (None when
#: they cannot be added again under another path) and how many it added.
_Remembered = tuple[WalkResult, str, list[Problem] | None, int]


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
        with shape_errors(value.path):
            return read_only(densify(value.parts, value.path, spent=True, checked=True))
    if isinstance(value, list):  # (arrays, most of a long sequence's values: as they are)
        return [v if type(v) is np.ndarray else densify_deferred(v) for v in value]
    if isinstance(value, dict):
        return {k: v if type(v) is np.ndarray else densify_deferred(v) for k, v in value.items()}
    return value


class Engine(TensorWalk, GroupWalk):
    """One walk of ``src`` as one kind. ``run`` returns the root's WalkResult; the problems
    found are in ``problems`` (a capped ProblemSink); bad wire raises WireError."""

    def __init__(self, src: Source, *, base_dir: Path | None = None,
                 max_depth: int = MAX_DEPTH, values: bool = False,
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
        self.small: dict[str, dict[bytes, WalkResult]] = {}
        #: Outcomes of small invalid elements by their bytes, with the problems they added
        #: (``remember``), so 500,000 empty tensors are one walk of one tensor.
        self.small_bad: dict[str, dict[bytes, _Remembered]] = {}
        #: How many sparse values wait in the value as ``Deferred`` (see densify_deferred).
        self.deferred = 0
        #: The key and value of small StringStringEntryProto with no problem, by bytes.
        self.entries: dict[bytes, tuple[str, str]] = {}
        self.files = OpenFiles()  # closed when run returns
        self.file_facts: dict[tuple[str, str], Any] = {}
        #: Singular message fields given more than once, which protobuf merges into one
        #: (a sequence of two maps read as an optional): ``(path, occurrences)``, the first
        #: few; ``merged_count`` counts them all. Read off ``scan``'s counts, so it costs
        #: nothing per element.
        self.merged: list[tuple[str, int]] = []
        self.merged_count = 0
        #: Whether the walk met a field its message's schema lacks, one of another wire
        #: type, or a message nested past ``max_depth``: where ``wire.field_tree`` stops
        #: (problems of the value; ``model.type_walk`` answers only where it does not).
        self.strays = False

    def _wire(self, path: str, message: str, f: Fields) -> list[Problem]:
        if f.unknown or f.unknown_more:
            self.strays = True
        return super()._wire(path, message, f)

    def note_merged(self, path: str, f: Fields, name: str, field_name: str) -> None:
        """Record singular message field ``name`` of ``f`` if it occurred more than once."""
        n = f.counts.get(name, 0)
        if n > 1:
            self.merged_count += 1
            if len(self.merged) < 8:
                self.merged.append((join_path(path, field_name), n))

    def remember(self, got: WalkResult, before: tuple[int, int], path: str) -> _Remembered:
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

    def replay(self, kept: _Remembered, path: str) -> WalkResult | None:
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

    def run(self, kind: str) -> WalkResult:
        if (kind == "optional" or kind == "sequence") and _plain_container is not None \
                and not self.summaries and self.max_depth >= 2:
            got = self._plain_root(kind == "optional")
            if got is not None:
                return got
        try:
            if kind == "tensor" and self.max_depth >= 0:  # (message's way to plain, direct)
                got = self.plain(0, self.src.size, "")
                if got is not None:
                    return got
            return self.message(kind, whole(0, self.src.size), "", 0)
        finally:
            self.files.close()

    # -- dispatch

    def message(self, kind: str, where: Occurrences, path: str, depth: int) -> WalkResult:
        try:
            return self._message(kind, where, path, depth)
        except WireError as exc:
            if not hasattr(exc, "path"):
                exc.path = path  # type: ignore[attr-defined]
            raise

    def _message(self, kind: str, where: Occurrences, path: str, depth: int) -> WalkResult:
        if depth > self.max_depth:
            if depth > MAX_DEPTH:
                raise WireError(f"messages nested deeper than {MAX_DEPTH}", where.first)
            self.problems.add([too_deep(path, self.max_depth)])
            self.strays = True
            code = None
            if kind == "tensor":  # a sequence still compares its data type
                code = as_int32(scan(self.src, where, TENSOR, depth=depth).scalars.get(
                    "data_type", 0))
            return WalkResult(None, code)
        if kind == "tensor":
            return self.tensor(where, path, depth)
        if kind == "sequence":
            return self.sequence(where, path, depth)
        if kind == "optional":
            return self.optional(where, path, depth)
        if kind == "map":
            return self.map(where, path, depth)
        return self.sparse(where, path, depth)

    # -- containers

    def sequence(self, where: Occurrences, path: str, depth: int) -> WalkResult:
        src = self.src
        f = scan(src, where, SEQUENCE, self.problems.cap, depth)
        plain = self._plain_tensors(f, where, depth)
        if plain is not None:
            return plain
        at = self.problems.mark()
        elem_type = _int32(f, "elem_type")
        counts = {ELEM_FIELDS[code]: f.counts.get(kind, 0)
                  for code, kind in KIND_OF_ELEM_TYPE.items()}
        own = self._wire(path, "SequenceProto", f)
        own += sequence_problems(path, elem_type, counts)
        facts = SequenceFacts(elem_type or 0) if self.summaries else None
        out: list[Any] = []
        codes: dict[str, list[int]] = {"tensor": [], "sparse_tensor": []}
        types: dict[str, TypeRuns] = {"sequence": [], "map": [], "optional": []}
        mine_types: TypeRuns = []
        deep_ok = depth + 1 <= self.max_depth
        last: str | None = None

        def batched(kind: str, w: Occurrences, field_name: str, code: int
                    ) -> Iterator[tuple[int, tuple[int, int]]]:
            """The elements of a field too long for ``scan`` to keep, grouped by layout a
            batch at a time (``fields.occurrence_batches``); those of a batch that does not
            group are given back, to be walked one by one."""
            nonlocal last
            offset = 0
            for starts, ends in occurrence_batches(src, w):
                n = int(starts.size)
                if n >= min_grouped(kind):
                    done, last = self.grouped(kind, (starts, ends), path, field_name, depth,
                                              (code, elem_type), facts, last, codes, types,
                                              mine_types, out if self.values else None,
                                              offset=offset)
                    if done:
                        offset += n
                        continue
                yield from enumerate(zip(starts.tolist(), ends.tolist(), strict=True), offset)
                offset += n

        for code, kind in KIND_OF_ELEM_TYPE.items():
            w = f.where(kind, where, SEQUENCE)
            if w is None:
                continue
            field_name = ELEM_FIELDS[code]
            mine = facts is not None and code == facts.elem_type
            # bound once per field, not compared with the IntEnum per element
            tensors = code == ElemType.TENSOR
            detailed = tensors or code == ElemType.SPARSE_TENSOR
            small = self.small.setdefault(kind, {}) if kind != "tensor" and deep_ok else None
            if deep_ok and w.ranges is not None and len(w.ranges) >= min_grouped(kind):
                # a layout at a time (compiled): engine.by_layout, layout_values
                done, last = self.grouped(kind, w.ranges, path, field_name, depth,
                                          (code, elem_type), facts, last, codes, types,
                                          mine_types, out if self.values else None)
                if done:
                    continue
            bad = self.small_bad.setdefault(kind, {})
            elements: Iterable[tuple[int, tuple[int, int]]] = enumerate(occurrences(src, w))
            if deep_ok and w.ranges is None and COMPILED:  # more than scan keeps: batches
                elements = batched(kind, w, field_name, code)
            for i, (a, b) in elements:
                key = src.read(a, b) if deep_ok and b - a <= _SMALL else None
                got = None
                if key is not None:
                    got = small.get(key) if small is not None else None
                    if got is None and key in bad:
                        got = self.replay(bad[key], join_path(path, f"{field_name}[{i}]"))
                if got is None and kind == "tensor" and deep_ok:
                    got = self.plain(a, b)
                if got is None:
                    before = (len(self.problems.items), self.problems.dropped)
                    at_path = join_path(path, f"{field_name}[{i}]")
                    got = self.message(kind, Occurrences([(a, b)]), at_path, depth + 1)
                    if key is not None and got.value is None:
                        if before == (len(self.problems.items), self.problems.dropped):
                            if small is not None and len(small) < 4096:
                                small[key] = got  # valid, nothing built: the same bytes, the same
                        elif len(bad) < 4096:
                            bad[key] = self.remember(got, before, at_path)
                if kind in codes and got.code is not None:
                    codes[kind].append(got.code)
                if kind in types:
                    add_run(types[kind], got.ntype, 1)
                if code == elem_type and (not tensors or i == 0):
                    add_run(mine_types, got.ntype, 1)
                if self.values:
                    out.append(got.value)
                if mine and got.summary == last:
                    assert facts is not None
                    facts.count += 1
                elif mine:
                    assert facts is not None
                    last = got.summary
                    if detailed:
                        detail = got.summary.split(" ", 1 if tensors else 2)[-1]
                        facts.add(detail, got.code if tensors else None, None)
                    else:
                        facts.add(None, None, got.summary)
        own += same_type_problems(path, "sparse_tensor_values", codes["sparse_tensor"])
        for kind_word, found in types.items():
            if len(found) > 1:
                own += element_type_problems(path, f"{kind_word}_values",
                                             [t for t, _ in found], [n for _, n in found])
        # last, as validate's walk checks the tensors' shared data type as it reads them
        own += same_type_problems(path, "tensor_values", codes["tensor"])
        self.problems.insert(at, own)
        self.last_seq = (elem_type, counts)
        inner = sequence_inner_type(elem_type, [t for t, _ in mine_types]) \
            if elem_type in ELEM_FIELDS else None
        result = WalkResult(out if self.values else None, ntype=("sequence", inner))
        if facts is not None:
            result.summary = sequence_summary(facts, sum(counts.values()))
        return result

    def _plain_tensors(self, f: Fields, where: Occurrences, depth: int) -> WalkResult | None:
        """The common sequence, its value built with less bookkeeping than ``sequence``'s:
        elem_type TENSOR, no field but name and a few tensor_values, each a valid tensor of
        one data type that ``plain`` reads (and the first's type the sequence's). Nothing
        to report then: ``sequence`` would find the same value and no problem. None for
        any other (``sequence`` walks it)."""
        counts = f.counts
        n = counts.get("tensor", 0)
        if f.scalars.get("elem_type") != ElemType.TENSOR or f.unknown or f.unknown_more \
                or len(counts) != ("name" in counts) + (n > 0) or self.summaries \
                or depth + 1 > self.max_depth:
            return None
        if not n:
            return self._same_type((), 0)
        w = f.where("tensor", where, SEQUENCE)
        ranges = w.ranges if w is not None else None
        if ranges is None or len(ranges) >= min_grouped("tensor"):
            return None
        return self._same_type((self.plain(a, b) for a, b in ranges), n)

    def _same_type(self, tensors: Iterable[WalkResult | None], n: int) -> WalkResult | None:
        """The sequence of the ``n`` plain ``tensors`` (None: one ``plain`` did not take)
        when they share one data type; None else."""
        out: list[Any] = []
        code = None
        for got in tensors:
            if got is None or (code is not None and got.code != code):
                return None
            code = got.code
            out.append(got.value)
        counts = _TENSOR_COUNTS.get(n)
        if counts is None:
            counts = {**_NO_ELEMENTS, "tensor_values": n}
            if n < MIN_GROUPED:
                _TENSOR_COUNTS[n] = counts
        self.last_seq = (ElemType.TENSOR, counts)
        inner = _TENSORS_INNER.get(code)
        if inner is None:
            inner = _TENSORS_INNER[code] = sequence_inner_type(
                ElemType.TENSOR, [("tensor", code)] if code is not None else [])
        return WalkResult(out if self.values else None, None, "", ("sequence", inner))

    def _plain_root(self, optional: bool) -> WalkResult | None:
        """``run`` of a root optional or sequence that ``_plain_tensors`` and ``plain`` take
        whole, their fields found by one compiled call (``_walk.plain_container``, on bytes
        in memory), their values made by ``plain_of``: the same value and type as the walk
        of ``message``, with no problem. None for anything else (``message`` walks it)."""
        src = self.src
        memory = src.in_memory()
        if memory is None:
            return None
        assert _plain_container is not None
        found = _plain_container(memory, src.size, optional, MIN_GROUPED - 1, *PLAIN_LIMITS)
        if found is None:
            return None
        if not optional:
            return self._same_type(map(self.plain_of, found), len(found))
        elem_type, inner = found
        if inner is None:  # (elem_type 1 to 5, and no value)
            return WalkResult(None, None, "", ("optional", (KIND_OF_ELEM_TYPE[elem_type],)))
        got = self.plain_of(inner) if elem_type == _TENSOR \
            else self._same_type(map(self.plain_of, inner), len(inner))
        return WalkResult(got.value, None, "", ("optional", got.ntype)) if got is not None \
            else None

    def optional(self, where: Occurrences, path: str, depth: int) -> WalkResult:
        f = scan(self.src, where, OPTIONAL, self.problems.cap, depth)
        elem_type = _int32(f, "elem_type")
        counts = f.counts
        present = [(code, kind) for code, kind in KIND_OF_ELEM_TYPE.items() if kind in counts]
        own = self._wire(path, "OptionalProto", f)
        if elem_type is None or not (elem_type == 0 or elem_type in KIND_OF_ELEM_TYPE) \
                or len(present) > 1 or (present and present[0][0] != elem_type):
            # (else the common optional: an element type, and at most its own value set)
            own += optional_problems(path, elem_type,
                                     [OPTIONAL_FIELDS[code] for code, _ in present])
        if own:
            self.problems.add(own)
        code_of = elem_type or 0
        result = WalkResult(ntype=("optional", (KIND_OF_ELEM_TYPE[code_of],)
                                if code_of in OPTIONAL_FIELDS else None))
        child_summary: str | None = None
        for code, kind in present:
            w = f.where(kind, where, OPTIONAL)
            assert w is not None  # (present: counted)
            field_name = OPTIONAL_FIELDS[code]
            if counts[kind] > 1:
                self.note_merged(path, f, kind, field_name)
            got = self.message(kind, w, join_path(path, field_name), depth + 1)
            result.value = got.value
            if code == elem_type:
                child_summary = got.summary
                result.ntype = ("optional", got.ntype)
        if self.summaries:
            result.summary = optional_summary(elem_type or 0, child_summary)
        return result

    def map(self, where: Occurrences, path: str, depth: int) -> WalkResult:
        src = self.src
        f = scan(src, where, MAP, self.problems.cap, depth)
        at = self.problems.mark()
        key_type = _int32(f, "key_type")
        int_keys = key_type in KEY_TYPES and key_type != STRING
        keys: Any
        if int_keys or self.values:
            keys = varints(src, f.pieces_of("keys", where, MAP, src)).view(np.int64)
        else:
            keys = range(varint_count(src, f.pieces_of("keys", where, MAP, src)))
        string_keys: Any
        sw = f.where("string_keys", where, MAP)
        if sw is not None and (key_type == STRING or self.values):
            string_keys = string_values(src, sw, f.counts.get("string_keys")).tolist()
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
            got = self.message("sequence", w, join_path(path, "values"), depth + 1)
            values, values_summary, values_type = got.value, got.summary, got.ntype
            values_elem_type, counts = self.last_seq
            field_name = ELEM_FIELDS.get(values_elem_type or 0)
            n_values = counts[field_name] if field_name else sum(counts.values())
        own = self._wire(path, "MapProto", f)
        if isinstance(keys, np.ndarray) and not int_keys:
            keys = range(keys.size)
        own += map_problems(path, key_type, keys, string_keys,
                            values_elem_type=values_elem_type, values_present=w is not None,
                            n_values=n_values)
        self.problems.insert(at, own)
        result = WalkResult(ntype=("map", key_type if key_type is not None else 0,
                                values_type[1] if values_type else None))
        if self.summaries:
            nkeys = len(string_keys) or len(keys)
            result.summary = map_summary(key_type or 0, nkeys, values_summary)
        if self.values and not self.problems:
            result.value = _map_value(key_type or 0, keys, string_keys, values or [])
        return result

    def sparse(self, where: Occurrences, path: str, depth: int) -> WalkResult:
        src = self.src
        f = scan(src, where, SPARSE, self.problems.cap, depth)
        dims = self.ints(f, "dims", where, SPARSE)
        sub: list[Tensor | None] = []
        for name in ("values", "indices"):
            w = f.where(name, where, SPARSE)
            self.note_merged(path, f, name, name)
            if w is not None and depth + 1 > self.max_depth:
                self.message("tensor", w, join_path(path, name), depth + 1)  # raises or is too deep
                w = None
            sub.append(self.scan_tensor(w, join_path(path, name), depth=depth + 1)
                       if w is not None else None)
        vt, it = sub
        own = self._wire(path, "SparseTensorProto", f)
        shape = sparse_tensor_problems(path, dims, vt.dims if vt else None,
                                       it.dims if it else None, it.code if it else None)
        shape += numpy_shape_problems(path, dims, 1)  # as validate: what sparse_parts can make
        own += shape
        index_data: npt.NDArray[np.int64] | None = None
        if not shape and it is not None:
            if it.location == EXTERNAL:
                own.append(Problem(join_path(path, "indices"), "indices in external data are not "
                                                          "supported; store them inline"))
            elif not tensor_storage_problems("", it.code, it.dims, it.counts, it.raw_len):
                index_data = self.index_data(it)
                own += sparse_index_problems(path, dims, len(it.dims) == 2, index_data)
        self.problems.add(own)
        for t in (vt, it):
            if t is not None:
                self.problems.add(t.problems)
        code = vt.code if vt is not None else None
        result = WalkResult(None, code, ntype=("sparse_tensor", code))
        if self.summaries:
            result.summary = "sparse tensor " + sparse_detail(
                vt.code if vt is not None else 0, dims, vt.dims if vt is not None else None)
        if self.values and not self.problems and vt is not None:
            with shape_errors(path):
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

def _int32(f: Fields, name: str) -> int | None:
    """An int32 scalar (elem_type, key_type) as protobuf reads it; None when absent."""
    raw = f.scalars.get(name)
    return as_int32(raw) if raw is not None else None


def _map_value(key_type: int, keys: npt.NDArray[np.int64], string_keys: list[bytes],
               values: list[Any]) -> dict[Any, Any]:
    if key_type == STRING:
        return dict(zip(string_keys, values, strict=False))
    dt = DATA_TYPES[key_type]
    return dict(zip(keys.astype(dt.dtype).tolist(), values, strict=False))


def message_name(kind: str) -> str:
    return MESSAGE_OF_KIND[kind]
