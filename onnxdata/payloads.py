"""Payload decoding for the engine, behind small functions over ``[a, b)`` of a Source.

Each function here decodes or counts one field's payload: packed varints
(``decode.decode_varints``: word loads, a chunk of bytes at a time, int32
fields as uint32), fixed-width runs (views), counting varints without decoding
them (chunk by chunk, so a 1 GiB ``int64_data`` is counted in bounded memory),
and repeated bytes fields made into object arrays (``decode.strings_array``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final, overload

import numpy as np
import numpy.typing as npt

from onnxdata import decode as _decode
from onnxdata.source import Source
from onnxdata.walk import Piece, RangeStore, Where, occurrences
from onnxdata.wire import LEN, VARINT, WireError

__all__ = ["VARINT_CHUNK", "WireInts", "count_varints", "decode_varints", "fixed",
           "iter_varints", "string_values", "varint_count", "varints"]

#: Varints decoded per numpy pass, bounding the temporary arrays to a few tens of MiB.
VARINT_CHUNK: Final = 1 << 20
_U64: Final = np.dtype(np.uint64)
_U8: Final = np.dtype(np.uint8)
#: Bytes of a packed run examined per numpy pass: the index arrays made from a piece are
#: 8 bytes per varint, so a piece of 1 MiB keeps them near 8 MiB.
PIECE: Final = 1 << 20
_HUGE: Final = 1 << 64
#: Strings made per pread of their bytes; a batch spread over more than STRING_SPAN
#: bytes is read value by value instead.
STRING_BATCH: Final = 1 << 16
STRING_SPAN: Final = 1 << 26


def decode_varints(data: npt.NDArray[np.uint8], offset: int = 0,
                   dtype: npt.DTypeLike = _U64) -> npt.NDArray[Any]:
    """The unsigned values of a run of concatenated varints (a packed field), vectorised.

    ``offset`` is where ``data`` starts in the file, for error messages.
    ``dtype`` is uint64 (a 10-byte varint keeps its low 64 bits, as protobuf's
    parser keeps them) or uint32 (the low 32 bits, as protobuf reads an int32
    field, with no uint64 temporaries). The work is ``decode.decode_varints``'s
    word loads, a chunk of bytes at a time, so the temporaries stay small
    whatever the field's size.
    """
    if int(data.size) == 0:
        return np.zeros(0, dtype)
    try:
        return _decode.decode_varints(data, dtype)
    except WireError as exc:
        if not offset:
            raise
        raise WireError(exc.reason, (exc.offset or 0) + offset) from None


def count_varints(src: Source, a: int, b: int) -> int:
    """How many varints the packed run ``[a, b)`` holds, checked as ``decode_varints`` checks
    it (a varint over 10 bytes or a run ending inside one is a WireError), in bounded memory
    and a few byte-wide passes per piece (no index arrays)."""
    total = 0
    carry = 0  # continuation bytes carried over from the previous piece
    for at in range(a, b, PIECE):
        part = src.u8(at, min(b, at + PIECE))
        low = part < 0x80
        n = int(np.count_nonzero(low))
        total += n
        if not n:
            carry += int(part.size)
            if carry >= 10:
                raise WireError("varint longer than 10 bytes in packed field", at)
            continue
        if int(np.argmax(low)) + carry >= 10:
            raise WireError("varint longer than 10 bytes in packed field", at - carry)
        if _has_long_run(~low):
            raise WireError("varint longer than 10 bytes in packed field", at)
        carry = int(np.argmax(low[::-1]))
    if carry:
        raise WireError("truncated varint in packed field", b - carry)
    return total


def _has_long_run(high: npt.NDArray[np.bool_]) -> bool:
    """Ten continuation bytes in a row somewhere (a varint longer than 10 bytes)."""
    r2 = high[:-1] & high[1:]
    if not r2.any():
        return False
    r4 = r2[:-2] & r2[2:]
    r8 = r4[:-4] & r4[4:]
    r10 = r8[:-2] & r2[8:] if r8.size > 2 else r8[:0]
    return bool(r10.any())


def varints(src: Source, pieces: Iterable[Piece] | None,
            dtype: npt.DTypeLike = _U64) -> npt.NDArray[Any]:
    """A repeated varint field's values, in order, from its packed and single pieces, as
    uint64 or (an int32 field's low 32 bits) uint32."""
    want = np.dtype(dtype)
    parts: list[npt.NDArray[Any]] = []
    for wt, a, b in pieces or ():
        if wt == VARINT:
            single = np.frombuffer(a, dtype=_U64) if len(a) else np.zeros(0, _U64)
            parts.append(single if want == _U64 else single.astype(want))
        else:
            parts.append(decode_varints(src.u8(a, b), a, want))
    if not parts:
        return np.zeros(0, want)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def joined(src: Source, pieces: Iterable[Piece]) -> Iterator[npt.NDArray[Any]]:
    """A varint field's pieces as arrays of at most about PIECE bytes, in order: runs of
    whole varints as uint8 (small packed runs joined into one, each checked to end on a
    varint's last byte, so no varint spans two), and single values as uint64."""
    pending = bytearray()
    for wt, a, b in pieces:
        if wt == VARINT:
            if pending:
                yield np.frombuffer(bytes(pending), dtype=_U8)
                pending = bytearray()
            yield np.frombuffer(a, dtype=_U64) if len(a) else np.zeros(0, _U64)
            continue
        if b - a <= 4096:
            run = src.read(a, b)
            if run and run[-1] & 0x80:
                raise WireError("truncated varint in packed field", b - 1)
            pending += run
            if len(pending) >= PIECE:
                yield np.frombuffer(bytes(pending), dtype=_U8)
                pending = bytearray()
            continue
        if pending:
            yield np.frombuffer(bytes(pending), dtype=_U8)
            pending = bytearray()
        at = a
        while at < b:
            part = src.u8(at, min(b, at + PIECE))
            stop = int(part.size)
            if at + stop < b:  # cut after the last whole varint of the piece
                ends = np.flatnonzero(part < 0x80)
                if not ends.size:
                    raise WireError("varint longer than 10 bytes in packed field", at)
                stop = int(ends[-1]) + 1
            elif part[-1] & 0x80:
                raise WireError("truncated varint in packed field", b - 1)
            yield part[:stop]
            at += stop
    if pending:
        yield np.frombuffer(bytes(pending), dtype=_U8)


def iter_varints(src: Source, pieces: Iterable[Piece]) -> Iterator[npt.NDArray[np.uint64]]:
    """A repeated varint field's values in order, a bounded chunk at a time."""
    for part in joined(src, pieces):
        yield part if part.dtype == _U64 else decode_varints(part)


def varint_count(src: Source, pieces: Iterable[Piece] | None) -> int:
    """The number of values of a repeated varint field, without decoding packed runs."""
    total = 0
    for part in joined(src, pieces or ()):
        if part.dtype == _U64:
            total += int(part.size)
            continue
        low = part < 0x80
        if _has_long_run(~low):
            raise WireError("varint longer than 10 bytes in packed field", 0)
        total += int(np.count_nonzero(low))
    return total





class WireInts(Sequence[int]):
    """A long repeated int64 field (dims read from a bogus reading can be millions long)
    as a sequence decoded chunk by chunk whenever it is walked: bounded memory."""

    def __init__(self, src: Source, pieces: Callable[[], Iterable[Piece]], count: int) -> None:
        self._src = src
        self._pieces = pieces
        self._count = count
        self._stats: tuple[int, bool, int] | None = None

    def __len__(self) -> int:
        return self._count

    def _chunks(self) -> Iterator[npt.NDArray[np.int64]]:
        for chunk in iter_varints(self._src, self._pieces()):
            yield chunk.view(np.int64)

    def _facts(self) -> tuple[int, bool, int]:
        """(smallest dim when one is negative else 0, a dim is 0, product of the dims > 1 up
        to past 2**64), read from the bytes: only a prefix is decoded for the product, and
        all of it only when a value may be negative or a zero is written in several bytes."""
        if self._stats is None:
            negative = zero = odd = False
            for part in self._raw():
                if part.dtype == _U64:  # single values, decoded already
                    negative = negative or bool((part >= np.uint64(1 << 63)).any())
                    zero = zero or not part.all()
                    continue
                ends = np.flatnonzero(part < 0x80)
                starts = np.empty_like(ends)
                starts[:1] = 0
                starts[1:] = ends[:-1] + 1
                long = ends - starts == 9  # 10-byte varints: bit 63 is the last byte's bit 0
                negative = negative or bool((part[ends[long]] & 1).any())
                zero_ends = part[ends] == 0
                zero = zero or bool((zero_ends & (ends == starts)).any())
                odd = odd or bool((zero_ends & (ends != starts)).any())
            total = 1
            for c in self._chunks():
                for d in c[c > 1].tolist():
                    total *= d
                    if total > _HUGE:
                        break
                if total > _HUGE:
                    break
            smallest = 0
            if negative or odd:
                zero = False
                for c in self._chunks():
                    if c.size:
                        smallest = min(smallest, int(c.min()))
                        zero = zero or not c.all()
            self._stats = (smallest, zero, total)
        return self._stats

    def _raw(self) -> Iterator[npt.NDArray[Any]]:
        """The field's bytes, cut after whole varints, and its single values (as uint64)."""
        return joined(self._src, self._pieces())

    def smallest(self) -> int:
        """The smallest dim when one is negative, else 0 (all that ``>= 0`` tests need)."""
        return self._facts()[0]

    def element_count(self) -> int | None:
        """``validation.element_count``'s rule: None when a dim is negative, 0 when one is
        0, else the product (not multiplied past 2**64)."""
        smallest, zero, total = self._facts()
        if smallest < 0:
            return None
        return 0 if zero else total

    def __iter__(self) -> Iterator[int]:
        for chunk in iter_varints(self._src, self._pieces()):
            yield from chunk.view(np.int64).tolist()

    @overload
    def __getitem__(self, i: int) -> int: ...

    @overload
    def __getitem__(self, i: slice) -> list[int]: ...

    def __getitem__(self, i: int | slice) -> int | list[int]:
        if isinstance(i, slice):
            start, stop, step = i.indices(self._count)
            out: list[int] = []
            for k, v in enumerate(self):
                if k >= stop:
                    break
                out.append(v)
            return out[start::step]
        if i < 0:
            i += self._count
        for k, v in enumerate(self):
            if k == i:
                return v
        raise IndexError(i)


def fixed(src: Source, found: Iterable[Piece] | None, dtype: np.dtype[Any],
          decode: bool = True) -> tuple[int, npt.NDArray[Any] | None]:
    """A repeated fixed-width field: its count and (with ``decode``) its values, a view
    of the source when it is one packed run."""
    pieces = list(found or ())
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


def string_values(src: Source, where: Where | None) -> npt.NDArray[np.object_]:
    """The values of a repeated bytes field (``string_data``, ``string_keys``) as an object
    array of bytes, read with pread (never from a mapping) a batch of values at a time and
    made in C by ``decode.strings_array``."""
    if where is None:
        return np.empty(0, dtype=object)
    kept = where.ranges
    if isinstance(kept, RangeStore):
        starts = np.frombuffer(kept.starts, np.intp)  # offsets < 2**63: the same bytes
        ends = np.frombuffer(kept.ends, np.intp)
    else:
        bounds = np.array(list(occurrences(src, where)), np.intp).reshape(-1, 2)
        starts, ends = bounds[:, 0], bounds[:, 1]
    n = int(starts.size)
    out = np.empty(n, dtype=object)
    for first in range(0, n, STRING_BATCH):
        s, e = starts[first:first + STRING_BATCH], ends[first:first + STRING_BATCH]
        lo, hi = int(s.min()), int(e.max())
        if hi - lo > STRING_SPAN:
            out[first:first + s.size] = [src.read(a, b) for a, b in
                                         zip(s.tolist(), e.tolist(), strict=True)]
        else:
            out[first:first + s.size] = _decode.strings_array(src.read(lo, hi), s - lo, e - lo)
    return out
