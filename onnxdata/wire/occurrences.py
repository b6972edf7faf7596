"""The arrays a walk keeps many occurrences in: a message field's byte ranges
(``RangeStore``) and a number field's pieces (``Compact``); past what it keeps, a number
field's pieces found again a Compact at a time (``Rewalked``).

The Python walk adds a run of values (``walk._bulk``: a numpy split of up to a MiB of
fields) to a store as it comes; the runs wait in a list and are copied into the store's
arrays once, when the walk settles it (``settle``, before any single value and at the
scan's end). Copying each run on arrival grew the arrays a run at a time, and each
growth copied them whole: 8 MB of a sequence's elements cost 0.7 s.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from onnxdata.wire.format import LEN, VARINT

__all__ = ["ROW", "Compact", "Piece", "RangeStore", "Rewalked", "range_bounds"]


def _raw(values: Any) -> Any:
    """The bytes of an int64 array, for ``array.frombytes`` without a copy (the offsets
    are never negative, so an int64's bytes are a "Q" array's)."""
    return np.ascontiguousarray(values).view(np.uint8)


class _Waiting:
    """Runs added to a store and not yet copied into its arrays.

    A store of one run and nothing else takes that run's numpy arrays as its columns,
    uncopied (five readings of 500,000 elements copied 45 MB into fresh pages: half
    their time); ``own`` copies them into arrays before anything is appended.
    """

    waiting: list[tuple[Any, ...]]
    held: int
    #: The columns' attribute names and array typecodes, in column order.
    COLUMNS: tuple[tuple[str, str], ...] = ()

    def arrays(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name, _ in self.COLUMNS)

    def add_run(self, *columns: Any) -> None:
        """Add a run: one numpy array per column of the store, in its order."""
        self.waiting.append(columns)
        self.held += int(columns[0].size)

    def settle(self) -> None:
        """Copy the waiting runs into the arrays: one growth of each; or take a lone run's
        arrays as the columns of an empty store."""
        if not self.waiting:
            return
        if len(self.waiting) == 1 and not len(self.arrays()[0]):
            for (name, _), column in zip(self.COLUMNS, self.waiting[0], strict=True):
                setattr(self, name, column)
            self.waiting, self.held = [], 0
            return
        self.own()
        for k, target in enumerate(self.arrays()):
            parts = [run[k] for run in self.waiting]
            target.frombytes(_raw(parts[0] if len(parts) == 1 else np.concatenate(parts)))
        self.waiting, self.held = [], 0

    def _growable(self) -> None:
        """Ready for an append: the waiting runs settled, the columns arrays that grow."""
        if self.waiting or type(getattr(self, self.COLUMNS[0][0])) is not array:
            self.settle()
            self.own()

    def own(self) -> None:
        """The columns as arrays that grow (a run's numpy arrays copied)."""
        for name, code in self.COLUMNS:
            column = getattr(self, name)
            if not isinstance(column, array):
                grown = array(code)
                grown.frombytes(_raw(column))
                setattr(self, name, grown)

    def _rows(self) -> Iterator[tuple[Any, ...]]:
        """The rows as Python ints, for a Python walk of them (which may stop early: a
        run's numpy columns are converted a stretch at a time)."""
        self.settle()
        columns = self.arrays()
        if isinstance(columns[0], array):
            yield from zip(*columns, strict=True)
            return
        for at in range(0, len(columns[0]), _STRETCH):
            yield from zip(*(c[at:at + _STRETCH].tolist() for c in columns), strict=True)


#: Rows of a run's numpy columns converted to Python ints at a time.
_STRETCH = 4096


class RangeStore(_Waiting):
    """Many byte ranges in two arrays (16 bytes each instead of a tuple's ~120)."""

    COLUMNS = (("starts", "Q"), ("ends", "Q"))

    def __init__(self, ranges: list[tuple[int, int]]) -> None:
        self.starts: Any = array("Q", [a for a, _ in ranges])
        self.ends: Any = array("Q", [b for _, b in ranges])
        self.waiting, self.held = [], 0

    def append(self, r: tuple[int, int]) -> None:
        self._growable()
        self.starts.append(r[0])
        self.ends.append(r[1])

    def __len__(self) -> int:
        return len(self.starts) + self.held

    def __getitem__(self, i: int) -> tuple[int, int]:
        self.settle()
        return int(self.starts[i]), int(self.ends[i])

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return self._rows()


def range_bounds(ranges: list[tuple[int, int]] | RangeStore
                 ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]:
    """Many ranges' starts and ends as two uint64 arrays (a RangeStore's columns viewed)."""
    if isinstance(ranges, RangeStore):
        return np.frombuffer(ranges.starts, np.uint64), np.frombuffer(ranges.ends, np.uint64)
    return (np.array([a for a, _ in ranges], np.uint64),
            np.array([b for _, b in ranges], np.uint64))


#: One piece of a repeated number field: (VARINT, array of single values, 0),
#: (LEN, start, end) for a packed run, (I32/I64, start, end) for one fixed value, or
#: (I32/I64 | ROW, start, end) for fixed values one after another, each after the field's
#: one-byte tag (a float_data written a value at a time: one piece, not one per value;
#: the compiled walk's): ``(end - start + 1) // (width + 1)`` values.
Piece = tuple[int, Any, int]
ROW: Final = 16


class Compact(_Waiting):
    """Many pieces of one field in three arrays: (wire type, start or value, end)."""

    COLUMNS = (("wts", "b"), ("starts", "Q"), ("ends", "Q"))

    def __init__(self, pieces: list[Piece]) -> None:
        if pieces:  # the walk's first KEEP_PIECES, made a Compact at once
            wt_column, start_column, end_column = zip(*pieces, strict=True)
            if VARINT not in wt_column:  # no value array among them: the columns as they are
                self.wts: Any = array("b", bytes(wt_column))  # (wire types: 0 to 21)
                self.starts: Any = array("Q", start_column)
                self.ends: Any = array("Q", end_column)
                self.waiting, self.held = [], 0
                return
        wts: list[int] = []
        starts: list[int] = []
        ends: list[int] = []
        for wt, a, b in pieces:
            if wt == VARINT:  # (VARINT, array of values, 0): a piece per value
                wts += [VARINT] * len(a)
                starts += a
                ends += [0] * len(a)
            else:
                wts.append(wt)
                starts.append(a)
                ends.append(b)
        self.wts = array("b", wts)
        self.starts = array("Q", starts)
        self.ends = array("Q", ends)
        self.waiting, self.held = [], 0

    def append(self, wt: int, a: int, b: int) -> None:
        self._growable()
        self.wts.append(wt)
        self.starts.append(a)
        self.ends.append(b)

    def __len__(self) -> int:
        return len(self.wts) + self.held

    def forget(self) -> None:
        """Let go of the pieces of a field past COMPACT_PIECES (``Fields.over``: walked again
        whenever they are asked for), keeping their count: 4 million pieces are 68 MB, and
        the runs of a Python walk would be copied by ``settle`` only to be dropped."""
        count = len(self)
        self.wts, self.starts, self.ends = array("b"), array("Q"), array("Q")
        self.waiting, self.held = [], count

    def varint_bytes(self) -> int:
        """The bytes of a varint field's pieces: a packed run's length, and 1 for each single
        value (one numpy pass, not a Python step per piece)."""
        self.settle()
        wts = np.frombuffer(self.wts, np.int8)
        if bool((wts == LEN).all()):  # packed runs only: their bytes, two sums (mod 2**64)
            return (int(np.frombuffer(self.ends, np.uint64).sum(dtype=np.uint64))
                    - int(np.frombuffer(self.starts, np.uint64).sum(dtype=np.uint64))) % (1 << 64)
        lengths = np.frombuffer(self.ends, np.int64) - np.frombuffer(self.starts, np.int64)
        return int(np.where(wts == LEN, lengths, 1).sum())

    def __iter__(self) -> Iterator[Piece]:
        for wt, a, b in self._rows():
            yield (wt, array("Q", [a]), 0) if wt == VARINT else (wt, a, b)


class Rewalked:
    """The pieces of a number field past COMPACT_PIECES, not kept: found again by walking
    the message each time they are asked for, a ``Compact`` batch at a time
    (``fields.piece_batches``), which ``field_values`` takes whole as it takes a Compact."""

    def __init__(self, batches: Callable[[], Iterator[Compact]]) -> None:
        self.batches = batches

    def __iter__(self) -> Iterator[Piece]:
        for batch in self.batches():
            yield from batch
