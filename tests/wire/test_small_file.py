"""The compiled ``_walk.small_file`` does in one call what ``source.open_checked`` and
``_read_at_once`` do for a small file at rest, and hands everything else back: the bytes
of a regular file of at most ``small`` bytes whose stamps are old and unchanged; else the
descriptor it opened (a file just written, a big file, a FIFO, a folder), which
``Source.of_file`` goes on with; None where the open fails, and the Python open says
why. Reads through it equal the Python route's."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import numpy as np
import pytest

import onnxdata
from onnxdata.errors import DecodeError
from onnxdata.wire import loops, source
from onnxdata.wire.source import SMALL, Source

needs_loop = pytest.mark.skipif(not loops.COMPILED, reason="the compiled walk is not built "
                                "(tests/wire/test_walk_compiled.py::test_the_loop_is_built)")
OLD = -(10 ** 18)  # a settled time that every file's stamps are older than


def small_file(path: Path | str, small: int = SMALL, settled_ns: int = OLD) -> object:
    assert loops.walk_loop is not None
    return loops.walk_loop.small_file(str(path), small, settled_ns)


def _closed(got: object) -> int:
    """The descriptor ``got`` is (closed now), after checking it is one."""
    assert isinstance(got, int) and not isinstance(got, bool)
    os.fstat(got)  # open
    os.close(got)
    return got


@needs_loop
@pytest.mark.parametrize("size", [0, 1, 100, SMALL])
def test_a_file_at_rest_is_its_bytes(tmp_path: Path, size: int) -> None:
    path = tmp_path / "f.pb"
    data = os.urandom(size)
    path.write_bytes(data)
    got = small_file(path)
    assert isinstance(got, bytes) and got == data


@needs_loop
def test_a_file_written_just_now_or_too_big_is_handed_back_open(tmp_path: Path) -> None:
    path = tmp_path / "f.pb"
    path.write_bytes(b"x" * 10)
    _closed(small_file(path, settled_ns=1_000_000_000))  # changed in the last second
    _closed(small_file(path, small=9))
    big = tmp_path / "big.pb"
    big.write_bytes(b"x" * (SMALL + 1))
    _closed(small_file(big))


@needs_loop
def test_a_fifo_and_a_folder_are_handed_back_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    fd = _closed(small_file(fifo))  # no writer: opened non-blocking, nothing read
    assert fd >= 0
    _closed(small_file(tmp_path))


@needs_loop
def test_a_path_it_cannot_open_is_none(tmp_path: Path) -> None:
    assert small_file(tmp_path / "missing.pb") is None
    assert small_file(str(tmp_path / "a\0b")) is None  # (os.open raises ValueError for it)
    locked = tmp_path / "locked.pb"
    locked.write_bytes(b"x")
    locked.chmod(0)
    if os.geteuid() != 0:  # (root opens it anyway)
        assert small_file(locked) is None


def test_reads_of_every_kind_of_path_agree_with_the_python_route(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same value or the same error with and without the compiled small-file read."""
    monkeypatch.setattr(source, "SETTLED_NS", OLD)  # (the files are new: else both re-read)
    tensor = tmp_path / "t.pb"
    onnxdata.write(np.arange(6, dtype=np.float32).reshape(2, 3), tensor)
    os.utime(tensor, ns=(1, 1))
    big = tmp_path / "big.pb"
    onnxdata.write(np.zeros(SMALL, np.uint8), big)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    paths = [tensor, big, tmp_path / "missing.pb", tmp_path, fifo]

    def outcomes() -> list[str]:
        seen = []
        for path in paths:
            if path == fifo:  # a writer that gives one tensor's bytes
                threading.Thread(target=fifo.write_bytes, args=(tensor.read_bytes(),)).start()
            for copy in (False, True):
                try:
                    seen.append(repr(onnxdata.read(path, "tensor", copy=copy).tolist()))
                except (DecodeError, OSError) as exc:
                    seen.append(f"{type(exc).__name__}: {exc}")
                if path == fifo:
                    break
        return seen

    fast = outcomes()
    monkeypatch.setattr(source, "_SMALL_FILE", None)
    assert outcomes() == fast
    assert fast[0] == fast[1] == "[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]"
    assert fast[-1] == fast[0]


@needs_loop
def test_of_file_takes_the_bytes_and_keeps_no_descriptor(tmp_path: Path) -> None:
    path = tmp_path / "f.pb"
    path.write_bytes(b"\x08\x01")
    os.utime(path, ns=(1, 1))
    before = set(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else set()
    src = Source.of_file(str(path), "mmap")
    assert src.in_memory() == b"\x08\x01"
    assert stat.S_ISREG(os.stat(path).st_mode)
    if before:
        assert set(os.listdir("/proc/self/fd")) == before
