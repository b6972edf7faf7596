"""A hand-written ONNX Runtime loop over one case folder, through OrtValues only.

The witness for the ort backend's dtype bridge: it reads each value with onnx's
own ``onnx.load_tensor`` / ``numpy_helper`` (not onnxdata), feeds every input as
``OrtValue.ortvalue_from_numpy_with_onnx_type`` of its raw bits (sub-byte types
unpacked one element per byte, as ORT takes them), runs ``run_with_ort_values``
and reads every output from ``data_ptr`` by its own element type. Tensors only:
a case with other values is "not a tensor case". The verdict is onnxdata's
``compare`` at the runner's tolerances.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np

BITS = {21: 4, 22: 4, 23: 4, 25: 2, 26: 2}  # sub-byte element types: bits per element


def ortvalue_loop(case: Path) -> dict[str, str]:
    """{set name: "pass" | "fail: …" | "error: …"} for every test_data_set_N of ``case``."""
    import ml_dtypes  # noqa: F401  (onnx's to_array gives ml_dtypes arrays)
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper

    from onnxdata import compare

    model = onnx.load(str(case / "model.onnx"))
    if any(v.type.WhichOneof("value") != "tensor_type"
           for v in (*model.graph.input, *model.graph.output)):
        return {"*": "not a tensor case"}
    try:
        session = ort.InferenceSession(str(case / "model.onnx"),
                                       providers=["CPUExecutionProvider"])
    except Exception as exc:
        return {"*": f"cannot load: {str(exc).splitlines()[0][:120]}"}
    verdicts: dict[str, str] = {}
    for folder in sorted(case.glob("test_data_set_*")):
        feeds = {}
        for j, v in enumerate(model.graph.input):
            f = folder / f"input_{j}.pb"
            if not f.exists():
                break
            arr = numpy_helper.to_array(onnx.load_tensor(str(f)))
            code = v.type.tensor_type.elem_type
            feeds[v.name] = _ortvalue(ort, arr, code)
        try:
            outs = session.run_with_ort_values([o.name for o in model.graph.output], feeds)
        except Exception as exc:
            verdicts[folder.name] = f"error: {str(exc).splitlines()[0][:120]}"
            continue
        found = []
        for k, ov in enumerate(outs):
            want = numpy_helper.to_array(onnx.load_tensor(str(folder / f"output_{k}.pb")))
            found += compare(_read(ov, want.dtype), want, rtol=1e-3, atol=1e-7)
        verdicts[folder.name] = f"fail: {found[0]}" if found else "pass"
    return verdicts


def _ortvalue(ort: Any, arr: Any, code: int) -> Any:
    if arr.dtype.kind in "OSU":
        return ort.OrtValue.ortvalue_from_numpy(
            np.array([x.decode() if isinstance(x, bytes) else x for x in arr.reshape(-1)],
                     object).reshape(arr.shape))
    if code in BITS:
        codes = np.array(arr, order="C").view(np.uint8).reshape(-1)
        per = 8 // BITS[code]
        padded = np.zeros(-(-codes.size // per) * per, np.uint8)
        padded[:codes.size] = codes & ((1 << BITS[code]) - 1)
        packed = np.zeros(padded.size // per, np.uint8)
        for i in range(per):
            packed |= padded[i::per] << (i * BITS[code])
        buf = np.zeros(arr.size, np.uint8)
        buf[:packed.size] = packed
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(buf.reshape(arr.shape), code)
    if arr.dtype.type.__module__.startswith("ml_dtypes"):
        bits = np.array(arr, order="C").view(f"u{arr.dtype.itemsize}")  # 0-d stays 0-d
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, code)
    return ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(arr))


def _read(ov: Any, dtype: Any) -> Any:
    code = ov.element_type()
    shape = tuple(ov.shape())
    if not dtype.type.__module__.startswith("ml_dtypes"):
        return ov.numpy()
    count = int(np.prod(shape, dtype=np.int64))
    if code in BITS:
        per = 8 // BITS[code]
        raw = np.frombuffer(ctypes.string_at(ov.data_ptr(), -(-count // per)), np.uint8)
        codes = np.stack([(raw >> (i * BITS[code])) & ((1 << BITS[code]) - 1)
                          for i in range(per)], axis=1).reshape(-1)[:count]
        return codes.astype(np.uint8).view(dtype).reshape(shape)
    raw = ctypes.string_at(ov.data_ptr(), count * dtype.itemsize)
    return np.frombuffer(raw, dtype).reshape(shape)
