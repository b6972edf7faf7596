"""Whole-message file I/O: ``load`` parses, ``save`` writes atomically."""

from __future__ import annotations

import contextlib
import mmap
import os
import secrets
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal, TypeAlias, TypeVar, Union, cast, overload

from google.protobuf.message import DecodeError as _ProtobufDecodeError
from google.protobuf.message import EncodeError as _ProtobufEncodeError
from google.protobuf.message import Message as _ProtobufMessage
from google.protobuf.unknown_fields import UnknownFieldSet

from onnxdata.errors import DecodeError, OnnxDataError, UnknownFieldsWarning
from onnxdata.messages import (
    KIND_NAMES,
    KindName,
    MapProto,
    Message,
    MessageName,
    OptionalProto,
    SequenceProto,
    SparseTensorProto,
    TensorProto,
    kind_class,
    kind_name,
)
from onnxdata.serialization import write_parts

__all__ = ["Buffer", "Source", "UnknownFieldsWarning", "atomic_writer", "chosen_kind", "load",
           "save", "source_bytes"]

Buffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap
Source: TypeAlias = Union[str, "os.PathLike[str]", Buffer]
P = TypeVar("P", bound=_ProtobufMessage)

_TMP_SUFFIX = ".onnxdata-tmp"


def source_bytes(source: Source) -> tuple[Buffer, str]:
    """The bytes of ``source`` and a name for messages (the path, or ``<bytes>``)."""
    if isinstance(source, (bytes, bytearray, memoryview, mmap.mmap)):
        return source, "<bytes>"
    path = os.fspath(source)
    return Path(path).read_bytes(), path


@overload
def load(source: Source, kind: type[P]) -> P: ...
@overload
def load(source: Source, kind: Literal["tensor", "TensorProto"]) -> TensorProto: ...
@overload
def load(source: Source,
         kind: Literal["sparse_tensor", "SparseTensorProto"]) -> SparseTensorProto: ...
@overload
def load(source: Source, kind: Literal["sequence", "SequenceProto"]) -> SequenceProto: ...
@overload
def load(source: Source, kind: Literal["optional", "OptionalProto"]) -> OptionalProto: ...
@overload
def load(source: Source, kind: Literal["map", "MapProto"]) -> MapProto: ...
@overload
def load(source: Source, kind: KindName | MessageName | None = None) -> Message: ...
def load(source: Source, kind: Any = None) -> Any:
    """Parse one message from a path or a bytes-like object.

    ``kind`` is "tensor", "sparse_tensor", "sequence", "optional", "map", the
    message name ("SequenceProto", ...) or the class; given onnx's class, the
    result is onnx's message. Without ``kind`` the rule is ``read``'s: the kind
    the model declares in the ``test_data_set_N/input_K.pb`` layout, else the
    only valid reading, else a DecodeError saying to pass ``kind=``.

    Bytes that protobuf cannot parse raise DecodeError naming the source and
    the kind. Bytes that parse only by setting fields aside as unknown (the
    usual sign of the wrong kind: a tensor read as a sequence) give an
    ``UnknownFieldsWarning`` pointing to ``onnxdata explore``. The message is
    not validated: call ``validate`` for that.
    """
    data, name = source_bytes(source)
    if kind is None:
        kind = chosen_kind(None if name == "<bytes>" else name, data)
    cls: type[Any] = kind_class(kind)
    if isinstance(kind, type):
        cls = kind  # ours or onnx's: kind_class vouched that it is an ONNX data message
    if not isinstance(data, bytes):
        data = memoryview(data)  # protobuf takes bytes or memoryview, not mmap or bytearray
    message = cls()
    message_name = cls.DESCRIPTOR.name
    try:
        # The stubs say bytes; protobuf reads any memoryview without a copy.
        message.ParseFromString(cast(bytes, data))
    except (_ProtobufDecodeError, RuntimeError, ValueError, TypeError) as exc:
        where = _misfit(data, message_name)
        reason = where[0] if where else (str(exc) or type(exc).__name__)
        raise DecodeError(f"{reason}{_explore_hint(name)}", source=name, kind=message_name,
                          offset=where[1] if where else None) from exc
    if len(UnknownFieldSet(message)):
        where = _misfit(data, message_name)
        if where is not None:
            warnings.warn(UnknownFieldsWarning(
                f"{name} parses as {message_name} only by setting fields aside as unknown "
                f"({where[0]} at byte {where[1]}): it may hold another message"
                f"{_explore_hint(name)}"), stacklevel=2)
    return message


def _explore_hint(name: str) -> str:
    target = "FILE" if name == "<bytes>" else name
    return f" (run `onnxdata explore {target}` to see which messages the bytes can be)"


def _misfit(data: Buffer, message_name: str) -> tuple[str, int] | None:
    """Why and where the bytes break ``message_name``'s wire structure (None if they fit)."""
    from onnxdata.fit import fit

    misfit = fit(data, message_name).misfit
    return None if misfit is None else (misfit.reason, misfit.offset)


def chosen_kind(name: str | None, data: Buffer) -> KindName:
    """The kind ``load``/``read`` use when none is given, as the explorer chooses it,
    with a DecodeError that tells the caller to pass ``kind=``."""
    from onnxdata.explorer import choose_kind

    try:
        return choose_kind(name, data)
    except DecodeError as exc:
        raise DecodeError(f"{exc.reason}; pass kind= (one of {', '.join(KIND_NAMES)})"
                          f"{_explore_hint(exc.source)}", source=exc.source, kind=exc.kind,
                          offset=exc.offset) from None


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
        try:
            fd = os.open(tmp_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except OSError as exc:  # name the user's file, not our temporary one
            raise type(exc)(exc.errno, exc.strerror, os.fspath(path)) from None
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
