"""Payload decoding for the engine, behind small functions over ``[a, b)`` of a Source.

Each function here decodes or counts one field's payload: packed varints
(``decode.decode_varints``: word loads, a chunk of bytes at a time, int32
fields as uint32), fixed-width runs (views), counting varints without decoding
them (chunk by chunk, so a 1 GiB ``int64_data`` is counted in bounded memory),
and repeated bytes fields made into object arrays (``decode.strings_array``).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from typing import Any, Final, cast

import numpy as np
import numpy.typing as npt

from onnxdata.wire import decode as _decode
from onnxdata.wire.decode import (
    decode_varints_into,
    has_long_run,
    join_runs,
    scan_runs,
    scan_varints,
)
from onnxdata.wire.fields import Occurrences, occurrence_batches
from onnxdata.wire.format import LEN, VARINT, WireError
from onnxdata.wire.occurrences import ROW, Compact, Piece, Rewalked, range_bounds
from onnxdata.wire.source import Source

__all__ = ["KEPT_INTS", "VARINT_CHUNK", "count_varints", "decode_varints", "fixed",
           "iter_varints", "string_values", "varint_count", "varints"]

#: Varints decoded per numpy pass, bounding the temporary arrays to a few tens of MiB.
VARINT_CHUNK: Final = 1 << 20
_U64: Final = np.dtype(np.uint64)
_U8: Final = np.dtype(np.uint8)
#: Bytes of a packed run examined per numpy pass: the index arrays made from a piece are
#: 8 bytes per varint, so a piece of 1 MiB keeps them near 8 MiB.
PIECE: Final = 1 << 20
#: Values a WireInts (wire_ints.py) keeps decoded once it is first walked (8 MiB); longer
#: ones are decoded chunk by chunk at every walk.
KEPT_INTS: Final = 1 << 20
#: Kept pieces looked at per numpy pass when joining many small packed runs.
_CHUNK: Final = 1 << 16
#: A stretch of small packed runs' facts in place of their joined bytes (``joined`` with
#: ``scan``): ``decode.scan_varints``'s (count, long, negative, zero) of their join.
Facts = tuple[int, bool, bool, bool]
#: Strings made per pread of their bytes; a batch spread over more than STRING_SPAN
#: bytes is read value by value instead.
STRING_BATCH: Final = 1 << 16
STRING_SPAN: Final = 1 << 26
#: Up to this many string values in memory are sliced one by one, not batched by numpy.
_FEW_STRINGS: Final = 64


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
        if has_long_run(~low):
            raise WireError("varint longer than 10 bytes in packed field", at)
        carry = int(np.argmax(low[::-1]))
    if carry:
        raise WireError("truncated varint in packed field", b - carry)
    return total


def varints(src: Source, pieces: Iterable[Piece] | None,
            dtype: npt.DTypeLike = _U64) -> npt.NDArray[Any]:
    """A repeated varint field's values, in order, from its packed and single pieces, as
    uint64 or (an int32 field's low 32 bits) uint32."""
    want = np.dtype(dtype)
    if isinstance(pieces, (Compact, Rewalked)):
        many = _varints_joined(src, pieces, want)
        if many is not None:
            return many
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


def _varints_joined(src: Source, kept: Compact | Rewalked, want: np.dtype[Any]
                    ) -> npt.NDArray[Any] | None:
    """``varints`` of many kept pieces (a bogus reading's keys can be 500,000 empty packed
    runs): decoded as ``joined`` joins them, not one array per run; None where a run is
    bad (``varints`` then decodes run by run and names the bad one exactly)."""
    parts = list(joined(src, kept))  # (packed bytes, or single values)
    out = np.empty(sum(int(part.size) for part in parts), want)  # a value a byte at most
    at = 0
    try:
        for part in parts:
            if part.dtype == _U64:
                out[at:at + part.size] = part  # (uint32: the low bits, as astype keeps)
                at += int(part.size)
            else:
                at += decode_varints_into(part, out[at:])
    except WireError:
        return None
    return out[:at]


def joined(src: Source, pieces: Iterable[Piece]) -> Iterator[npt.NDArray[Any]]:
    """A varint field's pieces as arrays of at most about PIECE bytes, in order: runs of
    whole varints as uint8 (small packed runs joined into one, each checked to end on a
    varint's last byte, so no varint spans two), and single values as uint64."""
    return cast(Iterator[npt.NDArray[Any]], _joined(src, pieces, False, PIECE))  # (no Facts)


def joined_head(src: Source, pieces: Iterable[Piece], n: int) -> Iterator[npt.NDArray[Any]]:
    """``joined``, its many small packed runs joined about ``10 * n`` bytes at a time (at
    least ``n`` whole varints), so the first ``n`` values are read without joining a
    whole PIECE (a summary's first dims of a bogus reading's 1 MB of them); a Compact's
    pieces a batch at a time, the first of _HEAD_PIECES and each next four times larger
    (71,000 runs of 10 bytes: numpy passes over all their bounds cost more than the
    values). The caller stops once it has its values."""
    piece = max(16, 10 * n)
    if not isinstance(pieces, Compact):
        yield from cast(Iterator[npt.NDArray[Any]], _joined(src, pieces, False, piece))
        return
    pieces.settle()
    lo, hi, total = 0, _HEAD_PIECES, len(pieces)
    while lo < total:
        batch = Compact([])
        batch.wts, batch.starts, batch.ends = (pieces.wts[lo:hi], pieces.starts[lo:hi],
                                               pieces.ends[lo:hi])
        yield from cast(Iterator[npt.NDArray[Any]], _joined(src, batch, False, piece))
        lo, hi = hi, hi * 4


#: The first batch of a Compact's pieces ``joined_head`` reads (each next four times larger).
_HEAD_PIECES: Final = 256


def _joined(src: Source, pieces: Iterable[Piece], scan: bool, piece: int
            ) -> Iterator[npt.NDArray[Any] | Facts]:
    """``joined``; with ``scan``, each stretch of many small packed runs given as its
    Facts, scanned in place (``decode.scan_runs``), not joined: the same WireErrors,
    raised at the same points. ``piece``: the bytes of small runs joined (or scanned)
    into one part."""
    if isinstance(pieces, Compact):
        yield from _joined_compact(src, pieces, scan, piece)
        return
    if isinstance(pieces, Rewalked):  # past COMPACT_PIECES: a Compact batch at a time
        for batch in pieces.batches():
            yield from _joined_compact(src, batch, scan, piece)
        return
    if scan:
        yield from _scanned_list(src, pieces, piece)
        return
    pending = bytearray()
    # bytes in memory (a buffer, or a file read whole) are joined straight from it: one
    # copy of each run, not a bytes object per run and the joined bytearray copied again
    mem = src.in_memory()
    held = memoryview(mem) if isinstance(mem, (bytes, bytearray, memoryview)) else None
    for wt, a, b in pieces:
        if wt == VARINT:
            if pending:
                yield np.frombuffer(pending, dtype=_U8)
                pending = bytearray()
            yield np.frombuffer(a, dtype=_U64) if len(a) else np.zeros(0, _U64)
            continue
        if b - a <= 4096:
            run = held[a:b] if held is not None else src.read(a, b)
            if run and run[-1] & 0x80:
                raise WireError("truncated varint in packed field", b - 1)
            pending += run
            if len(pending) >= piece:
                yield np.frombuffer(pending, dtype=_U8)
                pending = bytearray()
            continue
        if pending:
            yield np.frombuffer(pending, dtype=_U8)
            pending = bytearray()
        at = a
        while at < b:
            part = src.u8(at, min(b, at + PIECE))
            stop = int(part.size)
            if at + stop < b:  # cut after the last whole varint of the piece
                stop = _last_end(part)
                if not stop:
                    raise WireError("varint longer than 10 bytes in packed field", at)
            elif part[-1] & 0x80:
                raise WireError("truncated varint in packed field", b - 1)
            yield part[:stop]
            at += stop
    if pending:
        yield np.frombuffer(pending, dtype=_U8)


def _scanned_list(src: Source, pieces: Iterable[Piece], piece: int
                  ) -> Iterator[npt.NDArray[Any] | Facts]:
    """``_joined`` of a list of pieces with ``scan``: each stretch of packed runs of 4096
    bytes or fewer given as ``_small_runs`` gives a Compact's (a part's Facts, cut where
    ``joined`` cuts the stretch, its runs checked in the same order), single values and
    longer runs as ``joined`` gives them (249 tensors of 4 kB read as a map's keys: no
    1 MB join)."""
    starts: list[int] = []
    ends: list[int] = []
    for one in pieces:
        wt, a, b = one
        if wt != VARINT and b - a <= 4096:
            starts.append(a)
            ends.append(b)
            continue
        if starts:
            yield from _small_runs(src, np.array(starts, np.int64), np.array(ends, np.int64),
                                   True, piece)
            starts, ends = [], []
        yield from _joined(src, [one], False, piece)
    if starts:
        yield from _small_runs(src, np.array(starts, np.int64), np.array(ends, np.int64),
                               True, piece)


def _joined_compact(src: Source, kept: Compact, scan: bool, piece: int
                    ) -> Iterator[npt.NDArray[Any] | Facts]:
    """``joined`` of many kept pieces (a bogus reading's dims or keys can be a million
    packed runs): each stretch of small packed runs joined with numpy, cut where
    ``joined`` cuts it and checked in the same order, not one pread per run."""
    wts = np.frombuffer(kept.wts, np.int8)
    if bool((wts == LEN).all()) and not kept.varint_bytes():
        return  # empty packed runs only (a bogus reading's 500,000 empty keys): no values
    starts = np.frombuffer(kept.starts, np.int64)  # offsets < 2**63: the same bytes
    ends = np.frombuffer(kept.ends, np.int64)
    n = int(wts.size)
    big = []
    for c in range(0, n, _CHUNK):  # a chunk at a time: no temporaries of the whole size
        w, s, e = wts[c:c + _CHUNK], starts[c:c + _CHUNK], ends[c:c + _CHUNK]
        big += (np.flatnonzero((w == VARINT) | (e - s > 4096)) + c).tolist()
    first = 0
    for k in [*big, n]:
        if k > first:
            yield from _small_runs(src, starts[first:k], ends[first:k], scan, piece)
        if k < n:
            one: Piece = ((VARINT, array("Q", [kept.starts[k]]), 0) if wts[k] == VARINT
                          else (int(wts[k]), int(starts[k]), int(ends[k])))
            yield from _joined(src, [one], False, piece)
        first = k + 1


def _small_runs(src: Source, starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64],
                scan: bool, piece: int) -> Iterator[npt.NDArray[np.uint8] | Facts]:
    """Packed runs of at most 4096 bytes each, joined as ``joined`` joins them: a part
    given out once it holds ``piece`` bytes or more, each run checked to end on a varint's
    last byte before the part holding it is given out (with ``scan``: the part's Facts)."""
    m = int(starts.size)
    first = 0  # the part being filled starts with this run
    filled = 0  # and holds this many bytes from the chunks before
    for c in range(0, m, _CHUNK):
        stop = min(m, c + _CHUNK)
        sizes = np.cumsum(ends[c:stop] - starts[c:stop])  # once per chunk
        at, before = c, 0  # sizes[at - c - 1]: the chunk's bytes before ``at``
        while at < stop:
            k = int(np.searchsorted(sizes[at - c:], piece - filled + before))
            if k == stop - at:
                filled += int(sizes[-1]) - before
                break
            yield from _part(src, starts[first:at + k + 1], ends[first:at + k + 1], scan)
            first = at = at + k + 1
            before = int(sizes[at - c - 1])
            filled = 0
    if first < m:
        yield from _part(src, starts[first:], ends[first:], scan)


