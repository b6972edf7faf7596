"""External data without races (issue 10, P3b and P10).

The file is opened once and checked through its descriptor, so swapping the
name for a symlink out of the base folder never yields outside data, a FIFO
swapped in is an error at once instead of a hang, and no descriptor is kept
per tensor.
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
from onnxdata import SequenceProto, TensorProto
from onnxdata.external import read_external

#: How long each race runs: about 5 s in the suite, longer on demand (the issue asks 20 s).
RACE_SECONDS = float(os.environ.get("ONNXDATA_RACE_SECONDS", "5"))
INSIDE = np.arange(1, 9, dtype=np.float32)
SECRET = np.full(8, 666, dtype=np.float32)


def _tensor(location: str, n: int = 8) -> TensorProto:
    t = TensorProto(data_type=1, dims=[n], data_location=TensorProto.EXTERNAL)
    t.external_data.add(key="location", value=location)
    t.external_data.add(key="length", value=str(4 * n))
    return t


@pytest.fixture
def folders(tmp_path: Path) -> Path:
    """base/ with inside.bin and an inside folder; outside/ with secret.bin; returns base."""
    base, outside = tmp_path / "base", tmp_path / "outside"
    base.mkdir()
    outside.mkdir()
    (base / "inside.bin").write_bytes(INSIDE.tobytes())
    (base / "dir_in").mkdir()
    (base / "dir_in" / "data.bin").write_bytes(INSIDE.tobytes())
    (outside / "secret.bin").write_bytes(SECRET.tobytes())
    (outside / "data.bin").write_bytes(SECRET.tobytes())
    return base


def _swap_link(link: Path, targets: tuple[str, str], stop: threading.Event) -> None:
    """Point ``link`` at each target in turn, atomically (a new symlink renamed over it)."""
    spare = link.with_name(link.name + ".swap")
    i = 0
    while not stop.is_set():
        with_target = targets[i % 2]
        if spare.is_symlink():
            spare.unlink()
        spare.symlink_to(with_target)
        os.replace(spare, link)
        i += 1


@contextlib.contextmanager
def _running(target: Any, *args: Any) -> Iterator[None]:
    """Run ``target(*args, stop)`` in a thread for the duration of the block."""
    stop = threading.Event()
    thread = threading.Thread(target=target, args=(*args, stop), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)


def test_swapping_a_symlink_out_of_base_dir_never_reads_outside_data(folders: Path) -> None:
    """A thread swaps base/data.bin (a file symlink) and base/dir (a folder symlink) between
    inside and outside targets while to_numpy and read load them: 0 outside reads."""
    outside = folders.parent / "outside"
    (folders / "data.bin").symlink_to("inside.bin")
    (folders / "dir").symlink_to("dir_in")
    single = _tensor("data.bin")
    nested = _tensor("dir/data.bin")
    seq = SequenceProto(elem_type=SequenceProto.TENSOR)
    seq.tensor_values.extend([single, nested])
    pb = folders / "s.pb"
    onnxdata.save(seq, pb)
    counts = {"inside": 0, "outside": 0, "refused": 0}

    def tally(values: list[np.ndarray[Any, Any]]) -> None:
        for v in values:
            if np.array_equal(v, SECRET):
                counts["outside"] += 1
            else:
                assert np.array_equal(v, INSIDE)
                counts["inside"] += 1

    with _running(_swap_link, folders / "data.bin", ("inside.bin", str(outside / "secret.bin"))), \
            _running(_swap_link, folders / "dir", ("dir_in", str(outside))):
        end = time.monotonic() + RACE_SECONDS
        while time.monotonic() < end:
            for load in (lambda: onnxdata.to_numpy(seq, base_dir=folders),
                         lambda: onnxdata.read(pb, "sequence")):
                try:
                    tally(load())
                except onnxdata.OnnxDataError:
                    counts["refused"] += 1
    assert counts["outside"] == 0, counts
    assert counts["inside"] > 0 and counts["refused"] > 0, counts  # the race did run both ways


def _swap_fifo(name: Path, stop: threading.Event) -> None:
    """Replace ``name`` in turn by a FIFO and by a regular file of the right bytes."""
    fifo, plain = name.with_name("spare.fifo"), name.with_name("spare.bin")
    i = 0
    while not stop.is_set():
        if i % 2:
            plain.write_bytes(INSIDE.tobytes())
            os.replace(plain, name)
        else:
            os.mkfifo(fifo)
            os.replace(fifo, name)
        i += 1


def test_a_fifo_swapped_in_is_an_error_within_a_second(folders: Path) -> None:
    """The old code checked the name, then opened it: a FIFO swapped in between blocked
    the open forever. Run in a child, so a hang fails the test instead of the suite."""
    child = textwrap.dedent(f"""
        import sys, time, threading, os
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).parent.parent)!r})
        import onnxdata
        from tests.test_external_races import _swap_fifo, _tensor, _running, INSIDE
        base = Path({str(folders)!r})
        (base / "data.bin").write_bytes(INSIDE.tobytes())
        t = _tensor("data.bin")
        pb = base / "t.pb"
        onnxdata.save(t, pb)
        slowest, errors, good = 0.0, 0, 0
        with _running(_swap_fifo, base / "data.bin"):
            end = time.monotonic() + {min(RACE_SECONDS, 3.0)}
            while time.monotonic() < end:
                for load in (lambda: onnxdata.to_numpy(t, base_dir=base),
                             lambda: onnxdata.read(pb, "tensor")):
                    start = time.monotonic()
                    try:
                        assert load().tolist() == INSIDE.tolist()
                        good += 1
                    except onnxdata.OnnxDataError:
                        errors += 1
                    slowest = max(slowest, time.monotonic() - start)
        print(slowest, errors, good)
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          timeout=RACE_SECONDS + 30)
    assert done.returncode == 0, done.stderr
    slowest, errors, good = done.stdout.split()
    assert float(slowest) < 1.0 and int(errors) > 0 and int(good) > 0, done.stdout


