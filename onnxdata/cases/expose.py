"""A model's intermediate values, made graph outputs so a backend gives them back.

``Graph(model)`` reads an onnx ModelProto once: its nodes in topological order, each
node's explicit and outer-scope inputs (the names its Loop/If/Scan bodies use from the
enclosing graph), and the declared type of every value from onnx's shape inference
(``onnx.shape_inference.infer_shapes``, with data propagation). ``candidates()`` are the
values that can be exposed, in topological order, with the reason for each one that
cannot (no type from shape inference, inside a subgraph). ``exposed(names)`` is the
serialized model whose graph outputs are exactly ``names``, typed as declared, with the
shapes left out (a backend checks its outputs against declared shapes; the comparison
checks them anyway).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from onnxdata.cases.backend_errors import BackendUnavailable

__all__ = ["Graph", "NodeInfo", "onnx_module", "strip_shapes", "subgraphs"]


def onnx_module() -> Any:
    """onnx, which ``locate`` needs for shape inference and to edit the model."""
    try:
        import onnx
    except ImportError as exc:
        raise BackendUnavailable("onnxdata locate needs onnx (shape inference, the "
                                 "exposed models): pip install onnx") from exc
    return onnx


def subgraphs(node: Any) -> Iterator[tuple[str, Any]]:
    """``(attribute name, GraphProto)`` for each graph a node holds (If's branches, Loop's
    and Scan's bodies, SequenceMap's body, ...)."""
    for a in node.attribute:
        if a.HasField("g"):
            yield a.name, a.g
        for g in a.graphs:
            yield a.name, g


def _outer_names(graph: Any, known: set[str]) -> list[str]:
    """The names ``graph`` (and the graphs inside it) use but do not define: values of the
    enclosing scopes."""
    defined = {v.name for v in graph.input} | {t.name for t in graph.initializer} | \
        {t.values.name for t in graph.sparse_initializer}
    used: list[str] = []
    for n in graph.node:
        for name in n.input:
            if name and name not in defined and name not in used:
                used.append(name)
        for _, g in subgraphs(n):
            for name in _outer_names(g, defined | known):
                if name not in defined and name not in used:
                    used.append(name)
        defined.update(o for o in n.output if o)
    return used


def _count_nodes(graph: Any) -> int:
    return sum(1 + sum(_count_nodes(g) for _, g in subgraphs(n)) for n in graph.node)


@dataclass(frozen=True)
class NodeInfo:
    """One node of the top-level graph: where it is and what it reads and writes."""

    index: int
    name: str
    op_type: str
    domain: str
    inputs: tuple[str, ...]  # explicit, then the outer-scope names its subgraphs use
    outputs: tuple[str, ...]
    inside: int = 0  # nodes inside its subgraphs, at any depth

    @property
    def label(self) -> str:
        """``'name' (Op)``, or ``node 3 (Op)`` for an unnamed node."""
        who = repr(self.name) if self.name else f"node {self.index}"
        op = self.op_type if not self.domain or self.domain == "ai.onnx" else \
            f"{self.domain}.{self.op_type}"
        return f"{who} ({op})"

    def as_json(self) -> dict[str, Any]:
        """The node as JSON-ready data."""
        return {"index": self.index, "name": self.name or None, "op_type": self.op_type,
                "domain": self.domain or "ai.onnx", "inputs": list(self.inputs),
                "outputs": list(self.outputs), "nodes_inside": self.inside}


def strip_shapes(t: Any) -> None:
    """A TypeProto's shapes cleared, at any depth (element types kept)."""
    which = t.WhichOneof("value")
    if which in ("tensor_type", "sparse_tensor_type"):
        getattr(t, which).ClearField("shape")
    elif which == "sequence_type":
        strip_shapes(t.sequence_type.elem_type)
    elif which == "optional_type":
        strip_shapes(t.optional_type.elem_type)
    elif which == "map_type":
        strip_shapes(t.map_type.value_type)


