"""Whole-message file I/O: ``load`` parses, ``save`` writes atomically."""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import secrets
import stat
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal, TypeAlias, TypeVar, Union, cast, overload

from google.protobuf.message import DecodeError as _ProtobufDecodeError
from google.protobuf.message import EncodeError as _ProtobufEncodeError
from google.protobuf.message import Message as _ProtobufMessage
from google.protobuf.unknown_fields import UnknownFieldSet

from onnxdata.core.messages import (
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
from onnxdata.errors import DecodeError, OnnxDataError, UnknownFieldsWarning, no_memory_error
from onnxdata.io.serialize import write_parts
from onnxdata.wire.source import Buffer, Source, byte_buffer

__all__ = ["Buffer", "PathOrBytes", "UnknownFieldsWarning", "atomic_writer", "byte_buffer",
           "chosen_kind", "load", "save", "source_bytes"]

PathOrBytes: TypeAlias = Union[str, "os.PathLike[str]", Buffer]
#: What ``load`` takes: a PathOrBytes, or a data message (ours or onnx's) to copy into ours.
LoadSource: TypeAlias = PathOrBytes | _ProtobufMessage
P = TypeVar("P", bound=_ProtobufMessage)

_TMP_SUFFIX = ".onnxdata-tmp"


def source_bytes(source: PathOrBytes, who: str = "load") -> tuple[Buffer, str]:
    """The bytes of ``source`` and a name for messages (the path, or ``<bytes>``);
    TypeError naming ``who`` and what it takes for anything else."""
    if isinstance(source, (bytes, bytearray, mmap.mmap)):
        return source, "<bytes>"
    if isinstance(source, memoryview):  # any shape or format: its bytes, flat
        return byte_buffer(source, who), "<bytes>"
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"{who} takes a path, bytes-like data or a data message (TensorProto, "
                        f"SequenceProto, …, ours or onnx's), not {type(source).__name__}")
    path = os.fspath(source)
    return Path(path).read_bytes(), path


def _message_bytes(message: _ProtobufMessage) -> tuple[bytes, str]:
    """``load(message)``: a data message's bytes, to parse as our class (or ``kind``)."""
    try:
        kind_name(cast(Any, message))
    except ValueError:
        raise OnnxDataError(f"load takes one of ONNX's data messages (TensorProto, "
                            f"SparseTensorProto, SequenceProto, OptionalProto, MapProto), not "
                            f"a {message.DESCRIPTOR.name}") from None
    try:
        return message.SerializeToString(), f"<{message.DESCRIPTOR.name}>"
    except _ProtobufEncodeError as exc:
        raise OnnxDataError(f"cannot serialize the {message.DESCRIPTOR.name}: {exc}") from exc


@overload
def load(source: LoadSource, kind: type[P]) -> P: ...
@overload
def load(source: LoadSource, kind: Literal["tensor", "TensorProto"]) -> TensorProto: ...
@overload
def load(source: LoadSource,
         kind: Literal["sparse_tensor", "SparseTensorProto"]) -> SparseTensorProto: ...
