"""Files and folders replaced whole or not at all: the one place that writes under a
temporary name, fsyncs and renames.

* ``atomic_writer(path)`` yields a file that replaces ``path`` when the block ends without
  error (``save``, ``write``, the explorer's page, the scoreboard);
  ``atomic_writer(path, replace=False)`` creates ``path`` the same way but refuses any
  entry already at that name, a symlink included, which it never follows.
* ``staged_folder(target)`` yields a hidden sibling folder to fill; when the block ends
  without error it is fsynced and put in place of ``target`` with one rename
  (``swap_in``), so ``target`` always names a whole folder (test data sets, made cases).
* ``fsync_folder`` makes a rename in a folder durable.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import hashlib
import os
import re
import secrets
import shutil
import socket
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from onnxdata.errors import OnnxDataError, PathError, path_error

__all__ = ["STALE_SECONDS", "atomic_writer", "fsync_folder", "stage_name", "staged_folder",
           "sweep_stale", "swap_in"]

_TMP_SUFFIX = ".onnxdata-tmp"


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str], *, replace: bool = True
                  ) -> Iterator[IO[bytes]]:
    """Yield a file that replaces ``path`` only when the block finishes without error.

    The data goes to a temporary file in the target's folder, is fsynced, and
    is renamed over the target. On Linux the temporary file is anonymous
    (O_TMPFILE) until the last moment, so a process killed part-way leaves
    nothing behind; elsewhere it is a named file removed on any exception.
    Its name has a fixed short length, so any legal target name saves.

    What the target is decides what is replaced:

    - a symlink is followed: the file it leads to is replaced and the link stays;
    - an existing file keeps its permission bits, and its owner and group where
      the process may set them;
    - an existing target that is not a regular file (a directory, FIFO, socket
      or device) is refused with OnnxDataError and left untouched;
    - a file with several hard links is split from the others, as any atomic
      replacement is: the target's name gets the new bytes, the other names
      keep the old ones.

    With ``replace=False`` the file is new: any entry already named ``path``, a file,
    a folder or a symlink (dangling or not), is refused with OnnxDataError and left as
    it is, and a symlink is never followed. The finished file gets its name with a hard
    link, which fails on a name taken meanwhile, so nothing is ever replaced.

    Errors name ``path`` as the caller gave it, never the temporary name.
    """
    shown = os.fspath(path)
    target = os.path.realpath(shown) if replace else os.path.abspath(shown)
    folder = os.path.dirname(target)
    if replace:
        old = _existing(target, shown)
    else:
        _refuse_taken(target, shown)
        old = None
    try:
        fd, tmp_name = _open_temporary(folder)
    except OSError as exc:
        raise _naming(exc, shown) from exc
    linked = tmp_name is not None
    try:
        if old is not None:
            _keep_owner_and_mode(fd, old)
        try:
            with os.fdopen(fd, "wb", closefd=False) as f:
                yield f
                f.flush()
                os.fsync(fd)
        except OSError as exc:
            if exc.filename is not None:
                raise  # about some other file the block used
            raise _naming(exc, shown) from exc  # a write or fsync of ours: a full disk, EIO
        try:
            if not replace:
                _link_new(fd, folder, tmp_name, target, shown)
            else:
                if tmp_name is None:
                    tmp_name = _short_name()
                    _link_anonymous(fd, folder, tmp_name)
                    linked = True
                os.replace(os.path.join(folder, tmp_name), target)
                linked = False
        except OSError as exc:
            raise _naming(exc, shown) from exc
        fsync_folder(folder)
    finally:
        os.close(fd)
        if linked and tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, tmp_name))


def _existing(target: str, shown: str) -> os.stat_result | None:
    """The target's stat when it exists; OnnxDataError when it is not a regular file."""
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _naming(exc, shown) from exc
    if stat.S_ISDIR(st.st_mode) and target == os.path.abspath(shown):
        raise path_error(IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)), shown,
                         saving=True, hint="it was left as it is")
    if not stat.S_ISREG(st.st_mode):
        what = _FILE_KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
        link = f" (through the symlink, {target})" if target != os.path.abspath(shown) else ""
        raise OnnxDataError(f"cannot save to {shown}: it is {what}{link}, not a regular file; "
                            "it was left as it is")
    return st