def _complete(t: Any) -> bool:
    """Whether a TypeProto says every element type (what a backend's output needs)."""
    which = t.WhichOneof("value")
    if which in ("tensor_type", "sparse_tensor_type"):
        return bool(getattr(t, which).elem_type)
    if which == "sequence_type":
        return t.sequence_type.HasField("elem_type") and _complete(t.sequence_type.elem_type)
    if which == "optional_type":
        return t.optional_type.HasField("elem_type") and _complete(t.optional_type.elem_type)
    if which == "map_type":
        return bool(t.map_type.key_type) and _complete(t.map_type.value_type)
    return False


class Graph:
    """An onnx ModelProto's top-level graph, read for exposing its values."""

    def __init__(self, model: Any) -> None:
        onnx = onnx_module()
        self.onnx = onnx
        self.model = model
        g = model.graph
        self.graph_inputs = [v.name for v in g.input]
        self.initializers = {t.name for t in g.initializer} | \
            {t.values.name for t in g.sparse_initializer}
        self.graph_outputs = [v.name for v in g.output]
        self.nodes: list[NodeInfo] = []
        self.producer: dict[str, int] = {}
        for i, n in enumerate(g.node):
            outer: list[str] = []
            for _, sub in subgraphs(n):
                outer += [x for x in _outer_names(sub, set()) if x not in outer]
            inputs = tuple(x for x in n.input if x) + \
                tuple(x for x in outer if x not in n.input)
            info = NodeInfo(i, n.name, n.op_type, n.domain, inputs,
                            tuple(o for o in n.output if o),
                            sum(_count_nodes(s) for _, s in subgraphs(n)))
            self.nodes.append(info)
            for o in info.outputs:
                self.producer.setdefault(o, i)
        self.types: dict[str, Any] = {}
        self.inference_error = ""
        self._base: bytes | None = None
        try:
            inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False,
                                                         data_prop=True)
        except Exception as exc:  # onnx raises several kinds for models it cannot infer
            inferred = model
            self.inference_error = f"{type(exc).__name__}: {exc}"
        for v in [*inferred.graph.value_info, *inferred.graph.output, *inferred.graph.input,
                  *g.value_info, *g.output, *g.input]:
            if v.HasField("type") and _complete(v.type) and v.name not in self.types:
                self.types[v.name] = v.type

    def candidates(self) -> tuple[list[str], dict[str, str]]:
        """The values that can be exposed, in topological order, and why each other node
        output cannot be."""
        seen: list[str] = []
        unseen: dict[str, str] = {}
        for n in self.nodes:
            for o in n.outputs:
                if o in seen or o in unseen:
                    continue
                if o in self.types:
                    seen.append(o)
                else:
                    unseen[o] = "onnx's shape inference gives it no complete type" + (
                        f" ({self.inference_error})" if self.inference_error else "")
        return seen, unseen

    def exposed(self, names: Sequence[str]) -> bytes:
        """The model, serialized, whose graph outputs are ``names`` (typed, shapes left out).

        The model without outputs is serialized once; each call appends a message holding
        only the new outputs, which protobuf merges into the graph when it parses the
        bytes (a message's fields given twice are merged), so no copy of the model is
        made per call beyond the bytes themselves."""
        onnx = self.onnx
        if self._base is None:
            m = onnx.ModelProto()
            m.CopyFrom(self.model)
            del m.graph.output[:]
            self._base = bytes(m.SerializeToString())
        extra = onnx.ModelProto()
        for name in names:
            t = extra.graph.output.add(name=name).type
            t.CopyFrom(self.types[name])
            strip_shapes(t)
        return self._base + bytes(extra.SerializeToString())

    def initializer_value(self, name: str) -> Any:
        """An initializer's value as a numpy array."""
        from onnx import numpy_helper

        for t in self.model.graph.initializer:
            if t.name == name:
                return numpy_helper.to_array(t)
        raise KeyError(name)

    def path_to(self, index: int) -> list[int]:
        """Nodes from a graph input to node ``index`` (following each node's first input
        made by a node), ending with ``index``."""
        path = [index]
        while True:
            n = self.nodes[path[-1]]
            before = next((self.producer[x] for x in n.inputs if x in self.producer
                           and self.producer[x] < path[-1]), None)
            if before is None:
                return path[::-1]
            path.append(before)
