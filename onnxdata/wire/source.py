"""The bytes the engine walks: a buffer in memory, or a file read so that no change to it
can crash the process.

A mapped file that another process truncates raises SIGBUS on the next touch of
a lost page, and Python cannot turn a signal into an exception. So the engine
never reads tags, lengths, varints or strings from a mapping: a file
``Source`` serves them with ``os.pread`` through a cached window (64 KiB,
larger when one message needs it; a file of at most 2 MiB is one window), and a
read that comes back short is a ``DecodeError`` saying the file changed. Only bulk
payloads that ``read`` returns as zero-copy arrays are mapped (``mode="mmap"``);
``mode="copy"`` (what the CLI's ``show`` and ``diff`` use) reads the file into one
buffer that was the file at one instant (``read_settled``: a read a write overlapped
is retried, then refused) and views into that; ``mode="pread"`` (validation, the
explorer) maps nothing at all.

``finish()`` compares the file's size and mtime with those at the start and
raises ``DecodeError("... file changed while reading")`` when they differ.

A pipe, FIFO or device is read to its end, at most ``get_stream_limit()`` bytes
(``STREAM_LIMIT``, 1 GiB, by default; the CLI's ``--max-bytes``).

Descriptors: on Python >= 3.13 the mapping is made with ``trackfd=False``, so a
live ``read`` result holds no descriptor. Older Pythons' ``mmap`` keeps a
duplicate of the descriptor as long as the mapping lives (one per live result).
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import select
import stat
import sys
import time
from typing import Any, Final, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from onnxdata.errors import DecodeError, path_error
from onnxdata.wire.format import WireBuffer
from onnxdata.wire.loops import walk_loop

__all__ = ["SMALL", "STREAM_LIMIT", "WHOLE", "WINDOW", "Buffer", "Mode", "Source", "byte_buffer",
           "get_stream_limit", "open_checked", "read_checked", "read_settled",
           "set_stream_limit"]

#: Bytes fetched per pread when the walk needs bytes that are not cached.
WINDOW: Final = 1 << 16
#: A file this small is read whole when the walk reads on past its first window: one more
#: pread, where windows would take up to 32 and a sequence's elements would be read a second
#: time. (Not at the first window: a file of one big tensor needs only its head.)
WHOLE: Final = 1 << 21
#: A file this small is read as in "copy" mode where "mmap" is asked: the first window reads
#: all of it anyway, and mapping it costs more than the copy (mmap, munmap, a page fault,
#: and an fstat before each payload is viewed). Its values are views of that one copy.
SMALL: Final = WINDOW
#: The window read after a jump past a big payload: the next field's header is what is
#: wanted (the heads of a sequence's 40 KB tensors: 4 KiB each, not 64 KiB).
_HOP_WINDOW: Final = 1 << 12

Mode = Literal["mmap", "copy", "pread"]
#: The bytes in memory that onnxdata reads.
Buffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap
_U8: Final = np.dtype(np.uint8)


def byte_buffer(data: object, who: str) -> Buffer:
    """``data`` as a flat buffer of bytes: bytes, bytearray and mmap as they are, any other
    C-contiguous buffer (a numpy array, a 2-D memoryview) viewed as its bytes.

    TypeError, naming ``who``, for something that is not a contiguous buffer.
    """
    if isinstance(data, (bytes, bytearray, mmap.mmap)):
        return data
    if isinstance(data, memoryview) and data.ndim == 1 and data.format == "B" and \
            data.c_contiguous:
        return data  # (one of "b" or "c", or strided, is cast or refused below: the
        # compiled walk takes unsigned bytes, and a stride would skip bytes)
    try:
        view = memoryview(data)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{who} takes bytes, bytearray, memoryview or mmap, not "
                        f"{type(data).__name__}") from None
    if not view.c_contiguous:
        raise TypeError(f"{who} takes a contiguous buffer; this {type(data).__name__} is not "
                        "contiguous (copy it with bytes() first)")
    if view.nbytes == 0:  # cast refuses a view with a 0 in its shape
        return b""
    return view.cast("B")


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
        #: Whether the walk's second window is the whole file (one pread of at most WHOLE
        #: bytes); a test sets it False to walk a small file a window at a time.
        self.read_whole = size <= WHOLE
        self._np: npt.NDArray[np.uint8] | None = None
        self._np_of_win: bytes | None = None  # the window ``_np`` views, if it views one
        #: The root message's fields, once walked (``walk.root_fields``).
        self.root_cache: Any = None
        #: Facts of packed varint fields already counted (``field_values.measure``): two
        #: readings of the root often see the same field (a map's keys, a sparse's dims).
        self.measured: dict[Any, tuple[int, bool, bool]] = {}

    # -- opening

    @classmethod
    def of_buffer(cls, data: WireBuffer, name: str = "<bytes>") -> Source:
        return cls(name, len(data), data=data)

    @classmethod
    def of_file(cls, path: str, mode: Mode = "pread") -> Source:
        """A file's bytes; the descriptor stays open until ``close`` (pread and mmap modes;
        an "mmap" file of at most SMALL bytes is read as "copy" reads it: by the compiled
        ``small_file`` where it takes it, one call for what ``_read_at_once`` does)."""
        opened = None
        if mode != "pread" and _SMALL_FILE is not None:
            opened = _SMALL_FILE(path, SMALL, SETTLED_NS)
            if isinstance(opened, bytes):
                return cls(path, len(opened), data=opened)
        # (settled: a stamp to trust)
        fd, st = open_checked(path, settle=mode != "pread", opened=opened)
        try:
            if not stat.S_ISREG(st.st_mode):  # a pipe, FIFO or device: its bytes as they come
                data = _read_stream(fd, path, st)
                os.close(fd)
                return cls(path, len(data), data=data)
            stamp = (st.st_size, st.st_mtime_ns)
            size = st.st_size
            if mode == "copy" or (mode == "mmap" and size <= SMALL):
                # one instant's bytes, or DecodeError; no descriptor kept
                once = _read_at_once(fd, st) if size <= SMALL else None
                settled = once if once is not None else read_settled(fd, path)
                os.close(fd)
                return cls(path, len(settled), data=settled)
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
        if self.read_whole and self._win:
            # a small file walked past its first window: one pread of it all. (A file of
            # one big tensor gets here only for a field after the payload: its payload is
            # then a view of this read, where it is not mapped. Hop windows here, tried,
            # cost explore of some small files up to 121 preads and 4x the bytes.)
            at, want = 0, self.size
        else:
            at, want = start, max(end - start, WINDOW if near else _HOP_WINDOW)
            want = min(want, self.size - start)
        chunk = self._pread(at, want)
        if len(chunk) < end - at:
            there = max(0, len(chunk) + at - start)  # (0 when the file shrank below start)
            raise self.changed(f"{end - start} bytes at {start} asked, {there} there")
        self._win, self._win_at = chunk, at
        return chunk, at

    def read(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` as a new bytes object."""
        if self._data is not None:
            return bytes(self._data[start:end])
        buf, at = self.window(start, end) if end - start <= WINDOW else (
            self._held(start, end), start)
        return bytes(buf[start - at:end - at])

    def peek(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` read alone, with no window around them: for small reads
        far apart (the heads of big elements)."""
        if self._data is not None:
            return bytes(self._data[start:end])
        return self._exact(start, end)

    def u8(self, start: int, end: int) -> npt.NDArray[np.uint8]:
        """Payload bytes to decode (varints, indices): a view of memory, of the window when it
        holds them (a small file read whole: no page of the mapping touched, no fstat), of
        the mapping, or a pread copy."""
        if self._data is not None:
            return np.frombuffer(self._data, dtype=_U8, count=end - start, offset=start)
        held = self._in_window(start, end)
        if held is not None:
            return np.frombuffer(held, dtype=_U8)
        if self._mapping is not None:
            self.check()
            return self._whole()[start:end]
        if end - start <= WINDOW:
            buf, at = self.window(start, end)
            return np.frombuffer(buf, dtype=_U8, count=end - start, offset=start - at)
        return np.frombuffer(self._held(start, end), dtype=_U8)

    def array(self, dtype: npt.DTypeLike, start: int, count: int) -> npt.NDArray[Any]:
        """``count`` items of ``dtype`` at ``start``: zero-copy from memory, the whole-file
        read or the mapping."""
        dt = np.dtype(dtype)
        data = self.in_memory()
        if data is not None:
            return np.frombuffer(data, dtype=dt, count=count, offset=start)
        if self._mapping is not None:
            self.check()
            return self._whole()[start:start + count * dt.itemsize].view(dt)
        return np.frombuffer(self._held(start, start + count * dt.itemsize), dtype=dt)

    def in_memory(self) -> WireBuffer | None:
        """The bytes when they are in memory: a buffer, a file read as one copy, or a file
        the walk has read whole (``read_whole``: its one window is every byte). None for a
        mapped or pread file not read whole.

        A mapped file read whole gives its later payloads as views of that read, not of the
        mapping: the walk holds those bytes anyway, and mapped views would keep the file's
        pages resident besides, twice its size (a 1 MB set of 58,000 tensors: 10.9 MiB of
        peak RSS growth -> 9.9)."""
        if self._data is not None:
            return self._data
        if self._win_at == 0 and len(self._win) == self.size and self.size:
            return self._win
        return None

    def buffer(self) -> Any:
        """What ``from_le_bytes`` views: the bytes in memory, the mapping, or None (pread)."""
        data = self.in_memory()
        if data is not None:
            return data
        if self._mapping is not None:
            self.check()
            return self._mapping
        return None

    def whole(self) -> npt.NDArray[np.uint8] | None:
        """Every byte as one uint8 array (memory or mapping; None when nothing is mapped).
        Slicing it is the cheapest way to a zero-copy view; reading it is the caller's
        business (``check`` first, for a mapping)."""
        if self._np is None or (self._np_of_win is not self._win and
                                self.in_memory() is self._win):
            base = self.in_memory()
            if base is not None:
                self._np_of_win = self._win if base is self._win else None
            elif self._mapping is not None:
                base = self._mapping
            else:
                return None
            self._np = np.frombuffer(base, dtype=_U8)
        return self._np

    def _whole(self) -> npt.NDArray[np.uint8]:
        whole = self.whole()
        assert whole is not None
        return whole

    def _held(self, start: int, end: int) -> bytes | memoryview:
        """Bytes ``[start, end)``: a view of the window when it holds them (a small file read
        whole), else a pread of them alone."""
        held = self._in_window(start, end)
        return held if held is not None else self._exact(start, end)

    def _in_window(self, start: int, end: int) -> memoryview | None:
        """Bytes ``[start, end)`` as a view of the window, where it holds them."""
        at = self._win_at
        if start >= at and end <= at + len(self._win):
            return memoryview(self._win)[start - at:end - at]
        return None

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


def get_stream_limit() -> int:
    """The most bytes read from a pipe, FIFO or device (``set_stream_limit``)."""
    return _stream_limit


def set_stream_limit(nbytes: int) -> None:
    """Read at most ``nbytes`` from a non-regular input (default ``STREAM_LIMIT``, 1 GiB);
    past it the read stops with ``DecodeError`` (``/dev/zero`` never ends)."""
    global _stream_limit
    if nbytes < 0:
        raise ValueError(f"the stream limit must be >= 0, not {nbytes}")
    _stream_limit = int(nbytes)


def open_checked(path: str, *, settle: bool = False, opened: int | None = None,
                 kind: str = "") -> tuple[int, os.stat_result]:
    """``path`` opened for reading, and its stat: a descriptor that never blocks in ``open``
    (a FIFO with no writer would wait there forever), blocking again for the reads. A path
    that cannot be opened, or a folder, is ``errors.path_error``'s (a DecodeError that is
    also FileNotFoundError, IsADirectoryError, ...), naming it (``kind``: what it should
    hold). ``settle``: the stat is taken after waiting for a write under way
    (``_wait_for_writes``), so it is a stamp a settled read can trust. ``opened``: a
    descriptor ``_walk.small_file`` opened and waited on already."""
    try:
        fd = os.open(path, _OPEN_FLAGS) if opened is None else opened
    except OSError as exc:
        raise path_error(exc, path, kind=kind) from exc
    try:
        if settle and opened is None:  # (a FIFO or folder: the seek fails, nothing waits)
            try:  # noqa: SIM105  (contextlib.suppress costs 0.4 us a small file)
                os.lseek(fd, 0, _SEEK_DATA)
            except OSError:
                pass
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise path_error(IsADirectoryError(errno.EISDIR, "Is a directory", path), path,
                             kind=kind)
        if not stat.S_ISREG(st.st_mode) and hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)  # a writer that comes later is waited for by the read
        return fd, st
    except BaseException:
        os.close(fd)
        raise


def read_checked(path: str, *, kind: str = "", fifo: bool = True,
                 limit: int | None = None) -> memoryview:
    """A whole file's bytes by the one rule for every file onnxdata opens: a regular file
    as it was at one instant (``read_settled``), a device read up to the stream limit
    (``--max-bytes``), a FIFO or socket read the same way, or, with ``fifo=False`` (models,
    expectations files: never a stream), refused. ``limit`` caps any file's size. Errors
    are DecodeError naming ``path`` (``kind``: what it should hold; ``errors.path_error``'s for
    a path that cannot be opened), or OSError."""
    fd, st = open_checked(path, kind=kind)
    try:
        regular = stat.S_ISREG(st.st_mode)
        if not regular and not fifo and (stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode)):
            raise DecodeError(f"not a regular file ({_what(st.st_mode)}): it is refused, not "
                              "read", source=path, kind=kind)
        if regular and limit is not None and st.st_size > limit:
            raise DecodeError(f"{st.st_size} bytes, more than the {limit} this file may "
                              "have", source=path, kind=kind)
        if regular:
            return read_settled(fd, path)
        return _read_stream(fd, path, st, limit)
    finally:
        os.close(fd)


def _what(mode: int) -> str:
    return ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
            else "a character device" if stat.S_ISCHR(mode) else "a block device"
            if stat.S_ISBLK(mode) else "not a regular file")


def _read_stream(fd: int, name: str, st: os.stat_result | None = None,
                 cap: int | None = None) -> memoryview:
    """Everything a pipe, FIFO or device gives until its end (its size says nothing), up to
    the stream limit, into one buffer that grows (no list of parts joined at the end).
    A FIFO that gives nothing had no writer (or one that wrote nothing): DecodeError,
    where an empty read would be a silent empty value."""
    limit = _stream_limit if cap is None else min(cap, _stream_limit)
    buf = bytearray(min(limit + 1, 1 << 20))
    got = 0
    waited = st is None or not stat.S_ISFIFO(st.st_mode)
    while True:
        if got == len(buf):
            if got > limit:
                raise DecodeError(f"a pipe or device gave more than the limit of {limit} bytes "
                                  "for a non-regular input (--max-bytes, or "
                                  "onnxdata.wire.source.set_stream_limit)", source=name)
            buf.extend(bytes(min(len(buf), limit + 1 - len(buf))))
        n = os.readv(fd, [memoryview(buf)[got:]])
        if n == 0:
            if got == 0 and not waited:
                waited = True
                if _writer_wrote(fd):
                    continue
            if got == 0 and st is not None and stat.S_ISFIFO(st.st_mode):
                raise DecodeError(f"a pipe or FIFO that gave no bytes: no process wrote to "
                                  f"it (a writer is waited for {FIFO_WAIT} s)", source=name)
            del buf[got:]
            return memoryview(buf).toreadonly()
        got += n


def _writer_wrote(fd: int) -> bool:
    """Whether a writer opens the FIFO ``fd`` and writes within FIFO_WAIT seconds (one that
    is starting now: a FIFO with no writer reads as ended, where a blocking open waited)."""
    try:
        poller = select.poll()
    except AttributeError:  # no poll(): no wait
        return False
    poller.register(fd, select.POLLIN)
    return any(ev & select.POLLIN for _, ev in poller.poll(int(FIFO_WAIT * 1000)))


def read_settled(fd: int, name: str) -> memoryview:
    """The regular file's bytes as they were at one instant, or DecodeError.

    The kernel stamps a write's mtime before it copies the data, so a write under
    way when the first stamp is taken changes nothing a later stamp shows, and a
    writer descheduled in the middle of its copy leaves the file torn for as long
    as it sleeps (two reads can agree on torn bytes). So: ``lseek(SEEK_DATA)``
    first, which takes the inode lock a write holds on ext4, xfs and tmpfs (it
    waits for a write under way); then size, mtime and ctime before and after one
    read. A file last changed more than ``SETTLED_NS`` before the read began cannot
    have changed unseen (any write since the wait stamps a later time). One changed
    more recently waits for writes again and is read a second time and compared
    (about 2x the read, at memory bandwidth, for files written in the last second).
    A file that keeps changing is tried ``_TRIES`` times, then refused.
    """
    for attempt in range(_TRIES):
        _wait_for_writes(fd)
        before = _stamp(fd)
        began = time.time_ns()
        buf = bytearray(before[0])
        got = _preadinto(fd, memoryview(buf), 0)
        if got == len(buf) and _stamp(fd) == before:
            if max(before[1], before[2]) < began - SETTLED_NS:
                return memoryview(buf).toreadonly()
            _wait_for_writes(fd)  # a write that began before `before` has ended: compare
            if _same(fd, buf) and _stamp(fd) == before:
                return memoryview(buf).toreadonly()
        del buf
        time.sleep(0.001 * attempt)
    raise DecodeError(f"the file changed while reading ({_TRIES} reads, each of them overlapped "
                      "by a write)", source=name)


#: A file whose mtime and ctime are older than this before the read began is trusted by its
#: stamps; a newer one is read twice.
SETTLED_NS: Final = 1_000_000_000
_TRIES: Final = 8
#: The cap on what a pipe, FIFO or device may give (``set_stream_limit``).
STREAM_LIMIT: Final = 1 << 30
_stream_limit = STREAM_LIMIT
#: Seconds a FIFO with no writer is waited for before it is refused (``_writer_wrote``).
FIFO_WAIT: Final = 1.0
_COMPARE: Final = 1 << 22


def _read_at_once(fd: int, st: os.stat_result) -> bytes | None:
    """A small file's bytes from one pread, where ``read_settled``'s first try would take
    them (``st`` taken after waiting for writes, the same stamps after the read, and both
    older than SETTLED_NS); else None, and ``read_settled`` reads it. Two syscalls and
    no buffer fewer than it: a test-data set is hundreds of such files."""
    began = time.time_ns()
    data = os.pread(fd, st.st_size + 1, 0)  # one byte more: a file that grew says so
    if len(data) != st.st_size or max(st.st_mtime_ns, st.st_ctime_ns) >= began - SETTLED_NS:
        return None
    after = os.fstat(fd)
    if (after.st_size, after.st_mtime_ns, after.st_ctime_ns) != \
            (st.st_size, st.st_mtime_ns, st.st_ctime_ns):
        return None
    return data


def _wait_for_writes(fd: int) -> None:
    """Wait for a write under way: ``SEEK_DATA`` takes the inode lock that a write holds
    (ext4, xfs, btrfs, tmpfs); elsewhere it is only a cheap seek."""
    try:  # noqa: SIM105  (contextlib.suppress costs 0.4 us a small file)
        os.lseek(fd, 0, _SEEK_DATA)
    except OSError:
        pass


#: The compiled ``_read_at_once`` of a path (``_walk.small_file``), or None.
_SMALL_FILE: Final = walk_loop.small_file if walk_loop is not None else None
_SEEK_DATA: Final = getattr(os, "SEEK_DATA", os.SEEK_SET)
_OPEN_FLAGS: Final = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def _stamp(fd: int) -> tuple[int, int, int]:
    st = os.fstat(fd)
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _same(fd: int, buf: bytearray) -> bool:
    """Whether the file still holds ``buf``'s bytes, compared a few MiB at a time."""
    scratch = bytearray(min(len(buf), _COMPARE))
    view = memoryview(scratch)
    for at in range(0, len(buf), _COMPARE):
        n = min(_COMPARE, len(buf) - at)
        if _preadinto(fd, view[:n], at) != n:
            return False
        if not np.array_equal(np.frombuffer(scratch, _U8, n),
                              np.frombuffer(buf, _U8, n, at)):
            return False
    return True


def _preadinto(fd: int, view: memoryview, offset: int) -> int:
    got = 0
    while got < len(view):
        part = view[got:got + (1 << 30)]
        if hasattr(os, "preadv"):
            n = os.preadv(fd, [part], offset + got)
        else:
            data = os.pread(fd, len(part), offset + got)
            part[:len(data)] = data
            n = len(data)
        if n == 0:
            break
        got += n
    return got