def _part(src: Source, s: npt.NDArray[np.int64], e: npt.NDArray[np.int64], scan: bool
          ) -> Iterator[npt.NDArray[np.uint8] | Facts]:
    """The bytes of the runs ``[s, e)`` (each of 4096 bytes or fewer) joined (nothing when
    they are empty), each run checked to end on a varint's last byte: a window of up to
    4 * PIECE bytes read at a time, or runs far apart (fewer than _NEAR in a window) read
    one by one. With ``scan``, the Facts of their join, the windows scanned in place."""
    parts = []
    facts: Facts = (0, False, False, False)
    first, n = 0, int(s.size)
    while first < n:
        stop = max(first + 1, int(np.searchsorted(e, s[first] + 4 * PIECE, side="right")))
        if scan and (stop - first >= _NEAR or (stop == n and first == 0)):
            facts = _add(facts, _window_facts(src, s[first:stop], e[first:stop]))
        elif stop - first >= _NEAR or (stop == n and first == 0):
            parts.append(_window_part(src, s[first:stop], e[first:stop]))
        else:
            pending = bytearray()
            for a, b in zip(s[first:stop].tolist(), e[first:stop].tolist(), strict=True):
                run = src.read(a, b)
                if run and run[-1] & 0x80:
                    raise WireError("truncated varint in packed field", b - 1)
                pending += run
            parts.append(np.frombuffer(bytes(pending), dtype=_U8))
        first = stop
    if scan:
        for some in parts:  # (runs far apart: read one by one, scanned joined)
            facts = _add(facts, scan_varints(some))
        if facts[0] or facts[1]:  # (bytes were scanned: a whole varint at least, or a long)
            yield facts
        return
    part = parts[0] if len(parts) == 1 else np.concatenate(parts)
    if part.size:
        yield part


