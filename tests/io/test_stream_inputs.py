"""Files that are streams: a pipe, a FIFO, ``<(cat x.pb)``. Their size says nothing (0), so
they are read to their end, once, and every command gives the verdict the file gives."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import onnxdata
from onnxdata.cli.main import main
from onnxdata.errors import DecodeError

CASE = Path(__file__).parents[1] / "data" / "onnx-node" / "test_sequence_insert_at_back"
FILE = CASE / "test_data_set_0" / "input_0.pb"


def _fifo(tmp_path: Path, data: bytes, name: str = "value.pb") -> Iterator[Path]:
    """A FIFO that a thread fills with ``data`` once a reader opens it."""
    path = tmp_path / name
    os.mkfifo(path)

    def feed() -> None:
        with open(path, "wb") as f:
            f.write(data)
    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    yield path
    writer.join(timeout=5)


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    yield from _fifo(tmp_path, FILE.read_bytes())


def test_read_of_a_pipe_gives_the_files_value() -> None:
    r, w = os.pipe()
    os.write(w, FILE.read_bytes())
    os.close(w)
    try:
        got = onnxdata.read(f"/dev/fd/{r}")
    finally:
        os.close(r)
    expected = onnxdata.read(FILE)
    assert len(got) == len(expected)
    assert all(np.array_equal(x, y) for x, y in zip(got, expected, strict=True))


def test_show_of_a_fifo(fifo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(fifo)]) == 0
    assert "list of 3" in capsys.readouterr().out


def test_validate_of_a_fifo(fifo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(fifo)]) == 0
    assert "valid SequenceProto" in capsys.readouterr().out


def test_diff_of_a_fifo_and_the_file(fifo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(fifo), str(FILE)]) == 0
    assert "equal" in capsys.readouterr().out


def test_a_directory_is_refused_with_its_path(tmp_path: Path) -> None:
    with pytest.raises(DecodeError, match="a folder, not a file") as info:
        onnxdata.read(tmp_path)
    assert str(tmp_path) in str(info.value)


def test_no_kind_and_no_valid_reading_is_a_decode_error(tmp_path: Path) -> None:
    # load and read promise the only valid reading; they returned the first well-formed one
    empty = tmp_path / "empty.pb"
    empty.write_bytes(b"")
    for call in (onnxdata.load, onnxdata.read):
        with pytest.raises(DecodeError, match=r"empty \(0 bytes\)"):
            call(empty)
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\x10\x63")  # elem_type 99: well-formed as a sequence, valid as nothing
    for call in (onnxdata.load, onnxdata.read):
        with pytest.raises(DecodeError, match="no kind reads it validly"):
            call(bad)
    assert onnxdata.load(bad, "sequence").elem_type == 99  # a kind given: as before


def test_a_fifo_with_no_writer_is_refused_naming_it(tmp_path: Path) -> None:
    """Issue 42: ``open`` of a FIFO with no writer blocked forever; now it is opened without
    blocking, a writer is waited for a moment, and none is our error."""
    path = tmp_path / "lonely.pb"
    os.mkfifo(path)
    for call in (onnxdata.read, onnxdata.load):
        with pytest.raises(DecodeError, match="no process wrote to it") as info:
            call(path, "tensor")
        assert str(path) in str(info.value)


def test_a_fifo_whose_writer_comes_a_little_late_is_read(tmp_path: Path) -> None:
    path = tmp_path / "late.pb"
    os.mkfifo(path)

    def feed() -> None:
        import time

        time.sleep(0.3)
        with open(path, "wb") as f:
            f.write(FILE.read_bytes())
    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    assert len(onnxdata.read(path)) == 3
    writer.join(timeout=5)
