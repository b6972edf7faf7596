"""The protobuf wire format, read by hand: small pure functions over a buffer and a position.

Each reader takes ``(buf, pos, end)`` and returns ``(value, new_pos)``, checking
every declared length against the bytes that remain before it is used, so a
corrupt or hostile length is refused without allocating. Errors are
``WireError`` (a DecodeError) carrying the byte offset where reading broke.
The explorer's readings and the fast ``read`` are both built on this module.
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, TypeAlias

from onnxdata.core.limits import MAX_DEPTH
from onnxdata.errors import DecodeError

__all__ = [
    "I32",
    "I64",
    "LEN",
    "MAX_LENGTH_BYTES",
    "VARINT",
    "WIRE_TYPE_NAMES",
    "Field",
    "WireBuffer",
    "WireError",
    "encode_varint",
    "iter_fields",
    "overlong_length",
    "read_length",
    "read_tag",
    "read_varint",
    "signed64",
    "skip_field",
]

WireBuffer: TypeAlias = bytes | bytearray | memoryview | mmap.mmap

VARINT: Final = 0
I64: Final = 1
LEN: Final = 2
SGROUP: Final = 3
EGROUP: Final = 4
I32: Final = 5
WIRE_TYPE_NAMES: Final = {0: "VARINT", 1: "I64", 2: "LEN", 3: "SGROUP", 4: "EGROUP", 5: "I32"}

_MAX_VARINT_BYTES: Final = 10
_MASK64: Final = (1 << 64) - 1
_MAX_TAG_BYTES: Final = 5


class WireError(DecodeError):
    """The bytes break the wire format at ``offset``."""

    def __init__(self, message: str, offset: int, *, source: str = "<bytes>",
                 kind: str = "") -> None:
        super().__init__(message, source=source, kind=kind, offset=offset)


def read_varint(buf: WireBuffer, pos: int, end: int, base: int = 0) -> tuple[int, int]:
    """An unsigned varint (up to 64 bits) at ``pos``; returns ``(value, new_pos)``. An
    error names its offset as ``base + pos`` (``buf`` a window of a file from ``base``).

    As protobuf reads it: at most 10 bytes, and bits past the 64th (in the 10th
    byte) are dropped, not refused.
    """
    result = 0
    shift = 0
    start = pos
    while True:
        if pos >= end:
            raise WireError("truncated varint", start + base)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & _MASK64, pos
        shift += 7
        if pos - start >= _MAX_VARINT_BYTES:
            raise WireError("varint longer than 10 bytes", start + base)


#: The most bytes protobuf's parser (upb) reads a LEN field's length in.
MAX_LENGTH_BYTES: Final = 5


def overlong_length(nbytes: int, length: int) -> bool:
    """A LEN field's length written in ``nbytes`` bytes is one upb refuses: over 5 bytes
    where fewer would hold it ("Wire format was corrupt"). upb refuses every length over
    5 bytes, and over 2**31 - 1, as it refuses any message over 2 GiB; files over 2 GiB
    (``onnxdata.write`` makes them) read here, so a length that needs 6 or more bytes
    (2**35 or more) is kept, and only one written longer than it needs is refused.
    (protobuf's pure-Python parser takes a length of up to 10 bytes: upb is followed.)"""
    return nbytes > MAX_LENGTH_BYTES and length < 1 << (7 * (nbytes - 1))


def read_length(buf: WireBuffer, pos: int, end: int, base: int = 0) -> tuple[int, int]:
    """A LEN field's length at ``pos`` (``read_varint``'s ``(value, new_pos)``), refused as
    upb refuses it when written in more bytes than 5 and than it needs."""
    length, new = read_varint(buf, pos, end, base)
    if new - pos > MAX_LENGTH_BYTES and overlong_length(new - pos, length):
        raise WireError(f"length {length} written in {new - pos} bytes (protobuf reads a "
                        f"length in at most {MAX_LENGTH_BYTES})", pos + base)
    return length, new


_ONE_BYTE: Final = [bytes((i,)) for i in range(0x80)]


def encode_varint(value: int) -> bytes:
    """The varint of an unsigned ``value`` (any size: 5 bytes from 2**28, 10 for 2**63)."""
    if value < 0x80:
        return _ONE_BYTE[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def signed64(value: int) -> int:
    """The int64 a varint's unsigned 64-bit value stands for (two's complement)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def read_tag(buf: WireBuffer, pos: int, end: int) -> tuple[int, int, int]:
    """A field tag at ``pos``: returns ``(field_number, wire_type, new_pos)``.

    A tag is a varint of at most 5 bytes, as protobuf reads it (a longer one,
    even padded with zero bytes, is refused). Field number 0 is refused everywhere,
    inside a group too: the spec, protobuf 4.25 and upb since its fix (protobuf commit
    beb01ec) refuse it there; upb 7.36 and the pure-Python parser take it.
    """
    start = pos
    key, pos = read_varint(buf, pos, end)
    if pos - start > _MAX_TAG_BYTES:
        raise WireError(f"tag longer than {_MAX_TAG_BYTES} bytes", start)
    number, wire_type = key >> 3, key & 7
    if number == 0 or number > 0x1FFFFFFF:
        raise WireError(f"invalid field number {number}", start)
    if wire_type > 5:
        raise WireError(f"invalid wire type {wire_type}", start)
    return number, wire_type, pos


def skip_field(buf: WireBuffer, pos: int, end: int, number: int, wire_type: int,
               depth: int = 0, max_depth: int = MAX_DEPTH) -> int:
    """The position after the value of a field whose tag has just been read.

    ``depth``: of the message the field is in (its groups may nest ``max_depth - depth``
    deep: upb counts groups and messages in one depth, of at most 100)."""
    if wire_type == VARINT:
        return read_varint(buf, pos, end)[1]
    if wire_type == I64:
        if end - pos < 8:
            raise WireError("truncated 64-bit value", pos)
        return pos + 8
    if wire_type == I32:
        if end - pos < 4:
            raise WireError("truncated 32-bit value", pos)
        return pos + 4
    if wire_type == LEN:
        length, p = read_length(buf, pos, end)
        if length > end - p:
            raise WireError(f"length {length} runs past the end ({end - p} bytes left)", pos)
        return p + length
    if wire_type == SGROUP:
        if depth >= max_depth:
            raise WireError(f"groups nested deeper than {max_depth} (counting the messages "
                            "they are in)", pos)
        while True:
            if pos >= end:
                raise WireError(f"group {number} is not closed", pos)
            n, wt, pos = read_tag(buf, pos, end)
            if wt == EGROUP:
                if n != number:
                    raise WireError(f"group {number} closed by end-group {n}", pos)
                return pos
            pos = skip_field(buf, pos, end, n, wt, depth + 1, max_depth)
    raise WireError(f"unexpected end-group tag for field {number}", pos)


@dataclass(frozen=True)
class Field:
    """One field as it sits in the bytes.

    ``offset`` is where its tag starts, ``start``/``end`` delimit its value
    (for LEN, the payload without its length prefix), and ``value`` is the
    decoded number for VARINT fields (unsigned), else 0.
    """

    number: int
    wire_type: int
    offset: int
    start: int
    end: int
    value: int = 0


def iter_fields(buf: WireBuffer, start: int = 0, end: int | None = None) -> Iterator[Field]:
    """The fields of one message between ``start`` and ``end``, in wire order."""
    end = len(buf) if end is None else end
    pos = start
    while pos < end:
        offset = pos
        number, wire_type, pos = read_tag(buf, pos, end)
        if wire_type == VARINT:
            value, new = read_varint(buf, pos, end)
            yield Field(number, wire_type, offset, pos, new, value)
        elif wire_type == LEN:
            length, p = read_length(buf, pos, end)
            if length > end - p:
                raise WireError(
                    f"field {number}: length {length} runs past the end ({end - p} bytes left)",
                    pos)
            new = p + length
            yield Field(number, wire_type, offset, p, new)
        else:
            new = skip_field(buf, pos, end, number, wire_type)
            yield Field(number, wire_type, offset, pos, new)
        pos = new
