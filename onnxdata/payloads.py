"""Payload decoding for the engine, behind small functions over ``[a, b)`` of a Source.

Each function here decodes or counts one field's payload: packed varints
(vectorised with numpy, a whole run at a time), fixed-width runs (views), and
counting varints without decoding them (chunk by chunk, so a 1 GiB
``int64_data`` is counted in bounded memory). Faster primitives (``decode.py``)
can replace the bodies without touching the walk.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt

from onnxdata.source import PIECE, Source
from onnxdata.walk import Piece
from onnxdata.wire import LEN, VARINT, WireError

__all__ = ["VARINT_CHUNK", "count_varints", "decode_varints", "fixed", "varint_count",
           "varints"]

#: Varints decoded per numpy pass, bounding the temporary arrays to a few tens of MiB.
VARINT_CHUNK: Final = 1 << 20
_U64: Final = np.dtype(np.uint64)


def decode_varints(data: npt.NDArray[np.uint8], offset: int = 0) -> npt.NDArray[np.uint64]:
    """The unsigned values of a run of concatenated varints (a packed field), vectorised.

    ``offset`` is where ``data`` starts in the file, for error messages. The
    work is done in chunks of ``VARINT_CHUNK`` varints so the temporaries stay
    small whatever the field's size. A 10-byte varint keeps its low 64 bits,
    as protobuf's parser keeps them.
    """
    n = int(data.size)
    if n == 0:
        return np.zeros(0, _U64)
    if int(data.max()) < 0x80:
        return data.astype(_U64)
    ends = np.flatnonzero(data < 0x80)
    if ends.size == 0 or int(ends[-1]) != n - 1:
        raise WireError("truncated varint in packed field", offset + (int(ends[-1]) + 1
                                                                      if ends.size else 0))
    out = np.empty(ends.size, _U64)
    begin = 0
    chunk_size = VARINT_CHUNK
    for first in range(0, int(ends.size), chunk_size):
        chunk_ends = ends[first:first + chunk_size]
        stop = int(chunk_ends[-1]) + 1
        starts = np.empty_like(chunk_ends)
        starts[0] = begin
        starts[1:] = chunk_ends[:-1] + 1
        lengths = chunk_ends - starts + 1
        if int(lengths.max()) > 10:
            bad = int(starts[int(np.argmax(lengths > 10))])
            raise WireError("varint longer than 10 bytes in packed field", offset + bad)
        part = data[begin:stop]
        local = starts - begin
        shift = np.arange(stop - begin, dtype=_U64) - np.repeat(local.astype(_U64), lengths)
        shift *= np.uint64(7)
        values = (part & np.uint8(0x7F)).astype(_U64) << shift
        out[first:first + chunk_ends.size] = np.bitwise_or.reduceat(values, local)
        begin = stop
    return out


def count_varints(src: Source, a: int, b: int) -> int:
    """How many varints the packed run ``[a, b)`` holds, checked as ``decode_varints`` checks
    it (a varint over 10 bytes or a run ending inside one is a WireError), in bounded memory."""
    total = 0
    run = 0  # continuation bytes carried over from the previous piece
    for at in range(a, b, PIECE):
        part = src.u8(at, min(b, at + PIECE))
        ends = np.flatnonzero(part < 0x80)
        if ends.size:
            first = int(ends[0]) + run
            gaps = np.diff(ends)
            if first >= 10 or (gaps.size and int(gaps.max()) > 10):
                where = at - run if first >= 10 else at + int(ends[int(np.argmax(gaps > 10))]) + 1
                raise WireError("varint longer than 10 bytes in packed field", where)
            run = int(part.size) - 1 - int(ends[-1])
        else:
            run += int(part.size)
            if run >= 10:
                raise WireError("varint longer than 10 bytes in packed field", at)
        total += int(ends.size)
    if run:
        raise WireError("truncated varint in packed field", b - run)
    return total


def varints(src: Source, pieces: list[Piece] | None) -> npt.NDArray[np.uint64]:
    """A repeated varint field's values, in order, from its packed and single pieces."""
    if not pieces:
        return np.zeros(0, _U64)
    parts: list[npt.NDArray[np.uint64]] = []
    for wt, a, b in pieces:
        if wt == VARINT:
            parts.append(np.frombuffer(a, dtype=_U64) if len(a) else np.zeros(0, _U64))
        else:
            parts.append(decode_varints(src.u8(a, b), a))
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def varint_count(src: Source, pieces: list[Piece] | None) -> int:
    """The number of values of a repeated varint field, without decoding packed runs."""
    if not pieces:
        return 0
    return sum(len(a) if wt == VARINT else count_varints(src, a, b) for wt, a, b in pieces)


def fixed(src: Source, pieces: list[Piece] | None, dtype: np.dtype[Any],
          decode: bool = True) -> tuple[int, npt.NDArray[Any] | None]:
    """A repeated fixed-width field: its count and (with ``decode``) its values, a view
    of the source when it is one packed run."""
    if not pieces:
        return 0, np.zeros(0, dtype) if decode else None
    size = dtype.itemsize
    for wt, a, b in pieces:
        if wt == LEN and (b - a) % size:
            raise WireError(f"packed field of {b - a} bytes is not a whole number of"
                            f" {size}-byte values", a)
    count = sum((b - a) // size for _wt, a, b in pieces)
    if not decode:
        return count, None
    arrays = [src.array(dtype, a, (b - a) // size) for _wt, a, b in pieces]
    return count, arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
