"""``lockstep._uniform`` (a batch of like occurrences read from the first) gives exactly
what ``_stepwise`` (one field of every occurrence per numpy step) gives, or declines.

The uniform path takes a batch only when every occurrence has the first's length, tags,
length prefixes and varint lengths; these tests make batches of like occurrences, change
one of them in each of those ways (and in ways the path must accept: a payload byte, a
varint's value), and compare the two paths field by field.
"""

from __future__ import annotations

import tempfile
from array import array
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnxdata.lockstep import (
    _keep_columns,
    _keep_masks,
    _period,
    _stepwise,
    _uniform,
    _uniform_heads,
)
from onnxdata.source import Source
from onnxdata.walk import (
    MAP,
    SEGMENT,
    SEQUENCE,
    SPARSE,
    TENSOR,
    Compact,
    Fields,
    RangeStore,
    Schema,
)
from onnxdata.wire import encode_varint

VARINTS = st.sampled_from([0, 1, 127, 128, 300, 2**35, 2**63, 2**64 - 1])


@st.composite
def occurrence(draw: st.DrawFn) -> bytes:
    out = b""
    for _ in range(draw(st.integers(1, 6))):
        number = draw(st.integers(1, 15))
        wt = draw(st.sampled_from([0, 0, 2, 2, 1, 5]))
        out += encode_varint(number << 3 | wt)
        if wt == 0:
            out += encode_varint(draw(VARINTS))
        elif wt == 2:
            out += encode_varint(n := draw(st.integers(0, 20))) + bytes(range(n))
        else:
            out += bytes(8 if wt == 1 else 4)
    return out


def batch(first: bytes, count: int, change: int, at: int, byte: int
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``count`` copies of ``first``, the one at ``change`` with byte ``at`` set to
    ``byte``, each framed by two filler bytes: the buffer and the ranges."""
    parts, starts, ends, pos = [], [], [], 0
    for i in range(count):
        body = bytearray(first)
        if i == change:
            body[at % len(body)] = byte
        parts.append(b"\xff\xff" + bytes(body))
        starts.append(pos + 2)
        ends.append(pos + 2 + len(body))
        pos += 2 + len(body)
    w = np.frombuffer(b"".join(parts), np.uint8)
    return w, np.array(starts, np.int64), np.array(ends, np.int64)


def same(x: tuple[np.ndarray, ...] | None, y: tuple[np.ndarray, ...] | None) -> bool:
    if x is None or y is None:
        return x is y
    return all(np.array_equal(a, b) for a, b in zip(x, y, strict=True))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(occurrence(), st.integers(1, 40), st.integers(0, 39), st.integers(0, 200),
       st.integers(0, 255))
def test_the_uniform_path_equals_the_stepwise_walk_or_declines(
        first: bytes, count: int, change: int, at: int, byte: int) -> None:
    w, s, e = batch(first, count, change, at, byte)
    uniform = _uniform(w, 0, s, e)
    if uniform is not None:
        assert same(uniform, _stepwise(w, 0, s, e))


@settings(max_examples=100, deadline=None)
@given(occurrence(), st.integers(1, 40))
def test_like_occurrences_take_the_uniform_path(first: bytes, count: int) -> None:
    w, s, e = batch(first, count, -1, 0, 0)
    expected = _stepwise(w, 0, s, e)
    assert expected is not None
    assert same(_uniform(w, 0, s, e), expected)


def test_varied_lengths_and_layouts_are_declined() -> None:
    # a varint one byte longer in one occurrence: same length overall, another layout
    one = encode_varint(1 << 3) + encode_varint(300) + encode_varint(2 << 3) + b"\x05"
    other = encode_varint(1 << 3) + encode_varint(5) + encode_varint(2 << 3) + b"\x85\x01"
    assert len(one) == len(other)
    w = np.frombuffer(one + other, np.uint8)
    s, e = np.array([0, len(one)], np.int64), np.array([len(one), 2 * len(one)], np.int64)
    assert _uniform(w, 0, s, e) is None
    assert _stepwise(w, 0, s, e) is not None


def _state(out: Any) -> dict[str, Any]:
    """A Fields' contents, with arrays and Compacts as lists, for comparing."""
    def plain(x: Any) -> Any:
        if isinstance(x, Compact):
            return ("compact", list(x.wts), list(x.starts), list(x.ends))
        if isinstance(x, list):
            return [plain(v) for v in x]
        if isinstance(x, tuple):
            return tuple(plain(v) for v in x)
        if isinstance(x, array):
            return list(x)
        if isinstance(x, RangeStore):
            return ("ranges", list(x.starts), list(x.ends))
        return x
    return {k: {n: plain(v) for n, v in val.items()} if isinstance(val, dict) else plain(val)
            for k, val in vars(out).items()}


@settings(max_examples=200, deadline=None)
@given(occurrence(), st.integers(1, 300), st.sampled_from([TENSOR, SEQUENCE, SPARSE, MAP, SEGMENT]),
       st.integers(0, 50))
def test_keeping_a_uniform_batch_by_columns_equals_keeping_it_by_masks(
        first: bytes, count: int, schema: Schema, limit: int) -> None:
    w, s, e = batch(first, count, -1, 0, 0)
    bulk = _uniform(w, 0, s, e)
    assert bulk is not None
    by_columns, by_masks = Fields(), Fields()
    width = _period(bulk[0], bulk[1])
    if width:
        _keep_columns(by_columns, schema, bulk, width, limit)
    else:  # a number twice in one occurrence: only the masks can keep it
        assert len(set(bulk[0].tolist())) < len(bulk[0]) // count
        _keep_masks(by_columns, schema, bulk, limit)
    _keep_masks(by_masks, schema, bulk, limit)
    assert _state(by_columns) == _state(by_masks)


@settings(max_examples=150, deadline=None)
@given(occurrence(), st.integers(1, 30), st.integers(-1, 29), st.integers(0, 40),
       st.integers(0, 255), st.booleans())
def test_long_occurrences_read_by_their_heads_equal_the_stepwise_walk_or_decline(
        first: bytes, count: int, change: int, at: int, byte: int, in_file: bool) -> None:
    # a long payload last (a big tensor's raw_data): only the heads are read
    body = first + b"\x4a" + encode_varint(5000) + bytes(5000)
    w, s, e = batch(body, count, change, at, byte)
    src = Source.of_buffer(w.tobytes())
    if in_file:
        with tempfile.NamedTemporaryFile() as f:
            f.write(w.tobytes())
            f.flush()
            src = Source.of_file(f.name)
            try:
                got = _uniform_heads(src, s, e)
            finally:
                src.close()
    else:
        got = _uniform_heads(src, s, e)
    expected = _stepwise(w, 0, s, e)
    if change < 0 or change >= count:  # all alike: taken
        assert got is not None
    if got is not None:
        assert same(got, expected)