def _add(facts: Facts, more: tuple[int, bool, bool, bool] | tuple[int, bool, bool, bool, int]
         ) -> Facts:
    """The Facts of two stretches of whole varints, one after the other."""
    return (facts[0] + more[0], facts[1] or more[1], facts[2] or more[2], facts[3] or more[3])


#: Packed runs of this many bytes in all are counted once per Source (``measure``): a 1 MB
#: sequence of float32 tensors is a map's 1M keys and a sparse tensor's 1M dims alike,
#: counted twice (2 x 1.8 ms).
_MEMO_BYTES: Final = 1 << 16
_MEMO_RUN: Final = 64
#: Runs in a window below which ``_part`` reads each run alone.
_NEAR: Final = 16


def _window_facts(src: Source, s: npt.NDArray[np.int64], e: npt.NDArray[np.int64]
                  ) -> tuple[int, bool, bool, bool, int]:
    """``scan_varints`` of ``_window_part``'s join of the runs ``[s, e)``, each run scanned
    in place (``decode.scan_runs``), raising what ``_window_part`` raises."""
    lo, hi = int(s[0]), int(e[-1])
    got = scan_runs(src.u8(lo, hi), lo, s, e)
    if got[4] >= 0:
        raise WireError("truncated varint in packed field", int(e[got[4]]) - 1)
    return got


