"""The bytes the engine walks: a buffer in memory, or a file read so that no change to it
can crash the process.

A mapped file that another process truncates raises SIGBUS on the next touch of
a lost page, and Python cannot turn a signal into an exception. So the engine
never reads tags, lengths, varints or strings from a mapping: a file
``Source`` serves them with ``os.pread`` through a cached window (64 KiB,
larger when one message needs it), and a read that comes back short is a
``DecodeError`` saying the file changed. Only bulk payloads that ``read``
returns as zero-copy arrays are mapped (``mode="mmap"``); ``mode="copy"`` reads
the file once into one buffer and views into that; ``mode="pread"`` (what
validation, the explorer and the CLI use) maps nothing at all.

``finish()`` compares the file's size and mtime with those at the start and
raises ``DecodeError("... file changed while reading")`` when they differ.

Descriptors: on Python >= 3.13 the mapping is made with ``trackfd=False``, so a
live ``read`` result holds no descriptor. Older Pythons' ``mmap`` keeps a
duplicate of the descriptor as long as the mapping lives (one per live result).
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import stat
import sys
from typing import Any, Final, Literal

import numpy as np
import numpy.typing as npt

from onnxdata.errors import DecodeError
from onnxdata.wire import WireBuffer

__all__ = ["WINDOW", "Mode", "Source"]

#: Bytes fetched per pread when the walk needs bytes that are not cached.
WINDOW: Final = 1 << 16
#: The window read after a jump past a big payload: the next field's header is what is
#: wanted (the heads of a sequence's 40 KB tensors: 4 KiB each, not 64 KiB).
_HOP_WINDOW: Final = 1 << 12
#: Payloads decoded in pieces of this size when they are read rather than mapped.
PIECE: Final = 1 << 24

Mode = Literal["mmap", "copy", "pread"]
_U8: Final = np.dtype(np.uint8)


class Source:
    """Bytes to walk: ``window``, ``read`` and ``u8`` for the walk, ``array`` for results."""

    def __init__(self, name: str, size: int, *, data: WireBuffer | None = None,
                 fd: int | None = None, mapping: mmap.mmap | None = None,
                 stamp: tuple[int, int] | None = None) -> None:
        self.name = name
        self.size = size
        self._data = data  # whole buffer in memory (bytes, copy, or user's buffer)
        self._fd = fd
        self._mapping = mapping
        self._stamp = stamp
        self._win: bytes = b""
        self._win_at = 0
        self._np: npt.NDArray[np.uint8] | None = None
        #: The root message's fields, once walked (``walk.root_fields``).
        self.root_cache: Any = None
        #: Facts of packed varint fields already counted (``payloads.measure``): two
        #: readings of the root often see the same field (a map's keys, a sparse's dims).
        self.measured: dict[Any, tuple[int, bool, bool]] = {}

    # -- opening

    @classmethod
    def of_buffer(cls, data: WireBuffer, name: str = "<bytes>") -> Source:
        return cls(name, len(data), data=data)

    @classmethod
    def of_file(cls, path: str, mode: Mode = "pread") -> Source:
        """A file's bytes; the descriptor stays open until ``close`` (pread and mmap modes)."""
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
            if not stat.S_ISREG(st.st_mode):  # a pipe, FIFO or device: its bytes as they come
                data = _read_stream(fd)
                os.close(fd)
                return cls(path, len(data), data=data)
            stamp = (st.st_size, st.st_mtime_ns)
            size = st.st_size
            if mode == "copy":
                buf = bytearray(size)
                got = _readinto(fd, buf)
                if got != size:
                    raise DecodeError(f"the file changed while reading: {got} of {size} bytes "
                                      "could be read", source=path)
                # the descriptor stays open until close, for finish's fstat
                return cls(path, size, data=memoryview(buf).toreadonly(), fd=fd, stamp=stamp)
            mapping = None
            if mode == "mmap" and size:
                try:
                    kwargs: dict[str, Any] = {"trackfd": False} if sys.version_info >= (3, 13) \
                        else {}
                    mapping = mmap.mmap(fd, size, access=mmap.ACCESS_READ, **kwargs)
                except (OSError, ValueError):
                    mapping = None
            return cls(path, size, fd=fd, mapping=mapping, stamp=stamp)
        except BaseException:
            with contextlib.suppress(OSError):
                os.close(fd)
            raise

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- checks

    def changed(self, what: str) -> DecodeError:
        return DecodeError(f"the file changed while reading ({what})", source=self.name)

    def finish(self) -> None:
        """Raise DecodeError when the file's size or mtime differ from those at the start."""
        if self._stamp is None or self._fd is None:
            return
        st = os.fstat(self._fd)
        if (st.st_size, st.st_mtime_ns) != self._stamp:
            raise self.changed(f"size {self._stamp[0]} -> {st.st_size} bytes, or rewritten")

    def check(self) -> None:
        """Before touching mapped pages: the file still holds every byte mapped."""
        if self._mapping is not None and self._fd is not None:
            now = os.fstat(self._fd).st_size
            if now < self.size:
                raise self.changed(f"it shrank from {self.size} to {now} bytes")

    # -- bytes for the walk (never from a mapping)

    def window(self, start: int, end: int) -> tuple[Any, int]:
        """A buffer holding bytes ``[start, end)`` and the offset of its first byte."""
        data = self._data
        if data is not None:
            return data, 0
        at = self._win_at
        if start >= at and end <= at + len(self._win):
            return self._win, at
        near = start <= at + len(self._win) + _HOP_WINDOW  # reading on, not past a payload
        want = max(end - start, WINDOW if near else _HOP_WINDOW)
        want = min(want, self.size - start)
        chunk = self._pread(start, want)
        if len(chunk) < end - start:
            raise self.changed(f"{end - start} bytes at {start} asked, {len(chunk)} there")
        self._win, self._win_at = chunk, start
        return chunk, start

    def read(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` as a new bytes object."""
        if self._data is not None:
            return bytes(self._data[start:end])
        buf, at = self.window(start, end) if end - start <= WINDOW else (
            self._exact(start, end), start)
        return bytes(buf[start - at:end - at])

    def peek(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` read alone, with no window around them: for small reads
        far apart (the heads of big elements)."""
        if self._data is not None:
            return bytes(self._data[start:end])
        return self._exact(start, end)

    def u8(self, start: int, end: int) -> npt.NDArray[np.uint8]:
        """Payload bytes to decode (varints, indices): a view of memory or of the mapping, or
        a pread copy."""
        if self._data is not None:
            return np.frombuffer(self._data, dtype=_U8, count=end - start, offset=start)
        if self._mapping is not None:
            self.check()
            return self._whole()[start:end]
        if end - start <= WINDOW:
            buf, at = self.window(start, end)
            return np.frombuffer(buf, dtype=_U8, count=end - start, offset=start - at)
        return np.frombuffer(self._exact(start, end), dtype=_U8)

    def array(self, dtype: npt.DTypeLike, start: int, count: int) -> npt.NDArray[Any]:
        """``count`` items of ``dtype`` at ``start``: zero-copy from memory or the mapping."""
        dt = np.dtype(dtype)
        if self._data is not None:
            return np.frombuffer(self._data, dtype=dt, count=count, offset=start)
        if self._mapping is not None:
            self.check()
            return self._whole()[start:start + count * dt.itemsize].view(dt)
        return np.frombuffer(self._exact(start, start + count * dt.itemsize), dtype=dt)

    def buffer(self) -> Any:
        """What ``from_le_bytes`` views: the memory buffer, the mapping, or None (pread)."""
        if self._data is not None:
            return self._data
        if self._mapping is not None:
            self.check()
            return self._mapping
        return None

    def whole(self) -> npt.NDArray[np.uint8] | None:
        """Every byte as one uint8 array (memory or mapping; None when nothing is mapped).
        Slicing it is the cheapest way to a zero-copy view; reading it is the caller's
        business (``check`` first, for a mapping)."""
        if self._np is None:
            base = self._data if self._data is not None else self._mapping
            if base is None:
                return None
            self._np = np.frombuffer(base, dtype=_U8)
        return self._np

    def _whole(self) -> npt.NDArray[np.uint8]:
        whole = self.whole()
        assert whole is not None
        return whole

    def _exact(self, start: int, end: int) -> bytes:
        chunk = self._pread(start, end - start)
        if len(chunk) != end - start:
            raise self.changed(f"{end - start} bytes at {start} asked, {len(chunk)} there")
        return chunk

    def _pread(self, start: int, n: int) -> bytes:
        if self._fd is None:
            raise DecodeError("the file is closed", source=self.name)
        if n <= 0:
            return b""
        parts: list[bytes] = []
        got = 0
        while got < n:
            part = os.pread(self._fd, n - got, start + got)
            if not part:
                break
            parts.append(part)
            got += len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)


def _read_stream(fd: int) -> bytes:
    """Everything a pipe, FIFO or device gives until its end (its size says nothing)."""
    parts: list[bytes] = []
    while True:
        part = os.read(fd, 1 << 20)
        if not part:
            return b"".join(parts)
        parts.append(part)


def _readinto(fd: int, buf: bytearray) -> int:
    view = memoryview(buf)
    got = 0
    while got < len(buf):
        n = os.readv(fd, [view[got:]])
        if n == 0:
            break
        got += n
    return got
