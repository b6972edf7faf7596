"""Vectorised decoding of the wire format's bulk payloads, in pure numpy (and one C loop).

Three primitives for the engine (``field_values`` decodes with the first and
third, ``walk.scan`` splits runs of strings and of a sequence's tensors with
the second), each a few numpy passes over a payload instead of one Python
step per value:

- :func:`decode_varints` -- a packed varint field (``int32_data``, ``int64_data``,
  ``uint64_data``, ``dims``, map ``keys``) as uint64 or uint32;
- :func:`split_strings` -- a run of length-delimited fields with one tag
  (``string_data``, ``string_keys``) as arrays of where each value starts and ends;
- :func:`strings_array` -- those values as an object array of bytes.

Varints. Work goes by chunks of ``CHUNK`` bytes that end on a varint's last
byte, so temporaries stay in cache and small. In a chunk the varints' last
bytes are the bytes below 0x80; their differences are the lengths. A chunk
whose varints all fit 4 bytes (every int32 under 2**28, float16 bits...) is
decoded from one unaligned 32-bit load ending at each last byte: shift out the
bytes of the varints before, then squeeze out the continuation bits (three
mask-and-shift steps); up to 8 bytes the same with 64-bit loads; longer ones
(negative int32/int64: 10 bytes) one byte position at a time. Measured on
16 Mi float16 values in int32_data (42 MB, ``bench/bench_storage.py`` W5):
``read`` went from 4.4x slower than onnx's parse + to_array (a reduceat
decoder over uint64 temporaries) to about 1.5x faster. protobuf's own decoder
(the field's bytes parsed as a message, the repeated field copied to numpy)
took as long as onnx's whole read, so it is not used. Still short of issue 14's
2x: so where the compiled loop ``onnxdata.wire._varints`` (Cython, built with the
package when a C compiler is at hand) imported, it decodes instead, in one
pass of 64-bit loads (W5 ``read`` about 3x onnx); the numpy code stays as the
fallback and decides every error, so both raise the same WireError.
``ONNXDATA_PURE_PYTHON=1`` forces the fallback (``loops``, the one switch, reads it).

Strings. Where each value starts depends on every length before it, so no
numpy pass can find them all at once in general (a byte equal to the tag may
sit inside a value). But values of one length often come in rows (names and
labels numbered in order), and a row is found with strided views, a window
of values at a time; values of varied lengths fall back to a step per value.
The bytes objects are then made in C through a fixed-width numpy array.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
import numpy.typing as npt

from onnxdata.wire.format import WireError, overlong_length
from onnxdata.wire.loops import varint_loop

__all__ = ["CHUNK", "count_strings", "decode_varints", "decode_varints_into",
           "has_long_run", "join_runs", "scan_runs", "scan_runs_reference",
           "scan_varints_reference", "split_strings_reference",
           "strings_array_reference", "decode_varints_reference", "scan_varints", "split_strings",
           "strings_array"]


#: The compiled varint loop, or None (then the numpy references decode).
_LOOP: Final = varint_loop

#: Bytes of varints decoded per numpy pass.
CHUNK: Final = 1 << 16
#: Values of one length looked at per strided step of :func:`split_strings` (doubling
#: while a row goes on).
_WINDOW: Final = 64
#: Strings up to this long are made through a fixed-width numpy array.
_SHORT: Final = 64

_U8: Final = np.dtype(np.uint8)
_U32: Final = np.dtype(np.uint32)
_U64: Final = np.dtype(np.uint64)
_WORDS: Final[dict[int, np.dtype[Any]]] = {4: np.dtype("<u4"), 8: np.dtype("<u8")}


# --------------------------------------------------------------------------- varints

def decode_varints(data: npt.NDArray[np.uint8], dtype: npt.DTypeLike = _U64) -> npt.NDArray[Any]:
    """The values of the concatenated varints in ``data``, as uint64 or uint32.

    uint64 keeps a 10-byte varint's low 64 bits, as protobuf does; uint32 keeps
    the low 32 bits, as protobuf reads an int32 field. Raises WireError (its
    offset counted from the start of ``data``) for a varint longer than 10
    bytes or cut off at the end. The compiled loop where it is built, else
    :func:`decode_varints_reference`; the same values and errors either way.
    """
    if _LOOP is None:
        return decode_varints_reference(data, dtype)
    want = np.dtype(dtype)
    if want not in (_U32, _U64):
        raise TypeError(f"decode_varints gives uint32 or uint64, not {want}")
    out = np.empty(int(data.size), want)  # at most one value per byte; trimmed at the end
    return out[:decode_varints_into(data, out)]


def decode_varints_into(data: npt.NDArray[np.uint8], out: npt.NDArray[Any]) -> int:
    """:func:`decode_varints` written to ``out`` (uint32 or uint64, at least one value per
    byte of ``data``): how many values; so many runs decode into one array, not each
    into its own and then joined (170 MB of int64_data: 0.4 s of fresh pages)."""
    if _LOOP is None:
        values = decode_varints_reference(data, out.dtype)
        out[:values.size] = values
        return int(values.size)
    data = np.ascontiguousarray(data, _U8)
    got = int(_LOOP.decode(data, out))
    if got < 0:
        _raise_as_numpy(data, -got - 1, out.dtype)
    return got


def _raise_as_numpy(data: npt.NDArray[np.uint8], bad: int, want: np.dtype[Any]) -> None:
    """Raise what :func:`decode_varints_reference` raises for ``data``, whose first bad varint (over
    10 bytes or cut off) starts at ``bad``.

    The numpy decoder goes by chunks and may name a later varint of the chunk holding
    ``bad`` (it looks at the chunk's end first). Its chunks end on the first varint end
    at least ``CHUNK`` bytes on, and every varint before ``bad`` is whole, so the chunk
    holding ``bad`` is found from those ends; the numpy decoder run from that chunk's
    start raises its error there.
    """
    ends = np.flatnonzero(data[:bad] < 0x80)
    at = 0
    while True:
        k = int(np.searchsorted(ends, at + CHUNK - 1))
        if k == ends.size:
            break
        at = int(ends[k]) + 1
    try:
        decode_varints_reference(data[at:], want)
    except WireError as exc:
        raise WireError(exc.reason, (exc.offset or 0) + at) from None
    # not reached (both decoders find the same bad varints); the loop's own finding
    long = int(data.size) - bad > 10
    raise WireError("varint longer than 10 bytes in packed field" if long
                    else "truncated varint in packed field", bad)


def scan_varints(part: npt.NDArray[np.uint8]) -> tuple[int, bool, bool, bool]:
    """Facts of a run of whole varints (no varint cut off at either end), not decoded:
    ``(count, long, negative, zero)`` -- how many, whether ten continuation bytes come in a
    row (a varint over 10 bytes), whether a 10-byte varint has bit 63 set (a negative
    int64), whether one is zero. One pass of the compiled loop, else numpy passes."""
    if _LOOP is not None:
        count, long, negative, zero = _LOOP.scan(np.ascontiguousarray(part, _U8))
        return int(count), bool(long), bool(negative), bool(zero)
    return scan_varints_reference(part)


def join_runs(window: npt.NDArray[np.uint8], base: int, starts: npt.NDArray[np.int64],
              ends: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.uint8], int] | None:
    """The packed runs ``[starts[k], ends[k])`` (in order, apart; offsets from the window's
    first byte at ``base``) joined by the compiled loop: the bytes, and -1 or the first
    run whose last byte continues a varint. None where the loop is not built
    (``field_values._part`` joins them with numpy)."""
    if _LOOP is None:
        return None
    out = np.empty(int(window.size), _U8)
    got = _LOOP.join(np.ascontiguousarray(window, _U8), base,
                     np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(ends, np.int64),
                     out)
    return (out[:got], -1) if got >= 0 else (out[:0], -got - 1)


def scan_runs(window: npt.NDArray[np.uint8], base: int, starts: npt.NDArray[np.int64],
              ends: npt.NDArray[np.int64]) -> tuple[int, bool, bool, bool, int]:
    """:func:`scan_varints` of the packed runs ``[starts[k], ends[k])`` as
    :func:`join_runs` would join them (in order, apart; offsets from the window's first
    byte at ``base``), with no joined copy: ``(count, long, negative, zero, bad)``, where
    ``bad`` is -1 or the first run whose last byte continues a varint (the facts are then
    of the runs before it). The compiled loop scans each run in place (2,000 runs of a
    1 MB file: no 1 MB join), else :func:`scan_runs_reference`."""
    if _LOOP is None:
        return scan_runs_reference(window, base, starts, ends)
    count, long, negative, zero, bad = _LOOP.scan_runs(
        np.ascontiguousarray(window, _U8), base, np.ascontiguousarray(starts, np.int64),
        np.ascontiguousarray(ends, np.int64))
    return int(count), bool(long), bool(negative), bool(zero), int(bad)


def scan_runs_reference(window: npt.NDArray[np.uint8], base: int, starts: npt.NDArray[np.int64],
                        ends: npt.NDArray[np.int64]) -> tuple[int, bool, bool, bool, int]:
    """:func:`scan_runs` as its words say it: the runs before the first bad one joined
    (numpy), then :func:`scan_varints_reference` of their join."""
    s = np.asarray(starts, np.int64) - base
    e = np.asarray(ends, np.int64) - base
    if int(s.size) and (int(s.min()) < 0 or int(e.max()) > int(window.size)):
        raise ValueError("scan_runs: a run lies outside the window")
    used = e > s
    last = window[np.where(used, e - 1, 0)] if int(window.size) else np.zeros(s.size, _U8)
    bads = np.flatnonzero(used & (last >= 0x80))
    bad = int(bads[0]) if bads.size else -1
    if bad >= 0:
        s, e, used = s[:bad], e[:bad], used[:bad]
    s, e = s[used], e[used]
    marks = np.zeros(int(window.size) + 1, np.int64)
    np.add.at(marks, s, 1)
    np.add.at(marks, e, -1)
    inside = np.cumsum(marks[:-1]) > 0
    count, long, negative, zero = scan_varints_reference(window[inside])
    return count, long, negative, zero, bad


def scan_varints_reference(part: npt.NDArray[np.uint8]) -> tuple[int, bool, bool, bool]:
    """:func:`scan_varints` in numpy passes (the fallback)."""
    low = part < 0x80
    if has_long_run(~low):
        return int(np.count_nonzero(low)), True, False, False
    # a 10-byte varint has nine continuation bytes in a row, so an aligned word of four
    ten = _four_in_a_row(part, 0x80)
    return (int(np.count_nonzero(low)), False, ten and _has_negative(part),
            _has_zero_byte(part) or (ten and _has_ten_byte_zero(part)))


def has_long_run(high: npt.NDArray[np.bool_]) -> bool:
    """Ten continuation bytes in a row somewhere (a varint longer than 10 bytes)."""
    if not _four_in_a_row(high.view(_U8), 1):
        return False
    r2 = high[:-1] & high[1:]
    if not r2.any():
        return False
    r4 = r2[:-2] & r2[2:]
    r8 = r4[:-4] & r4[4:]
    r10 = r8[:-2] & r2[8:] if r8.size > 2 else r8[:0]
    return bool(r10.any())


def _four_in_a_row(data: npt.NDArray[np.uint8], bit: int) -> bool:
    """Some 4-aligned word of ``data`` has ``bit`` set in all four bytes: a cheap test that
    no run of 7 or more such bytes exists when it fails (any 7 bytes in a row hold an
    aligned word), on a quarter as many elements as the bytes."""
    n = int(data.size) // 4 * 4
    mask = np.uint32(bit * 0x01010101)
    words = np.ascontiguousarray(data[:n]).view("<u4")
    return bool(((words & mask) == mask).any())


def _has_negative(part: npt.NDArray[np.uint8]) -> bool:
    """A 10-byte varint whose last byte has bit 0 set (bit 63: a negative int64) in a run
    of whole varints: nine continuation bytes then that byte (no varint is longer)."""
    high = part >= 0x80
    r2 = high[:-1] & high[1:]
    if int(part.size) < 10 or not r2.any():
        return False
    r4 = r2[:-2] & r2[2:]
    r8 = r4[:-4] & r4[4:]
    r9 = r8[:-1] & high[8:]
    if not r9.any():
        return False
    last = part[9:]
    return bool((r9[:last.size] & (last & 1).astype(bool) & (last < 0x80)).any())


def _has_ten_byte_zero(part: npt.NDArray[np.uint8]) -> bool:
    """A varint of value 0 that is no 0x00 byte (``_has_zero_byte``) in a run of whole
    varints: nine 0x80 then an even byte below 0x80, a 10-byte varint (no varint is longer)
    whose low 64 bits are zero: bit 0 of its last byte is bit 63, the rest are past 64
    and dropped, as protobuf's decoders and ``decode_varints`` drop them."""
    if int(part.size) < 10:
        return False
    is80 = part == 0x80
    r2 = is80[:-1] & is80[1:]
    if not r2.any():
        return False
    r4 = r2[:-2] & r2[2:]
    r8 = r4[:-4] & r4[4:]
    r9 = r8[:-1] & is80[8:]
    last = part[9:]
    return bool((r9[:last.size] & ((last & 0x81) == 0)).any())


def _has_zero_byte(part: npt.NDArray[np.uint8]) -> bool:
    """A varint of value 0 in a run of whole varints: a 0x00 byte that starts a varint, or
    one after continuation bytes that are all 0x80 back to the varint's start."""
    zeros = part == 0
    if not zeros.any():
        return False
    if zeros[0] or bool((zeros[1:] & (part[:-1] < 0x80)).any()):
        return True
    at = np.flatnonzero(zeros[1:] & (part[:-1] == 0x80)) + 1  # 0x00 after 0x80: rare
    for _ in range(9):
        if not at.size:
            return False
        at = at - 1  # every ``at`` is a 0x80 byte here
        if bool((at == 0).any()) or bool((part[np.maximum(at - 1, 0)] < 0x80).any()):
            return True  # the 0x80 starts its varint: all of it is zero
        at = at[part[at - 1] == 0x80]
    return False


def decode_varints_reference(data: npt.NDArray[np.uint8], dtype: npt.DTypeLike = _U64
                  ) -> npt.NDArray[Any]:
    """:func:`decode_varints` in numpy passes, a chunk at a time (the fallback)."""
    want = np.dtype(dtype)
    if want not in (_U32, _U64):
        raise TypeError(f"decode_varints gives uint32 or uint64, not {want}")
    n = int(data.size)
    out = np.empty(n, want)  # at most one value per byte; trimmed at the end
    got = 0
    at = 0
    while at < n:
        stop = min(n, at + CHUNK)
        limit = min(n, stop + 10)
        while data[stop - 1] >= 0x80:  # end the chunk on a varint's last byte
            if stop == limit:
                _raise_at_end(data, stop)
            stop += 1
        got += _chunk(data, at, stop, out[got:])
        at = stop
    return out[:got]


def _raise_at_end(data: npt.NDArray[np.uint8], stop: int) -> None:
    """The error for a chunk that cannot be ended: over 10 bytes, or cut off."""
    last = np.flatnonzero(data[:stop] < 0x80)
    start = int(last[-1]) + 1 if last.size else 0
    if int(data.size) - start > 10:
        raise WireError("varint longer than 10 bytes in packed field", start)
    raise WireError("truncated varint in packed field", start)


def _chunk(data: npt.NDArray[np.uint8], at: int, stop: int, out: npt.NDArray[Any]) -> int:
    """Decode ``data[at:stop]`` (whole varints) into ``out``; return the count."""
    part = data[at:stop]
    ends = np.flatnonzero(part < 0x80)
    count = int(ends.size)
    if count == stop - at:  # every varint one byte
        out[:count] = part
        return count
    lengths = np.empty(count, np.int32)
    lengths[0] = ends[0] + 1
    np.subtract(ends[1:], ends[:-1], out=lengths[1:], casting="unsafe")
    longest = int(lengths.max())
    if longest > 10:
        bad = int(np.argmax(lengths > 10))
        raise WireError("varint longer than 10 bytes in packed field",
                          at + int(ends[bad]) - int(lengths[bad]) + 1)
    if longest <= 4 or (longest <= 8 and out.dtype == _U64):
        _from_words(data, at, stop, ends, lengths, 4 if longest <= 4 else 8, out[:count])
    else:
        out[:count] = _bytewise(part, ends, longest)
    return count


#: Per word width, the right shift that drops the bytes before a varint of each length.
_SHIFTS: Final = {w: np.array([0, *((w - n) * 8 for n in range(1, w + 1))], _WORDS[w])
                  for w in _WORDS}


#: Per word width, the payload mask and the rounds that pack a word's 7-bit groups side
#: by side: each keeps the ``low`` half of every pair of groups and shifts the ``high``
#: half down by ``shift`` (the gap between them), making groups of 14 bits, then 28, then 56.
_MERGES: Final = {
    4: (0x7F7F7F7F, ((0x007F007F, 1, 0x3F803F80), (0x3FFF, 2, 0x0FFFC000))),
    8: (0x7F7F7F7F7F7F7F7F, ((0x007F007F007F007F, 1, 0x3F803F803F803F80),
                             (0x00003FFF00003FFF, 2, 0x0FFFC0000FFFC000),
                             (0x0FFFFFFF, 4, 0x00FFFFFFF0000000))),
}


def _from_words(data: npt.NDArray[np.uint8], at: int, stop: int, ends: npt.NDArray[np.intp],
                lengths: npt.NDArray[np.int32], width: int, out: npt.NDArray[Any]) -> None:
    """Varints of at most ``width`` bytes, each from one unaligned load ending at its
    last byte (the bytes below its first belong to earlier varints and are shifted out)."""
    word = _WORDS[width]
    if at >= width - 1:
        base, first = data[at - (width - 1):stop], 0
    else:  # the first varints: nothing before them to load, so a zero-padded copy
        base = np.zeros(stop + width - 1, _U8)
        base[width - 1:] = data[:stop]
        first = at
    size = int(base.size) - (width - 1)
    # every word of the chunk, copied contiguous: gathering from the strided view
    # itself is three times slower
    words = np.ascontiguousarray(np.ndarray((size,), dtype=word, buffer=base, strides=(1,)))
    if first:
        ends += first
    x = words[ends]
    x >>= _SHIFTS[width][lengths]
    t = x.dtype.type
    keep, rounds = _MERGES[width]
    x &= t(keep)  # the 7 payload bits of each byte
    y = np.empty_like(x)
    for i, (low, shift, high) in enumerate(rounds, 1):
        np.bitwise_and(x, t(low), out=y)
        x >>= t(shift)
        x &= t(high)
        if i < len(rounds):
            x |= y
        else:
            np.bitwise_or(x, y, out=out, casting="unsafe")


def _bytewise(part: npt.NDArray[np.uint8], ends: npt.NDArray[np.intp],
              longest: int) -> npt.NDArray[np.uint64]:
    """Varints of any length up to 10, from the last byte down, one byte position per pass.

    A byte before a varint's last byte belongs to it while every byte between has
    its continuation bit; bytes before ``part`` are never looked at (index -1
    wraps to the chunk's last byte, which is a last byte: not a continuation).
    """
    more = part >= 0x80
    value = part[ends].astype(_U64)
    alive = np.ones(ends.size, bool)
    index = ends.copy()
    for _ in range(1, longest):
        index -= 1
        alive &= more[index]
        low = (part[index] & np.uint8(0x7F)).astype(_U64)
        value = np.where(alive, (value << np.uint64(7)) | low, value)
    return value


# --------------------------------------------------------------------------- strings

def split_strings(data: npt.NDArray[np.uint8], pos: int, end: int, tag: int, *,
                  partial: bool = False, offset: int = 0
                  ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], int] | None:
    """:func:`split_strings_reference` by the compiled loop (``_varints.split``: one pass, a
    few ns a value; numpy's strided rows cost 15 to 30 ns a value of a sequence's empty
    elements) where it is built; the same bounds (``offset`` added to them: where
    ``data`` starts in a file), stop and None."""
    if _LOOP is None:
        got = split_strings_reference(data, pos, end, tag, partial=partial)
        if got is None or not offset:
            return got
        return got[0] + offset, got[1] + offset, got[2]
    data = np.ascontiguousarray(data, _U8)
    span = max(0, end - pos)
    first = int(data[pos + 1]) + 2 if pos + 1 < end and data[pos + 1] < 0x80 else 2
    room = min(span // 2 + 1, span // first + 64)  # as many as values like the first
    starts = np.empty(room, np.intp)
    ends = np.empty(room, np.intp)
    # (it counts past its room)
    count, stop, cut = _LOOP.split(data, pos, end, tag, starts, ends, offset)
    if (cut and not partial) or not count:
        return None
    if count > room:  # shorter values later: again, with room for every one
        starts = np.empty(count, np.intp)
        ends = np.empty(count, np.intp)
        _LOOP.split(data, pos, stop, tag, starts, ends, offset)
    elif 2 * count < room:  # not a view of mostly unused room, held by a store
        return starts[:count].copy(), ends[:count].copy(), int(stop)
    return starts[:count], ends[:count], int(stop)


def count_strings(data: npt.NDArray[np.uint8], pos: int, end: int, tag: int
                  ) -> tuple[int, int] | None:
    """``split_strings(..., partial=True)``'s count of values and stop, without their
    bounds (a field past what a walk keeps is only counted)."""
    if _LOOP is None:
        got = split_strings_reference(data, pos, end, tag, partial=True)
        return None if got is None else (int(got[0].size), got[2])
    count, stop, _cut = _LOOP.split(np.ascontiguousarray(data, _U8), pos, end, tag,
                                    _NO_BOUNDS, _NO_BOUNDS)
    return (int(count), int(stop)) if count else None


_NO_BOUNDS: Final = np.empty(0, np.intp)


def split_strings_reference(data: npt.NDArray[np.uint8], pos: int, end: int, tag: int, *,
                        partial: bool = False
                        ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp], int] | None:
    """Where the values of the run of one-byte-``tag`` length-delimited fields at ``pos``
    start and end, and where the run stops (the next other field, or ``end``).

    ``data[pos]`` must be ``tag``. None when a value's length is cut off or
    runs past ``end``: the caller then walks the run itself and says what is
    wrong. With ``partial``, the values before such a value are returned
    instead (the run stops at its tag; None only when it is the first), so a
    caller holding a window of a longer message takes what the window holds
    and walks on from there. Values of one length in a row (``s100000``...
    ``s999999``, a sequence's like tensors) are taken a window at a time with
    strided views: value ``k`` of the row starts ``k * (head + length)`` bytes
    on (``head``: the tag and length bytes), which holds while the tag and
    length bytes there say so. Rows shorter than a few values are walked one
    value at a time.
    """
    starts: list[npt.NDArray[np.intp]] = []
    lengths: list[npt.NDArray[np.intp]] = []
    window = _WINDOW
    single: list[int] = []
    single_len: list[int] = []
    cut = True  # a value cut off or running past ``end`` (set False when the loop ends)
    while pos < end and data[pos] == tag:
        if pos + 1 >= end:
            break
        length = int(data[pos + 1])
        head = 2
        if length >= 0x80:
            length, head = _long_length(data, pos + 1, end)
            if head < 0:
                break
        step = head + length
        if pos + step > end:
            break
        if window < _WINDOW:  # one value, as the scalar walk takes it
            single.append(pos + head)
            single_len.append(length)
            pos += step
            window = min(_WINDOW, window * 2)
            continue
        rows = min(window, (end - pos) // step)
        fine = data[pos:pos + rows * step:step] == tag
        for h in range(1, head):  # the length's bytes, the same in every value of the row
            fine &= data[pos + h:pos + h + rows * step:step] == data[pos + h]
        count = rows if bool(fine.all()) else int(np.argmin(fine))
        if single:
            starts.append(np.array(single, np.intp))
            lengths.append(np.array(single_len, np.intp))
            single, single_len = [], []
        starts.append(pos + head + step * np.arange(count, dtype=np.intp))
        lengths.append(np.full(count, length, np.intp))
        pos += count * step
        window = window * 2 if count == rows else (_WINDOW if count >= 8 else 1)
    else:
        cut = False  # the run ended at another field or at ``end``
    if cut and not partial:
        return None
    if single:
        starts.append(np.array(single, np.intp))
        lengths.append(np.array(single_len, np.intp))
    if not starts:
        return None
    first = np.concatenate(starts)
    return first, first + np.concatenate(lengths), pos


def _long_length(data: npt.NDArray[np.uint8], at: int, end: int) -> tuple[int, int]:
    """A length of two or more bytes at ``at``: (length, head bytes with the tag), or
    (0, -1) when it is cut off, over 10 bytes, or longer than it needs past 5 bytes
    (``format.overlong_length``: the walk then says so)."""
    value = 0
    for i in range(10):
        if at + i >= end:
            return 0, -1
        b = int(data[at + i])
        value |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            if overlong_length(i + 1, value & 0xFFFFFFFFFFFFFFFF):
                return 0, -1
            return value, i + 2
    return 0, -1


#: ``strings_array`` slices this many values or fewer one by one.
_FEW: Final = 32


def strings_array(buf: Any, starts: npt.NDArray[np.intp],
                  ends: npt.NDArray[np.intp]) -> npt.NDArray[np.object_]:
    """An object array of the bytes ``buf[starts[i]:ends[i]]``: by the compiled loop, or
    ``strings_array_reference``."""
    n = int(starts.size)
    out = np.empty(n, dtype=object)
    if n and _LOOP is not None and _LOOP.strings(
            np.frombuffer(buf, _U8), np.ascontiguousarray(starts, np.int64),
            np.ascontiguousarray(ends, np.int64), out):
        return out
    return strings_array_reference(buf, starts, ends, out)


def strings_array_reference(buf: Any, starts: npt.NDArray[np.intp], ends: npt.NDArray[np.intp],
                        out: npt.NDArray[np.object_]) -> npt.NDArray[np.object_]:
    """``strings_array`` into ``out`` without the compiled loop (and its reference).

    Short strings go through one fixed-width numpy array (``astype(object)``
    makes the bytes objects in C); numpy drops trailing NUL bytes there, so the
    few values that end in NUL are sliced again one by one.
    """
    n = int(starts.size)
    if not n:
        return out
    data = np.frombuffer(buf, _U8)
    lengths = ends - starts
    width = int(lengths.max())
    if width == 0:
        out[:] = [b""] * n
        return out
    if width > _SHORT or n <= _FEW:  # (a map's four keys: no numpy rows for so few)
        lo, hi = int(starts.min()), int(ends.max())
        blob = bytes(buf[lo:hi])
        out[:] = [blob[a:b] for a, b in zip((starts - lo).tolist(), (ends - lo).tolist(),
                                            strict=True)]
        return out
    rows = np.zeros((n, width), _U8)
    fits = starts <= int(data.size) - width
    if int(data.size) >= width:
        windows = np.lib.stride_tricks.as_strided(data, (int(data.size) - width + 1, width),
                                                  (1, 1), writeable=False)
        rows[fits] = windows[starts[fits]]
    for i in np.flatnonzero(~fits).tolist():
        a, b = int(starts[i]), int(ends[i])
        rows[i, :b - a] = data[a:b]
    rows[np.arange(width) >= lengths[:, None]] = 0
    out[:] = rows.view(f"S{width}").ravel().astype(object)
    nul = np.flatnonzero((lengths > 0) & (data[np.maximum(ends - 1, 0)] == 0))
    for i in nul.tolist():
        out[i] = bytes(buf[int(starts[i]):int(ends[i])])
    return out