def _window_part(src: Source, s: npt.NDArray[np.int64], e: npt.NDArray[np.int64]
                 ) -> npt.NDArray[np.uint8]:
    """The runs ``[s, e)``, all within 4 * PIECE bytes, joined from one read of them."""
    lo, hi = int(s[0]), int(e[-1])
    window = src.u8(lo, hi)
    got = join_runs(window, lo, s, e)
    if got is not None:  # compiled: one copy per run
        part, bad_run = got
        if bad_run >= 0:
            raise WireError("truncated varint in packed field", int(e[bad_run]) - 1)
        return part
    used = e > s
    s, e = s[used], e[used]
    bad = np.flatnonzero(window[e - 1 - lo] & 0x80)
    if bad.size:
        raise WireError("truncated varint in packed field", int(e[bad[0]]) - 1)
    return window[_inside(s - lo, e - lo, hi - lo)]


def _inside(s: npt.NDArray[np.int64], e: npt.NDArray[np.int64], size: int
            ) -> npt.NDArray[np.bool_]:
    """Which of ``size`` bytes lie in the runs ``[s, e)`` (non-empty, in order, apart).
    Runs a few bytes apart (a message's fields seen as packed runs: the gaps are their
    tags and length prefixes) by clearing the gaps' bytes, else by a running count."""
    if not s.size:
        return np.zeros(size, bool)
    gaps = s[1:] - e[:-1]
    widest = int(gaps.max()) if gaps.size else 0
    if widest > 16:
        inside = np.zeros(size + 1, np.int8)
        inside[s] += 1
        inside[e] -= 1
        return np.cumsum(inside[:-1], dtype=np.int8) > 0
    out = np.ones(size, bool)
    out[:int(s[0])] = False
    out[int(e[-1]):] = False
    for j in range(widest):
        out[e[:-1][gaps > j] + j] = False
    return out


