"""Build the hostile corpus: small files that claim far more than they hold.

    python tests/data/hostile/build.py [--check]

Each file is encoded by hand here (not through protobuf, which would refuse
some of them), so the bytes are exactly what is described. ``--check`` fails
when the files on disk differ from what this script makes (test_hostile_inputs
runs it). Every bomb must be refused, or read, with less than 50 MiB of peak
memory by every entry point (load, validate, to_numpy, readings, read).
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def vfield(number: int, value: int) -> bytes:
    return tag(number, 0) + varint(value)


def lfield(number: int, payload: bytes) -> bytes:
    return tag(number, 2) + varint(len(payload)) + payload


def claim(number: int, length: int, present: bytes) -> bytes:
    """A LEN field whose prefix says ``length`` but only ``present`` follows."""
    return tag(number, 2) + varint(length) + present


# TensorProto: dims 1, data_type 2, string_data 6, raw_data 9, float_data 4 (packed)
# SparseTensorProto: values 1, indices 2, dims 3
# SequenceProto: elem_type 2, tensor_values 3, sequence_values 5
# MapProto: key_type 2, keys 3, values 5

FLOAT, INT64, STRING = 1, 7, 8


def tensor(dims: list[int], data_type: int, extra: bytes = b"") -> bytes:
    return b"".join(vfield(1, d) for d in dims) + vfield(2, data_type) + extra


def nested_sequences(depth: int) -> bytes:
    """A SequenceProto of one SequenceProto of ... ``depth`` levels below the root."""
    inner = vfield(2, 1)  # innermost: an empty sequence of tensors
    for _ in range(depth):
        inner = vfield(2, 3) + lfield(5, inner)
    return inner


def bombs() -> dict[str, bytes]:
    raw8 = lfield(9, b"\0" * 8)
    return {
        # 10,000 levels of sequences: every reader stops at its depth cap (100).
        "deep-nesting-10000.pb": nested_sequences(10_000),
        # One level past the cap, the smallest refusal.
        "deep-nesting-101.pb": nested_sequences(101),
        # dims [2**40] FLOAT (4 TiB) with 8 bytes of raw_data.
        "dims-2pow40-raw-8-bytes.pb": tensor([1 << 40], FLOAT, raw8),
        # dims [2**40] as 2**20 x 2**20 in float_data packed: 8 bytes.
        "dims-2pow40-float-data-8-bytes.pb": tensor([1 << 20, 1 << 20], FLOAT,
                                                   lfield(4, struct.pack("<2f", 1, 2))),
        # A sparse tensor of dims [2**31, 2**31] (2**62 elements) with one value.
        "sparse-dims-2pow62-one-value.pb": (
            lfield(1, tensor([1], FLOAT, lfield(9, struct.pack("<f", 1.0))))
            + lfield(2, tensor([1], INT64, lfield(9, struct.pack("<q", 0))))
            + vfield(3, 1 << 31) + vfield(3, 1 << 31)),
        # Sparse dims whose product overflows int64: [2**62, 2**62], no values.
        "sparse-dims-overflow-int64.pb": (
            lfield(1, tensor([0], FLOAT, lfield(9, b"")))
            + vfield(3, 1 << 62) + vfield(3, 1 << 62)),
        # A STRING tensor of dims [10**9] with two strings.
        "string-1e9-entries-2-present.pb": tensor([10**9], STRING,
                                                 lfield(6, b"ab") + lfield(6, b"c")),
        # A string whose length prefix says 10**9 bytes; 3 follow.
        "string-length-1e9-3-present.pb": tensor([1], STRING, claim(6, 10**9, b"abc")),
        # raw_data whose length prefix says 2**40 bytes; 8 follow.
        "raw-data-length-2pow40-8-present.pb": tensor([1 << 38], FLOAT,
                                                      claim(9, 1 << 40, b"\0" * 8)),
        # A varint that never ends: dims' tag, then 64 KiB of continuation bytes.
        "varint-never-ends.pb": tag(1, 0) + b"\xff" * 65536,
        # A packed dims run whose payload is 64 KiB of continuation bytes.
        "packed-varint-never-ends.pb": lfield(1, b"\xff" * 65536) + vfield(2, FLOAT),
        # A map claiming 2**40 keys in a packed run of 8 bytes.
        "map-keys-claim-2pow40.pb": vfield(2, INT64) + claim(3, 1 << 40, b"\x01" * 8),
        # A sequence of 10**9 tensors claimed by one length prefix.
        "sequence-element-claim-1e9.pb": vfield(2, 1) + claim(3, 10**9, b"\x08\x01"),
        # Group tags nested 10,000 deep (unknown field 7): protobuf and ours cap them.
        "groups-nested-10000.pb": tag(7, 3) * 10_000 + tag(7, 4) * 10_000,
    }


def main() -> int:
    check = "--check" in sys.argv[1:]
    stale = []
    for name, data in bombs().items():
        path = HERE / name
        if check:
            if not path.exists() or path.read_bytes() != data:
                stale.append(name)
        else:
            path.write_bytes(data)
    if stale:
        print(f"stale hostile files: {stale}; to fix this, run: python {__file__}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
