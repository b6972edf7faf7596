"""The located node alone, as a new test case (``onnxdata locate --reduce DIR``).

The case's model is the node (with its subgraphs, if any) in a graph of its own: every
value it reads (its inputs, initializers among them, and the outer-scope values its
bodies use) is a graph input, typed as the original model declares or onnx's shape
inference gives it (with the shapes of the values, which are the reference backend's,
whatever shapes it gave), and its outputs are the graph outputs; onnx's checker passes
it. ``test_data_set_0`` holds those inputs' values as the ``against`` backend computed
them in the whole model (the reference run), and as expected outputs that backend's
values of the node's outputs, written with ``save_test_data_set``. So ``onnxdata run
DIR --backend A --against B`` runs the node alone on both backends; ``reduce_case`` runs
it once and returns the differences it shows, to say whether the reduced case reproduces
the difference.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from onnxdata.cases.expose import Graph, NodeInfo, strip_shapes
from onnxdata.cases.save import save_test_data_set
from onnxdata.convert.compare import Difference, compare
from onnxdata.errors import OnnxDataError
from onnxdata.io.atomic import atomic_writer

__all__ = ["reduce_case"]


def _value_type(graph: Graph, name: str) -> Any:
    onnx = graph.onnx
    for t in graph.model.graph.initializer:
        if t.name == name:
            return onnx.helper.make_tensor_type_proto(t.data_type, list(t.dims))
    t = graph.types.get(name)
    if t is None:
        raise OnnxDataError(f"cannot write the reduced case: value {name!r} has no type "
                            "(onnx's shape inference gives none)")
    return t


def reduced_model(graph: Graph, node: NodeInfo, feed: list[Any], expected: list[Any]) -> Any:
    """The node alone in a model: its values read as graph inputs, its outputs as outputs.

    The types are the declared ones without their shapes (the values are the reference
    backend's, whatever shapes it gave), a top-level tensor's shape then set from its
    value: the input's dims, the output's rank (onnx's checker wants a shape there)."""
    onnx = graph.onnx
    m = onnx.ModelProto()
    m.CopyFrom(graph.model)
    g = m.graph
    kept = onnx.NodeProto()
    kept.CopyFrom(graph.model.graph.node[node.index])
    for field in ("node", "input", "output", "initializer", "sparse_initializer",
                  "value_info"):
        g.ClearField(field)
    g.node.append(kept)
    g.name = f"{graph.model.graph.name or 'graph'}_{node.name or node.op_type}"
    for values, names, given, exact in ((g.input, node.inputs, feed, True),
                                        (g.output, node.outputs, expected, False)):
        for name, value in zip(names, given, strict=True):
            v = values.add(name=name)
            v.type.CopyFrom(_value_type(graph, name))
            strip_shapes(v.type)
            if v.type.HasField("tensor_type") and hasattr(value, "shape"):
                shape = v.type.tensor_type.shape
                shape.SetInParent()
                for d in value.shape:
                    dim = shape.dim.add()
                    if exact:
                        dim.dim_value = int(d)
    return m


def reduce_case(graph: Graph, node: NodeInfo, folder: str | os.PathLike[str], search: Any,
                inputs: list[Any], graph_inputs: list[str]
                ) -> tuple[str, tuple[Difference, ...]]:
    """Write the reduced case to ``folder`` (new or empty) and run it on ``search``'s two
    backends: its path and the differences of the node's outputs there."""
    target = Path(folder)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise OnnxDataError(f"{target} exists and is not empty: --reduce writes a new case")
    b = search.backends[1]
    made = [x for x in node.inputs if x in graph.producer]
    try:  # the node's inputs and outputs as the reference computes them in the whole model
        values = dict(zip(made + list(node.outputs),
                          b.run(graph.exposed(made + list(node.outputs)), inputs),
                          strict=True))
    except OnnxDataError as exc:
        raise OnnxDataError(f"cannot write the reduced case: backend {b.name} cannot give "
                            f"the node's inputs: {exc}") from exc
    given = dict(zip(graph_inputs, inputs, strict=False))
    feed = []
    for name in node.inputs:
        if name in values:
            feed.append(values[name])
        elif name in given:
            feed.append(given[name])
        elif name in graph.initializers:
            feed.append(graph.initializer_value(name))
        else:
            raise OnnxDataError(f"cannot write the reduced case: no value for input {name!r}")
    expected = [values[o] for o in node.outputs]
    model = reduced_model(graph, node, feed, expected)
    target.mkdir(parents=True, exist_ok=True)
    model_path = target / "model.onnx"
    with atomic_writer(model_path) as f:
        f.write(model.SerializeToString())
    save_test_data_set(target / "test_data_set_0", feed, expected, model=model_path)
    data = model.SerializeToString()
    a_out, b_out = search.backends[0].run(data, feed), b.run(data, feed)
    found: list[Difference] = []
    for name, x, y in zip(node.outputs, a_out, b_out, strict=True):
        rtol, atol = search.expect.tolerance(name)
        found += compare(x, y, rtol=rtol, atol=atol)
    return os.fspath(target), tuple(found)
