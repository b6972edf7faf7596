"""A sequence's elements validated a layout at a time, not one by one (issue 18).

The compiled walk groups a sequence's elements by layout (``_layouts.layout_groups``: the
bytes every rule reads, the contents none reads left out), so elements of one layout
share their verdict, problems (but for the index in their path), type and summary.
``GroupWalk.grouped`` walks the first element of each group, alone, with its problems
kept aside; then it adds each element's problems in document order (re-pathed from its
group's first, until the capped list is full, and counted after that) and its data
type, type and summary in bulk; reading, the others' values are built from the first's
(``layout_values``). Only with the compiled walk: the Python walk, the reference, walks
every element, and the differential test (tests/wire/test_walk_differential.py) checks the
two agree.
"""

from __future__ import annotations

import itertools
import operator
from typing import Any, Final

import numpy as np

from onnxdata.convert.sparse import densify_cost
from onnxdata.core.budget import budget_mark, budget_reset, get_densify_limit, spend
from onnxdata.core.messages import ElemType
from onnxdata.core.paths import join_path
from onnxdata.engine.layout_values import dense_rows, group_trees, layout_values
from onnxdata.engine.one_line import SequenceFacts
from onnxdata.engine.tensor import WalkResult
from onnxdata.errors import Problem, ValidationError
from onnxdata.rules.common import ProblemSink
from onnxdata.rules.containers import NestedType
from onnxdata.wire.compiled import LAYOUT_KINDS, element_groups
from onnxdata.wire.fields import Occurrences
from onnxdata.wire.occurrences import range_bounds
from onnxdata.wire.source import Source

__all__ = ["MIN_GROUPED", "GroupWalk", "TypeRuns", "add_run", "min_grouped"]

#: Fewer tensors than this are walked one by one: grouping them would cost more.
MIN_GROUPED: Final = 32
#: ... and fewer containers than this (a sequence, map or optional holds more messages: a
#: map's 16 values of seq(seq(seq(tensor))) walked one by one were 21 messages each).
MIN_GROUPED_CONTAINERS: Final = 4


def min_grouped(kind: str) -> int:
    """How many elements of ``kind`` a sequence must hold for them to be grouped."""
    return MIN_GROUPED if kind in ("tensor", "sparse_tensor") else MIN_GROUPED_CONTAINERS

#: Elements' types in runs of equal ones, ``[type, count]`` each, in document order: what
#: the type rules read (``containers.element_type_problems`` takes the counts), so a
#: million elements of one layout are one run, not a million list entries.
TypeRuns = list[list[Any]]


def add_run(runs: TypeRuns, t: NestedType, n: int) -> None:
    """Add ``n`` elements of type ``t`` after those of ``runs``."""
    if runs and runs[-1][0] == t:
        runs[-1][1] += n
    else:
        runs.append([t, n])