def test_read_external_refuses_a_fifo_at_once(folders: Path) -> None:
    os.mkfifo(folders / "pipe.bin")
    start = time.monotonic()
    with pytest.raises(onnxdata.ValidationError, match="not a regular file"):
        read_external(folders, "pipe.bin", 0, 4, where="external_data")
    assert time.monotonic() - start < 1.0


def test_read_external_refuses_a_final_symlink_swapped_in_after_resolving(
    folders: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name is resolved, then opened with O_NOFOLLOW: a symlink put there in between
    is refused, never followed."""
    real_realpath = os.path.realpath

    def resolve_then_swap(path: Any, *args: Any, **kwargs: Any) -> str:
        got: str = real_realpath(path, *args, **kwargs)
        if got.endswith("inside.bin"):
            os.replace(folders / "inside.bin", folders / "moved.bin")
            (folders / "inside.bin").symlink_to(folders.parent / "outside" / "secret.bin")
        return got

    monkeypatch.setattr(os.path, "realpath", resolve_then_swap)
    with pytest.raises(onnxdata.OnnxDataError, match="replaced by a symlink"):
        read_external(folders, "inside.bin", 0, 32, where="external_data")


def test_without_proc_the_descriptor_is_compared_by_device_and_inode(
    folders: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_readlink = os.readlink

    def no_proc(path: Any, *args: Any, **kwargs: Any) -> Any:
        if str(path).startswith("/proc/"):
            raise FileNotFoundError(path)
        return real_readlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "readlink", no_proc)
    got = read_external(folders, "dir_in/data.bin", 4, 8, where="external_data")
    assert bytes(got) == INSIDE.tobytes()[4:12] and got.readonly


def test_a_file_shorter_than_offset_plus_length_is_refused_before_allocating(
    folders: Path,
) -> None:
    with pytest.raises(onnxdata.ValidationError, match="runs past its end"):
        read_external(folders, "inside.bin", 8, 1 << 50, where="t.external_data")


def test_1100_external_tensors_hold_no_descriptor_each(tmp_path: Path) -> None:
    """P10: to_numpy and read of 1,100 external tensors under a 1,000-descriptor limit."""
    n = 1100
    seq = SequenceProto(elem_type=SequenceProto.TENSOR)
    for i in range(n):
        (tmp_path / f"w{i}.bin").write_bytes(np.full(2, i, np.float32).tobytes())
        seq.tensor_values.append(_tensor(f"w{i}.bin", 2))
    onnxdata.save(seq, tmp_path / "s.pb")
    open_now = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 64
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = min(open_now + 100, 1000)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    try:
        by_message = onnxdata.to_numpy(seq, base_dir=tmp_path)
        by_read = onnxdata.read(tmp_path / "s.pb", "sequence")
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    for got in (by_message, by_read):
        assert len(got) == n and all(a.tolist() == [i, i] for i, a in enumerate(got))
