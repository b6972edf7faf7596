"""Whole-message file I/O: ``load`` parses, ``save`` writes atomically."""

from __future__ import annotations

import contextlib
import mmap
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, TypeAlias, TypeVar, Union, cast, overload

from google.protobuf.message import DecodeError as _ProtobufDecodeError
from google.protobuf.message import EncodeError as _ProtobufEncodeError

from onnxdata.errors import DecodeError, OnnxDataError
from onnxdata.messages import Message, kind_class, kind_name
from onnxdata.serialization import write_parts

__all__ = ["Buffer", "Source", "atomic_writer", "load", "save", "source_bytes"]

Buffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap
Source: TypeAlias = Union[str, "os.PathLike[str]", Buffer]
M = TypeVar("M", bound=Message)

_TMP_SUFFIX = ".onnxdata-tmp"


def source_bytes(source: Source) -> tuple[Buffer, str]:
    """The bytes of ``source`` and a name for messages (the path, or ``<bytes>``)."""
    if isinstance(source, (bytes, bytearray, memoryview, mmap.mmap)):
        return source, "<bytes>"
    path = os.fspath(source)
    return Path(path).read_bytes(), path


@overload
def load(source: Source, kind: type[M]) -> M: ...
@overload
def load(source: Source, kind: str) -> Message: ...
def load(source: Source, kind: Any) -> Message:
    """Parse one message of ``kind`` from a path or a bytes-like object.

    ``kind`` is "tensor", "sparse_tensor", "sequence", "optional", "map" or the
    class. Bytes that protobuf cannot parse raise DecodeError naming the source
    and the kind. The message is not validated: call ``validate`` for that.
    """
    cls = kind_class(kind)
    data, name = source_bytes(source)
    if not isinstance(data, bytes):
        data = memoryview(data)  # protobuf takes bytes or memoryview, not mmap or bytearray
    message = cls()
    try:
        # The stubs say bytes; protobuf reads any memoryview without a copy.
        message.ParseFromString(cast(bytes, data))
    except (_ProtobufDecodeError, RuntimeError, ValueError, TypeError) as exc:
        raise DecodeError(str(exc) or type(exc).__name__, source=name,
                          kind=cls.DESCRIPTOR.name) from exc
    return message


def save(message: Message, path: str | os.PathLike[str]) -> None:
    """Serialize ``message`` to ``path`` atomically: the old file stays whole on any failure.

    The bytes are ``message.SerializeToString()``'s, written part by part as
    they are made (``onnxdata.serialize``): no buffer of the whole file, and
    none of the cost of protobuf's encoder growing one buffer for a large
    message. A message protobuf cannot serialize (over 2 GiB) raises
    OnnxDataError and leaves the old file as it was.
    """
    with atomic_writer(path) as f:
        try:
            write_parts(message, f.write)
        except (_ProtobufEncodeError, ValueError, OnnxDataError) as exc:
            raise OnnxDataError(
                f"cannot serialize {kind_name(message)} for {os.fspath(path)}: {exc}"
                " (messages over 2 GiB: use onnxdata.write)"
            ) from exc


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[IO[bytes]]:
    """Yield a file that replaces ``path`` only when the block finishes without error.

    The data goes to a temporary file in the same folder, is fsynced, and is
    renamed over the target. On Linux the temporary file is anonymous
    (O_TMPFILE) until the last moment, so a process killed part-way leaves
    nothing behind; elsewhere it is a named file removed on any exception.
    """
    target = Path(os.fspath(path))
    folder = target.parent if str(target.parent) else Path(".")
    tmp_name = folder / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}{_TMP_SUFFIX}"
    anonymous = hasattr(os, "O_TMPFILE")
    fd = -1
    if anonymous:
        try:
            fd = os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o666)
        except OSError:
            anonymous = False
    if not anonymous:
        fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    linked = not anonymous
    try:
        with os.fdopen(fd, "wb", closefd=False) as f:
            yield f
            f.flush()
            os.fsync(fd)
        if anonymous:
            _link_anonymous(fd, folder, tmp_name.name)
            linked = True
        os.replace(tmp_name, target)
        linked = False
        _fsync_folder(folder)
    finally:
        os.close(fd)
        if linked:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


def _link_anonymous(fd: int, folder: Path, name: str) -> None:
    """Give the O_TMPFILE file ``fd`` a name in ``folder``.

    A dir_fd makes CPython call linkat(AT_SYMLINK_FOLLOW), which follows the
    /proc/self/fd magic link; plain link() would fail with EXDEV.
    """
    dfd = os.open(folder, os.O_RDONLY)
    try:
        os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=dfd, follow_symlinks=True)
    finally:
        os.close(dfd)


def _fsync_folder(folder: Path) -> None:
    try:
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)
