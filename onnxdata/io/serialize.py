"""Serializing a message by parts: the bytes of ``SerializeToString``, without its cost.

protobuf's upb encoder writes one message into one buffer that it grows by
doubling (and its ``ByteSize`` serializes too), so one 1 GiB SequenceProto
takes several times longer than its 64 tensors serialized one by one.
:func:`serialized_parts` walks the message and returns the same bytes as a
list of parts: runs of small fields serialized by protobuf itself (copied into
a fresh message of the same class), each submessage as its tag and length and
then its own parts, and each large bytes field (``raw_data``) as its tag,
length and the bytes as protobuf hands them out; a sequence's small tensors
each go whole through their own ``SerializeToString``. Splitting has a cost per
part, so it is decided once per message, from an estimate of its size: a message
with no big payload (under 8 MiB), and under 32 MiB in all or with no payload of
64 KiB, goes whole through one ``SerializeToString``, as fast as protobuf can be. :func:`serialize`
gathers the parts into one bytes object; ``save`` writes them as they come
(:func:`write_parts`), never holding the whole file.

The parts are byte-identical to ``SerializeToString`` because protobuf (upb,
the C++ and the Python backends alike) writes known fields in field-number
order -- the order ``ListFields`` gives -- and then the unknown fields. A
message with unknown fields, extensions or groups is handed to
``SerializeToString`` whole: unknown fields are kept as raw bytes and written
back exactly, which re-encoding them could not promise.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from typing import Any, Final

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message as _ProtobufMessage
from google.protobuf.unknown_fields import UnknownFieldSet

from onnxdata.core.dtypes import DATA_TYPES
from onnxdata.core.messages import ELEM_FIELDS, OPTIONAL_FIELDS, Message, is_repeated
from onnxdata.errors import OnnxDataError, no_memory_error
from onnxdata.wire.format import encode_varint

__all__ = ["PROTOBUF_LIMIT", "serialize", "serialized_parts", "write_parts"]

#: The largest message protobuf serializes or parses (2 GiB - 1).
PROTOBUF_LIMIT: Final = (1 << 31) - 1
#: Bytes fields at least this long are written as they stand, not through protobuf
#: (below it protobuf's own encoder is as fast or faster: measured from 0.5 to 8 MiB;
#: at 16 MiB it takes three times as long).
_BIG_BYTES: Final = 8 << 20

_MESSAGE: Final = FieldDescriptor.TYPE_MESSAGE
_GROUP: Final = FieldDescriptor.TYPE_GROUP
_LENGTH_TYPES: Final = frozenset({FieldDescriptor.TYPE_BYTES, FieldDescriptor.TYPE_STRING})


@no_memory_error("message")
def serialize(message: Message) -> bytes:
    """``message.SerializeToString()``, byte for byte, built from parts (see the module doc).

    Raises OnnxDataError for a message over 2 GiB, which protobuf refuses too
    (``onnxdata.write`` streams values of any size).
    """
    out = _Gather()
    write_parts(message, out.write)
    return out.value()


class _Gather:
    """One bytes object from parts: the only part as it is, or a BytesIO, which grows
    one bytes object in place and whose getvalue() hands it over without a copy (joining
    a list would hold every part and copy them all once more)."""

    def __init__(self) -> None:
        self.first: bytes | None = None
        self.buffer: io.BytesIO | None = None

    def write(self, part: bytes) -> None:
        if self.buffer is None:
            if self.first is None:
                self.first = part
                return
            self.buffer = io.BytesIO()
            self.buffer.write(self.first)
            self.first = None
        self.buffer.write(part)

    def value(self) -> bytes:
        if self.buffer is not None:
            return self.buffer.getvalue()
        return self.first if self.first is not None else b""


def serialized_parts(message: Message) -> list[bytes]:
    """The bytes of ``message.SerializeToString()`` as a list of parts, in order."""
    out: list[bytes] = []
    write_parts(message, out.append)
    return out


def write_parts(message: Message, emit: Callable[[bytes], object]) -> int:
    """Pass the parts of ``message``'s serialization to ``emit`` in order; return the size.

    Raises OnnxDataError, once all is emitted, when the size is over protobuf's
    2 GiB limit: write into something you can throw away (``atomic_writer``).
    TypeError for something that is not a protobuf message.
    """
    if not isinstance(message, _ProtobufMessage):
        raise TypeError(f"serialize and save take a protobuf message (TensorProto, "
                        f"SequenceProto, ...), not {type(message).__name__}")
    total = _parts(message, emit)
    if total > PROTOBUF_LIMIT:
        raise OnnxDataError(f"{message.DESCRIPTOR.name} of {total} bytes is over protobuf's "
                            "2 GiB limit")
    return total



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
        if fd.type == _MESSAGE or (fd.type in _LENGTH_TYPES and not is_repeated(fd)
                                   and len(value) >= _BIG_BYTES):
            split = True
    return split


def _big_tensor(t: Any) -> bool:
    """Whether a tensor's dims declare at least _BIG_BYTES of data: only a hint, which
    chooses how to write it (apart or whole), never what is written."""
    dt = DATA_TYPES.get(t.data_type)
    return dt is not None and math.prod(t.dims) * max(dt.bits, 8) >= 8 * _BIG_BYTES


#: A message whose estimated size is at least this is split into parts even when no
#: single payload is big: protobuf's encoder grows one buffer by doubling, measured as
#: fast as the parts up to 16 MiB and 1.6-3x slower at 64 MiB.
_BIG_TOTAL: Final = 32 << 20
#: ... but only when its payloads are at least this big: each part costs a few Python
#: calls, so 10,000 tensors of 4 KiB (40 MiB) were 1.7x slower by parts than whole.
_MID_BYTES: Final = 64 << 10
#: Children looked at per repeated field when estimating a message's size.
_SAMPLES: Final = 8
#: Nesting below which an estimate stops looking (the rest counts as small).
_ESTIMATE_DEPTH: Final = 16


def _worth_splitting(message: Any) -> bool:
    """Whether writing ``message`` by parts can beat one ``SerializeToString``: decided
    once per message from an estimate that samples a few children of each repeated
    field. The estimate only chooses how the bytes are written, never what they are;
    a big payload among many unsampled small ones is written whole, only slower."""
    total, biggest = _estimate(message, 0)
    return biggest >= _BIG_BYTES or (total >= _BIG_TOTAL and biggest >= _MID_BYTES)


def _estimate(message: Any, depth: int) -> tuple[int, int]:
    """(estimated serialized size, largest estimated payload) of ``message``."""
    name = message.DESCRIPTOR.name
    if name == "TensorProto":  # only raw_data is ever written apart
        size = _tensor_bytes(message)
        return size, size if message.HasField("raw_data") else 0
    if depth >= _ESTIMATE_DEPTH:
        return 0, 0
    total = biggest = 0
    if name == "MapProto":
        total = 10 * len(message.keys) + 16 * len(message.string_keys)
    for fd in _CHILD_FIELDS.get(name, ()):
        children = getattr(message, fd)
        if name in ("OptionalProto", "SparseTensorProto", "MapProto"):
            if not message.HasField(fd):
                continue
            children = (children,)
        n = len(children)
        if not n:
            continue
        picks = range(n) if n <= _SAMPLES else \
            [i * (n - 1) // (_SAMPLES - 1) for i in range(_SAMPLES)]
        seen = [_estimate(children[i], depth + 1) for i in picks]
        total += n * sum(s for s, _ in seen) // len(seen)
        biggest = max(biggest, *(b for _, b in seen))
    return total, biggest


_CHILD_FIELDS: Final = {
    "SequenceProto": tuple(ELEM_FIELDS.values()),
    "OptionalProto": tuple(OPTIONAL_FIELDS.values()),
    "MapProto": ("values",),
    "SparseTensorProto": ("values", "indices"),
}


def _tensor_bytes(t: Any) -> int:
    """A tensor's data size as its dims and data type declare it; strings by a sample."""
    dt = DATA_TYPES.get(t.data_type)
    if dt is None:
        return 0
    if dt.is_string:
        strings = t.string_data
        n = len(strings)
        if not n:
            return 0
        step = max(1, n // _SAMPLES)
        sample = [len(strings[i]) + 2 for i in range(0, n, step)]
        return n * sum(sample) // len(sample)
    return int(math.prod(t.dims)) * max(dt.bits, 8) // 8


def _parts(message: Any, emit: Callable[[bytes], object]) -> int:
    """Pass the parts of ``message`` to ``emit`` in order; return their total length.

    Only a submessage's parts are held (its length comes first); the root's
    are emitted as they are made, so ``save`` never holds two large parts.
    """
    if not _worth_splitting(message):
        data: bytes = message.SerializeToString()
        emit(data)
        return len(data)
    fields = message.ListFields()
    if not _split(fields) or len(UnknownFieldSet(message)):
        data = message.SerializeToString()
        emit(data)
        return len(data)
    total = 0
    run: Any = None  # a fresh message holding a run of small fields

    def flush() -> int:
        nonlocal run
        if run is None:
            return 0
        data = run.SerializeToString()
        run = None
        emit(data)
        return len(data)

    for fd, value in fields:
        if fd.type == _MESSAGE:
            total += flush()
            tag = encode_varint(fd.number << 3 | 2)
            children = value if is_repeated(fd) else (value,)
            container = _CONTAINER.get(fd.message_type)
            if container is None:
                container = _CONTAINER[fd.message_type] = _holds_messages(fd.message_type)
            tensors = fd.message_type.name == "TensorProto"
            for child in children:
                if container or (tensors and _big_tensor(child)):
                    sub: list[bytes] = []
                    n = _parts(child, sub.append)
                    head = tag + encode_varint(n)
                    emit(head)
                    for part in sub:
                        emit(part)
                    del sub
                else:  # whole: one C call, no walk (100,000 small tensors)
                    data = child.SerializeToString()
                    n = len(data)
                    head = tag + encode_varint(n)
                    emit(head)
                    emit(data)
                total += len(head) + n
        elif fd.type in _LENGTH_TYPES and not is_repeated(fd) and len(value) >= _BIG_BYTES:
            total += flush()
            data = value.encode("utf-8") if isinstance(value, str) else value
            head = encode_varint(fd.number << 3 | 2) + encode_varint(len(data))
            emit(head)
            emit(data)
            total += len(head) + len(data)
        else:
            if run is None:
                run = type(message)()
            if is_repeated(fd):
                getattr(run, fd.name).extend(value)
            else:
                setattr(run, fd.name, value)
    return total + flush()
