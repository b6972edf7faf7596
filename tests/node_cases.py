"""ONNX's node test cases, written by the installed onnx as ``backend-test-tools generate-data``
writes its model cases: ``NAME/model.onnx`` and ``NAME/test_data_set_N/{input,output}_K.pb``.

``generate-data`` itself writes only the model cases ("real" and "simple"); the
node cases (1,884 in onnx 1.23.2) come from ``onnx.backend.test.case.node``, and
this writes them the same way, each value with onnx's own ``numpy_helper``.
Shared by ``tests/corpus/test_dtype_cases.py`` (a few op types) and
``bench/bench_run.py`` (all of them). Never checked in.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

# bfloat16, the float8 types, uint4/int4, float8e8m0, uint2/int2: the types numpy has
# only through ml_dtypes, as issue 22 counts them (float4e2m1 has no kernel in ORT).
ML_DTYPES_CODES = frozenset({16, 17, 18, 19, 20, 21, 22, 24, 25, 26})


def _value(onnx: Any, value: Any, tp: Any, name: str) -> bytes:
    nh = onnx.numpy_helper
    if tp.HasField("map_type"):
        return bytes(nh.from_dict(value, name).SerializeToString())
    if tp.HasField("sequence_type"):
        return bytes(nh.from_list(value, name).SerializeToString())
    if tp.HasField("optional_type"):
        return bytes(nh.from_optional(value, name).SerializeToString())
    if isinstance(value, onnx.TensorProto):
        return bytes(value.SerializeToString())
    return bytes(nh.from_array(value, name).SerializeToString())


def write_node_cases(out: Path, op_types: Iterable[str | None] = (None,),
                     keep: Any = None) -> list[Path]:
    """Write onnx's node cases (of ``op_types``; None is every op) under ``out``; return the
    case folders written, sorted. ``keep(model)`` may choose which to write."""
    import onnx
    from onnx.backend.test.case import node

    written: list[Path] = []
    for op in op_types:
        for case in node.collect_testcases(op):
            if case.model is None or (keep is not None and not keep(case.model)):
                continue
            folder = out / case.name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "model.onnx").write_bytes(case.model.SerializeToString())
            graph = case.model.graph
            for i, (inputs, outputs) in enumerate(case.data_sets or ()):
                data = folder / f"test_data_set_{i}"
                data.mkdir(exist_ok=True)
                for j, v in enumerate(inputs):
                    (data / f"input_{j}.pb").write_bytes(
                        _value(onnx, v, graph.input[j].type, graph.input[j].name))
                for j, v in enumerate(outputs):
                    (data / f"output_{j}.pb").write_bytes(
                        _value(onnx, v, graph.output[j].type, graph.output[j].name))
            written.append(folder)
    return sorted(set(written))


def _codes(tp: Any) -> set[int]:
    which = tp.WhichOneof("value")
    if which in ("tensor_type", "sparse_tensor_type"):
        return {getattr(tp, which).elem_type}
    if which == "sequence_type":
        return _codes(tp.sequence_type.elem_type)
    if which == "optional_type":
        return _codes(tp.optional_type.elem_type)
    if which == "map_type":
        return _codes(tp.map_type.value_type)
    return set()


def uses_ml_dtypes(model: Any) -> bool:
    """Whether a graph input or output of ``model`` is of a type in ``ML_DTYPES_CODES``."""
    graph = model.graph
    return any(_codes(v.type) & ML_DTYPES_CODES for v in (*graph.input, *graph.output))
