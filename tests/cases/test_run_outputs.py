"""``onnxdata run --write-outputs``: never deletes or replaces what it did not write, never
follows a planted link; and a set without expected outputs fails the run unless allowed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from onnxdata import OnnxDataError
from onnxdata.cases.run_outputs import fill_in
from onnxdata.cases.save import as_model
from onnxdata.cli.main import main
from onnxdata.io.atomic import atomic_writer

pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
NODE = Path(__file__).parents[1] / "data" / "onnx-node"


def _inputs_only(tmp_path: Path) -> tuple[Path, bytes]:
    case = tmp_path / "case"
    shutil.copytree(NODE / "test_loop16_seq_none", case)
    expected = (case / "test_data_set_0" / "output_0.pb").read_bytes()
    (case / "test_data_set_0" / "output_0.pb").unlink()
    return case, expected


def test_filling_in_keeps_every_other_file_of_the_set(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    case, expected = _inputs_only(tmp_path)
    s = case / "test_data_set_0"
    (s / "NOTES.txt").write_text("mine")
    (s / "more").mkdir()
    (s / "more" / "x.pb").write_bytes(b"\x08\x01")
    assert main(["run", str(case), "--write-outputs"]) == 0
    assert f"wrote {s}" in capsys.readouterr().out
    assert (s / "output_0.pb").read_bytes() == expected
    assert (s / "NOTES.txt").read_text() == "mine" and (s / "more" / "x.pb").exists()
    assert sorted(p.name for p in s.iterdir()) == ["NOTES.txt", "input_0.pb", "input_1.pb",
                                                   "input_2.pb", "more", "output_0.pb"]
    assert sorted(p.name for p in case.iterdir()) == ["model.onnx", "test_data_set_0"]


def test_filling_in_refuses_a_name_taken_meanwhile_and_follows_no_link(tmp_path: Path) -> None:
    import numpy as np

    case = tmp_path / "case"
    shutil.copytree(NODE / "test_abs", case)
    s = case / "test_data_set_0"
    (s / "output_0.pb").unlink()
    outside = tmp_path / "outside.pb"
    os.symlink(outside, s / "output_0.pb")  # planted, dangling
    with pytest.raises(OnnxDataError, match="appeared while writing"):
        fill_in(s, [np.zeros((3, 4, 5), np.float32)], as_model(case / "model.onnx"))
    assert not outside.exists() and os.readlink(s / "output_0.pb") == str(outside)
    assert sorted(p.name for p in s.iterdir()) == ["input_0.pb", "output_0.pb"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_new_case_folder_must_be_fresh(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    case = NODE / "test_abs"
    new = tmp_path / "new"
    new.mkdir()  # empty: fine
    assert main(["run", str(case), "--write-outputs", str(new)]) == 0
    assert main(["run", str(new)]) == 0
    capsys.readouterr()
    planted = tmp_path / "planted"
    planted.mkdir()
    outside = tmp_path / "outside.onnx"
    os.symlink(outside, planted / "model.onnx")
    assert main(["run", str(case), "--write-outputs", str(planted)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert not outside.exists() and sorted(os.listdir(planted)) == ["model.onnx"]
    (tmp_path / "file").write_text("x")
    assert main(["run", str(case), "--write-outputs", str(tmp_path / "file")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_the_model_copy_never_writes_through_a_link(tmp_path: Path) -> None:
    outside = tmp_path / "outside.onnx"
    os.symlink(outside, tmp_path / "model.onnx")
    with pytest.raises(OnnxDataError, match="exists"), \
            atomic_writer(tmp_path / "model.onnx", replace=False) as f:
        f.write(b"model")
    assert not outside.exists()
    assert sorted(os.listdir(tmp_path)) == ["model.onnx"]
    with atomic_writer(tmp_path / "other.onnx", replace=False) as f:
        f.write(b"model")
    assert (tmp_path / "other.onnx").read_bytes() == b"model"


def test_a_set_without_expected_outputs_exits_1_unless_allowed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case, _ = _inputs_only(tmp_path)
    assert main(["run", str(case)]) == 1
    out = capsys.readouterr().out
    assert "output 0 'seq_res': unchecked" in out and "--allow-unchecked" in out
    assert main(["run", str(case), "--allow-unchecked"]) == 0
    capsys.readouterr()
    assert main(["run", str(case), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["passed"] is False and report["results"][0]["status"] == "unchecked"
    assert not (case / "test_data_set_0" / "output_0.pb").exists()


def test_writing_an_inputs_only_set_to_a_new_case_exits_0_and_the_case_passes(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case, expected = _inputs_only(tmp_path)
    new = tmp_path / "new"
    assert main(["run", str(case), "--write-outputs", str(new)]) == 0
    assert (new / "test_data_set_0" / "output_0.pb").read_bytes() == expected
    assert main(["run", str(new)]) == 0
    assert not (case / "test_data_set_0" / "output_0.pb").exists()


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of two pages (8 KiB): a model and one value file fill it."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(disk)],
                             capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def test_write_outputs_dir_on_a_full_disk_leaves_nothing(
        tmp_path: Path, small_disk: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = tmp_path / "case"
    shutil.copytree(NODE / "test_abs", case)
    target = small_disk / "new"
    assert main(["run", str(case), "--write-outputs", str(target)]) == 2
    err = capsys.readouterr().err
    assert "No space left on device" in err and str(target) in err, err
    assert err.count("\n") == 1, err
    assert os.listdir(small_disk) == []  # (DIR/model.onnx was left before)
    os.mkdir(target)  # an empty folder given as DIR stays, empty
    assert main(["run", str(case), "--write-outputs", str(target)]) == 2
    assert os.listdir(small_disk) == ["new"] and os.listdir(target) == []