def _refuse_taken(target: str, shown: str) -> None:
    """OnnxDataError when anything is named ``target``, a dangling symlink too."""
    if os.path.lexists(target):
        raise OnnxDataError(f"{shown} exists; it is left as it is")


def _link_new(fd: int, folder: str, tmp_name: str | None, target: str, shown: str) -> None:
    """Give the finished file ``fd`` the name ``target`` with a link, which never replaces
    nor follows what is there (a name taken meanwhile: OnnxDataError)."""
    try:
        if tmp_name is None:
            _link_anonymous(fd, folder, os.path.basename(target))
        else:
            os.link(os.path.join(folder, tmp_name), target, follow_symlinks=False)
    except FileExistsError as exc:
        raise OnnxDataError(f"{shown} exists; it is left as it is") from exc


_FILE_KINDS = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO (named pipe)",
               stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
               stat.S_IFBLK: "a block device"}


def _short_name() -> str:
    """A temporary name of fixed length (26 characters), whatever the target's name."""
    return f".onnxdata-{secrets.token_hex(6)}{_TMP_SUFFIX}"


def _open_temporary(folder: str) -> tuple[int, str | None]:
    """A new file in ``folder``: anonymous (name None) where O_TMPFILE works, else named."""
    if hasattr(os, "O_TMPFILE"):
        try:
            return os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o666), None
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EROFS):
                raise  # the named fallback would fail the same way
    name = _short_name()
    return os.open(os.path.join(folder, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), name


def _keep_owner_and_mode(fd: int, old: os.stat_result) -> None:
    """Give the new file the old one's owner and group (where permitted), then its mode."""
    if hasattr(os, "fchown") and (old.st_uid, old.st_gid) != _owner(fd):
        with contextlib.suppress(PermissionError):
            os.fchown(fd, old.st_uid, old.st_gid)
        if old.st_gid != _owner(fd)[1]:  # the owner could not be kept: keep at least the group
            with contextlib.suppress(PermissionError):
                os.fchown(fd, -1, old.st_gid)
    os.fchmod(fd, stat.S_IMODE(old.st_mode))


def _owner(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_uid, st.st_gid


def _naming(exc: OSError, shown: str) -> PathError:
    """``errors.path_error``'s error for saving (OnnxDataError and the same kind of
    OSError), naming the caller's path instead of a temporary name."""
    return path_error(exc, shown, saving=True)


def _link_anonymous(fd: int, folder: str, name: str) -> None:
    """Give the O_TMPFILE file ``fd`` a name in ``folder``.

    A dir_fd makes CPython call linkat(AT_SYMLINK_FOLLOW), which follows the
    /proc/self/fd magic link; plain link() would fail with EXDEV.
    """
    dfd = os.open(folder, os.O_RDONLY)
    try:
        os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=dfd, follow_symlinks=True)
    finally:
        os.close(dfd)


def fsync_folder(folder: str | os.PathLike[str]) -> None:
    """Make the renames in ``folder`` durable, where the platform can open a folder."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def staged_folder(target: Path, *, replace: bool = True) -> Iterator[Path]:
    """Yield a new hidden folder beside ``target`` to fill; put it in ``target``'s place
    when the block finishes without error, remove it on any exception.

    The folder is fsynced, then renamed to ``target``: with ``replace`` through
    ``swap_in``, which replaces an existing folder in one step; without, a plain rename,
    which refuses a folder that is not empty. Its name is ``stage_name``'s: the target's,
    the maker's host and pid, so the leftovers of a killed process are plain to see, and
    the next ``staged_folder`` for the same target removes them (``sweep_stale``).
    """
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        sweep_stale(target.parent, target.name)
        stage = target.parent / stage_name(target.name, "tmp")
        stage.mkdir()
    except FileExistsError as exc:  # a file where a parent folder should be
        raise path_error(NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)),
                         target, saving=True) from exc
    except OSError as exc:
        raise path_error(exc, target, saving=True) from exc
    try:
        yield stage
        fsync_folder(stage)
        if replace:
            swap_in(stage, target)
        else:
            os.rename(stage, target)
            fsync_folder(target.parent)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


def stage_name(name: str, what: str) -> str:
    """A hidden sibling's name for work on ``name``: ``.{name}.onnxdata-{what}-`` then eight
    random hex digits, this host's tag and this process's id, which ``sweep_stale`` reads
    to tell a killed process's leftovers from a running one's."""
    return f".{name}.onnxdata-{what}-{secrets.token_hex(4)}-{_host()}-{os.getpid()}"


#: A leftover without a host and pid in its name (made before they were put there), or
#: made on another host, is removed once it is this old.
STALE_SECONDS = 24 * 3600
_WORK = ("tmp", "old", "outputs")


def sweep_stale(folder: Path, name: str) -> list[Path]:
    """Remove the hidden work folders for ``name`` in ``folder`` (``stage_name``'s, and the
    older ``.{name}.onnxdata-tmp-XXXXXXXX``) whose process is gone: made on this host by a
    pid that no longer runs, or older than STALE_SECONDS. Only our own names, only folders
    (never a symlink, never followed); what cannot be removed is left. Returns those
    removed."""
    pattern = re.compile(rf"\.{re.escape(name)}\.onnxdata-(?:{'|'.join(_WORK)})-[0-9a-f]{{8}}"
                         r"(?:-([0-9a-f]{6})-(\d+))?")
    removed: list[Path] = []
    try:
        entries = os.scandir(folder)
    except OSError:
        return removed
    with entries:
        for entry in entries:
            m = pattern.fullmatch(entry.name)
            if m is None or not entry.is_dir(follow_symlinks=False):
                continue
            try:
                age = _now() - entry.stat(follow_symlinks=False).st_mtime
            except OSError:
                continue
            host, pid = m.group(1), m.group(2)
            ours = host == _host() and pid is not None
            if (ours and not _running(int(pid))) or (not ours and age > STALE_SECONDS):
                shutil.rmtree(entry.path, ignore_errors=True)
                removed.append(Path(entry.path))
    return removed


@functools.lru_cache(maxsize=1)
def _host() -> str:
    """Six hex digits for this host (its name and boot), so a pid is read only where it
    means the process it names."""
    boot = ""
    with contextlib.suppress(OSError), open("/proc/sys/kernel/random/boot_id",
                                            encoding="ascii") as f:
        boot = f.read().strip()
    return hashlib.sha1(f"{socket.gethostname()} {boot}".encode()).hexdigest()[:6]


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process (or a pid we cannot ask about): running
    return True


def _now() -> float:
    return time.time()


def swap_in(tmp: Path, target: Path) -> None:
    """Put the set at ``tmp`` in place of ``target`` with one rename.

    Where the kernel can exchange two names atomically (Linux ``renameat2``
    with ``RENAME_EXCHANGE``), an existing set is swapped with the new one, so
    ``target`` always names a whole set, and whichever set comes back at
    ``tmp`` is removed: concurrent saves each remove what they swapped out and
    leave nothing behind (issue 23, finding 8). Elsewhere the old set is moved
    aside first and removed once the new one is in place.
    """
    for _ in range(100):
        try:
            os.rename(tmp, target)  # no set there yet (or an empty folder)
            fsync_folder(target.parent)
            return
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR, errno.EISDIR):
                raise
        swapped = _exchange(tmp, target)
        if swapped is None:
            continue  # the set there was removed meanwhile: rename again
        if not swapped:
            _move_aside(tmp, target)
            return
        fsync_folder(target.parent)
        _remove(tmp)  # now the set that was there
        return
    raise OSError(errno.EBUSY, "other processes keep replacing it", os.fspath(target))


def _exchange(a: Path, b: Path) -> bool | None:
    """Swap the names ``a`` and ``b`` in one step; False where the kernel cannot, None when
    ``b`` vanished meanwhile (the caller renames again)."""
    fn = _renameat2()
    if fn is None:
        return False
    at_fdcwd = -100
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err == errno.ENOENT:
        return None
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), os.fspath(b))


_RENAME_EXCHANGE = 2


@functools.lru_cache(maxsize=1)
def _renameat2() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


def _move_aside(tmp: Path, target: Path) -> None:
    """The fallback: the old set moved aside, removed only once the new set is in place
    (put back if the rename fails)."""
    old = target.parent / stage_name(target.name, "old")
    os.rename(target, old)
    try:
        os.rename(tmp, target)
    except BaseException:
        os.rename(old, target)
        raise
    fsync_folder(target.parent)
    _remove(old)


def _remove(old: Path) -> None:
    if old.is_dir() and not old.is_symlink():
        shutil.rmtree(old, ignore_errors=True)
    else:
        old.unlink()