class GroupWalk:
    """The grouped half of ``engine.Engine``'s sequence walk."""

    src: Source
    problems: ProblemSink
    merged: list[tuple[str, int]]
    merged_count: int
    deferred: int

    def message(self, kind: str, where: Occurrences, path: str, depth: int) -> WalkResult:
        raise NotImplementedError  # the Engine's

    def grouped(self, kind: str, ranges: Any, path: str, field_name: str, depth: int,
                kinds: tuple[int, int | None], facts: SequenceFacts | None,
                last: str | None, codes: dict[str, list[int]],
                types: dict[str, TypeRuns], mine_types: TypeRuns,
                out: list[Any] | None = None, offset: int = 0) -> tuple[bool, str | None]:
        """Validate the ``kind`` elements at ``ranges`` (field ``field_name`` of the
        sequence at ``path``, whose own code and elem_type are ``kinds``) by layout, adding
        to ``codes``, ``types``, ``mine_types`` and ``facts`` what the one-by-one walk
        adds: ``(True, last summary)``, or ``(False, last)`` having added nothing (no
        layouts, or problems that cannot be re-pathed: walk them one by one). With
        ``out``, reading: each element's value is added to it (``layout_values``).
        ``ranges`` may be a batch of a longer field as ``(starts, ends)`` arrays
        (``fields.occurrence_batches``) whose first element is element ``offset``."""
        starts, ends = ranges if isinstance(ranges, tuple) else range_bounds(ranges)
        got_groups = element_groups(self.src, starts, ends, kind, depth + 1)
        if got_groups is None:
            return False, last
        ids, firsts = got_groups
        trees = None
        if out is not None:  # before any element is read: it may not pay
            trees = group_trees(self.src, LAYOUT_KINDS[kind], depth + 1, starts, ends, ids,
                                len(firsts))
            if trees is None:
                return False, last
        merged = list(self.merged), self.merged_count
        mark = budget_mark(), self.deferred
        firsts_walked = []
        for i in firsts:
            try:
                walked = self._first_of_group(kind, (int(starts[i]), int(ends[i])),
                                              join_path(path, f"{field_name}[{i + offset}]"),
                                              depth)
            except ValidationError:  # over the budget, read before elements of other groups
                self._undo(merged, mark)  # (the one-by-one walk names the element over it)
                return False, last
            if walked is None or (self.merged_count, len(self.merged)) != (merged[1],
                                                                           len(merged[0])):
                self._undo(merged, mark)  # walked one by one instead
                return False, last
            firsts_walked.append(walked)
        outcomes = [got for got, _ in firsts_walked]
        if trees is not None and out is not None:
            values = None
            if not any(found for _, found in firsts_walked):
                values = layout_values(trees, ids, [got.value for got in outcomes])
                if values is None:
                    self._undo(merged, mark)
                    return False, last
                if kind == "sparse_tensor":
                    self._densify(values, ids, firsts, path, field_name, offset)
            out.extend(values if values is not None else [None] * int(ids.size))
        self._add_problems(ids, firsts, firsts_walked, path, field_name, offset)
        code, elem_type = kinds
        if kind in codes:
            group_codes = [got.code for got in outcomes]
            codes[kind] += [c for c in _by_element(group_codes, ids) if c is not None] \
                if None in group_codes else _by_element(group_codes, ids)
        group_types = [got.ntype for got in outcomes]
        if kind in types:
            _add_runs(types[kind], group_types, ids)
        if code == elem_type:
            if code != ElemType.TENSOR:
                _add_runs(mine_types, group_types, ids)
            elif offset == 0:  # (the one-by-one walk's ``i == 0``)
                add_run(mine_types, group_types[int(ids[0])], 1)
        if facts is not None and code == facts.elem_type:
            last = _note_summaries(facts, code, outcomes, ids, last)
        return True, last

    def _first_of_group(self, kind: str, at: tuple[int, int], path: str, depth: int
                        ) -> tuple[WalkResult, list[Problem]] | None:
        """The first element of a group walked with its problems kept aside: its outcome
        and problems, or None when they cannot stand for another element's (some were
        dropped, or one names the element's path outside its own)."""
        sink = self.problems
        aside = self.problems = ProblemSink(sink.cap)
        try:
            got = self.message(kind, Occurrences([at]), path, depth + 1)
        finally:
            self.problems = sink
        found = aside.items
        if aside.dropped or any(
                not (p.path == path or p.path.startswith((path + ".", path + "[")))
                or path in p.message for p in found):
            return None
        return got, found

    def _undo(self, merged: tuple[list[tuple[str, int]], int],
              mark: tuple[int | None, int]) -> None:
        """Undo what walking the groups' firsts noted (merged fields, spent budget, sparse
        tensors deferred): the elements are walked one by one instead."""
        self.merged, self.merged_count = merged
        budget_reset(mark[0])
        self.deferred = mark[1]

    def _densify(self, values: list[Any], ids: np.ndarray[Any, Any], firsts: list[int],
                 path: str, field_name: str, offset: int) -> None:
        """The sparse tensors ``values`` (but each group's first, an ``engine.Deferred``
        already budgeted) densified: their bytes taken from the call's budget in document
        order, as the one-by-one walk takes them, then a group at a time."""
        limit = get_densify_limit()
        costs = [densify_cost(values[i].parts) for i in firsts]
        others = (np.bincount(ids, minlength=len(firsts)) - 1).tolist()  # each but its first
        total = sum(n * cost for n, (cost, _) in zip(others, costs, strict=True))
        biggest = max((cost for n, (cost, _) in zip(others, costs, strict=True) if n), default=0)
        left = budget_mark()
        if left is None and biggest <= limit:
            pass  # no budget open, and no element over the limit: nothing to take
        elif left is not None and total <= left:  # all of them fit: taken at once
            spend(total, limit, path, "")
        else:  # one goes over: taken one by one, the error naming the element as it would
            skip = set(firsts)
            for i, g in enumerate(ids.tolist()):
                if i not in skip:
                    nbytes, what = costs[g]
                    spend(nbytes, limit, join_path(path, f"{field_name}[{i + offset}]"), what)
        order = np.argsort(ids, kind="stable").tolist()
        at = 0
        for n in np.bincount(ids).tolist():
            members = order[at + 1:at + n]  # (the first stays Deferred)
            at += n
            if members:
                for i, dense in zip(members, dense_rows([values[i] for i in members]),
                                    strict=True):
                    values[i] = dense

    def _add_problems(self, ids: np.ndarray[Any, Any], firsts: list[int],
                      walked: list[tuple[WalkResult, list[Problem]]], path: str,
                      field_name: str, offset: int) -> None:
        """Each element's problems in document order: its group's first's, re-pathed, until
        the list is full; then only their count."""
        counts = np.array([len(found) for _, found in walked], dtype=np.int64)
        if not counts.any():
            return
        total = int(np.bincount(ids, minlength=counts.size) @ counts)
        sink = self.problems
        done = 0
        room = max(sink.cap - len(sink.items), 0)  # each element adds one problem or more
        cuts = [len(join_path(path, f"{field_name}[{i + offset}]")) for i in firsts]
        for i in _with_problems(counts, ids, room + 1):
            if len(sink.items) >= sink.cap:
                sink.drop(total - done)
                return
            g = int(ids[i])
            found = walked[g][1]
            if i != firsts[g]:
                own = join_path(path, f"{field_name}[{i + offset}]")
                found = [Problem(own + p.path[cuts[g]:], p.message) for p in found]
            sink.add(found)
            done += len(found)


