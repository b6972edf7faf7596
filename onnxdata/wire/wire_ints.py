"""A long repeated int64 field (dims, as a bogus reading can hold millions of them) as a
sequence that does not hold them all: ``WireInts``, made by ``engine.tensor``'s ``ints``
when a field's pieces are many."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final, overload

import numpy as np
import numpy.typing as npt

from onnxdata.wire.decode import scan_varints
from onnxdata.wire.field_values import (
    KEPT_INTS,
    decode_varints,
    iter_varints,
    joined,
    joined_head,
    measure,
    varints,
)
from onnxdata.wire.occurrences import Piece
from onnxdata.wire.source import Source

__all__ = ["WireInts"]

_U64: Final = np.dtype(np.uint64)
_HUGE: Final = 1 << 64
#: Values decoded as soon as the field is measured; a longer field (a bogus reading's 1M
#: "dims", every byte of a float32 payload one varint) waits until it is walked: decoding
#: 1M of them made 8 MB of fresh pages, 3 ms of each sparse reading of a 1 MB file.
KEPT_EAGER: Final = 1 << 12


class WireInts(Sequence[int]):
    """A long repeated int64 field (dims read from a bogus reading can be millions long)
    as a sequence decoded chunk by chunk whenever it is walked: bounded memory. Up to
    KEPT_INTS values are kept once decoded: the rules and summaries walk it several
    times, and each walk joined its many pieces again."""

    def __init__(self, src: Source, pieces: Callable[[], Iterable[Piece]], count: int) -> None:
        self._src = src
        self._pieces = pieces
        self._count = count
        self._stats: tuple[int, bool, int] | None = None
        self._signs: tuple[bool, bool] | None = None
        self._kept: npt.NDArray[np.int64] | None = None
        self._first: npt.NDArray[np.int64] | None = None  # a prefix, decoded alone

    @classmethod
    def measured(cls, src: Source, pieces: Callable[[], Iterable[Piece]]) -> WireInts:
        """A WireInts counted (as ``varint_count``, raising what it raises) in the same
        pass that finds whether a dim is negative or zero, many small runs scanned in place
        (its values decoded at once when they are few: KEPT_EAGER; more when walked, where
        the rules' facts need only a prefix, decoded from the first runs alone)."""
        total, negative, zero = measure(src, pieces())
        out = cls(src, pieces, total)
        out._signs = (negative, zero)
        if 0 < total <= min(KEPT_EAGER, KEPT_INTS):
            out._kept = varints(src, pieces()).view(np.int64)
        return out

    def __len__(self) -> int:
        return self._count

    def _chunks(self) -> Iterator[npt.NDArray[np.int64]]:
        if self._kept is not None:
            yield self._kept
            return
        if self._count <= KEPT_INTS:
            chunks = [(c if c.dtype == _U64 else decode_varints(c)).view(np.int64)
                      for c in self._raw()]
            self._kept = chunks[0] if len(chunks) == 1 else np.concatenate(chunks) if chunks \
                else np.zeros(0, np.int64)
            yield self._kept
            return
        for chunk in iter_varints(self._src, self._pieces()):
            yield chunk.view(np.int64)

    def _facts(self) -> tuple[int, bool, int]:
        """(smallest dim when one is negative else 0, a dim is 0, product of the dims > 1 up
        to past 2**64), read from the bytes in one pass of byte-wide numpy tests (no index
        arrays, nothing decoded): a negative int64 is a 10-byte varint whose last byte has
        bit 0 set, a zero is a varint of bytes 0x80 ending in 0x00, or nine 0x80 and an even
        byte (bits past 64 dropped, as protobuf drops them). Only a prefix is
        decoded for the product, and all of it only to find the smallest negative dim."""
        if self._stats is None:
            negative = zero = False
            for part in self._raw() if self._signs is None else ():
                if part.dtype == _U64:  # single values, decoded already
                    negative = negative or bool((part >= np.uint64(1 << 63)).any())
                    zero = zero or not part.all()
                    continue
                _count, _long, has_negative, has_zero = scan_varints(part)
                negative = negative or has_negative
                zero = zero or has_zero
            if self._signs is not None:
                negative, zero = self._signs
            total = self._product()
            smallest = 0
            if negative:
                for c in self._chunks():
                    if c.size:
                        smallest = min(smallest, int(c.min()))
            self._stats = (smallest, zero, total)
        return self._stats

    def _product(self) -> int:
        """The product of the dims > 1, not multiplied past 2**64: of the values kept, else
        of the first KEPT_EAGER decoded alone (a bogus reading's 1M dims pass 2**64 in a
        few), else of all of them decoded and kept (the rules walk them again)."""
        if self._kept is None and self._count <= KEPT_INTS:
            total = _product([self._prefix(min(self._count, KEPT_EAGER)).view(_U64)])
            if total > _HUGE or self._count <= KEPT_EAGER:
                return total
        return _product((c.view(_U64) for c in self._chunks()) if self._count <= KEPT_INTS
                        else self._raw())

    def _prefix(self, n: int) -> npt.NDArray[np.int64]:
        """The first ``n`` values (all when fewer), decoded from the first bytes alone, and
        at least the first KEPT_EAGER kept: the product and a summary's first dims both
        ask for them, and each read joined the first runs again."""
        n = min(n, self._count)
        if self._first is None or self._first.size < n:
            self._first = self._decode_prefix(max(n, min(self._count, KEPT_EAGER)))
        return self._first[:n]

    def _decode_prefix(self, n: int) -> npt.NDArray[np.int64]:
        out: list[npt.NDArray[Any]] = []
        got = 0
        for part in joined_head(self._src, self._pieces(), n):
            if got >= n:
                break
            if part.dtype != _U64:
                part = part[:10 * (n - got)]
                ends = np.flatnonzero(part < 0x80)[:n - got]
                part = decode_varints(part[:int(ends[-1]) + 1]) if ends.size else part[:0]
            out.append(part[:n - got])
            got += int(out[-1].size)
        if not out:
            return np.zeros(0, np.int64)
        return (out[0] if len(out) == 1 else np.concatenate(out)).view(np.int64)

    def _raw(self) -> Iterator[npt.NDArray[Any]]:
        """The field's bytes, cut after whole varints, and its single values (as uint64)."""
        return joined(self._src, self._pieces())

    def smallest(self) -> int:
        """The smallest dim when one is negative, else 0 (all that ``>= 0`` tests need)."""
        return self._facts()[0]

    def element_count(self) -> int | None:
        """``rules.tensor.element_count``'s rule: None when a dim is negative, 0 when one is
        0, else the product (not multiplied past 2**64)."""
        smallest, zero, total = self._facts()
        if smallest < 0:
            return None
        return 0 if zero else total

    def __iter__(self) -> Iterator[int]:
        for chunk in self._chunks():
            for at in range(0, int(chunk.size), 4096):  # (a prefix read makes no long list)
                yield from chunk[at:at + 4096].tolist()

    @overload
    def __getitem__(self, i: int) -> int: ...

    @overload
    def __getitem__(self, i: slice) -> list[int]: ...

    def __getitem__(self, i: int | slice) -> int | list[int]:
        if self._kept is None:  # a few first values (a summary's): decoded alone
            start, stop, step = i.indices(self._count) if isinstance(i, slice) else \
                (i, i + 1, 1) if 0 <= i < self._count else (0, 0, 0)
            if 0 <= start <= stop <= KEPT_EAGER and step > 0:
                head = self._prefix(stop)
                return head[start:stop:step].tolist() if isinstance(i, slice) else int(head[i])
        if self._count <= KEPT_INTS:
            kept = next(self._chunks())
            if isinstance(i, slice):
                return kept[i].tolist()  # type: ignore[no-any-return]
            return int(kept[i])
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


def _product(raw: Iterable[npt.NDArray[Any]]) -> int:
    """The product of the dims > 1, not multiplied past 2**64: varints decoded a growing
    prefix at a time, so a product that passes 2**64 early decodes little."""
    total = 1
    for part in raw:
        at, step, size = 0, 64, int(part.size)
        while at < size:
            if part.dtype == _U64:  # decoded: a growing prefix at a time too
                values, at = part[at:at + step], min(size, at + step)
                step *= 4
            else:
                stop = min(size, at + step)
                if stop < size:
                    ends = np.flatnonzero(part[at:stop] < 0x80)
                    stop = at + int(ends[-1]) + 1 if ends.size else min(size, at + 10)
                values, at = decode_varints(part[at:stop]), stop
                step *= 4
            signed = values.view(np.int64)
            for d in signed[signed > 1].tolist():
                total *= int(d)
                if total > _HUGE:
                    return total
    return total
