"""``onnxdata run`` and ``explore --html`` meet odd names and targets (issue 42): every
printed record is one line whatever bytes the case and set names hold, and a page that
cannot be written where asked is one line of ours, exit 2."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

NODE = Path(__file__).parents[1] / "data" / "onnx-node"
FILE = NODE / "test_abs" / "test_data_set_0" / "input_0.pb"


def _onnxdata(*argv: str | bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "onnxdata", *argv], capture_output=True,
                          timeout=120, check=False)


def test_a_case_named_with_a_newline_is_one_record_per_line(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
    shutil.copytree(NODE / "test_abs", tmp_path / "odd\ncase")
    shutil.copytree(NODE / "test_abs", tmp_path / "plain")
    shutil.copytree(NODE / "test_abs" / "test_data_set_0",
                    tmp_path / "plain" / "test_data_set_1")
    done = _onnxdata("run", os.fspath(tmp_path))
    lines = done.stdout.decode().splitlines()
    assert done.returncode == 0, (lines, done.stderr)
    assert lines[0] == "odd\\ncase[test_data_set_0]: pass" or \
        lines[0].startswith("odd\\ncase[test_data_set_0]: pass ("), lines
    assert [line.split("[")[0] for line in lines[:3]] == ["odd\\ncase", "plain", "plain"]
    assert lines[3].startswith("3 sets in 2 cases: 3 pass"), lines
    assert lines[4].startswith("slowest: ") and "odd\\ncase[" in lines[4], lines
    assert len(lines) == 5, lines


def test_a_case_named_with_a_newline_run_alone(tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
    shutil.copytree(NODE / "test_abs", tmp_path / "odd\ncase")
    (tmp_path / "odd\ncase" / "model.onnx").write_bytes(b"\x08")  # cannot load: an error
    done = _onnxdata("run", os.fspath(tmp_path / "odd\ncase"))
    lines = done.stdout.decode().splitlines()
    assert done.returncode == 2, (lines, done.stderr)
    assert len(lines) == 1 and lines[0].startswith("test_data_set_0: error: "), lines
    assert "odd\\ncase" in lines[0], lines


@pytest.mark.parametrize("target", ["folder", ""])
def test_explore_html_to_a_folder_or_nothing_is_one_line_exit_2(tmp_path: Path,
                                                                target: str) -> None:
    out = os.fspath(tmp_path) if target == "folder" else ""
    done = _onnxdata("explore", os.fspath(FILE), "--html", out)
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert err.startswith("onnxdata: ") and err.count("\n") == 1, err
    assert done.stdout == b""


def test_make_prints_a_folder_named_with_a_newline_on_one_line(tmp_path: Path) -> None:
    out = tmp_path / "made\ncase"
    done = _onnxdata("make", os.fspath(NODE / "test_abs" / "model.onnx"), "-n", "1",
                     "--inputs-only", "--out", os.fspath(out))
    lines = done.stdout.decode().splitlines()
    assert done.returncode == 0, done.stderr
    assert lines == [f"wrote {tmp_path}/made\\ncase/test_data_set_0"], lines


def _bad_case(folder: Path) -> Path:
    """test_abs with an input of rank 1 where the model declares [3, 4, 5]."""
    import numpy as np

    from onnxdata.cases.save import write_value

    shutil.copytree(NODE / "test_abs", folder)
    write_value(folder / "test_data_set_0" / "input_0.pb", np.zeros(3, np.float32), "tensor",
                name="x")
    return folder


def test_a_set_message_of_several_lines_prints_as_indented_lines(tmp_path: Path) -> None:
    """A set that cannot be read: its problems under it, one a line (not a literal \\n);
    a line break in the case's name is still escaped, the name's own."""
    pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
    case = _bad_case(tmp_path / "odd\ncase")
    problem = "  - dims: declared shape [3, 4, 5] has rank 3 but dims are [3]"
    where = f"{tmp_path}/odd\\ncase/test_data_set_0/input_0.pb (model input 0: tensor(float))"
    alone = _onnxdata("run", os.fspath(case))
    assert alone.returncode == 2
    assert alone.stdout.decode().splitlines() == [
        f"test_data_set_0: error: cannot read the set: {where}: 1 problem:", problem]
    many = _onnxdata("run", os.fspath(tmp_path))
    lines = many.stdout.decode().splitlines()
    assert lines[0].startswith("odd\\ncase[test_data_set_0]: error (") and \
        lines[0].endswith(f"s): cannot read the set: {where}: 1 problem:"), lines
    assert lines[1] == problem and lines[2].startswith("1 sets in 1 cases: 1 error"), lines
