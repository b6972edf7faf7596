"""Memory (not a test): ``onnxdata validate`` of a tiny input beside a big ``model.onnx``.

Builds, with ``onnx.helper``, a model whose one initializer makes the file
``--mb`` MB (300 by default) in a temporary folder (or ``--dir``), in the
``case/model.onnx`` + ``case/test_data_set_0/input_0.pb`` layout, so the CLI
finds the model and checks the input against its declared type. Then it runs,
each as its own process, and prints their peak RSS (``os.wait4``):

- ``onnxdata validate input_0.pb`` (the CLI's ``main``; it must say valid, with the
  declared type), then ``explore --json`` and ``show`` of the same input;
- the floor: a Python that only imports ``onnxdata.cli.main``;
- ``onnx.load(model.onnx)``, what reading the declared types cost before.

    .venv/bin/python bench/bench_model.py [--mb 300] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MIB = 1 << 20


def build(case: Path, mb: float) -> tuple[Path, Path]:
    """``(model.onnx, input_0.pb)`` in ``case``: Y = X + W[0:2] with W of ``mb`` MB."""
    n = int(mb * 1e6) // 4
    weight = numpy_helper.from_array(np.zeros(n, np.float32), "W")
    graph = helper.make_graph(
        [helper.make_node("Slice", ["W", "starts", "ends"], ["w2"]),
         helper.make_node("Add", ["X", "w2"], ["Y"])],
        "big", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])],
        initializer=[weight, numpy_helper.from_array(np.array([0], np.int64), "starts"),
                     numpy_helper.from_array(np.array([2], np.int64), "ends")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    case.mkdir(parents=True, exist_ok=True)
    model_path = case / "model.onnx"
    onnx.save_model(model, str(model_path))
    data_set = case / "test_data_set_0"
    data_set.mkdir(exist_ok=True)
    value = numpy_helper.from_array(np.array([1.0, 2.0], np.float32))
    input_path = data_set / "input_0.pb"
    input_path.write_bytes(value.SerializeToString())
    return model_path, input_path


#: Run first in every measured process: at exit it prints the process's own peak RSS
#: (VmHWM). ``ru_maxrss`` of a child would not do: Linux carries the parent's high-water
#: mark across fork and exec, and this parent has held the whole model.
_PEAK = """
import atexit, sys
def _peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            sys.stderr.write("PEAK_KIB " + line.split()[1] + "\\n")
atexit.register(_peak)
"""


def peak_rss(code: str, *argv: str) -> tuple[float, float, str]:
    """``(peak RSS in MiB, seconds, stdout)`` of a Python process running ``code``."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _PEAK + code, *argv], capture_output=True,
                          text=True)
    seconds = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"{code} {' '.join(argv)} exited {proc.returncode}:\n"
                         f"{proc.stdout}{proc.stderr}")
    kib = [line.split()[1] for line in proc.stderr.splitlines() if line.startswith("PEAK_KIB")]
    return int(kib[-1]) / 1024, seconds, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=300.0, help="size of the model (MB)")
    ap.add_argument("--dir", default=tempfile.gettempdir())
    args, _ = ap.parse_known_args()  # make bench passes every script the same arguments
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        model, value = build(Path(tmp) / "case", args.mb)
        print(f"model: {model.stat().st_size / MIB:.0f} MiB at {model}; "
              f"input: {value.stat().st_size} bytes", flush=True)
        cli = "from onnxdata.cli.main import main\nraise SystemExit(main(sys.argv[1:]))"
        ours, seconds, out = peak_rss(cli, "validate", str(value))
        if "valid" not in out or "declared tensor(float)" not in out:
            raise SystemExit(f"validate did not use the model:\n{out}")
        explored, explore_s, out = peak_rss(cli, "explore", "--json", str(value))
        if json.loads(out)["declared"] != "tensor":
            raise SystemExit(f"explore did not use the model:\n{out}")
        shown, show_s, _ = peak_rss(cli, "show", str(value))
        floor, _, _ = peak_rss("import onnxdata.cli.main")
        theirs, _, _ = peak_rss("import onnx, sys\nonnx.load(sys.argv[1])", str(model))
    print(f"onnxdata validate input_0.pb: {ours:.0f} MiB peak RSS, {seconds:.2f} s")
    print(f"onnxdata explore --json input_0.pb: {explored:.0f} MiB, {explore_s:.2f} s; "
          f"onnxdata show input_0.pb: {shown:.0f} MiB, {show_s:.2f} s")
    print(f"floor (python -c 'import onnxdata.cli.main'): {floor:.0f} MiB; "
          f"validate is floor + {ours - floor:.0f} MiB")
    print(f"onnx.load(model.onnx): {theirs:.0f} MiB; validate uses {ours / theirs:.2f}x of it")


if __name__ == "__main__":
    main()
