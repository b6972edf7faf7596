"""Reading a tensor's external data without races: one open, checks on the descriptor.

Resolving a location and then opening it by name leaves a window in which
another process can swap the name for a symlink to a file outside the base
folder, or for a FIFO that blocks the read forever. :func:`read_external`
closes that window: it opens the file once (``O_NOFOLLOW | O_NONBLOCK``),
and every later check and the read itself go through that descriptor:

- ``fstat`` on the descriptor: regular files only, and ``offset + length``
  within its size, before anything is allocated;
- the file's real location, from the descriptor (``/proc/self/fd``, or where
  there is no such folder, device and inode compared with the resolved
  name's), must lie inside the base folder;
- the bytes count in the call's memory budget (``budget.spend``, the densify
  limit) before the buffer is made;
- the bytes are read with ``pread`` into one buffer and the descriptor is
  closed before returning, so no descriptor is held per tensor and a file
  truncated later cannot fault a mapping (the data is a copy).

Symlinks that stay inside the base folder still work: the name is resolved
first, and the resolved name is what is opened with ``O_NOFOLLOW``.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Union

import numpy as np

from onnxdata.core.budget import get_densify_limit, spend
from onnxdata.errors import OnnxDataError, Problem, ValidationError

__all__ = ["OpenFiles", "read_external"]

StrPath = Union[str, "os.PathLike[str]"]

_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
          | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
#: Bytes per pread call: Linux moves at most about 2 GiB per call anyway.
_CHUNK = 1 << 30
#: Reads of at most this many bytes are one pread into a bytes object: no holes to skip
#: for so few bytes, and two syscalls fewer than the general read (issue 18: 15,000
#: tensors of 8 bytes).
_SMALL = 1 << 16


class OpenFiles:
    """External files opened and checked once for one walk (a file of 15,000 tensors in one
    weights file: one open, not 15,000), read through their kept descriptors, which
    ``close`` closes; the walk closes it before it returns. A name swapped for a symlink
    after the open changes nothing: the descriptor is the file that was checked."""

    def __init__(self, most: int = 64) -> None:
        self.most = most
        self._fds: dict[tuple[str, str], int] = {}
        self._bases: dict[str, str] = {}

    def base(self, base_dir: StrPath) -> str:
        """``base_dir`` resolved, once for the walk."""
        name = os.fspath(base_dir)
        got = self._bases.get(name)
        if got is None:
            got = self._bases[name] = os.path.realpath(name)
        return got

    def get(self, base: str, location: str) -> int | None:
        return self._fds.get((base, location))

    def keep(self, base: str, location: str, fd: int) -> bool:
        if len(self._fds) >= self.most:
            return False
        self._fds[(base, location)] = fd
        return True

    def close(self) -> None:
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            os.close(fd)


def read_external(base_dir: StrPath, location: str, offset: int, length: int, *,
                  where: str, files: OpenFiles | None = None) -> memoryview:
    """``length`` bytes at ``offset`` of ``location`` inside ``base_dir``, read-only.

    ``where`` is the path of the tensor's ``external_data`` for errors. A file
    outside ``base_dir``, one that is not a regular file, or one too short
    raises ValidationError; a file that cannot be opened or read raises
    OnnxDataError naming the location. With ``io.load_save``, a file it opened and
    checked before is read through that descriptor again.
    """
    base = files.base(base_dir) if files is not None else os.path.realpath(os.fspath(base_dir))
    fd = files.get(base, location) if files is not None else None
    kept = fd is not None
    if fd is None:
        fd = _open_inside(base, location, where)
    try:
        st = os.fstat(fd)
        if offset + length > st.st_size:
            raise _refuse(where, f"file {location!r} has {st.st_size} bytes but offset {offset}"
                                 f" + {length} bytes runs past its end")
        spend(length, get_densify_limit(), where, f"{location!r}", "reading external data")
        data = _pread_all(fd, offset, length, where, location)
        if not kept and files is not None:
            kept = files.keep(base, location, fd)
        return data
    except OSError as exc:
        raise _unreadable(where, location, exc) from exc
    finally:
        if not kept:
            os.close(fd)


def _open_inside(base: str, location: str, where: str) -> int:
    """A descriptor of ``location``, checked: a regular file really inside ``base``."""
    resolved = os.path.realpath(os.path.join(base, location))
    if os.path.isabs(location) or not _inside(resolved, base):
        raise _refuse(where, f"location {location!r} resolves to {resolved}, outside "
                             f"base_dir {base}")
    try:
        fd = os.open(resolved, _FLAGS)
    except OSError as exc:
        raise _unreadable(where, location, exc) from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _refuse(where, f"location {location!r} is not a regular file")
        real = _real_location(fd, resolved, st)
        if real is None or not _inside(real, base):
            raise _refuse(where, f"location {location!r} was opened at "
                                 f"{real or 'an unknown place'}, outside base_dir {base}")
    except OSError as exc:
        os.close(fd)
        raise _unreadable(where, location, exc) from exc
    except BaseException:
        os.close(fd)
        raise
    return fd


def _inside(path: str, base: str) -> bool:
    try:
        return os.path.commonpath([base, path]) == base
    except ValueError:  # different drives
        return False


def _real_location(fd: int, resolved: str, st: os.stat_result) -> str | None:
    """Where the open file really is: from /proc, else ``resolved`` if it is still that file."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
    try:
        now = os.stat(resolved, follow_symlinks=False)
    except OSError:
        return None
    return resolved if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino) else None