def _last_end(part: npt.NDArray[np.uint8]) -> int:
    """Where the last whole varint of ``part`` ends (0: none does), looked for in its last
    bytes first."""
    tail = np.flatnonzero(part[-10:] < 0x80)
    if tail.size:
        return int(part.size) - min(10, int(part.size)) + int(tail[-1]) + 1
    ends = np.flatnonzero(part < 0x80)
    return int(ends[-1]) + 1 if ends.size else 0


def iter_varints(src: Source, pieces: Iterable[Piece]) -> Iterator[npt.NDArray[np.uint64]]:
    """A repeated varint field's values in order, a bounded chunk at a time."""
    for part in joined(src, pieces):
        yield part if part.dtype == _U64 else decode_varints(part)


def varint_count(src: Source, pieces: Iterable[Piece] | None) -> int:
    """The number of values of a repeated varint field, without decoding packed runs."""
    return measure(src, pieces or ())[0]


def measure(src: Source, pieces: Iterable[Piece]) -> tuple[int, bool, bool]:
    """A repeated varint field's count (checked as ``decode_varints`` checks it), whether
    a value is negative as an int64, whether one is 0: one pass over the bytes, many small
    packed runs scanned in place (a bogus reading's 2,000 runs of a 1 MB file: no 1 MB
    join, whose fresh pages were most of the time), and for many kept pieces remembered
    by the Source (the root's field 3 is a map's keys and a sparse tensor's dims alike)."""
    key = _memo_key(pieces)
    if key is not None and key in src.measured:
        return src.measured[key]
    total = 0
    negative = zero = False
    for part in _joined(src, pieces, True, PIECE):
        if isinstance(part, tuple):  # many small runs' facts
            count, long, has_negative, has_zero = part
        elif part.dtype == _U64:
            total += int(part.size)
            negative = negative or bool((part >= np.uint64(1 << 63)).any())
            zero = zero or not part.all()
            continue
        else:
            count, long, has_negative, has_zero = scan_varints(part)
        if long:
            raise WireError("varint longer than 10 bytes in packed field", 0)
        total += count
        negative = negative or has_negative
        zero = zero or has_zero
    if key is not None and len(src.measured) < 64:
        src.measured[key] = (total, negative, zero)
    return total, negative, zero


