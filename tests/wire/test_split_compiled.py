"""The compiled split of a run of length-delimited fields (``_varints.split``, behind
``decode.split_strings``) against the numpy split it stands in for
(``decode.split_strings_reference``): the same bounds, stop and None, on runs of rows of one
length (numpy's strided path), of varied lengths, of long and padded lengths, cut off,
running past the end, over 10 bytes, with other fields and tags inside values."""

from __future__ import annotations

from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onnxdata.wire import decode
from onnxdata.wire.format import encode_varint
from tests.wire.test_varints_compiled import LOOP, needs_loop, padded

TAG = 0x1A
SETTINGS = settings(max_examples=400, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def outcome(split: Any, data: bytes, pos: int, end: int, partial: bool, **offset: int
            ) -> Any:
    got = split(np.frombuffer(data, np.uint8), pos, end, TAG, partial=partial, **offset)
    if got is None:
        return None
    starts, ends, stop = got
    assert starts.dtype == ends.dtype == np.intp
    return starts.tolist(), ends.tolist(), stop


def shifted(got: Any, offset: int) -> Any:
    """A split's outcome with ``offset`` added to its bounds (not to its stop)."""
    if got is None:
        return None
    return [a + offset for a in got[0]], [b + offset for b in got[1]], got[2]


def assert_alike(data: bytes, pos: int, end: int) -> None:
    """The compiled split gives the numpy split's outcome, and both (split_strings with
    the compiled loop off) add an ``offset`` to the bounds alike."""
    for partial in (False, True):
        numpy = outcome(decode.split_strings_reference, data, pos, end, partial)
        where = (data.hex() if len(data) < 300 else len(data), pos, end, partial)
        for loop in (LOOP, None):
            with mock.patch.object(decode, "_LOOP", loop):
                assert outcome(decode.split_strings, data, pos, end, partial) == numpy, where
                assert outcome(decode.split_strings, data, pos, end, partial,
                               offset=1 << 40) == shifted(numpy, 1 << 40), where


payload = st.one_of(st.just(b""), st.binary(max_size=3), st.just(bytes([TAG]) * 2),
                    st.binary(min_size=120, max_size=200))
field = st.one_of(
    payload.map(lambda p: bytes([TAG]) + encode_varint(len(p)) + p),  # a value
    st.builds(lambda p, pad: bytes([TAG]) + padded(len(p), pad) + p, payload,
              st.integers(1, 3)),  # a padded length
    st.builds(lambda p, k: (bytes([TAG]) + encode_varint(len(p)) + p) * k,
              st.binary(max_size=4), st.integers(2, 200)),  # a row of one length
    st.just(bytes([TAG]) + b"\xff" * 10 + b"\x01"),  # a length over 10 bytes
    st.just(bytes([TAG]) + b"\x80" * 9 + b"\x02"),  # 10 bytes: 2**64, not 0
    st.just(bytes([TAG]) + b"\x80\x80\x80\x80\x10"),  # a length past any end
    st.just(bytes([0x22, 1, 0])),  # another field
)
run = st.lists(field, min_size=1, max_size=30).map(b"".join)


@needs_loop
@SETTINGS
@given(run, st.integers(0, 40), st.integers(0, 40))
def test_compiled_and_numpy_split_alike(data: bytes, cut: int, lead: int) -> None:
    """From the run's first tag (and from a byte inside it), to its end and to cut ends."""
    for end in (len(data), max(0, len(data) - cut)):
        assert_alike(data, 0, end)
    if lead < len(data):
        assert_alike(data, lead, len(data))


@needs_loop
@pytest.mark.parametrize("size", [0, 1, 2, 127, 128, 300])
def test_long_rows_alike(size: int) -> None:
    """Thousands of values of one length (numpy's strided rows, the window doubling), then
    a value of another length, then another field."""
    one = bytes([TAG]) + encode_varint(size) + b"v" * size
    data = one * 5000 + bytes([TAG, 1, 7]) + bytes([0x22, 0])
    assert_alike(data, 0, len(data))
    assert_alike(data, 0, len(data) - 3)


@needs_loop
def test_what_the_split_gives() -> None:
    """The bounds are each value's bytes, without tag and length; the stop is the next
    field's tag; a cut value stops a partial run at its tag, and is None when it is
    first or the run is not partial."""
    data = bytes([TAG, 2, 5, 6, TAG, 0, TAG, 1, 9, 0x22, 0])
    starts, ends, stop = decode.split_strings(np.frombuffer(data, np.uint8), 0, len(data), TAG)
    assert (starts.tolist(), ends.tolist(), stop) == ([2, 6, 8], [4, 6, 9], 9)
    cut = np.frombuffer(bytes([TAG, 0, TAG, 5, 1]), np.uint8)
    assert decode.split_strings(cut, 0, 5, TAG) is None
    got = decode.split_strings(cut, 0, 5, TAG, partial=True)
    assert got is not None and (got[0].tolist(), got[1].tolist(), got[2]) == ([2], [2], 2)
    assert decode.split_strings(cut, 2, 5, TAG, partial=True) is None


@needs_loop
def test_the_loop_counts_past_its_room() -> None:
    """Bounds are written for as many values as there is room for; all are counted."""
    assert LOOP is not None
    data = np.frombuffer(bytes([TAG, 2, 5, 6, TAG, 0, TAG, 1, 9, 0x22, 0]), np.uint8)
    room = np.zeros(1, np.intp), np.zeros(1, np.intp)
    assert LOOP.split(data, 0, data.size, TAG, *room) == (3, 9, False)
    assert (room[0].tolist(), room[1].tolist()) == ([2], [4])
    none = np.empty(0, np.intp)
    assert LOOP.split(data, 0, 7, TAG, none, none) == (2, 6, True)


@needs_loop
@pytest.mark.parametrize("first", [0, 1, 126, 127, 128, 5000])
def test_values_shorter_than_the_first_alike(first: int) -> None:
    """The bounds' room is guessed from the first value's length: a long first value and
    thousands of empty ones after it (more than the guess: split again) give the same."""
    data = bytes([TAG]) + encode_varint(first) + b"f" * first + bytes([TAG, 0]) * 3000
    assert_alike(data, 0, len(data))
    assert_alike(data + bytes([0x22, 0]), 0, len(data) + 2)
