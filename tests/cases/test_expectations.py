"""The expectations file (``--expectations FILE``) is read by the one rule for every file
(issue 42): a FIFO refused, a device capped, nesting and numbers bounded; anything it cannot
take is an ``ExpectationsError`` naming it, in the CLI one line and exit 2."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from onnxdata.cases.expectations import ExpectationsError, read_expectations

NODE = Path(__file__).parents[1] / "data" / "onnx-node"


def _deep(tmp_path: Path, suffix: str) -> Path:
    path = tmp_path / f"deep{suffix}"
    levels = 100_000
    if suffix == ".toml":
        path.write_text("rtol = " + "[" * levels + "]" * levels + "\n")
    else:
        path.write_text('{"rtol": ' + "[" * levels + "]" * levels + "}")
    return path


def _digits(tmp_path: Path, suffix: str) -> Path:
    path = tmp_path / f"digits{suffix}"
    number = "9" * 4300
    path.write_text(f"rtol = {number}\n" if suffix == ".toml" else f'{{"rtol": {number}}}')
    return path


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_a_file_nested_100k_deep_is_an_expectations_error(tmp_path: Path, suffix: str) -> None:
    with pytest.raises(ExpectationsError, match=r"nested 10000[01] levels deep") as info:
        read_expectations(_deep(tmp_path, suffix))
    assert str(tmp_path) in str(info.value)


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_a_number_of_4300_digits_is_an_expectations_error(tmp_path: Path, suffix: str) -> None:
    with pytest.raises(ExpectationsError) as info:
        read_expectations(_digits(tmp_path, suffix))
    assert str(tmp_path) in str(info.value)


@pytest.mark.parametrize("text", ['{"rtol": NaN}', '{"rtol": Infinity}', '{"rtol": 1e999}'])
def test_a_tolerance_that_is_not_finite_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(text)
    with pytest.raises(ExpectationsError):
        read_expectations(path)


def test_a_fifo_is_refused_and_a_device_capped(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.toml")
    with pytest.raises(ExpectationsError, match=r"not a regular file \(a FIFO"):
        read_expectations(tmp_path / "fifo.toml")
    os.symlink("/dev/zero", tmp_path / "zero.json")
    with pytest.raises(ExpectationsError, match="more than the limit of 16777216 bytes"):
        read_expectations(tmp_path / "zero.json")
    with pytest.raises(ExpectationsError, match=r"expectations file .*: a folder, not a file"):
        read_expectations(tmp_path)


def _run_with(tmp_path: Path, expectations: Path) -> subprocess.CompletedProcess[str]:
    case = tmp_path / "case"
    if not case.exists():
        shutil.copytree(NODE / "test_abs", case)
    return subprocess.run([sys.executable, "-m", "onnxdata", "run", os.fspath(case),
                           "--expectations", os.fspath(expectations)], capture_output=True,
                          text=True, timeout=120, check=False)


def test_the_cli_says_so_in_one_line_with_exit_2(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.toml")
    os.symlink("/dev/zero", tmp_path / "zero.toml")
    for path in (_deep(tmp_path, ".toml"), _deep(tmp_path, ".json"),
                 _digits(tmp_path, ".toml"), _digits(tmp_path, ".json"),
                 tmp_path / "fifo.toml", tmp_path / "zero.toml"):
        done = _run_with(tmp_path, path)
        assert done.returncode == 2, (path, done.stdout, done.stderr)
        assert done.stdout == "" and done.stderr.count("\n") == 1, (path, done.stderr)
        assert done.stderr.startswith("onnxdata: ") and path.name in done.stderr
