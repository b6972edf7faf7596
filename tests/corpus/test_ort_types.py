"""Every ONNX tensor type ONNX Runtime can run goes in and comes back through the ort backend.

Each type is tried with Identity; where ORT has no Identity kernel for it, with
Cast to and from float. Five elements, so the sub-byte types end in a half-used
byte. ``seq(tensor(T))`` goes through SequenceIdentity for numpy's own types.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from onnxdata import compare
from onnxdata.cases.backends import get_backend
from onnxdata.cases.ort_bridge import uses_ml_dtypes
from onnxdata.core.dtypes import DATA_TYPES, STRING

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
helper = pytest.importorskip("onnx.helper", reason="the models are built with onnx.helper")
FLOAT = 1
# What ORT 1.32's CPU provider runs: neither Identity nor Cast of float4e2m1 (at any
# opset), of float6, or of complex (Identity has no complex kernel, Cast no complex type).
ORT_RUNS = {"FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING", "BOOL",
            "FLOAT16", "DOUBLE", "UINT32", "UINT64", "BFLOAT16", "FLOAT8E4M3FN",
            "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT8E8M0",
            "UINT2", "INT2"}


def _values(code: int) -> Any:
    dt = DATA_TYPES[code]
    if code == STRING:
        return np.array([b"a", b"", "é".encode(), b"xyz", b"0"], dtype=object)
    if dt.dtype == np.bool_:
        return np.array([True, False, True, True, False])
    if dt.name.startswith(("UINT", "FLOAT8E8M0")):
        base = [0, 1, 2, 3, 1] if dt.name != "FLOAT8E8M0" else [1, 2, 0.5, 4, 0.25]
    elif dt.name.startswith("INT"):
        base = [-2, -1, 0, 1, 1]
    elif dt.name.startswith("COMPLEX"):
        return np.array([1 + 2j, 0, -1j, 3, 0.5], dtype=dt.dtype)
    else:
        base = [0, 1, -1.5, 0.5, 2]
    return np.array(base, np.float32).astype(dt.dtype)


def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], path: Path) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs)
    model = helper.make_model(graph, ir_version=11, opset_imports=[
        helper.make_opsetid("", 25)])
    path.write_bytes(model.SerializeToString())
    return path


def _loads(path: Path) -> str | None:
    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception as exc:
        return str(exc).splitlines()[0][-160:]
    return None


def _runnable(code: int, folder: Path) -> tuple[str, Path] | str:
    """("Identity" or "Cast", the model ORT loads), or why ORT loads neither."""
    t = helper.make_tensor_value_info
    identity = _model([helper.make_node("Identity", ["x"], ["y"])], [t("x", code, [5])],
                      [t("y", code, [5])], folder / "identity.onnx")
    if _loads(identity) is None:
        return "Identity", identity
    cast = _model([helper.make_node("Cast", ["x"], ["as_float"], to=FLOAT),
                   helper.make_node("Cast", ["f"], ["as_t"], to=code)],
                  [t("x", code, [5]), t("f", FLOAT, [5])],
                  [t("as_float", FLOAT, [5]), t("as_t", code, [5])], folder / "cast.onnx")
    why = _loads(cast)
    return ("Cast", cast) if why is None else why


@pytest.mark.parametrize("code", sorted(DATA_TYPES), ids=lambda c: DATA_TYPES[c].name)
def test_every_tensor_type_ort_runs_goes_in_and_comes_back(code: int, tmp_path: Path) -> None:
    name = DATA_TYPES[code].name
    x = _values(code)
    found = _runnable(code, tmp_path)
    if isinstance(found, str):
        assert name not in ORT_RUNS, f"ORT {ort.__version__} should run {name}: {found}"
        pytest.skip(f"ONNX Runtime {ort.__version__} runs neither Identity nor Cast of "
                    f"{name}: {found}")
    how, model = found
    backend = get_backend("ort")
    if how == "Identity":
        (y,) = backend.run(model, [x])
        assert y.dtype == x.dtype and compare(y, x, rtol=0, atol=0) == [], name
        return
    as_float, as_t = backend.run(model, [x, x.astype(np.float32)])
    assert compare(as_float, x.astype(np.float32), rtol=0, atol=0) == [], name
    assert as_t.dtype == x.dtype and compare(as_t, x, rtol=0, atol=0) == [], name


def test_ort_runs_every_ml_dtypes_type_but_float4_and_float6(tmp_path: Path) -> None:
    ran = {DATA_TYPES[c].name for c in DATA_TYPES
           if not isinstance(_runnable(c, tmp_path), str)}
    assert ran >= ORT_RUNS
    assert {n for n in ran if uses_ml_dtypes(_code(n))} == {
        "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",
        "INT4", "FLOAT8E8M0", "UINT2", "INT2"} | (ran - ORT_RUNS)


def _code(name: str) -> int:
    return next(c for c, d in DATA_TYPES.items() if d.name == name)


STANDARD = [c for c in sorted(DATA_TYPES)
            if not uses_ml_dtypes(c) and not DATA_TYPES[c].name.startswith("COMPLEX")]


@pytest.mark.parametrize("code", STANDARD, ids=lambda c: DATA_TYPES[c].name)
def test_a_sequence_of_each_standard_type_goes_in_and_comes_back(code: int,
                                                                 tmp_path: Path) -> None:
    name = DATA_TYPES[code].name
    seq = helper.make_tensor_sequence_value_info
    model = _model([helper.make_node("Identity", ["s"], ["r"])], [seq("s", code, None)],
                   [seq("r", code, None)], tmp_path / "seq.onnx")
    why = _loads(model)
    assert why is None, f"ORT {ort.__version__} should run seq(tensor({name})): {why}"
    x = _values(code)
    value = [x, x[:2], x[:0]]
    (r,) = get_backend("ort").run(model, [value])
    assert isinstance(r, list) and len(r) == 3
    for got, want in zip(r, value, strict=True):
        assert got.dtype == want.dtype and compare(got, want, rtol=0, atol=0) == [], name
