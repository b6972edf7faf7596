"""A hand-written loop over ONNX test cases, the witness for ``onnxdata run``'s verdicts.

No onnxdata at all: each value is read with onnx's own loaders (the message's
``ParseFromString`` and ``onnx.numpy_helper``), fed to ONNX Runtime's Python API,
and checked with numpy's ``assert_allclose`` (floats, at run's rtol 1e-3 and atol
1e-7, NaN equal to NaN) or ``assert_array_equal`` (integers, bools, strings), with
``strict=True`` (shape and dtype must match). bfloat16, float8 and the sub-byte
types go in and come out as OrtValues made from their bits, their shapes kept.

    python tools/hand_loop.py CASES_DIR OUT.jsonl        # one line per set, resumable
    python tools/hand_loop.py --against REPORT.json OUT.jsonl   # the verdicts that differ

``REPORT.json`` is ``onnxdata run CASES_DIR --report REPORT.json``'s.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

BITS = {21: 4, 22: 4, 23: 4, 25: 2, 26: 2}  # sub-byte element types: bits per element
RTOL, ATOL = 1e-3, 1e-7


def _read(path: Path, t: Any) -> Any:
    """The value in ``path`` for declared type ``t`` (an onnx TypeProto), by onnx's loaders."""
    import onnx
    from onnx import numpy_helper

    which = t.WhichOneof("value")
    data = path.read_bytes()
    if which == "tensor_type":
        m = onnx.TensorProto()
        m.ParseFromString(data)
        return numpy_helper.to_array(m)
    if which == "sequence_type":
        s = onnx.SequenceProto()
        s.ParseFromString(data)
        return numpy_helper.to_list(s)
    if which == "optional_type":
        o = onnx.OptionalProto()
        o.ParseFromString(data)
        return numpy_helper.to_optional(o)
    if which == "map_type":
        mp = onnx.MapProto()
        mp.ParseFromString(data)
        return numpy_helper.to_dict(mp)
    raise NotImplementedError(f"{which} values")


def _is_ml(arr: Any) -> bool:
    return isinstance(arr, np.ndarray) and arr.dtype.type.__module__.startswith("ml_dtypes")


def _feed(ort: Any, value: Any, t: Any) -> Any:
    """A value as ORT's Python API takes it."""
    which = t.WhichOneof("value")
    if value is None:
        return None
    if which == "optional_type":
        return _feed(ort, value, t.optional_type.elem_type)
    if which == "sequence_type":
        return [_feed(ort, v, t.sequence_type.elem_type) for v in value]
    if which == "map_type":
        return {(k.decode() if isinstance(k, bytes) else k):
                (np.asarray(v).item() if np.ndim(v) == 0 else v) for k, v in value.items()}
    arr = value
    code = t.tensor_type.elem_type
    if arr.dtype.kind in "OSU":
        return np.array([x.decode() if isinstance(x, bytes) else x for x in arr.reshape(-1)],
                        object).reshape(arr.shape)
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
    if _is_ml(arr):  # bits, the shape kept (0-d included)
        bits = np.array(arr, order="C").view(f"u{arr.dtype.itemsize}")
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, code)
    return arr


