"""A node's body values brought out to the top-level graph (``locate --into-subgraphs``).

A value made inside a Loop/If/Scan/SequenceMap body cannot be a graph output. Where the
op allows it, ``promote`` makes it one through the enclosing node: each body node's
output becomes an extra output of the body (through an Identity, so a value that is
already one is not listed twice) and so an extra output of the node, named
``NODE/VALUE``:

* Loop and Scan: an extra scan output, the value of every iteration stacked (first
  index: the iteration); tensors only (the ops stack tensors), of the same shape in
  every iteration (else the backend refuses, and the value is unseen);
* If: an extra output of the branch the value is in, and of the other branch an empty
  value of the same type (an empty tensor, sequence or optional), so the branches still
  match (the then branch's values first, in both, then the else branch's); the branch
  not taken gives that empty value on both backends;
* SequenceMap: an extra output, the value for every element as a sequence; tensors only.

Values of other kinds, of other ops, and inside nested bodies stay unseen, with the
reason. One level: the nodes of the node's own bodies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from onnxdata.cases.expose import Graph, NodeInfo, strip_shapes

__all__ = ["Promoted", "promote"]

_STACKING = {"Loop", "Scan"}


@dataclass(frozen=True)
class Promoted:
    """The model with a node's body values as top-level values, and what each is."""

    model: Any
    values: dict[str, tuple[str, NodeInfo, str]]  # new name -> (attribute, body node, value)
    nodes: list[tuple[str, NodeInfo]]  # (attribute, body node), in body order
    unseen: dict[str, str]  # body value -> why it stays unseen


def _body_types(graph: Graph, node: NodeInfo) -> dict[str, Any]:
    """The body values' types as onnx's shape inference gives them, inside the bodies."""
    onnx = graph.onnx
    try:
        inferred = onnx.shape_inference.infer_shapes(graph.model, strict_mode=False)
    except Exception:  # onnx raises several kinds; then the declared types alone
        inferred = graph.model
    types: dict[str, Any] = {}
    for a in inferred.graph.node[node.index].attribute:
        for g in [a.g] if a.HasField("g") else list(a.graphs):
            for v in [*g.value_info, *g.output]:
                if v.HasField("type"):
                    types.setdefault(v.name, v.type)
    return types


def _empty_node(onnx: Any, t: Any, name: str) -> Any | None:
    """A node making an empty value of type ``t`` (an If's other branch), or None."""
    h = onnx.helper
    kind = t.WhichOneof("value")
    if kind == "tensor_type" and t.tensor_type.elem_type:
        empty = h.make_tensor(name + "_empty", t.tensor_type.elem_type, [0], [])
        return h.make_node("Constant", [], [name], value=empty)
    if kind == "sequence_type" and \
            t.sequence_type.elem_type.WhichOneof("value") == "tensor_type":
        return h.make_node("SequenceEmpty", [], [name],
                           dtype=t.sequence_type.elem_type.tensor_type.elem_type)
    if kind == "optional_type":
        inner = onnx.TypeProto()
        inner.CopyFrom(t.optional_type.elem_type)
        strip_shapes(inner)
        return h.make_node("Optional", [], [name], type=inner)
    return None


def promote(graph: Graph, node: NodeInfo) -> Promoted:
    """``node``'s body values as top-level values, where the op allows it."""
    onnx = graph.onnx
    h = onnx.helper
    model = onnx.ModelProto()
    model.CopyFrom(graph.model)
    n = model.graph.node[node.index]
    types = _body_types(graph, node)
    values: dict[str, tuple[str, NodeInfo, str]] = {}
    nodes: list[tuple[str, NodeInfo]] = []
    unseen: dict[str, str] = {}
    bodies = [(a.name, a.g) for a in n.attribute if a.HasField("g")]
    extra_axes = 0
    originals = [(attr, body, list(body.node)) for attr, body in bodies]
    for attr, body, body_nodes in originals:
        for i, b in enumerate(body_nodes):
            info = NodeInfo(i, b.name, b.op_type, b.domain, tuple(x for x in b.input if x),
                            tuple(o for o in b.output if o))
            nodes.append((attr, info))
            if any(a.HasField("g") or a.graphs for a in b.attribute):
                unseen[f"{attr}/{b.name or b.op_type}"] = "a body inside a body: one level only"
            for v in info.outputs:
                t = types.get(v)
                why = _refusal(n.op_type, t)
                if why:
                    unseen[v] = why
                    continue
                assert t is not None
                top = f"{node.name or node.op_type}/{v}"
                inner = v + "__promoted"
                body.node.append(h.make_node("Identity", [v], [inner]))
                body.output.add(name=inner, type=t)
                if n.op_type == "If":
                    other = next(g for a2, g in bodies if a2 != attr)
                    filler = _empty_node(onnx, t, inner + "_other")
                    assert filler is not None
                    other.node.append(filler)
                    other.output.add(name=filler.output[0], type=t)
                n.output.append(top)
                model.graph.output.add(name=top, type=_top_type(onnx, n.op_type, t))
                values[top] = (attr, info, v)
                extra_axes += 1
    if n.op_type == "Scan":
        for a in n.attribute:
            if a.name in ("scan_output_axes", "scan_output_directions"):
                a.ints.extend([0] * extra_axes)
    return Promoted(model, values, nodes, unseen)


def _refusal(op: str, t: Any) -> str:
    if op not in _STACKING | {"If", "SequenceMap"}:
        return f"{op} does not let a body value out"
    if t is None:
        return "onnx's shape inference gives it no type"
    kind = t.WhichOneof("value")
    if op == "If":
        if kind in ("tensor_type", "optional_type") or (
                kind == "sequence_type" and
                t.sequence_type.elem_type.WhichOneof("value") == "tensor_type"):
            return ""
        return f"an If's branch output of this kind ({kind}) has no empty value to match"
    if kind != "tensor_type":
        return f"a {op} stacks tensors only, not a {kind.replace('_type', '')}"
    return ""


def _top_type(onnx: Any, op: str, t: Any) -> Any:
    """The type of the node's extra output for a body value of type ``t``."""
    out = onnx.TypeProto()
    if op == "SequenceMap":
        out.sequence_type.elem_type.tensor_type.elem_type = t.tensor_type.elem_type
    elif op == "If":
        out.CopyFrom(t)
    else:
        out.tensor_type.elem_type = t.tensor_type.elem_type
    for kind in ("tensor_type", "sparse_tensor_type"):
        if out.HasField(kind):
            getattr(out, kind).ClearField("shape")
    if out.HasField("sequence_type"):
        out.sequence_type.elem_type.tensor_type.ClearField("shape")
    return out

