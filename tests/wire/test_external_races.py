"""External data without races (issue 10, P3b and P10).

The file is opened once and checked through its descriptor, so swapping the
name for a symlink out of the base folder never yields outside data, a FIFO
swapped in is an error instead of a hang, and no descriptor is kept per tensor.

A race is checked by outcome: a fixed number of tries (``ONNXDATA_RACE_TRIES``,
default 200), each of which must give the inside data or one of the named refusals.
The two ends of each race (all inside, all outside) are checked without racing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
from onnxdata import SequenceProto, TensorProto
from onnxdata.wire.external import read_external

#: Tries per race (each try loads through to_numpy and through read); more on demand.
RACE_TRIES = int(os.environ.get("ONNXDATA_RACE_TRIES", "200"))
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


def _symlinked_sequence(folders: Path) -> tuple[SequenceProto, Path]:
    """base/data.bin -> inside.bin and base/dir -> dir_in; a sequence of one tensor
    through each link, as a message and saved as base/s.pb."""
    (folders / "data.bin").symlink_to("inside.bin")
    (folders / "dir").symlink_to("dir_in")
    seq = SequenceProto(elem_type=SequenceProto.TENSOR)
    seq.tensor_values.extend([_tensor("data.bin"), _tensor("dir/data.bin")])
    pb = folders / "s.pb"
    onnxdata.save(seq, pb)
    return seq, pb


#: The problems a load may name while the links swap: a location that resolves (or was
#: opened) outside base_dir. Anything else, or data from outside, fails the try.
_OUTSIDE_HEAD = re.compile(r"location '(data\.bin|dir/data\.bin)' (resolves to|was opened at) ")
_ELEMENT = re.compile(r"tensor_values\[[01]\]\.external_data(\[0\])?$")


def _names_outside(message: str) -> bool:
    """A problem saying the location lies outside base_dir (a long one is elided in its
    middle, where the paths are: then its start and end say it)."""
    return bool(_OUTSIDE_HEAD.match(message)) and (
        "outside base_dir" in message or (" … " in message and message.endswith(
            ("/base", "/base (through a symlink)"))))


def _symlink_try(load: Callable[[], Any]) -> str:
    """One load while the links swap: "inside" (both tensors hold the inside data) or
    "refused" (ValidationError naming only outside locations, or the open's refusal of a
    symlink swapped in)."""
    try:
        values = load()
    except onnxdata.ValidationError as exc:
        assert exc.problems, exc
        for p in exc.problems:
            assert _ELEMENT.match(p.path) and _names_outside(p.message), p
        return "refused"
    except onnxdata.OnnxDataError as exc:
        assert "it was replaced by a symlink while being opened" in str(exc), exc
        return "refused"
    assert len(values) == 2, values
    for v in values:
        assert not np.array_equal(v, SECRET), "read outside data"
        assert np.array_equal(v, INSIDE), v
    return "inside"


def test_symlinks_inside_base_dir_are_read_and_out_of_it_refused(folders: Path) -> None:
    """The two ends of the race below, without racing."""
    outside = folders.parent / "outside"
    seq, pb = _symlinked_sequence(folders)
    for load in (lambda: onnxdata.to_numpy(seq, base_dir=folders),
                 lambda: onnxdata.read(pb, "sequence")):
        assert _symlink_try(load) == "inside"
    (folders / "data.bin").unlink()
    (folders / "data.bin").symlink_to(outside / "secret.bin")
    (folders / "dir").unlink()
    (folders / "dir").symlink_to(outside)
    with pytest.raises(onnxdata.ValidationError) as by_message:
        onnxdata.to_numpy(seq, base_dir=folders)
    with pytest.raises(onnxdata.ValidationError) as by_read:
        onnxdata.read(pb, "sequence")
    for info in (by_message, by_read):
        assert [p.path for p in info.value.problems] == ["tensor_values[0].external_data[0]",
                                                         "tensor_values[1].external_data[0]"]
        assert all(_names_outside(p.message) for p in info.value.problems), info.value


def test_swapping_a_symlink_out_of_base_dir_never_reads_outside_data(folders: Path) -> None:
    """A thread swaps base/data.bin (a file symlink) and base/dir (a folder symlink) between
    inside and outside targets while to_numpy and read load them: every one of RACE_TRIES
    tries gives the inside data or refuses the outside location, never outside data."""
    outside = folders.parent / "outside"
    seq, pb = _symlinked_sequence(folders)
    with _running(_swap_link, folders / "data.bin", ("inside.bin", str(outside / "secret.bin"))), \
            _running(_swap_link, folders / "dir", ("dir_in", str(outside))):
        for _ in range(RACE_TRIES):
            for load in (lambda: onnxdata.to_numpy(seq, base_dir=folders),
                         lambda: onnxdata.read(pb, "sequence")):
                assert _symlink_try(load) in ("inside", "refused")


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


#: What a load may say while data.bin swaps between a FIFO and a file: validate's checks
#: of the name (a FIFO is not a file, and stat gives it 0 bytes), or the opened
#: descriptor's (not a regular file).
_NOT_A_FILE = re.compile(r"location 'data\.bin' is not a file in \S+$"
                         r"|location 'data\.bin' is not a regular file$"
                         r"|file 'data\.bin' has 0 bytes but offset 0 \+ 32 bytes runs past "
                         r"its end$")


def _fifo_try(load: Callable[[], Any]) -> str:
    """One load while data.bin swaps: "value" (the inside data) or "refused" (one problem
    of external_data saying the location is no regular file)."""
    try:
        value = load()
    except onnxdata.ValidationError as exc:
        assert len(exc.problems) == 1, exc
        problem = exc.problems[0]
        assert problem.path in ("external_data", "external_data[0]"), problem
        assert _NOT_A_FILE.match(problem.message), problem
        return "refused"
    assert value.tolist() == INSIDE.tolist(), value
    return "value"


def test_a_fifo_swapped_in_is_an_error_never_a_hang(folders: Path) -> None:
    """The old code checked the name, then opened it: a FIFO swapped in between blocked
    the open forever. Run in a child, so a hang fails the test (by the timeout, a guard
    far beyond the run's length) instead of hanging the suite; every one of RACE_TRIES
    tries gives the value or a named refusal."""
    child = textwrap.dedent(f"""
        import json, sys
        from collections import Counter
        from pathlib import Path
        sys.path.insert(0, {str(Path(__file__).parents[2])!r})
        import onnxdata
        from tests.wire.test_external_races import _fifo_try, _swap_fifo, _tensor, _running, INSIDE
        base = Path({str(folders)!r})
        (base / "data.bin").write_bytes(INSIDE.tobytes())
        t = _tensor("data.bin")
        pb = base / "t.pb"
        onnxdata.save(t, pb)
        outcomes = Counter()
        with _running(_swap_fifo, base / "data.bin"):
            for _ in range({RACE_TRIES}):
                outcomes[_fifo_try(lambda: onnxdata.to_numpy(t, base_dir=base))] += 1
                outcomes[_fifo_try(lambda: onnxdata.read(pb, "tensor"))] += 1
        print(json.dumps(outcomes))
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    outcomes = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(outcomes) <= {"value", "refused"}, outcomes
    assert sum(outcomes.values()) == 2 * RACE_TRIES, outcomes


def test_a_fifo_alone_is_refused_and_a_file_read(folders: Path) -> None:
    """The two ends of the race above, without racing."""
    t = _tensor("data.bin")
    pb = folders / "t.pb"
    onnxdata.save(t, pb)
    (folders / "data.bin").write_bytes(INSIDE.tobytes())
    assert _fifo_try(lambda: onnxdata.to_numpy(t, base_dir=folders)) == "value"
    assert _fifo_try(lambda: onnxdata.read(pb, "tensor")) == "value"
    (folders / "data.bin").unlink()
    os.mkfifo(folders / "data.bin")
    assert _fifo_try(lambda: onnxdata.to_numpy(t, base_dir=folders)) == "refused"
    assert _fifo_try(lambda: onnxdata.read(pb, "tensor")) == "refused"


def test_read_external_refuses_a_fifo_without_waiting_for_a_writer(
    folders: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """read_external opens without blocking (a FIFO without a writer would block a plain
    open forever) and refuses what is not a regular file. The open is watched, and one
    that could block fails the test before it is made, so a regression cannot hang it."""
    os.mkfifo(folders / "pipe.bin")
    real_open = os.open
    flags_seen: list[int] = []

    def open_without_blocking(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        flags_seen.append(flags)
        if not flags & os.O_NONBLOCK:
            raise AssertionError(f"read_external opens {path} blocking, without O_NONBLOCK")
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_without_blocking)
    with pytest.raises(onnxdata.ValidationError) as info:
        read_external(folders, "pipe.bin", 0, 4, where="external_data")
    assert info.value.problems == [onnxdata.Problem(
        "external_data", "location 'pipe.bin' is not a regular file")]
    assert len(flags_seen) == 1 and flags_seen[0] & os.O_NOFOLLOW


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
