"""The model file of a test case is read like a data file (issue 42): a regular file read
once, as it was at one instant, or our error naming it; never a hang on a FIFO, never
memory without end from a device; and the backends are given its bytes, so a case folder
named with any bytes runs like any other."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
NODE = Path(__file__).parents[1] / "data" / "onnx-node"

#: Runs the CLI in a child; prints its exit status and the child's peak memory (VmHWM).
CHILD = textwrap.dedent("""
    import json, sys
    from onnxdata.cli.main import main
    status = main(sys.argv[1:])
    with open("/proc/self/status") as fh:
        hwm = next(line for line in fh if line.startswith("VmHWM:"))
    print(json.dumps({"status": status, "peak_mib": int(hwm.split()[1]) / 1024}))
""")


def _cli(*argv: str) -> tuple[dict[str, float], str]:
    """``onnxdata ARGV`` in a child process (a hang is a timeout, not a hung suite): its
    status and peak memory, and what it printed."""
    done = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True,
                          timeout=120, check=False)
    out = done.stdout.decode("utf-8", "replace")
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, (out, err)  # the child's own exit, not the command's
    return json.loads(out.splitlines()[-1]), out.rsplit("\n", 2)[0] + err


def _case(tmp_path: Path, name: str = "case") -> Path:
    case = tmp_path / name
    shutil.copytree(NODE / "test_abs", case)
    return case


@pytest.mark.parametrize("command", ["run", "make"])
def test_a_fifo_model_is_refused_naming_it(tmp_path: Path, command: str) -> None:
    case = _case(tmp_path)
    (case / "model.onnx").unlink()
    os.mkfifo(case / "model.onnx")
    argv = ["run", os.fspath(case)] if command == "run" else \
        ["make", os.fspath(case / "model.onnx"), "-n", "1", "--out", os.fspath(tmp_path / "o")]
    got, said = _cli(*argv)
    assert got["status"] == 2, said
    assert "not a regular file (a FIFO" in said and os.fspath(case / "model.onnx") in said
    assert "Traceback" not in said


def test_a_model_linked_to_dev_zero_stops_at_max_bytes(tmp_path: Path) -> None:
    case = _case(tmp_path)
    (case / "model.onnx").unlink()
    os.symlink("/dev/zero", case / "model.onnx")
    got, said = _cli("run", os.fspath(case), "--max-bytes", "1M")
    assert got["status"] == 2, said
    assert "more than the limit of 1048576 bytes" in said and "model.onnx" in said
    assert got["peak_mib"] < 400, got  # (3.3 GB, then "out of memory", before)
    got, said = _cli("make", os.fspath(case / "model.onnx"), "-n", "1", "--max-bytes", "1M",
                     "--out", os.fspath(tmp_path / "o"))
    assert got["status"] == 2 and "more than the limit of 1048576 bytes" in said, said


def test_a_case_named_with_a_byte_that_is_not_utf8_runs(tmp_path: Path) -> None:
    case = _case(Path(os.fsdecode(os.fsencode(tmp_path) + b"/\xff")), "case\xff")
    case_b = os.fsencode(case)
    assert b"\xff" in case_b
    done = subprocess.run([sys.executable, "-m", "onnxdata", "run", case_b, "--json"],
                          capture_output=True, timeout=120, check=False)
    got = json.loads(done.stdout)
    assert done.returncode == 0, got
    assert [s["status"] for s in got["sets"]] == ["pass"]
    done = subprocess.run([sys.executable, "-m", "onnxdata", "run", case_b,
                           "--backend", "reference"], capture_output=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert b"\\xff" not in done.stdout or b"pass" in done.stdout


def test_the_backends_get_the_bytes_read_once(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import onnxruntime

    from onnxdata.cases.backends import get_backend

    given: list[object] = []
    session = onnxruntime.InferenceSession

    def recorded(source: object, *args: object, **kwargs: object) -> object:
        given.append(source)
        return session(source, *args, **kwargs)

    monkeypatch.setattr(onnxruntime, "InferenceSession", recorded)
    case = _case(tmp_path)
    prepared = get_backend("ort").prepare(case / "model.onnx")
    assert [type(g) for g in given] == [bytes]  # never a path that can change under ORT
    reference = get_backend("reference").prepare(case / "model.onnx")
    (case / "model.onnx").write_bytes(b"not a model any more")  # after: changes nothing
    x = -np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    assert np.array_equal(prepared.run([x])[0], -x)
    assert np.array_equal(reference.run([x])[0], -x)


def test_a_model_with_external_data_runs_from_its_bytes(tmp_path: Path) -> None:
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    from onnxdata.cases.backends import get_backend

    w = numpy_helper.from_array(np.arange(4096, dtype=np.float32), "w")
    g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4096])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4096])], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(m, tmp_path / "model.onnx", save_as_external_data=True, location="w.bin",
              size_threshold=0)
    x = np.ones(4096, np.float32)
    for name in ("ort", "reference"):
        got = get_backend(name).run(tmp_path / "model.onnx", [x])[0]
        assert np.array_equal(got, x + np.arange(4096, dtype=np.float32)), name
