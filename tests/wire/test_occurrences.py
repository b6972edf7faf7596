"""The walk's stores (wire/occurrences.py): a lone run is taken as the store's columns without a
copy, and the store still reads, iterates and grows as one of arrays."""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np
import pytest

import onnxdata
from bench import shapes
from onnxdata.explorer.readings import reading
from onnxdata.wire.format import LEN, VARINT
from onnxdata.wire.occurrences import Compact, RangeStore


def test_a_lone_run_is_the_range_stores_columns_uncopied() -> None:
    starts = np.array([3, 10, 20], np.int64)
    ends = np.array([5, 10, 29], np.int64)
    store = RangeStore([])
    store.add_run(starts, ends)
    assert len(store) == 3
    store.settle()
    assert store.starts is starts and store.ends is ends  # no copy
    assert list(store) == [(3, 5), (10, 10), (20, 29)]
    assert all(type(v) is int for pair in store for v in pair)
    assert store[1] == (10, 10) and type(store[1][0]) is int
    assert np.frombuffer(store.starts, np.uint64).tolist() == [3, 10, 20]
    store.append((30, 31))  # grows: its own arrays now, the run untouched
    assert isinstance(store.starts, array) and list(store)[-1] == (30, 31) and len(store) == 4
    assert starts.tolist() == [3, 10, 20]


def test_runs_after_values_or_runs_are_copied_in_order() -> None:
    store = RangeStore([(1, 2)])
    store.add_run(np.array([4, 6], np.int64), np.array([5, 7], np.int64))
    store.add_run(np.array([8], np.int64), np.array([9], np.int64))
    assert list(store) == [(1, 2), (4, 5), (6, 7), (8, 9)]
    assert isinstance(store.starts, array)
    two = RangeStore([])
    two.add_run(np.array([4], np.int64), np.array([5], np.int64))
    two.add_run(np.array([6], np.int64), np.array([7], np.int64))
    assert list(two) == [(4, 5), (6, 7)] and isinstance(two.starts, array)


def test_a_compact_of_one_run_reads_and_grows() -> None:
    kept = Compact([])
    kept.add_run(np.full(2, LEN, np.int8), np.array([0, 4], np.uint64),
                 np.array([3, 4], np.uint64))
    assert kept.varint_bytes() == 3
    assert [(int(w), a, b) for w, a, b in kept] == [(LEN, 0, 3), (LEN, 4, 4)]
    kept.append(VARINT, 7, 0)
    pieces = list(kept)
    assert pieces[:2] == [(LEN, 0, 3), (LEN, 4, 4)]
    assert pieces[2][0] == VARINT and list(pieces[2][1]) == [7] and len(kept) == 3
    assert kept.varint_bytes() == 4


@pytest.mark.parametrize("pieces", [
    [(LEN, 0, 3), (LEN, 5, 5), (5, 6, 10)],  # no value array: the columns taken at once
    [(LEN, 0, 3), (VARINT, array("Q", [7, 8]), 0), (1, 9, 17)],  # a value per piece
])
def test_a_compact_of_pieces_holds_them_in_order(pieces: list[tuple[int, Any, int]]
                                                 ) -> None:
    kept = Compact(pieces)
    one_by_one = Compact([])
    for wt, a, b in pieces:
        for value in a if wt == VARINT else [a]:
            one_by_one.append(wt, value, b)
    for column in ("wts", "starts", "ends"):
        assert list(getattr(kept, column)) == list(getattr(one_by_one, column))
    assert len(kept) == sum(len(a) if wt == VARINT else 1 for wt, a, _ in pieces)


@pytest.mark.parametrize("name", ["empty-tensors", "optionals-no-elem-type", "maps-string",
                                  "sparse-tiny", "invalid-counts", "strings-empty"])
def test_the_five_readings_of_one_root_are_those_read_alone(name: str) -> None:
    """``readings`` walks the root once and gives its runs' arrays to the five readings'
    stores, uncopied: no reading may change them under the others."""
    data = shapes.by_name(name)[0](20_000).data
    together = [r.as_json() for r in onnxdata.readings(data)]
    alone = [reading(data, r["kind"]).as_json() for r in together]
    assert together == alone