def _memo_key(pieces: Iterable[Piece]) -> Any:
    """The pieces as a key when they are packed runs of _MEMO_BYTES or more in all; None
    for the rest, cheap to count again. Kept pieces (a ``Compact``) are a key only when
    they are few for their bytes (_MEMO_RUN bytes a run on average): a bogus reading's
    million tiny runs are counted again, as the digest of their arrays cost as much."""
    if isinstance(pieces, Compact):
        if pieces.held:
            return None
        pieces.settle()
        if not bool((np.frombuffer(pieces.wts, np.int8) == LEN).all()):
            return None
        nbytes = pieces.varint_bytes()
        if nbytes < _MEMO_BYTES or nbytes < len(pieces) * _MEMO_RUN:
            return None
        return (bytes(pieces.starts), bytes(pieces.ends))
    if isinstance(pieces, list) and pieces and all(wt == LEN for wt, _a, _b in pieces) \
            and sum(b - a for _wt, a, b in pieces) >= _MEMO_BYTES:
        return tuple(pieces)
    return None


def fixed(src: Source, found: Iterable[Piece] | None, dtype: np.dtype[Any],
          decode: bool = True) -> tuple[int, npt.NDArray[Any] | None]:
    """A repeated fixed-width field: its count and (with ``decode``) its values, a view
    of the source when it is one packed run."""
    if isinstance(found, Rewalked):  # past COMPACT_PIECES: a Compact batch at a time
        counted = [fixed(src, batch, dtype, decode) for batch in found.batches()]
        total = sum(n for n, _ in counted)
        if not decode:
            return total, None
        parts = [v for _, v in counted if v is not None]
        return total, parts[0] if len(parts) == 1 else np.concatenate([np.zeros(0, dtype), *parts])
    if isinstance(found, Compact):
        got = _fixed_strided(src, found, dtype, decode)
        if got is None:
            got = _fixed_gathered(src, found, dtype, decode)
        if got is not None:
            return got
    pieces = list(found or ())
    if not pieces:
        return 0, np.zeros(0, dtype) if decode else None
    size = dtype.itemsize
    for wt, a, b in pieces:
        if wt == LEN and (b - a) % size:
            raise WireError(f"packed field of {b - a} bytes is not a whole number of"
                            f" {size}-byte values", a)
    count = sum((b - a + 1) // (size + 1) if wt & ROW else (b - a) // size
                for wt, a, b in pieces)
    if not decode:
        return count, None
    arrays = [_row(src, dtype, a, b) if wt & ROW else src.array(dtype, a, (b - a) // size)
              for wt, a, b in pieces]
    return count, arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def _row(src: Source, dtype: np.dtype[Any], a: int, b: int) -> npt.NDArray[Any]:
    """The values of a ROW piece at ``[a, b)``: one strided copy."""
    stride = dtype.itemsize + 1
    return _strided_copy(src.u8(a, b), dtype, (b - a + 1) // stride, stride)


def _strided_copy(buf: npt.NDArray[np.uint8], dtype: np.dtype[Any], n: int, stride: int
                  ) -> npt.NDArray[Any]:
    """``n`` values of ``dtype`` at every ``stride`` bytes of ``buf``, copied: an unaligned
    strided view, which numpy copies 20x faster than rows of bytes (0.1 ms for 200,000)."""
    return np.array(np.ndarray((n,), dtype, buffer=buf, strides=(stride,)))


def _fixed_strided(src: Source, kept: Compact, dtype: np.dtype[Any], decode: bool
                   ) -> tuple[int, npt.NDArray[Any] | None] | None:
    """``fixed`` of many pieces of one width at one stride (a float written one at a time,
    250,000 times: 4 bytes every 5) in one strided copy; None for any other pieces."""
    wts = np.frombuffer(kept.wts, dtype=np.int8)
    starts = np.frombuffer(kept.starts, dtype=np.uint64)  # (no copies: fresh pages cost)
    ends = np.frombuffer(kept.ends, dtype=np.uint64)
    n = int(starts.size)
    width = int(ends[0]) - int(starts[0]) if n else 0
    if n < 2 or width != dtype.itemsize or bool((wts != wts[0]).any()) or wts[0] == VARINT \
            or not bool((ends - starts == width).all()):
        return None
    stride = int(starts[1]) - int(starts[0])
    if stride < width or not bool((np.diff(starts) == stride).all()):
        return None
    if not decode:
        return n, None
    return n, _strided_copy(src.u8(int(starts[0]), int(ends[-1])), dtype, n, stride)


def _fixed_gathered(src: Source, kept: Compact, dtype: np.dtype[Any], decode: bool
                    ) -> tuple[int, npt.NDArray[Any] | None] | None:
    """``fixed`` of many pieces in wire order (a float_data written one value at a time
    between another field's values) from one read of their span, their bytes gathered by
    numpy, not one read per piece; None where they are not in order or lie far apart."""
    wts = np.frombuffer(kept.wts, dtype=np.int8)
    if bool(((wts == VARINT) | (wts >= ROW)).any()):
        return None
    s = np.frombuffer(kept.starts, dtype=np.uint64).astype(np.int64)
    e = np.frombuffer(kept.ends, dtype=np.uint64).astype(np.int64)
    size = dtype.itemsize
    bad = np.flatnonzero((wts == LEN) & ((e - s) % size != 0))
    if bad.size:  # the first, as ``fixed`` finds it
        a, b = int(s[bad[0]]), int(e[bad[0]])
        raise WireError(f"packed field of {b - a} bytes is not a whole number of"
                        f" {size}-byte values", a)
    count = int(((e - s) // size).sum())
    if not decode:
        return count, None
    used = e > s
    s, e = s[used], e[used]
    if not s.size:
        return 0, np.zeros(0, dtype)
    lo, hi = int(s[0]), int(e[-1])
    if bool((s[1:] < e[:-1]).any()) or hi - lo > 4 * count * size + (1 << 20):
        return None
    window = src.u8(lo, hi)
    return count, window[_inside(s - lo, e - lo, hi - lo)].view(dtype)


def string_values(src: Source, where: Occurrences | None, count: int | None = None
                  ) -> npt.NDArray[np.object_]:
    """The values of a repeated bytes field (``string_data``, ``string_keys``) as an object
    array of bytes, read with pread (never from a mapping) a batch of values at a time and
    made in C by ``decode.strings_array``. ``count`` (the walk's count of the field) lets
    values past what the walk keeps be made a batch at a time as they are found again,
    not all their bounds held first (16 million empty strings: 256 MB of them)."""
    if where is None:
        return np.empty(0, dtype=object)
    kept = where.ranges
    if type(kept) is list and len(kept) <= _FEW_STRINGS:
        data = src.in_memory()
        if data is not None:  # a few in memory: sliced (a tensor of two strings took 10 us)
            out = np.empty(len(kept), dtype=object)
            out[:] = [bytes(data[a:b]) for a, b in kept]
            return out
    batches: Iterable[tuple[npt.NDArray[Any], npt.NDArray[Any]]]
    if kept is not None:
        batches = [range_bounds(kept)]
        count = len(kept)
    else:
        batches = occurrence_batches(src, where)  # numpy runs, not a step per value
        if count is None:
            batches = list(batches)
            count = sum(int(s.size) for s, _ in batches)
    out = np.empty(count, dtype=object)
    at = 0
    for bounds in batches:
        s_all: npt.NDArray[np.intp] = bounds[0].view(np.intp)  # offsets < 2**63
        e_all: npt.NDArray[np.intp] = bounds[1].view(np.intp)
        if at + int(s_all.size) > count:
            raise WireError(f"more values than the {count} counted", int(s_all[0]))
        for first in range(0, int(s_all.size), STRING_BATCH):
            s, e = s_all[first:first + STRING_BATCH], e_all[first:first + STRING_BATCH]
            lo, hi = int(s.min()), int(e.max())
            if hi - lo > STRING_SPAN:
                out[at:at + s.size] = [src.read(a, b) for a, b in
                                       zip(s.tolist(), e.tolist(), strict=True)]
            else:
                out[at:at + s.size] = _decode.strings_array(src.read(lo, hi), s - lo, e - lo)
            at += int(s.size)
    return out if at == count else out[:at]