def _from_ortvalue(ov: Any, dtype: Any) -> Any:
    shape = tuple(ov.shape())
    if not dtype.type.__module__.startswith("ml_dtypes"):
        return ov.numpy()
    code = ov.element_type()
    count = int(np.prod(shape, dtype=np.int64))
    if code in BITS:
        per = 8 // BITS[code]
        raw = np.frombuffer(ctypes.string_at(ov.data_ptr(), -(-count // per)), np.uint8)
        codes = np.stack([(raw >> (i * BITS[code])) & ((1 << BITS[code]) - 1)
                          for i in range(per)], axis=1).reshape(-1)[:count]
        return codes.astype(np.uint8).view(dtype).reshape(shape)
    raw = ctypes.string_at(ov.data_ptr(), count * dtype.itemsize)
    return np.frombuffer(raw, dtype).reshape(shape)


def _check(actual: Any, expected: Any, where: str) -> None:
    """numpy's assertions, walked through sequences, maps and optionals."""
    from numpy.testing import assert_allclose, assert_array_equal

    if expected is None or actual is None:
        assert actual is None and expected is None, f"{where}: {actual!r} vs {expected!r}"
        return
    if isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{where}: length"
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            _check(a, e, f"{where}[{i}]")
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: not a map"
        norm = {(k.encode() if isinstance(k, str) else k): v for k, v in actual.items()}
        want = {(k.encode() if isinstance(k, str) else k): v for k, v in expected.items()}
        assert set(norm) == set(want), f"{where}: keys"
        for k in want:
            _check(np.asarray(norm[k], np.asarray(want[k]).dtype), np.asarray(want[k]),
                   f"{where}[{k!r}]")
        return
    e = np.asarray(expected)
    a = np.asarray(actual)
    if e.dtype.kind in "OSU":
        a = np.array([x.encode() if isinstance(x, str) else x for x in a.reshape(-1)],
                     object).reshape(a.shape)
        e = np.array([x.encode() if isinstance(x, str) else x for x in e.reshape(-1)],
                     object).reshape(e.shape)
        assert_array_equal(a, e, err_msg=where, strict=True)
        return
    assert a.dtype == e.dtype, f"{where}: dtype {a.dtype} vs {e.dtype}"
    if _is_ml(e):
        floaty = "float" in e.dtype.name or "e8m0" in e.dtype.name
        a, e = (a.astype(np.float32), e.astype(np.float32)) if floaty else \
            (a.astype(np.int8), e.astype(np.int8))
    if e.dtype.kind in "fc":
        assert_allclose(a, e, rtol=RTOL, atol=ATOL, equal_nan=True, err_msg=where, strict=True)
    else:
        assert_array_equal(a, e, err_msg=where, strict=True)


def run_case(case: Path) -> dict[str, str]:
    """{set name: "pass" | "fail: …" | "error: …"} for every test_data_set_N of ``case``."""
    import ml_dtypes  # noqa: F401  (onnx's to_array gives ml_dtypes arrays)
    import onnx
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    sets = sorted((p for p in case.glob("test_data_set_*") if p.is_dir()),
                  key=lambda p: int(p.name.rsplit("_", 1)[1]))
    try:
        model = onnx.load(str(case / "model.onnx"))
        session = ort.InferenceSession(str(case / "model.onnx"),
                                       providers=["CPUExecutionProvider"])
    except Exception as exc:
        why = f"error: cannot load: {str(exc).splitlines()[0][:120]}"
        return {s.name: why for s in sets}
    outs = list(model.graph.output)
    ml_out = False
    for o in outs:
        t = o.type
        if t.WhichOneof("value") == "tensor_type" and t.tensor_type.elem_type in (
                16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26):
            ml_out = True
    verdicts: dict[str, str] = {}
    for folder in sets:
        try:
            feeds = {}
            for j, v in enumerate(model.graph.input):
                f = folder / f"input_{j}.pb"
                if f.exists():
                    feeds[v.name] = _feed(ort, _read(f, v.type), v.type)
            wanted = [_read(folder / f"output_{k}.pb", o.type) for k, o in enumerate(outs)
                      if (folder / f"output_{k}.pb").exists()]
        except Exception as exc:
            verdicts[folder.name] = f"error: cannot read: {type(exc).__name__}: {exc}"[:200]
            continue
        try:
            if ml_out or any(isinstance(x, ort.OrtValue) for x in feeds.values()):
                ovs = {k: (x if isinstance(x, ort.OrtValue) else
                           ort.OrtValue.ortvalue_from_numpy(x)) for k, x in feeds.items()}
                got_ov = session.run_with_ort_values([o.name for o in outs], ovs)
                got = [_from_ortvalue(ov, np.asarray(wanted[k]).dtype) if k < len(wanted)
                       else None for k, ov in enumerate(got_ov)]
            else:
                got = session.run(None, feeds)
        except Exception as exc:
            verdicts[folder.name] = f"error: {type(exc).__name__}: " \
                                    f"{str(exc).splitlines()[0][:160] if str(exc) else ''}"
            continue
        try:
            for k, want in enumerate(wanted):
                _check(got[k], want, f"output {k}")
            verdicts[folder.name] = "pass"
        except AssertionError as exc:
            verdicts[folder.name] = "fail: " + " ".join(str(exc).split())[:200]
        except Exception as exc:  # a comparison that cannot be made is a difference
            verdicts[folder.name] = f"fail: {type(exc).__name__}: {exc}"[:200]
    return verdicts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("cases", nargs="?", help="a folder of test case folders")
    ap.add_argument("out", help="JSON lines: one object per case")
    ap.add_argument("--against", metavar="REPORT.json", help="onnxdata run's --report")
    args = ap.parse_args()
    out = Path(args.out)
    if args.against:
        return _against(Path(args.against), out)
    done = {json.loads(line)["case"] for line in out.read_text().splitlines()} \
        if out.exists() else set()
    cases = sorted(p.parent for p in Path(args.cases).glob("*/model.onnx"))
    with out.open("a") as f:
        for case in cases:
            if case.name in done:
                continue
            f.write(json.dumps({"case": case.name, "sets": run_case(case)}) + "\n")
            f.flush()
    return 0


def _against(report: Path, out: Path) -> int:
    hand = {(c["case"], s): v.split(":")[0] for line in out.read_text().splitlines()
            for c in [json.loads(line)] for s, v in c["sets"].items()}
    ours = {(r["case"], r["set"]): r["status"] for r in json.loads(report.read_text())["sets"]}
    differ = sorted(k for k in set(hand) | set(ours) if hand.get(k) != ours.get(k))
    cases = {c for c, _ in ours}
    print(f"onnxdata: {len(ours)} sets in {len(cases)} cases; hand loop: {len(hand)} sets; "
          f"verdicts that differ: {len(differ)}")
    for k in differ:
        print(f"  {k[0]}[{k[1]}]: onnxdata {ours.get(k)}, hand loop {hand.get(k)}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
