"""The first node where two backends diverge: ``onnxdata locate`` and ``locate(...)``.

Every intermediate value of the model's top-level graph is made a graph output with
its declared type from onnx's shape inference (``expose.Graph``), both backends run
the set's inputs, and each value of one is compared with the other's with ``compare``
and the tolerances ``run`` uses (the expectations file's, per case, set and value name).
Values of every kind compare: tensors, sequences, maps, optionals, nested.

The node located is the first, in topological order, with an output that differs:
all its inputs agree (or could not be seen: said in ``notes``). The result names it
(name, op type, domain), the differing output and the path inside it
(``[2]['b'][0, 3]``: compare's path, then the first differing element's index), the
worst absolute and relative error, and how far the difference spreads (the later
nodes with a differing output).

Memory stays bounded: at most ``max_outputs`` values are exposed in one run; more
candidates are halved until each part fits, one run of each backend per part, and
only the differences are kept between parts. A run that fails with some values
exposed (a type a backend cannot return) is halved again down to the values at
fault, which are reported as unseen with the backend's message; the search goes on
with the rest. A value inside a Loop/If/Scan body cannot be exposed: a difference
made there is located at the enclosing node, and the notes say how many values were
out of sight. Each backend runs in a worker process of its own by default
(``isolate``, ``timeout``), so a crash or a hang is reported, not suffered.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onnxdata.cases.case_run import PICTURE_LIMIT, test_data_sets
from onnxdata.cases.expectations import Expectations
from onnxdata.cases.expose import Graph, NodeInfo, onnx_module
from onnxdata.cases.isolated import BackendLost, IsolatedBackend
from onnxdata.cases.load import load_test_data_set
from onnxdata.convert.compare import Difference, collect
from onnxdata.errors import OnnxDataError

__all__ = ["Located", "ValueCheck", "locate"]

#: Values exposed in one run by default.
MAX_OUTPUTS = 256
#: Differences kept per value.
KEPT = 20


@dataclass(frozen=True)
class ValueCheck:
    """One exposed value: ``status`` "agree", "differ" or "unseen" (``reason``)."""

    name: str
    status: str
    differences: tuple[Difference, ...] = ()
    count: int = 0
    reason: str = ""

    def as_json(self) -> dict[str, Any]:
        """The check as JSON-ready data."""
        return {"name": self.name, "status": self.status, "reason": self.reason or None,
                "count": self.count, "differences": [d.as_json() for d in self.differences]}


def _path(d: Difference) -> str:
    """compare's path and, for differing elements, the first one's index."""
    if d.what == "values" and d.mismatches and d.mismatches[0].index:
        return d.path + "[" + ", ".join(str(i) for i in d.mismatches[0].index) + "]"
    return d.path


@dataclass
class Located:
    """What ``locate`` found: ``status`` "located", "agree", "error", or "hidden" (the
    model's outputs differ but no exposed value does)."""

    case: str
    set: str
    backend: str
    against: str
    status: str
    message: str = ""
    node: NodeInfo | None = None
    output: str = ""  # the node's differing output (the first one)
    output_index: int = -1
    path: str = ""  # inside that output: compare's path and the element's index
    max_abs: float | None = None
    max_rel: float | None = None
    differences: tuple[Difference, ...] = ()
    spread: tuple[NodeInfo, ...] = ()  # later nodes with a differing output
    outputs_differ: tuple[str, ...] = ()  # graph outputs that differ
    graph_path: tuple[NodeInfo, ...] = ()
    notes: tuple[str, ...] = ()
    checked: int = 0
    unseen: dict[str, str] = field(default_factory=dict)
    runs: int = 0
    largest_run: int = 0
    pictures: tuple[Any, Any] | None = field(default=None, repr=False)
    reduced: str | None = None
    reproduced: tuple[Difference, ...] | None = None
    node_count: int = 0
    enclosing: NodeInfo | None = None  # with into_subgraphs: the node whose body holds it
    subgraph: str = ""  # that body's attribute (then_branch, body, ...)

    def lines(self) -> list[str]:
        """The finding, for people, one line each."""
        head = f"{self.case} {self.set}: {self.backend} against {self.against}"
        if self.status == "error":
            return [f"{head}: error: {self.message}"]
        if self.node is None:
            out = [f"{head}: {self.message}"]
        else:
            n = self.node
            at = f"node {n.index} of" if n.name else "of"
            where = f"{at} {self.node_count} nodes" if self.enclosing is None else \
                f"{at} the {self.subgraph} of {self.enclosing.label}"
            out = [f"{head}: first differing node: {n.label}, domain "
                   f"{n.domain or 'ai.onnx'}, {where}",
                   f"  output {self.output_index} {self.output!r} differs at "
                   f"{self.path or '(top)'}: {self.differences[0].message}",
                   *([f"  worst error: absolute {_num(self.max_abs)}, relative "
                      f"{_num(self.max_rel)}"] if self.max_abs is not None else []),
                   f"  its inputs{'' if self.enclosing else ' agree'}: "
                   f"{', '.join(map(repr, n.inputs)) or '(none)'}",
                   f"  spreads to {len(self.spread)} later node"
                   f"{'s' if len(self.spread) != 1 else ''}" +
                   (f" ({', '.join(s.label for s in self.spread[:5])}"
                    f"{', …' if len(self.spread) > 5 else ''})" if self.spread else "") +
                   (f"; graph outputs that differ: {', '.join(map(repr, self.outputs_differ))}"
                    if self.outputs_differ else "; no graph output differs"),
                   "  path: " + " -> ".join(p.label for p in self.graph_path)]
        out += [f"  note: {x}" for x in self.notes]
        out += [f"  unseen: {k!r}: {why}" for k, why in list(self.unseen.items())[:5]]
        if len(self.unseen) > 5:
            out.append(f"  unseen: … {len(self.unseen) - 5} more (--json lists all)")
        out.append(f"  {self.checked} values compared, {len(self.unseen)} unseen, "
                   f"{self.runs} runs of each backend, at most {self.largest_run} values "
                   "exposed at once")
        if self.reduced is not None:
            same = "reproduces the difference" if self.reproduced else \
                "does NOT reproduce the difference"
            out.append(f"  reduced case written to {self.reduced} ({same})")
        return out

    def as_json(self) -> dict[str, Any]:
        """The finding as JSON-ready data (one object)."""
        return {
            "case": self.case, "set": self.set, "backend": self.backend,
            "against": self.against, "status": self.status,
            "message": self.message or None,
            "node": self.node.as_json() if self.node else None,
            "output": self.output or None, "output_index": self.output_index,
            "path": self.path if self.node else None,
            "max_abs": _json_num(self.max_abs), "max_rel": _json_num(self.max_rel),
            "differences": [d.as_json() for d in self.differences],
            "spread": len(self.spread), "spread_nodes": [s.as_json() for s in self.spread],
            "outputs_differ": list(self.outputs_differ),
            "graph_path": [p.as_json() for p in self.graph_path],
            "notes": list(self.notes), "checked": self.checked, "unseen": self.unseen,
            "runs": self.runs, "largest_run": self.largest_run, "nodes": self.node_count,
            "enclosing": self.enclosing.as_json() if self.enclosing else None,
            "subgraph": self.subgraph or None, "reduced": self.reduced,
            "reproduced": None if self.reproduced is None else bool(self.reproduced),
            "error": self.message if self.status == "error" else None}


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


def _json_num(x: float | None) -> float | str | None:
    if x is None:
        return None
    return x if x == x and abs(x) != float("inf") else str(x)


class _Search:
    """Both backends, the graph and the tolerances: the runs and comparisons of one set."""

    def __init__(self, graph: Graph, inputs: list[Any], a: IsolatedBackend,
                 b: IsolatedBackend, expectations: Expectations, case: str, set_name: str,
                 max_outputs: int) -> None:
        self.graph = graph
        self.inputs = inputs
        self.backends = (a, b)
        self.expect = expectations.lookup(case, set_name)
        self.max_outputs = max(1, max_outputs)
        self.checks: dict[str, ValueCheck] = {}
        self.runs = 0
        self.largest = 0
        self.pictures: dict[str, tuple[Any, Any]] = {}

    def run_both(self, names: Sequence[str] | None) -> tuple[list[Any], list[Any]]:
        """Both backends' values of ``names`` (None: the model's own outputs)."""
        model = self.graph.exposed(names) if names is not None else \
            bytes(self.graph.model.SerializeToString())
        self.runs += 1
        self.largest = max(self.largest, len(names or ()))
        first = self.backends[0].run(model, self.inputs)
        return first, self.backends[1].run(model, self.inputs)

    def check(self, names: Sequence[str]) -> None:
        """Compare ``names``: halved while more than max_outputs, or while a run fails."""
        if not names:
            return
        if len(names) > self.max_outputs:
            half = (len(names) + 1) // 2
            self.check(names[:half])
            self.check(names[half:])
            return
        try:
            a, b = self.run_both(names)
        except (OnnxDataError, BackendLost) as exc:
            if len(names) == 1:
                self.checks[names[0]] = ValueCheck(names[0], "unseen", reason=str(exc))
                return
            half = (len(names) + 1) // 2
            self.check(names[:half])
            self.check(names[half:])
            return
        for name, x, y in zip(names, a, b, strict=True):
            rtol, atol = self.expect.tolerance(name)
            found = collect(x, y, rtol=rtol, atol=atol, keep=KEPT)
            status = "differ" if found.count else "agree"
            self.checks[name] = ValueCheck(name, status, tuple(found.kept), found.count)
            if status == "differ" and len(self.pictures) < 8:
                pair = _picture_pair(x, y, found.kept[0])
                if pair is not None:
                    self.pictures[name] = pair

    def status(self, name: str) -> str:
        if name in self.graph.initializers or name in self.graph.graph_inputs:
            return "agree"  # both backends are given the same
        c = self.checks.get(name)
        return c.status if c is not None else "unseen"


def _picture_pair(x: Any, y: Any, d: Difference) -> tuple[Any, Any] | None:
    """The two arrays at the first difference's path, small enough to draw."""
    import numpy as np

    for step in _steps(d.path):
        if isinstance(x, dict) and isinstance(step, str) and step not in x:
            step = step.encode("utf-8")  # compare writes a map's bytes keys as text
        try:
            x, y = x[step], y[step]
        except (KeyError, IndexError, TypeError):
            return None
    if isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and \
            x.size <= PICTURE_LIMIT and y.size <= PICTURE_LIMIT:
        return x, y
    return None


def _steps(path: str) -> list[Any]:
    """``[2]['b']`` as [2, 'b'] (keys as compare writes them: repr of str/bytes/int)."""
    import ast

    out: list[Any] = []
    i = 0
    while i < len(path) and path[i] == "[":
        depth, j = 0, i
        while j < len(path):
            if path[j] == "[":
                depth += 1
            elif path[j] == "]":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        try:
            out.append(ast.literal_eval(path[i + 1:j]))
        except (ValueError, SyntaxError):
            return out
        i = j + 1
    return out


def locate(case: str | os.PathLike[str], *, set: int = 0, backend: str = "ort",
           against: str = "reference", providers: Sequence[str] = (),
           expectations: Expectations | None = None, rtol: float | None = None,
           atol: float | None = None, max_outputs: int = MAX_OUTPUTS,
           isolate: bool = True, timeout: float | None = None,
           reduce: str | os.PathLike[str] | None = None,
           into_subgraphs: bool = False) -> Located:
    """The first node of ``case``'s model where ``backend`` and ``against`` diverge on
    ``test_data_set_{set}``'s inputs.

    ``case`` is a test case folder (``model.onnx`` and ``test_data_set_N``) or its
    model file. Values are compared as ``onnxdata run`` compares outputs: with
    ``expectations``' tolerances for the case, set and value name (``rtol``/``atol``
    override the defaults). At most ``max_outputs`` values are exposed per run (more
    are halved). Each backend runs in its own worker process (``isolate``), a run
    killed after ``timeout`` seconds. ``reduce`` is a folder to write the located node
    alone as a new test case (its inputs as graph inputs, their values from
    ``against``'s run), checked to reproduce the difference. ``into_subgraphs``: when
    the node located holds bodies (Loop, If, Scan, SequenceMap), their values are
    brought out as extra outputs of the node where the op allows it (``promote``) and
    the first differing body node is named, ``enclosing`` the node holding it (the
    reduced case is then the enclosing node).

    Returns a ``Located`` (``lines()`` for people, ``as_json()``); a case that cannot
    be read raises OnnxDataError, one whose model a backend cannot run gives status
    "error".
    """
    folder = Path(case)
    model_path = folder / "model.onnx" if folder.is_dir() else folder
    folder = model_path.parent
    if not model_path.is_file():
        raise OnnxDataError(f"no model at {model_path}")
    if reduce is not None and Path(reduce).is_symlink():
        raise OnnxDataError(f"{reduce} is a symbolic link: the reduced case goes to a new "
                            "folder")
    if reduce is not None and Path(reduce).exists() and (
            not Path(reduce).is_dir() or any(Path(reduce).iterdir())):
        raise OnnxDataError(f"{reduce} exists and is not empty: the reduced case goes to a "
                            "new folder")
    sets = {p.name: p for p in test_data_sets(folder)}
    set_name = f"test_data_set_{set}"
    if set_name not in sets:
        raise OnnxDataError(f"{folder} has no {set_name} (it has "
                            f"{', '.join(sorted(sets)) or 'none'})")
    exp = expectations or Expectations()
    if rtol is not None or atol is not None:
        exp = exp.with_defaults(exp.rtol if rtol is None else rtol,
                                exp.atol if atol is None else atol)
    inputs, _ = load_test_data_set(sets[set_name], model=model_path)
    onnx = onnx_module()
    try:
        model = onnx.load(os.fspath(model_path))
    except Exception as exc:  # onnx's DecodeError and the like
        raise OnnxDataError(f"onnx cannot load {model_path}: {exc}") from exc
    graph = Graph(model)
    base: dict[str, Any] = {"case": folder.name, "set": set_name, "backend": backend,
                            "against": against}
    with IsolatedBackend(backend, providers, isolate=isolate, timeout=timeout) as a, \
            IsolatedBackend(against, isolate=isolate, timeout=timeout) as b:
        search = _Search(graph, inputs, a, b, exp, folder.name, set_name, max_outputs)
        try:  # the model as it is first: a backend that cannot run it at all says so
            whole = search.run_both(None)
        except (OnnxDataError, BackendLost) as exc:
            return Located(**base, status="error", message=str(exc), runs=search.runs,
                           node_count=len(graph.nodes))
        own = [name for name, x, y in zip(graph.graph_outputs, *whole, strict=False)
               if collect(x, y, rtol=search.expect.tolerance(name)[0],
                          atol=search.expect.tolerance(name)[1], keep=0).count]
        del whole
        names, unseen = graph.candidates()
        search.check(names)
        found = _finding(graph, search, unseen, base, own)
        outer = found.node
        if into_subgraphs and outer is not None and outer.inside:
            _inside(found, graph, _Search(graph, inputs, a, b, exp, folder.name, set_name,
                                          max_outputs))
        if reduce is not None and outer is not None:
            from onnxdata.cases.reduce import reduce_case

            try:
                found.reduced, found.reproduced = reduce_case(
                    graph, outer, reduce, search, inputs, graph.graph_inputs)
            except (OnnxDataError, BackendLost, OSError) as exc:
                found.notes += (f"the reduced case was not written: {exc}",)
    return found


def _finding(graph: Graph, search: _Search, unseen: dict[str, str],
             base: dict[str, Any], own: list[str]) -> Located:
    for name, c in search.checks.items():
        if c.status == "unseen":
            unseen[name] = c.reason
    notes = []
    for n in graph.nodes:
        if n.inside:
            notes.append(f"the {n.inside} node{'s' if n.inside != 1 else ''} inside the "
                         f"subgraphs of {n.label} cannot be exposed: a difference made "
                         "there is located at that node")
    differing = [n for n in graph.nodes
                 if any(search.status(o) == "differ" for o in n.outputs)]
    common: dict[str, Any] = dict(
        checked=sum(c.status != "unseen" for c in search.checks.values()),
        unseen=unseen, runs=search.runs, largest_run=search.largest,
        node_count=len(graph.nodes))
    if not differing and own:
        msg = (f"the model's output{'s' if len(own) > 1 else ''} {', '.join(map(repr, own))} "
               "differ, but no value does when the values are exposed: the difference comes "
               "from the whole graph as the backend optimizes it (a fusion that exposing "
               "values prevents), or from a value unseen")
        return Located(**base, status="hidden", message=msg, notes=tuple(notes),
                       outputs_differ=tuple(own), **common)
    if not differing:
        msg = "the backends agree on every value that could be seen"
        return Located(**base, status="agree", message=msg, notes=tuple(notes), **common)
    if not own:
        notes.append("run as it is (no value exposed), the model's outputs agree: this "
                     "difference is absorbed before them, or shows only while values are "
                     "exposed (a backend's optimizations change then)")
    node = differing[0]
    k, out = next((k, o) for k, o in enumerate(node.outputs)
                  if search.status(o) == "differ")
    check = search.checks[out]
    blind = [x for x in node.inputs if search.status(x) == "unseen"]
    if blind:
        notes.insert(0, f"input{'s' if len(blind) > 1 else ''} "
                        f"{', '.join(map(repr, blind))} of this node could not be seen: "
                        "the difference may start before it")
    others = [o for o in node.outputs if o != out and search.status(o) == "differ"]
    if others:
        notes.insert(0, f"its output{'s' if len(others) > 1 else ''} "
                        f"{', '.join(map(repr, others))} differ{'' if len(others) > 1 else 's'}"
                        " too")
    abs_errors = [d.max_abs for d in check.differences if d.max_abs is not None]
    rel_errors = [d.max_rel for d in check.differences if d.max_rel is not None]
    return Located(
        **base, status="located", node=node, output=out, output_index=k,
        path=_path(check.differences[0]) if check.differences else "",
        max_abs=max(abs_errors, default=None), max_rel=max(rel_errors, default=None),
        differences=check.differences, spread=tuple(differing[1:]),
        outputs_differ=tuple(o for o in graph.graph_outputs if search.status(o) == "differ"),
        graph_path=tuple(graph.nodes[i] for i in graph.path_to(node.index)),
        notes=tuple(notes), pictures=search.pictures.get(out), **common)


def _inside(found: Located, graph: Graph, search: _Search) -> None:
    """``found`` moved into its node's bodies: the first body node whose value differs."""
    from onnxdata.cases.promote import promote

    outer = found.node
    assert outer is not None
    found.notes = tuple(x for x in found.notes if outer.label not in x)
    promoted = promote(graph, outer)
    search.graph = Graph(promoted.model)
    search.check(list(promoted.values))
    by_value = {v: top for top, (_, _, v) in promoted.values.items()}
    for v, why in promoted.unseen.items():
        found.unseen[f"{outer.name or outer.op_type}/{v}"] = why
    for top, c in search.checks.items():
        if c.status == "unseen":
            found.unseen[top] = c.reason
    found.runs += search.runs
    found.largest_run = max(found.largest_run, search.largest)
    found.checked += sum(c.status != "unseen" for c in search.checks.values())
    differing = [(attr, n) for attr, n in promoted.nodes
                 if any(search.status(by_value[o]) == "differ" for o in n.outputs
                        if o in by_value)]
    seen = [c for top, c in search.checks.items() if c.status != "unseen"]
    if outer.op_type in ("Loop", "Scan") and seen and all(
            c.status == "differ" and all(d.what == "shape" for d in c.differences)
            for c in seen):
        found.notes += (f"inside {outer.label}: every body value brought out "
                        f"({len(seen)}) differs in its shape alone: the backends stack the "
                        "iterations' values differently, so the difference is the node's "
                        "own, not a body node's",)
        return
    if not differing:
        found.notes += (f"inside {outer.label}: no body value that could be seen differs "
                        f"({len(promoted.values)} brought out); the difference is in how "
                        "the node puts its bodies' values together, or in a value unseen",)
        return
    attr, node = differing[0]
    k, v = next((k, o) for k, o in enumerate(node.outputs)
                if o in by_value and search.status(by_value[o]) == "differ")
    check = search.checks[by_value[v]]
    found.enclosing, found.subgraph, found.node = outer, attr, node
    found.output, found.output_index, found.differences = v, k, check.differences
    found.path = _path(check.differences[0]) if check.differences else ""
    found.max_abs = max((d.max_abs for d in check.differences if d.max_abs is not None),
                        default=None)
    found.max_rel = max((d.max_rel for d in check.differences if d.max_rel is not None),
                        default=None)
    found.graph_path = (*found.graph_path, node)
    found.pictures = search.pictures.get(by_value[v])
    stacked = " (its first index is the iteration)" if outer.op_type in ("Loop", "Scan") \
        else " (one element per element of the input sequences)" \
        if outer.op_type == "SequenceMap" else ""
    found.notes = (f"inside the {attr} of {outer.label}: {v!r} brought out as "
                   f"{by_value[v]!r}{stacked}; later body nodes that differ too: "
                   f"{len(differing) - 1}" + ("" if outer.op_type == "If" else
                                              "; the body's own inputs (iteration number, "
                                              "carried values) are not compared"),
                   *found.notes)
