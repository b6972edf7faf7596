"""The ORT bridge: onnxdata's values to ONNX Runtime's Python API, shapes kept."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from onnxdata import compare
from onnxdata.cases.backends import get_backend
from onnxdata.cases.ort_bridge import uses_ml_dtypes
from onnxdata.core.dtypes import DATA_TYPES

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
helper = pytest.importorskip("onnx.helper", reason="the models are built with onnx.helper")
NODE = Path(__file__).parents[1] / "data" / "onnx-node"
# The ml_dtypes types ORT 1.32's CPU provider casts to and from float
CAST = ["BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
            "UINT4", "INT4", "FLOAT8E8M0", "UINT2", "INT2"]


def _code(name: str) -> int:
    return next(c for c, d in DATA_TYPES.items() if d.name == name)


@pytest.mark.parametrize("name", CAST)
@pytest.mark.parametrize("shape", [(), (1,), (2, 3)], ids=str)
def test_a_tensor_of_every_ml_dtypes_type_keeps_its_shape_0d_included(
        name: str, shape: tuple[int, ...], tmp_path: Path) -> None:
    code = _code(name)
    assert uses_ml_dtypes(code)
    t = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("Cast", ["x"], ["f"], to=1),
                               helper.make_node("Cast", ["f"], ["y"], to=code)], "g",
                              [t("x", code, list(shape))], [t("y", code, list(shape))])
    model = helper.make_model(graph, ir_version=11,
                              opset_imports=[helper.make_opsetid("", 25)])
    path = tmp_path / "cast.onnx"
    path.write_bytes(model.SerializeToString())
    x = np.ones(shape, np.float32).astype(DATA_TYPES[code].dtype)
    (y,) = get_backend("ort").run(path, [x])
    assert y.shape == shape, name  # np.ascontiguousarray made a 0-d input [1]
    assert compare(y, x, rtol=0, atol=0) == [], name
