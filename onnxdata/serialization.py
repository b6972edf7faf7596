"""Serializing a message by parts: the bytes of ``SerializeToString``, without its cost.

protobuf's upb encoder writes one message into one buffer that it grows by
doubling (and its ``ByteSize`` serializes too), so one 1 GiB SequenceProto
takes several times longer than its 64 tensors serialized one by one.
:func:`serialized_parts` walks the message and returns the same bytes as a
list of parts: runs of small fields serialized by protobuf itself (copied into
a fresh message of the same class), each submessage as its tag and length and
then its own parts, and each large bytes field (``raw_data``) as its tag,
length and the bytes as protobuf hands them out. :func:`serialize` joins them;
``save`` writes them one after another, never holding the whole file.

The parts are byte-identical to ``SerializeToString`` because protobuf (upb,
the C++ and the Python backends alike) writes known fields in field-number
order -- the order ``ListFields`` gives -- and then the unknown fields. A
message with unknown fields, extensions or groups is handed to
``SerializeToString`` whole: unknown fields are kept as raw bytes and written
back exactly, which re-encoding them could not promise.
"""

from __future__ import annotations

from typing import Any, Final

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.unknown_fields import UnknownFieldSet

from onnxdata.errors import OnnxDataError
from onnxdata.messages import Message

__all__ = ["PROTOBUF_LIMIT", "serialize", "serialized_parts"]

#: The largest message protobuf serializes or parses (2 GiB - 1).
PROTOBUF_LIMIT: Final = (1 << 31) - 1
#: Bytes fields at least this long are written as they stand, not through protobuf.
_BIG_BYTES: Final = 1 << 16

_MESSAGE: Final = FieldDescriptor.TYPE_MESSAGE
_GROUP: Final = FieldDescriptor.TYPE_GROUP
_LENGTH_TYPES: Final = frozenset({FieldDescriptor.TYPE_BYTES, FieldDescriptor.TYPE_STRING})


def serialize(message: Message) -> bytes:
    """``message.SerializeToString()``, byte for byte, built from parts (see the module doc).

    Raises OnnxDataError for a message over 2 GiB, which protobuf refuses too
    (``onnxdata.write`` streams values of any size).
    """
    return b"".join(serialized_parts(message))


def serialized_parts(message: Message) -> list[bytes]:
    """The bytes of ``message.SerializeToString()`` as a list of parts, in order."""
    out: list[bytes] = []
    total = _parts(message, out)
    if total > PROTOBUF_LIMIT:
        raise OnnxDataError(f"{message.DESCRIPTOR.name} of {total} bytes is over protobuf's "
                            "2 GiB limit")
    return out


_ONE_BYTE: Final = [bytes((i,)) for i in range(0x80)]


def _varint(n: int) -> bytes:
    if n < 0x80:
        return _ONE_BYTE[n]
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _repeated(fd: FieldDescriptor) -> bool:
    flag = getattr(fd, "is_repeated", None)  # protobuf >= 6; ``label`` before
    if flag is not None:
        return bool(flag)
    old: Any = fd
    return bool(old.label == FieldDescriptor.LABEL_REPEATED)


def _holds_messages(desc: Any) -> bool:
    """Whether messages of ``desc`` hold messages that hold messages in turn: a sequence
    of tensors does; a tensor, whose own message fields are small entries, does not."""
    return any(fd.message_type is not None
               and any(f.message_type is not None for f in fd.message_type.fields)
               for fd in desc.fields)


#: Per descriptor: whether its submessages are walked too (containers) or each written
#: by one SerializeToString (leaves such as TensorProto, whose bulk is one bytes field).
_CONTAINER: dict[Any, bool] = {}


def _split(fields: list[tuple[FieldDescriptor, Any]]) -> bool | None:
    """True when some field is worth writing apart, None when the message must go whole."""
    split = False
    for fd, value in fields:
        if fd.type == _GROUP or fd.is_extension:
            return None
        if fd.type == _MESSAGE or (fd.type in _LENGTH_TYPES and not _repeated(fd)
                                   and len(value) >= _BIG_BYTES):
            split = True
    return split


def _parts(message: Any, out: list[bytes]) -> int:
    """Append the parts of ``message`` to ``out``; return their total length."""
    fields = message.ListFields()
    if not _split(fields) or len(UnknownFieldSet(message)):
        data: bytes = message.SerializeToString()
        out.append(data)
        return len(data)
    total = 0
    run: Any = None  # a fresh message holding a run of small fields

    def flush() -> int:
        nonlocal run
        if run is None:
            return 0
        data = run.SerializeToString()
        run = None
        out.append(data)
        return len(data)

    for fd, value in fields:
        if fd.type == _MESSAGE:
            total += flush()
            tag = _varint(fd.number << 3 | 2)
            children = value if _repeated(fd) else (value,)
            container = _CONTAINER.get(fd.message_type)
            if container is None:
                container = _CONTAINER[fd.message_type] = _holds_messages(fd.message_type)
            if not container:  # each child whole: one C call, no walk (100,000 tensors)
                append = out.append
                for child in children:
                    data = child.SerializeToString()
                    head = tag + _varint(len(data))
                    append(head)
                    append(data)
                    total += len(head) + len(data)
                continue
            for child in children:
                sub: list[bytes] = []
                n = _parts(child, sub)
                head = tag + _varint(n)
                out.append(head)
                out += sub
                total += len(head) + n
        elif fd.type in _LENGTH_TYPES and not _repeated(fd) and len(value) >= _BIG_BYTES:
            total += flush()
            data = value.encode("utf-8") if isinstance(value, str) else value
            head = _varint(fd.number << 3 | 2) + _varint(len(data))
            out.append(head)
            out.append(data)
            total += len(head) + len(data)
        else:
            if run is None:
                run = type(message)()
            if _repeated(fd):
                getattr(run, fd.name).extend(value)
            else:
                setattr(run, fd.name, value)
    return total + flush()
