"""save and write never damage what is at the target (issue 10, P3a).

A target that is not a regular file is refused and left as it is; a symlink is
followed and its target replaced; the old file's mode (and owner) is kept; any
legal name saves; errors name the caller's path, never a temporary name.
"""

from __future__ import annotations

import errno
import os
import socket
import stat
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
from onnxdata.io.atomic import atomic_writer, staged_folder

MESSAGE = onnxdata.from_numpy([np.arange(6, dtype=np.float32)], "sequence", name="x")
NEW = onnxdata.serialize(MESSAGE)


def _write(path: Path, value: Any) -> None:
    """onnxdata.write in one place, so its argument order is fixed here alone."""
    onnxdata.write(value, path, "sequence", name="x")


def _saves(path: Path) -> list[Any]:
    """Both ways of saving: save(message) and the streamed write(value)."""
    return [lambda: onnxdata.save(MESSAGE, path),
            lambda: _write(path, [np.arange(6, dtype=np.float32)])]


def _no_temporaries(folder: Path) -> None:
    assert [p.name for p in folder.iterdir() if "onnxdata" in p.name] == []


@pytest.fixture(params=["O_TMPFILE", "named temporary"])
def temporaries(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test with the anonymous temporary file (Linux) and with the named fallback."""
    if request.param == "named temporary":
        monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    elif not hasattr(os, "O_TMPFILE"):
        pytest.skip("this platform has no O_TMPFILE")
    return str(request.param)


def test_saving_over_a_fifo_refuses_and_leaves_the_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.pb"
    os.mkfifo(fifo)
    for save in _saves(fifo):
        with pytest.raises(onnxdata.OnnxDataError, match=f"{fifo}: it is a FIFO"):
            save()
        assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    _no_temporaries(tmp_path)


def test_saving_over_a_character_device_refuses_and_leaves_the_device(tmp_path: Path) -> None:
    device = tmp_path / "null.pb"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # what /dev/null is
    except PermissionError:
        pytest.skip("mknod of a character device needs CAP_MKNOD, which this process lacks")
    before = os.lstat(device)
    for save in _saves(device):
        with pytest.raises(onnxdata.OnnxDataError, match="it is a character device"):
            save()
        after = os.lstat(device)
        assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    _no_temporaries(tmp_path)


def test_saving_over_a_directory_or_a_socket_refuses(tmp_path: Path) -> None:
    folder = tmp_path / "dir.pb"
    folder.mkdir()
    with pytest.raises(IsADirectoryError, match="a folder, not a file; it was left as it is"):
        onnxdata.save(MESSAGE, folder)
    assert folder.is_dir()
    sock_path = tmp_path / "s.pb"
    if len(os.fsencode(sock_path)) >= 100:
        pytest.skip(f"{sock_path} is too long for an AF_UNIX socket address")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(os.fspath(sock_path))
        with pytest.raises(onnxdata.OnnxDataError, match="it is a socket"):
            onnxdata.save(MESSAGE, sock_path)
        assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)


def test_a_symlink_is_followed_its_target_replaced_and_the_link_kept(
    tmp_path: Path, temporaries: str
) -> None:
    elsewhere = tmp_path / "real"
    elsewhere.mkdir()
    target = elsewhere / "data.pb"
    for i, save in enumerate(_saves(tmp_path / "link.pb")):
        target.write_bytes(b"old")
        link = tmp_path / "link.pb"
        if not link.is_symlink():
            link.symlink_to(Path("real") / "data.pb")  # relative, as links often are
        save()
        assert link.is_symlink() and os.readlink(link) == os.path.join("real", "data.pb")
        assert target.read_bytes() == NEW, f"save #{i}"
    _no_temporaries(tmp_path)
    _no_temporaries(elsewhere)


def test_a_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    link = tmp_path / "link.pb"
    link.symlink_to(tmp_path / "new.pb")
    onnxdata.save(MESSAGE, link)
    assert link.is_symlink() and (tmp_path / "new.pb").read_bytes() == NEW


def test_a_0600_file_stays_0600(tmp_path: Path, temporaries: str) -> None:
    target = tmp_path / "secret.pb"
    for mode in (0o600, 0o640, 0o755):
        for save in _saves(target):
            target.write_bytes(b"old")
            target.chmod(mode)
            save()
            assert stat.S_IMODE(target.stat().st_mode) == mode
            assert target.read_bytes() == NEW


def test_a_new_file_gets_the_usual_mode(tmp_path: Path) -> None:
    umask = os.umask(0o022)
    try:
        onnxdata.save(MESSAGE, tmp_path / "new.pb")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.pb").stat().st_mode) == 0o644


def test_owner_and_group_are_kept_where_permitted(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root may give a file another owner, so the test needs root")
    target = tmp_path / "theirs.pb"
    target.write_bytes(b"old")
    os.chown(target, 1234, 5678)
    onnxdata.save(MESSAGE, target)
    st = target.stat()
    assert (st.st_uid, st.st_gid) == (1234, 5678)


def test_a_name_of_255_characters_saves(tmp_path: Path, temporaries: str) -> None:
    target = tmp_path / ("n" * 252 + ".pb")
    assert len(target.name) == 255
    for save in _saves(target):
        save()
        assert target.read_bytes() == NEW
    _no_temporaries(tmp_path)


def test_errors_name_the_callers_path_not_the_temporary(tmp_path: Path, temporaries: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nodir" / "x.pb"
    for save in _saves(missing):
        with pytest.raises(FileNotFoundError) as info:
            save()
        assert info.value.filename == os.fspath(missing)
        assert "onnxdata" not in str(info.value)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("call", "error"), [("replace", errno.EXDEV), ("fsync", errno.ENOSPC)],
                         ids=["a failed replace", "a full disk"])
def test_a_failed_save_names_the_callers_path_and_leaves_the_old_file_whole(
    tmp_path: Path, temporaries: str, monkeypatch: pytest.MonkeyPatch, call: str, error: int
) -> None:
    """A rename refused (EXDEV) or a write that cannot reach the disk (ENOSPC at fsync):
    the error is the same kind, naming the caller's path, and the old file keeps its bytes
    and mode."""
    target = tmp_path / "v.pb"
    target.write_bytes(b"old contents")
    target.chmod(0o600)

    def fail(*args: Any) -> None:
        raise OSError(error, os.strerror(error), *args[:1] if call == "replace" else ())

    monkeypatch.setattr(os, call, fail)
    for save in _saves(target):
        with pytest.raises(OSError, match=os.strerror(error)) as info:
            save()
        assert info.value.errno == error and info.value.filename == os.fspath(target)
        assert "onnxdata" not in str(info.value)
        assert target.read_bytes() == b"old contents"
        assert stat.S_IMODE(target.stat().st_mode) == 0o600
        assert sorted(os.listdir(tmp_path)) == ["v.pb"]


def test_an_exception_in_the_block_leaves_the_old_file_whole(tmp_path: Path,
                                                              temporaries: str) -> None:
    target = tmp_path / "v.pb"
    target.write_bytes(b"old contents")
    with pytest.raises(RuntimeError), atomic_writer(target) as f:
        f.write(b"half")
        raise RuntimeError("boom")
    assert target.read_bytes() == b"old contents"
    assert sorted(os.listdir(tmp_path)) == ["v.pb"]


def test_hard_links_are_split_as_documented(tmp_path: Path) -> None:
    """Atomic replacement gives the name new bytes; another hard link keeps the old ones."""
    target = tmp_path / "v.pb"
    target.write_bytes(b"old")
    os.link(target, tmp_path / "other.pb")
    onnxdata.save(MESSAGE, target)
    assert target.read_bytes() == NEW
    assert (tmp_path / "other.pb").read_bytes() == b"old"
    assert "hard link" in (atomic_writer.__doc__ or "")


def test_save_and_serialize_of_a_non_message_are_type_errors(tmp_path: Path) -> None:
    for bad in (None, "text", np.zeros(3), [MESSAGE]):
        with pytest.raises(TypeError, match="protobuf message"):
            onnxdata.serialize(bad)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="protobuf message"):
            onnxdata.save(bad, tmp_path / "x.pb")  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_a_new_file_never_replaces_nor_follows_a_name_taken_meanwhile(
        tmp_path: Path, temporaries: str) -> None:
    """``atomic_writer(replace=False)``: the finished file gets its name with a link, which
    refuses a name planted while the block ran (here a symlink) and writes nothing through it."""
    target, outside = tmp_path / "model.onnx", tmp_path / "outside.onnx"
    with pytest.raises(onnxdata.OnnxDataError, match="exists; it is left as it is"), \
            atomic_writer(target, replace=False) as f:
        f.write(b"new")
        os.symlink(outside, target)
    assert os.readlink(target) == os.fspath(outside) and not outside.exists()
    assert sorted(os.listdir(tmp_path)) == ["model.onnx"]
    os.unlink(target)
    with atomic_writer(target, replace=False) as f:
        f.write(b"new")
    assert target.read_bytes() == b"new" and sorted(os.listdir(tmp_path)) == ["model.onnx"]


def test_a_staged_folder_is_put_in_place_whole_or_not_at_all(tmp_path: Path) -> None:
    target = tmp_path / "set"
    target.mkdir()
    (target / "old.pb").write_bytes(b"old")
    with pytest.raises(RuntimeError), staged_folder(target) as stage:
        (stage / "new.pb").write_bytes(b"half")
        raise RuntimeError("boom")
    assert sorted(os.listdir(tmp_path)) == ["set"] and os.listdir(target) == ["old.pb"]
    with pytest.raises(OSError), staged_folder(target, replace=False) as stage:
        (stage / "new.pb").write_bytes(b"new")  # a folder that is not empty is not replaced
    assert sorted(os.listdir(tmp_path)) == ["set"] and os.listdir(target) == ["old.pb"]
    with staged_folder(target) as stage:
        (stage / "new.pb").write_bytes(b"new")
    assert sorted(os.listdir(tmp_path)) == ["set"] and os.listdir(target) == ["new.pb"]
