"""Protobuf wire bytes written by hand, for tests: an encoder of our own, so the readers
under test are not checked against themselves."""

from __future__ import annotations

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5


def varint(n: int) -> bytes:
    """``n`` as a varint; a negative ``n`` as its 64-bit two's complement, as protobuf does."""
    n &= (1 << 64) - 1
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def key(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def ld(number: int, payload: bytes) -> bytes:
    """A length-delimited field: a message, a string or a packed run."""
    return key(number, LEN) + varint(len(payload)) + payload


def vint(number: int, value: int) -> bytes:
    """A varint field."""
    return key(number, VARINT) + varint(value)