@overload
def load(source: LoadSource, kind: Literal["sequence", "SequenceProto"]) -> SequenceProto: ...
@overload
def load(source: LoadSource, kind: Literal["optional", "OptionalProto"]) -> OptionalProto: ...
@overload
def load(source: LoadSource, kind: Literal["map", "MapProto"]) -> MapProto: ...
@overload
def load(source: LoadSource, kind: KindName | MessageName | None = None) -> Message: ...
@no_memory_error("source")
def load(source: LoadSource, kind: Any = None) -> Any:
    """Parse one message from a path or a bytes-like object (or copy a message: onnx's
    TensorProto given to ``load`` becomes ours, of its own kind unless ``kind`` says).

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
    data: Buffer
    if isinstance(source, _ProtobufMessage):  # a message already (onnx's, say): its bytes
        data, name = _message_bytes(source)
        if kind is None:
            kind = kind_name(cast(Any, source))
    else:
        data, name = source_bytes(source, "load")
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
        if where is not None:  # stacklevel 3: past no_memory_error's wrapper, the caller
            warnings.warn(UnknownFieldsWarning(
                f"{name} parses as {message_name} only by setting fields aside as unknown "
                f"({where[0]} at byte {where[1]}): it may hold another message"
                f"{_explore_hint(name)}"), stacklevel=3)
    return message


def _explore_hint(name: str) -> str:
    target = "FILE" if name == "<bytes>" else name
    return f" (run `onnxdata explore {target}` to see which messages the bytes can be)"


def _misfit(data: Buffer, message_name: str) -> tuple[str, int] | None:
    """Why and where the bytes break ``message_name``'s wire structure (None if they fit)."""
    from onnxdata.wire.fit import fit

    misfit = fit(data, message_name).misfit
    return None if misfit is None else (misfit.reason, misfit.offset)


def chosen_kind(name: str | None, data: Buffer | Source) -> KindName:
    """The kind ``load``/``read`` use when none is given, as the explorer chooses it,
    with a DecodeError that tells the caller to pass ``kind=``."""
    from onnxdata.explorer.readings import choose_kind

    try:
        return choose_kind(name, data, strict=True)
    except DecodeError as exc:
        how = ("" if "kind=" in exc.reason  # the ambiguity already names the kinds to pass
               else f"; pass kind= (one of {', '.join(KIND_NAMES)})")
        raise DecodeError(f"{exc.reason}{how}{_explore_hint(exc.source)}", source=exc.source,
                          kind=exc.kind, offset=exc.offset) from None


@no_memory_error("path")
def save(message: Message, path: str | os.PathLike[str]) -> None:
    """Serialize ``message`` to ``path`` atomically: the old file stays whole on any failure.

    The bytes are ``message.SerializeToString()``'s, written part by part as
    they are made (``onnxdata.serialize``): no buffer of the whole file, and
    none of the cost of protobuf's encoder growing one buffer for a large
    message. A message protobuf cannot serialize (over 2 GiB) raises
    OnnxDataError and leaves the old file as it was. A symlink is followed,
    the old file's mode is kept, a target that is not a regular file is
    refused, and hard links are split: see ``atomic_writer``.
    """
    if not isinstance(path, (str, os.PathLike)):
        hint = (" (save takes the message first, then the path: save(message, path))"
                if isinstance(message, (str, os.PathLike)) else "")
        raise TypeError(f"save's path must be a str or os.PathLike, not "
                        f"{type(path).__name__}{hint}")
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

    Errors name ``path`` as the caller gave it, never the temporary name.
    """
    shown = os.fspath(path)
    target = os.path.realpath(shown)
    folder = os.path.dirname(target)
    old = _existing(target, shown)
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
            if tmp_name is None:
                tmp_name = _short_name()
                _link_anonymous(fd, folder, tmp_name)
                linked = True
            os.replace(os.path.join(folder, tmp_name), target)
        except OSError as exc:
            raise _naming(exc, shown) from exc
        linked = False
        _fsync_folder(folder)
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
    if not stat.S_ISREG(st.st_mode):
        what = _FILE_KINDS.get(stat.S_IFMT(st.st_mode), "not a regular file")
        link = f" (through the symlink, {target})" if target != os.path.abspath(shown) else ""
        raise OnnxDataError(f"cannot save to {shown}: it is {what}{link}, not a regular file; "
                            "it was left as it is")
    return st


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


def _naming(exc: OSError, shown: str) -> OSError:
    """The same kind of OSError, naming the caller's path instead of a temporary name."""
    if exc.errno is None:
        return OSError(f"cannot save to {shown}: {exc}")
    return type(exc)(exc.errno, exc.strerror, shown)


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


def _fsync_folder(folder: str) -> None:
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
