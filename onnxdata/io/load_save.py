"""Whole-message file I/O: ``load`` parses, ``save`` writes atomically."""

from __future__ import annotations

import mmap
import os
import stat
import warnings
from typing import Any, Final, Literal, TypeAlias, TypeVar, Union, cast, overload

from google.protobuf.message import DecodeError as _ProtobufDecodeError
from google.protobuf.message import EncodeError as _ProtobufEncodeError
from google.protobuf.message import Message as _ProtobufMessage

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
from onnxdata.io.atomic import atomic_writer
from onnxdata.io.serialize import write_parts
from onnxdata.model.file import declared_for
from onnxdata.model.types import find_model
from onnxdata.wire.field_tree import field_tree
from onnxdata.wire.source import Buffer, Source, byte_buffer, read_checked
from onnxdata.wire.unknown_fields import unknown_field

__all__ = ["PathOrBytes", "kind_when_not_given", "load", "save", "source_bytes"]

PathOrBytes: TypeAlias = Union[str, "os.PathLike[str]", Buffer]
#: What ``load`` takes: a PathOrBytes, or a data message (ours or onnx's) to copy into ours.
LoadSource: TypeAlias = PathOrBytes | _ProtobufMessage
P = TypeVar("P", bound=_ProtobufMessage)
_Identity: TypeAlias = tuple[int, int, int, int, int]


def source_bytes(source: PathOrBytes, who: str = "load") -> tuple[Buffer, str]:
    """The bytes of ``source`` and a name for messages (the path, or ``<bytes>``);
    TypeError naming ``who`` and what it takes for anything else. A path is read by
    ``source.read_checked``: a regular file as it was at one instant (a read a write
    overlapped is retried, then refused with DecodeError), a pipe or device up to the
    stream limit, a FIFO with no writer refused."""
    if isinstance(source, (bytes, bytearray, mmap.mmap)):
        return source, "<bytes>"
    if isinstance(source, memoryview):  # any shape or format: its bytes, flat
        return byte_buffer(source, who), "<bytes>"
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"{who} takes a path, bytes-like data or a data message (TensorProto, "
                        f"SequenceProto, …, ours or onnx's), not {type(source).__name__}")
    path = os.fspath(source)
    return read_checked(path), path  # one instant's bytes, as read(copy=True) takes them


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

    A path is read once, into one buffer that was the file at one instant (as
    ``read(path, copy=True)`` reads it): a file another process rewrites meanwhile gives
    one version or ``DecodeError("... file changed while reading")``, never a mix.

    ``kind`` is "tensor", "sparse_tensor", "sequence", "optional", "map", the
    message name ("SequenceProto", ...) or the class; given onnx's class, the
    result is onnx's message. Without ``kind`` the rule is ``read``'s: the kind
    the model declares in the ``test_data_set_N/input_K.pb`` layout, else the
    only valid reading, else a DecodeError saying to pass ``kind=``.

    Bytes that protobuf cannot parse raise DecodeError naming the source and
    the kind. Bytes that parse only by setting fields aside as unknown, in the
    message or in any message in it (the usual sign of the wrong kind: a tensor
    read as a sequence, a sequence read as a tensor), give an
    ``UnknownFieldsWarning`` naming the first such place (``segment``,
    ``tensor_values[2]``) and pointing to ``onnxdata explore``. The message is
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
        kind = kind_when_not_given(None if name == "<bytes>" else name, data)
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
    # Anywhere in the tree, not only at the top: a sequence read as a tensor is a tensor
    # whose unknown fields are in its segment. The compiled walk reads each tag once and
    # names the place (a sequence of 100,000 small tensors: 7 % of this parse).
    misfit = unknown_field(data, message_name)
    if misfit is not None:  # stacklevel 3: past no_memory_error's wrapper, the caller
        warnings.warn(UnknownFieldsWarning(
            f"{name} parses as {message_name} only by setting fields aside as unknown "
            f"({misfit}): it may hold another message{_explore_hint(name)}"), stacklevel=3)
    return message


