"""An onnx Backend for the locate tests, named ``tests.locate_backends:perturbed``: ONNX
Runtime on the model with one node rewritten, the node whose doc_string is "target":

* a Relu becomes a LeakyRelu (alpha 0.5): its negative inputs differ;
* a ZipMap gets its last two class labels swapped: those map values differ;
* any other node's first output is perturbed after it, by its declared type: a tensor
  gets 1 added, a sequence 1 added to its element 1, an optional of a sequence the same
  inside the optional.

A Relu inside an If/Loop body is rewritten too. A node whose doc_string is "refuse"
makes the backend refuse the model when its output is a graph output (a type it cannot
return); "crash" kills the process then (SIGSEGV), "hang" sleeps an hour. One marked
"fused" is rewritten as "target" only when its outputs are not graph outputs, as a fusion
is undone when its inner values are asked for; one marked "exposed" only when they are.
A model with no such node runs unchanged (the reduced case of a located node keeps the
node's doc_string, so it is rewritten there too).
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any


def _perturb(onnx: Any, model: Any, node: Any) -> None:
    h = onnx.helper
    if node.op_type == "Relu":
        node.op_type = "LeakyRelu"
        node.attribute.append(h.make_attribute("alpha", 0.5))
        return
    if node.op_type == "ZipMap":
        for a in node.attribute:
            if a.name == "classlabels_strings":
                a.strings[-1], a.strings[-2] = a.strings[-2], a.strings[-1]
            if a.name == "classlabels_int64s":
                a.ints[-1], a.ints[-2] = a.ints[-2], a.ints[-1]
        return
    inferred = onnx.shape_inference.infer_shapes(model)
    types = {v.name: v.type for v in [*inferred.graph.value_info, *inferred.graph.output]}
    out = node.output[0]
    t = types[out]
    raw = out + "__raw"
    node.output[0] = raw
    g = model.graph
    where = next(i for i, n in enumerate(g.node) if n.output and n.output[0] == raw)
    one = h.make_tensor(out + "__one", onnx.TensorProto.FLOAT, [], [1.0])
    pos = h.make_tensor(out + "__pos", onnx.TensorProto.INT64, [], [1])
    g.initializer.extend([one, pos])
    kind = t.WhichOneof("value")
    if kind == "tensor_type":
        new = [h.make_node("Add", [raw, one.name], [out])]
    elif kind == "sequence_type":
        new = _bump_second(h, raw, out, one.name, pos.name)
    else:  # optional(sequence)
        new = [h.make_node("OptionalGetElement", [raw], [raw + "_s"]),
               *_bump_second(h, raw + "_s", raw + "_s2", one.name, pos.name),
               h.make_node("Optional", [raw + "_s2"], [out])]
    for k, n in enumerate(new):
        g.node.insert(where + 1 + k, n)


def _inside(onnx: Any, node: Any) -> None:
    """The Relus marked "target" in a node's subgraphs, at any depth, made LeakyRelus."""
    for a in node.attribute:
        for g in [a.g] if a.HasField("g") else list(a.graphs):
            for n in g.node:
                if n.doc_string == "target" and n.op_type == "Relu":
                    n.op_type = "LeakyRelu"
                    n.attribute.append(onnx.helper.make_attribute("alpha", 0.5))
                _inside(onnx, n)


def _bump_second(h: Any, seq: str, out: str, one: str, pos: str) -> list[Any]:
    return [h.make_node("SequenceAt", [seq, pos], [out + "_e"]),
            h.make_node("Add", [out + "_e", one], [out + "_e1"]),
            h.make_node("SequenceErase", [seq, pos], [out + "_r"]),
            h.make_node("SequenceInsert", [out + "_r", out + "_e1", pos], [out])]


class _Rep:
    def __init__(self, model: Any) -> None:
        import onnx
        import onnxruntime as ort

        m = onnx.ModelProto()
        m.CopyFrom(model)
        exposed = {o.name for o in m.graph.output}
        for node in list(m.graph.node):
            if node.doc_string == "target" or (node.doc_string == "fused" and
                                               not exposed & set(node.output)) or (
                    node.doc_string == "exposed" and exposed & set(node.output)):
                _perturb(onnx, m, node)
            if node.doc_string in ("refuse", "crash", "hang") and exposed & set(node.output):
                if node.doc_string == "crash":
                    os.kill(os.getpid(), signal.SIGSEGV)
                if node.doc_string == "hang":
                    time.sleep(3600)
                raise RuntimeError(f"cannot return {node.output[0]!r}")
            _inside(onnx, node)
        self.session = ort.InferenceSession(m.SerializeToString(),
                                            providers=["CPUExecutionProvider"])

    def run(self, inputs: list[Any]) -> list[Any]:
        feed = {i.name: v for i, v in zip(self.session.get_inputs(), inputs, strict=False)}
        return list(self.session.run(None, feed))


class _Backend:
    def prepare(self, model: Any, device: str = "CPU") -> _Rep:
        return _Rep(model)


perturbed = _Backend()
