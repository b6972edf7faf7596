"""Timing (not a test): reading a model's declared types past many tiny fields (issue 42).

Builds a 30 MB ``model.onnx`` of 10 million tiny fields (field 100, a varint 0: 3 bytes
each) before the graph, or inside it before its inputs (``--where graph``), beside a
``test_data_set_0/input_0.pb`` (test_abs's), then prints the CPU seconds of
``read_model_types`` in this process and of ``onnxdata validate input_0.pb`` (a process
of its own, imports included; ``os.wait4``). Both run with ``OPENBLAS_NUM_THREADS=1``,
as bench_shapes' and bench_nested_types' children do: CPU seconds count every thread, and
numpy's OpenBLAS threads spin for a while after numpy starts, while nothing timed here
uses BLAS.

    .venv/bin/python bench/bench_model_types.py [--where model|graph] [--fields 10000000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# before numpy starts (the onnxdata imports below start it); the child inherits it
os.environ["OPENBLAS_NUM_THREADS"] = "1"

from onnxdata.generated.onnx_ml_pb2 import ModelProto
from onnxdata.model.file import read_model_types
from onnxdata.wire.format import encode_varint

ROOT = Path(__file__).resolve().parent.parent
CASE = ROOT / "tests" / "data" / "onnx-node" / "test_abs"


def build(folder: Path, where: str, fields: int) -> Path:
    shutil.copytree(CASE, folder / "case")
    model = folder / "case" / "model.onnx"
    m = ModelProto()
    m.ParseFromString(model.read_bytes())
    tiny = b"\xa0\x06\x00" * fields
    if where == "model":
        model.write_bytes(tiny + m.SerializeToString())
    else:
        graph = tiny + m.graph.SerializeToString()
        m.ClearField("graph")
        model.write_bytes(m.SerializeToString() + b"\x3a" + encode_varint(len(graph)) + graph)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--where", choices=["model", "graph"], default="model")
    parser.add_argument("--fields", type=int, default=10_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = build(Path(tmp), args.where, args.fields)
        started = time.process_time()
        types = read_model_types(model)
        spent = time.process_time() - started
        assert [v.name for v in types.inputs] == ["x"], types
        print(f"model {model.stat().st_size / 1e6:.1f} MB, {args.fields} tiny fields in the "
              f"{args.where}: read_model_types {spent:.3f} s CPU")
        child = subprocess.Popen([sys.executable, "-m", "onnxdata", "validate",
                                  str(model.parent / "test_data_set_0" / "input_0.pb")],
                                 stdout=subprocess.PIPE, text=True)
        _, status, usage = os.wait4(child.pid, 0)
        out = child.stdout.read() if child.stdout else ""
        print(f"onnxdata validate: {usage.ru_utime + usage.ru_stime:.2f} s CPU (exit "
              f"{os.waitstatus_to_exitcode(status)}): {out.strip()}")


if __name__ == "__main__":
    main()
