"""A value checked against its declared type over the wire walk, a layout group at a time.

``declared_problems(src, kind, declared)`` says what ``types.type_problems_reference`` says
of the value's field tree (``wire.field_tree``: one Python object per field, 120 times the
file), without the tree: each message is one ``wire.walk.scan`` (the engine's, compiled),
and a sequence's elements are grouped by layout (``wire.compiled.element_groups``). A
layout keeps byte for byte all the check reads (the messages, elem_type, key_type,
data_type, dims), so the elements of one layout have the same problems but for the index
in their path: the first of each group is checked, and its problems are added again for
every other member, re-pathed, in document order, up to the cap, then only counted. Memory
is the scans of one path from the root and each open sequence's group numbers.

It answers for a tree the reference walks whole: where the field tree stops early (a field
its message lacks, a wire type it does not take, nesting past ``max_depth``), the engine's
walk of the same bytes says so (``Engine.strays``), and the callers ask the reference
instead (the explorer); or they take it only for a value the engine reads without a
problem (the test loop's load). None where nesting passes ``max_depth``.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.messages import KIND_OF_ELEM_TYPE, ElemType, KindName
from onnxdata.core.paths import join_path
from onnxdata.errors import Problem
from onnxdata.model.types import (
    DeclaredType,
    elem_type_problems,
    key_type_problems,
    kind_problems,
    map_values_type,
    sparse_problems,
    tensor_problems,
)
from onnxdata.rules.common import MAX_PROBLEMS, ProblemSink
from onnxdata.wire.compiled import element_groups
from onnxdata.wire.field_tree import PACKED_DECODE_LIMIT
from onnxdata.wire.field_values import varints
from onnxdata.wire.fields import Occurrences, occurrence_batches, occurrences
from onnxdata.wire.format import LEN
from onnxdata.wire.source import Source
from onnxdata.wire.walk import MAP, OPTIONAL, SEQUENCE, SPARSE, TENSOR, Fields, scan

__all__ = ["MIN_GROUPED", "declared_problems"]

#: A sequence's elements are grouped by layout from this many on (fewer: checked one by
#: one, which costs less than the grouping's call).
MIN_GROUPED = 4  # (not Final: the differential test sets it to 1)


class _TooDeep(Exception):
    """Nesting past max_depth: the field tree stops there, so the reference answers."""


def declared_problems(src: Source, kind: KindName, declared: DeclaredType, *,
                      max_problems: int = MAX_PROBLEMS, max_depth: int = MAX_DEPTH
                      ) -> list[Problem] | None:
    """How the value of ``kind`` in ``src`` disagrees with ``declared``, as
    ``type_problems_reference`` says of its field tree: at most ``max_problems``, then one
    "…and N more problems". For bytes the field tree takes whole (a valid value's); None
    where nesting passes ``max_depth``."""
    sink = ProblemSink(max_problems)
    try:
        _Walk(src, max_depth).check(kind, (0, src.size), declared, "", 0, sink)
    except _TooDeep:
        return None
    return sink.result()


def _int32(f: Fields, name: str) -> int:
    """An int32 field's value as protobuf reads it (the last given; 0 when absent)."""
    value = f.scalars.get(name, 0) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


class _Walk:
    def __init__(self, src: Source, max_depth: int) -> None:
        self.src = src
        self.max_depth = max_depth

    def last(self, f: Fields, name: str, where: Occurrences, schema: Any
             ) -> tuple[int, int] | None:
        """The last occurrence of message field ``name`` (the one the field tree's
        ``child`` gives), or None."""
        w = f.where(name, where, schema)
        if w is None:
            return None
        if w.ranges is not None:
            return w.ranges[len(w.ranges) - 1] if len(w.ranges) else None
        found = deque(occurrences(self.src, w), maxlen=1)
        return found[0] if found else None

    def dims(self, f: Fields, where: Occurrences, schema: Any, declared: DeclaredType
             ) -> list[int] | None:
        """A tensor's dims as the field tree gives them (None when no shape is declared,
        or a packed run is longer than the tree decodes)."""
        if declared.shape is None:
            return None
        pieces = f.pieces_of("dims", where, schema, self.src)
        for wt, a, b in pieces:
            if wt == LEN and b - a > PACKED_DECODE_LIMIT:
                return None
        return [int(d) for d in varints(self.src, pieces).view(np.int64).tolist()]

    def check(self, kind: KindName, at: tuple[int, int], declared: DeclaredType, path: str,
              depth: int, sink: ProblemSink) -> None:
        """Add the problems of the ``kind`` message at ``at`` (``path``, ``depth``)."""
        if kind != declared.kind:
            sink.add(kind_problems(kind, declared, path))
            return
        src = self.src
        where = Occurrences([at])
        if kind == "tensor":
            f = scan(src, where, TENSOR, depth=depth)
            sink.add(tensor_problems(_int32(f, "data_type"),
                                     self.dims(f, where, TENSOR, declared), declared, path))
            return
        if kind == "sparse_tensor":
            f = scan(src, where, SPARSE, depth=depth)
            values = self.last(f, "values", where, SPARSE)
            code = 0
            if values is not None:
                code = _int32(scan(src, Occurrences([values]), TENSOR, depth=depth + 1),
                              "data_type")
            sink.add(sparse_problems(code, self.dims(f, where, SPARSE, declared), declared,
                                     path))
            return
        assert declared.element is not None
        if kind == "map":
            f = scan(src, where, MAP, depth=depth)
            sink.add(key_type_problems(_int32(f, "key_type"), declared, path))
            values = self.last(f, "values", where, MAP)
            if values is not None:
                self.inner("sequence", values, map_values_type(declared),
                           join_path(path, "values"), depth, sink)
            return
        f = scan(src, where, SEQUENCE if kind == "sequence" else OPTIONAL, depth=depth)
        code = _int32(f, "elem_type")
        if kind == "optional" and code == ElemType.UNDEFINED:
            return  # absent: fits any declared element type
        out = elem_type_problems(code, declared, path)
        if out:
            sink.add(out)
            return
        name = KIND_OF_ELEM_TYPE[code]
        if kind == "optional":
            value = self.last(f, name, where, OPTIONAL)
            if value is not None:
                self.inner(name, value, declared.element, join_path(path, f"{name}_value"),
                           depth, sink)
            return
        w = f.where(name, where, SEQUENCE)
        if w is not None:
            self.elements(name, w, declared.element, path, f"{name}_values", depth, sink)

    def inner(self, kind: KindName, at: tuple[int, int], declared: DeclaredType, path: str,
              depth: int, sink: ProblemSink) -> None:
        """``check`` of a child message of a message at ``depth``."""
        if depth + 1 > self.max_depth:
            raise _TooDeep
        self.check(kind, at, declared, path, depth + 1, sink)

    def elements(self, kind: KindName, w: Occurrences, declared: DeclaredType, path: str,
                 field_name: str, depth: int, sink: ProblemSink) -> None:
        """A sequence's elements (field ``field_name`` at ``w``), a batch of their ranges at
        a time, grouped by layout where there are enough of them."""
        offset = 0
        for starts, ends in occurrence_batches(self.src, w):
            n = int(starts.size)
            groups = element_groups(self.src, starts, ends, kind, depth + 1) \
                if n >= MIN_GROUPED else None
            if groups is None:
                for i, (a, b) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True),
                                           offset):
                    self.inner(kind, (a, b), declared,
                               join_path(path, f"{field_name}[{i}]"), depth, sink)
            else:
                self.grouped(kind, (starts, ends), groups, declared, path, field_name,
                             offset, depth, sink)
            offset += n

    def grouped(self, kind: KindName, bounds: tuple[Any, Any], groups: tuple[Any, list[int]],
                declared: DeclaredType, path: str, field_name: str, offset: int, depth: int,
                sink: ProblemSink) -> None:
        """Each group's first element checked with its problems kept aside, then each
        element's problems added in document order: its first's, re-pathed."""
        starts, ends = bounds
        ids, firsts = groups
        found: list[tuple[str, list[Problem], int]] = []
        for i in firsts:
            own = join_path(path, f"{field_name}[{i + offset}]")
            aside = ProblemSink(sink.cap)
            self.inner(kind, (int(starts[i]), int(ends[i])), declared, own, depth, aside)
            found.append((own, aside.items, aside.dropped))
        counts = np.array([len(items) + dropped for _, items, dropped in found], np.int64)
        if not counts.any():
            return
        total = int(np.bincount(ids, minlength=counts.size) @ counts)
        done = 0
        for i in np.flatnonzero(counts[ids]).tolist():
            if len(sink.items) >= sink.cap:
                break
            first, items, dropped = found[int(ids[i])]
            if i != firsts[int(ids[i])]:
                cut = len(first)
                own = join_path(path, f"{field_name}[{i + offset}]")
                items = [Problem(own + p.path[cut:], p.message) for p in items]
            sink.add(items)
            sink.drop(dropped)
            done += len(items) + dropped
        sink.drop(total - done)
