"""densify: one scatter, its index checks vectorised, its errors ours."""

from __future__ import annotations

import tempfile
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnxdata import (
    OnnxDataError,
    SparseParts,
    SparseTensorProto,
    TensorProto,
    ValidationError,
    from_numpy,
    read,
    to_numpy,
)
from onnxdata.convert.sparse import densify
from onnxdata.rules.validation import problems_reference


def _parts(indices: Any, shape: tuple[int, ...]) -> SparseParts:
    idx = np.array(indices, np.int64)
    return SparseParts(np.arange(1, len(idx) + 1, dtype=np.float32), idx, shape)


@pytest.mark.parametrize(("indices", "shape", "match"), [
    ([0, 3, 3], (5,), "ascending without duplicates"),
    ([2, 1], (5,), "ascending without duplicates"),
    ([0, 5], (5,), r"outside \[0, 5\)"),
    ([-1, 2], (5,), r"outside \[0, 5\)"),
    ([[0, 1], [0, 1]], (2, 2), "ascending without duplicates"),
    ([[1, 0], [0, 1]], (2, 2), "ascending without duplicates"),
    ([[0, 2]], (2, 2), r"outside dims \[2, 2\]"),
    ([[0, -1]], (2, 2), r"outside dims \[2, 2\]"),
])
def test_bad_indices_are_our_error_with_the_path(indices: Any, shape: tuple[int, ...],
                                                 match: str) -> None:
    with pytest.raises(ValidationError, match=match) as info:
        densify(_parts(indices, shape), "x")
    assert info.value.problems[0].path == "x.indices"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 59), max_size=30), st.booleans())
def test_densify_is_one_scatter(picks: list[int], rank2: bool) -> None:
    linear = np.array(sorted(set(picks)), np.int64)
    values = np.arange(1, len(linear) + 1, dtype=np.float32)
    shape = (6, 10)
    indices = np.stack(np.unravel_index(linear, shape), axis=1).astype(np.int64) if rank2 \
        else linear
    want = np.zeros(60, np.float32)
    want[linear] = values
    got = densify(SparseParts(values, indices, shape), "")
    assert np.array_equal(got, want.reshape(shape))
    message = from_numpy(SparseParts(values, indices, shape))
    assert problems_reference(message) == []
    assert np.array_equal(to_numpy(message), got)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-3, 70), min_size=2, max_size=40), st.booleans())
def test_any_linear_indices_get_validates_verdict(indices: list[int], raw: bool) -> None:
    """The bulk index check finds a fault exactly when the row-by-row check does; to_numpy
    and read (which densify without checking the indices again) refuse what it refuses."""
    sp = SparseTensorProto(dims=[64])
    sp.values.CopyFrom(TensorProto(data_type=1, dims=[len(indices)],
                                   raw_data=np.ones(len(indices), np.float32).tobytes()))
    sp.indices.CopyFrom(TensorProto(data_type=7, dims=[len(indices)]))
    if raw:
        sp.indices.raw_data = np.array(indices, "<i8").tobytes()
    else:
        sp.indices.int64_data.extend(indices)
    ok = all(0 <= i < 64 for i in indices) and all(a < b for a, b in pairwise(indices))
    assert (problems_reference(sp) == []) == ok
    if ok:
        assert np.count_nonzero(to_numpy(sp)) == len(indices)
        assert np.array_equal(_read(sp), to_numpy(sp))
    else:
        with pytest.raises(OnnxDataError):
            to_numpy(sp)
        with pytest.raises(OnnxDataError):
            _read(sp)


def _read(sp: SparseTensorProto) -> Any:
    """``onnxdata.read`` of ``sp``'s bytes, from a file of their own."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "sp.pb"
        path.write_bytes(sp.SerializeToString())
        return read(path, "sparse_tensor", copy=True)
