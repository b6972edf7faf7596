"""StringStringEntryProto read fast: one written as protobuf writes it (``plain_entry``),
many such checked at once and decoded only where asked (``plain_entries``: a tensor with
55,000 external_data entries words 1,000 problems, and finds the known keys among the
rest by numpy), and many others at once by their distinct bytes (``distinct_entries``: a
tensor merged from 15,000 has 45,000 external_data entries, most alike, which are not
45,000 bytes objects to hash one by one)."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Final, overload

import numpy as np
import numpy.typing as npt

from onnxdata.wire.occurrences import RangeStore, range_bounds
from onnxdata.wire.source import Source

__all__ = ["PlainEntries", "distinct_entries", "plain_entries", "plain_entry"]

#: Entries grouped by their bytes when there are at least this many, each at most
#: _WIDEST bytes, and the table of their bytes has at most _CELLS cells.
MANY: Final = 16
_WIDEST: Final = 256
_CELLS: Final = 1 << 22
#: An odd multiplier of the rows' hash (any collision is caught by the comparison after).
_MIX: Final = np.uint64(0x9E3779B97F4A7C15)


@functools.lru_cache(maxsize=4096)
def plain_entry(data: bytes) -> tuple[str, str] | None:
    """The key and value of a StringStringEntryProto of these bytes when they are exactly
    a key then a value of fewer than 128 bytes each, as protobuf writes them (nothing for
    a rule to say); None for any other bytes. Remembered across walks (the five readings
    of one file meet the same entries), 4,096 at most."""
    n = len(data)
    if n < 4 or data[0] != 0x0A:
        return None
    k = data[1]
    if k >= 0x80 or k + 4 > n or data[k + 2] != 0x12:
        return None
    v = data[k + 3]
    if v >= 0x80 or k + v + 4 != n:
        return None
    return (data[2:k + 2].decode("utf-8", "surrogateescape"),
            data[k + 4:].decode("utf-8", "surrogateescape"))


class PlainEntries(Sequence[tuple[str, str]]):
    """Many entries, each a key then a value of fewer than 128 bytes as protobuf writes
    them (nothing for a rule to say of their bytes), held as their bytes and where each
    key and value is: an entry's texts are decoded when asked (as ``plain_entry`` decodes
    them), and ``find_key`` looks for a key among them all by numpy
    (``rules.tensor.KeyedEntries``)."""

    def __init__(self, blob: bytes, keys: npt.NDArray[np.int64],
                 key_lengths: npt.NDArray[np.int64], values: npt.NDArray[np.int64],
                 value_lengths: npt.NDArray[np.int64]) -> None:
        self._blob = blob
        self._keys, self._key_lengths = keys, key_lengths
        self._values, self._value_lengths = values, value_lengths

    def __len__(self) -> int:
        return int(self._keys.size)

    @overload
    def __getitem__(self, i: int) -> tuple[str, str]: ...

    @overload
    def __getitem__(self, i: slice) -> list[tuple[str, str]]: ...

    def __getitem__(self, i: int | slice) -> tuple[str, str] | list[tuple[str, str]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        k, v = int(self._keys[i]), int(self._values[i])
        blob = self._blob
        return (blob[k:k + int(self._key_lengths[i])].decode("utf-8", "surrogateescape"),
                blob[v:v + int(self._value_lengths[i])].decode("utf-8", "surrogateescape"))

    def find_key(self, key: str, start: int) -> int | None:
        want = key.encode("utf-8", "surrogateescape")
        at = np.flatnonzero(self._key_lengths[start:] == len(want)) + start
        u8 = np.frombuffer(self._blob, np.uint8)
        for j, byte in enumerate(want):
            at = at[u8[self._keys[at] + j] == byte]
        return int(at[0]) if at.size else None


def plain_entries(src: Source, ranges: list[tuple[int, int]] | RangeStore
                  ) -> PlainEntries | None:
    """The entries at ``ranges`` as ``PlainEntries``, checked in a few numpy passes over
    their bytes; None where they are few, not each a key then a value as protobuf writes
    them, not in wire order, or far apart (a payload between them)."""
    n = len(ranges)
    if n < MANY:
        return None
    bounds = range_bounds(ranges)
    starts, ends = bounds[0].view(np.int64), bounds[1].view(np.int64)  # offsets < 2**63
    lo, hi = int(starts[0]), int(ends[-1])
    lengths = ends - starts
    if hi - lo > 2 * int(lengths.sum()) + (1 << 16) or bool(
            (lengths < 4).any() or (starts[1:] < ends[:-1]).any()):
        return None
    blob = src.read(lo, hi)
    u8 = np.frombuffer(blob, np.uint8)
    s = starts - lo
    key_lengths = u8[s + 1].astype(np.int64)
    if not (bool((u8[s] == 0x0A).all()) and bool((key_lengths < 0x80).all())):
        return None
    tag = s + 2 + key_lengths  # where the value's tag is (before the entry's end?)
    if bool((tag + 2 > ends - lo).any()) or not bool((u8[tag] == 0x12).all()):
        return None
    value_lengths = u8[tag + 1].astype(np.int64)
    if not (bool((value_lengths < 0x80).all()) and
            bool((tag + 2 + value_lengths == ends - lo).all())):
        return None
    return PlainEntries(blob, s + 2, key_lengths, tag + 2, value_lengths)


def distinct_entries(src: Source, ranges: list[tuple[int, int]] | RangeStore
                     ) -> tuple[list[bytes], list[int]] | None:
    """The distinct bytes of the entries at ``ranges`` and which of them each entry is, in
    a few numpy passes over their bytes (a table of rows, a hash per row, the rows
    compared with their group's first, so equal hashes of unequal bytes are never taken
    for one); None where the entries are few, long, or not in wire order."""
    n = len(ranges)
    if n < MANY:
        return None
    bounds = range_bounds(ranges)
    starts, ends = bounds[0].view(np.int64), bounds[1].view(np.int64)  # offsets < 2**63
    lo, hi = int(starts[0]), int(ends[-1])
    starts = starts - lo  # (new arrays: the store's columns stay as they are)
    ends = ends - lo
    lengths = ends - starts
    widest = int(lengths.max()) if n else 0
    if widest > _WIDEST or bool((starts < 0).any() or (ends > hi - lo).any() or
                                (lengths < 0).any()):
        return None
    width = -(-max(widest, 1) // 8) * 8
    distinct: list[bytes] = []
    index: dict[bytes, int] = {}
    which: list[int] = []
    step = max(1, _CELLS // width)  # rows of a table at a time: _CELLS bytes at most
    for first in range(0, n, step):
        s, size = starts[first:first + step], lengths[first:first + step]
        a, b = int(s.min()), int((s + size).max())
        blob = src.read(lo + a, lo + b)
        got = _distinct(blob, s - a, size, width)
        if got is None:
            return None
        at, firsts = got
        mine = [index.setdefault(blob[x:x + k], len(index)) for x, k in at]
        distinct += list(index)[len(distinct):]  # the new ones, as first met
        which += np.asarray(mine, np.int64)[firsts].tolist()
    return distinct, which


def _distinct(blob: bytes, starts: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64],
              width: int) -> tuple[list[tuple[int, int]], npt.NDArray[np.intp]] | None:
    """The distinct rows of ``blob``'s entries (where each first is, and its length) and
    which of them each entry is; None where two rows of one hash differ."""
    rows = _rows(np.frombuffer(blob, np.uint8), starts, lengths, width)
    words = rows.view(np.uint64)  # (n, width // 8)
    h = lengths.astype(np.uint64)
    for k in range(words.shape[1]):
        h = h * _MIX + words[:, k]
    _, first, which = np.unique(h, return_index=True, return_inverse=True)
    which = which.ravel()
    same = first[which]
    if not (bool((words == words[same]).all()) and bool((lengths == lengths[same]).all())):
        return None  # (two rows of one hash differ)
    return (list(zip(starts[first].tolist(), lengths[first].tolist(), strict=True)), which)


def _rows(u8: npt.NDArray[np.uint8], starts: npt.NDArray[np.int64],
          lengths: npt.NDArray[np.int64], width: int) -> npt.NDArray[np.uint8]:
    """Each entry's bytes in a row of ``width``, zeros after them."""
    padded = np.concatenate([u8, np.zeros(width, np.uint8)])
    got = np.lib.stride_tricks.sliding_window_view(padded, width)[starts]
    got *= (np.arange(width) < lengths[:, None]).view(np.uint8)
    return np.ascontiguousarray(got)