def _explore_hint(name: str) -> str:
    target = "FILE" if name.startswith("<") else name  # (<bytes>, or a copied <TensorProto>)
    return f" (run `onnxdata explore {target}` to see which messages the bytes can be)"


def _misfit(data: Buffer, message_name: str) -> tuple[str, int] | None:
    """Why and where the bytes break ``message_name``'s wire structure (None if they fit)."""
    misfit = field_tree(data, message_name).misfit
    return None if misfit is None else (misfit.reason, misfit.offset)


def kind_when_not_given(name: str | None, data: Buffer | Source) -> KindName:
    """The kind ``load``/``read`` use when none is given, as the explorer chooses it,
    with a DecodeError that tells the caller to pass ``kind=``. The kind a model beside
    the file declares is remembered per folder while the model stays the same file
    (``_declared_kinds``): the files of a test-data set cost one look at it each."""
    if name is not None:
        head, _, tail = name.rpartition("/")  # (a key: any split that is one per name)
        known = _declared_kinds.get(head)
        if known is not None:
            kind = known[2].get(tail)
            if kind is not None:
                try:  # (_identity's, inline: the same five stamps of a regular file)
                    st = os.stat(known[0])
                except (OSError, ValueError):
                    st = None
                if st is not None and (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
                                       st.st_ctime_ns) == known[1] \
                        and stat.S_ISREG(st.st_mode):
                    return kind
        kind = _declared_kind(name, head, tail)
        if kind is not None:
            return kind
    from onnxdata.explorer.readings import choose_kind

    try:
        return choose_kind(name, data, strict=True)
    except DecodeError as exc:
        how = ("" if "kind=" in exc.reason  # the ambiguity already names the kinds to pass
               else f"; pass kind= (one of {', '.join(KIND_NAMES)})")
        raise DecodeError(f"{exc.reason}{how}{_explore_hint(exc.source)}", source=exc.source,
                          kind=exc.kind, offset=exc.offset) from None


#: The kinds declared for the data files of a test-data set folder, by the folder: the
#: model's path, its identity when its types were read (``_identity``), and each file's
#: kind by its name. A model rewritten since (another inode, size or time) is read again.
_declared_kinds: dict[str, tuple[str, _Identity, dict[str, KindName]]] = {}
_FOLDERS: Final = 64


def _identity(path: str) -> _Identity | None:
    """A regular file's device, inode, size, mtime and ctime (None: no such regular file)."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _declared_kind(name: str, head: str, tail: str) -> KindName | None:
    """The kind the model beside ``name`` declares for it, remembered for its folder; None
    without a usable declared type (``choose_kind`` then decides, and warns why)."""
    found = find_model(name)
    if found is None:
        return None
    model = os.fspath(found[0])
    before = _identity(model)
    declared = declared_for(name)
    if declared.type is None or declared.model != model or before is None \
            or _identity(model) != before:  # (changed meanwhile: not remembered)
        return None
    kind = declared.type.kind
    known = _declared_kinds.get(head)
    if known is None or known[:2] != (model, before):
        if len(_declared_kinds) >= _FOLDERS:
            _declared_kinds.pop(next(iter(_declared_kinds)))
        known = _declared_kinds[head] = (model, before, {})
    known[2][tail] = kind
    return kind


@no_memory_error("path")
def save(message: Message, path: str | os.PathLike[str]) -> None:
    """Serialize ``message`` to ``path`` atomically: the old file stays whole on any failure.

    The bytes are ``message.SerializeToString()``'s, written part by part as
    they are made (``onnxdata.serialize``): no buffer of the whole file, and
    none of the cost of protobuf's encoder growing one buffer for a large
    message. A message protobuf cannot serialize (over 2 GiB) raises
    OnnxDataError and leaves the old file as it was. A symlink is followed,
    the old file's mode is kept, a target that is not a regular file is
    refused, and hard links are split: see ``io.atomic.atomic_writer``.
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