def _pread_all(fd: int, offset: int, length: int, where: str, location: str) -> memoryview:
    """The bytes into one zeroed buffer (``np.zeros``: pages the kernel maps on first
    touch), reading only the file's data and leaving its holes untouched, so a sparse
    file's holes cost no memory. A small read is one pread (``_pread_small``)."""
    if length <= _SMALL:
        return _pread_small(fd, offset, length, where, location)
    buf = np.zeros(length, np.uint8)
    view = memoryview(buf.data)
    for a, b in _data_extents(fd, offset, offset + length):
        done = a
        while done < b:
            part = view[done - offset:min(b, done + _CHUNK) - offset]
            n = (os.preadv(fd, [part], done) if hasattr(os, "preadv")
                 else _pread_into(fd, part, done))
            if n == 0:
                raise _refuse(where, f"file {location!r} ended after {done} bytes while "
                                     "it was being read (truncated by another process?)")
            done += n
    if os.fstat(fd).st_size < offset + length:  # a hole past a new end reads as no data
        raise _refuse(where, f"file {location!r} shrank below {offset + length} bytes while "
                             "it was being read (truncated by another process?)")
    return view.toreadonly()


def _pread_small(fd: int, offset: int, length: int, where: str, location: str) -> memoryview:
    """``length`` bytes at ``offset``, read-only: a file that ends before them (truncated
    since it was checked) is refused, as the general read refuses it."""
    data = os.pread(fd, length, offset)
    while len(data) < length:
        more = os.pread(fd, length - len(data), offset + len(data))
        if not more:
            raise _refuse(where, f"file {location!r} ended after {offset + len(data)} bytes "
                                 "while it was being read (truncated by another process?)")
        data += more
    return memoryview(data)


def _data_extents(fd: int, start: int, end: int) -> list[tuple[int, int]]:
    """The parts of ``[start, end)`` that hold data (SEEK_DATA/SEEK_HOLE); the whole range
    where the system cannot say."""
    seek_data, seek_hole = getattr(os, "SEEK_DATA", None), getattr(os, "SEEK_HOLE", None)
    if seek_data is None or seek_hole is None or start >= end:
        return [(start, end)] if start < end else []
    out: list[tuple[int, int]] = []
    at = start
    try:
        while at < end:
            try:
                a = os.lseek(fd, at, seek_data)
            except OSError as exc:
                if exc.errno == errno.ENXIO:  # no data past `at`
                    break
                raise
            if a >= end:
                break
            b = min(os.lseek(fd, a, seek_hole), end)
            out.append((a, b))
            at = b
    except OSError:
        return [(start, end)]
    return out


def _pread_into(fd: int, view: memoryview, offset: int) -> int:
    data = os.pread(fd, len(view), offset)
    view[:len(data)] = data
    return len(data)


def _refuse(where: str, message: str) -> ValidationError:
    return ValidationError([Problem(where, message)])


def _unreadable(where: str, location: str, exc: OSError) -> OnnxDataError:
    why = exc.strerror or str(exc)
    if exc.errno == errno.ELOOP:
        why = "it was replaced by a symlink while being opened"
    return OnnxDataError(f"{where}: cannot read external data {location!r}: {why}")