def _with_problems(counts: np.ndarray[Any, Any], ids: np.ndarray[Any, Any], most: int
                   ) -> list[int]:
    """The first ``most`` elements whose group has problems: all of them first when every
    group has some, else found a stretch at a time, not over every element."""
    if bool(counts.all()):
        return list(range(min(most, int(ids.size))))
    found: list[int] = []
    step = max(most, 4096)
    for at in range(0, int(ids.size), step):
        found += (np.flatnonzero(counts[ids[at:at + step]]) + at).tolist()
        if len(found) >= most:
            break
    return found[:most]


def _by_element(per_group: list[Any], ids: np.ndarray[Any, Any]) -> list[Any]:
    """``[per_group[g] for g in ids]``, without a Python step per element."""
    if len(per_group) == 1:
        return per_group * int(ids.size)
    return list(operator.itemgetter(*ids.tolist())(per_group)) if ids.size > 1 else \
        [per_group[int(g)] for g in ids]


def _add_runs(runs: TypeRuns, per_group: list[NestedType], ids: np.ndarray[Any, Any]) -> None:
    """``add_run`` of each element's type ``per_group[ids[k]]``, a run of one group at a
    time."""
    distinct: dict[NestedType, int] = {}
    number = [distinct.setdefault(t, len(distinct)) for t in per_group]  # groups alike
    if len(distinct) == 1:
        add_run(runs, per_group[0], int(ids.size))
        return
    types = list(distinct)
    of = np.array(number, dtype=np.int32)[ids]
    bounds = (np.flatnonzero(np.diff(of)) + 1).tolist()
    starts = [0, *bounds]
    for t, a, b in zip(of[starts].tolist(), starts, [*bounds, int(ids.size)], strict=True):
        add_run(runs, types[t], b - a)


def _note_summaries(facts: SequenceFacts, code: int, outcomes: list[WalkResult],
                    ids: np.ndarray[Any, Any], last: str | None) -> str | None:
    """Add each element's summary to ``facts`` as the one-by-one walk does (a run of one
    summary is one ``add`` and a count); the last summary noted."""
    summaries = [got.summary for got in outcomes]
    number = {s: n for n, s in enumerate(dict.fromkeys(summaries))}
    if len(number) == 1:  # one summary (one group, or alike): one run, no per-element pass
        bounds = [0, int(ids.size)]
    else:
        per_element = np.array([number[s] for s in summaries], dtype=np.int64)[ids]
        starts = np.flatnonzero(np.diff(per_element)) + 1
        bounds = [0, *starts.tolist(), int(per_element.size)]
    tensors = code == ElemType.TENSOR
    detailed = tensors or code == ElemType.SPARSE_TENSOR
    for a, b in itertools.pairwise(bounds):
        g = int(ids[a])
        summary = summaries[g]
        if summary == last:
            facts.count += b - a
            continue
        last = summary
        if detailed:
            detail = summary.split(" ", 1 if tensors else 2)[-1]
            facts.add(detail, outcomes[g].code if tensors else None, None)
        else:
            facts.add(None, None, summary)
        facts.count += b - a - 1
    return last
