"""``field_values.varints`` of many pieces (a Compact: packed runs and single values, as a
bogus reading's keys or a merged int64_data come): the values in order, decoded into
one array, as uint64 and as an int32 field's low 32 bits; a bad run names itself. And
``field_values.measure`` of them, its runs scanned in place, as a scan of their join."""

from __future__ import annotations

from array import array
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnxdata.wire import decode, field_values
from onnxdata.wire.format import LEN, VARINT, WireError, encode_varint
from onnxdata.wire.occurrences import Compact
from onnxdata.wire.source import Source
from tests.wire.test_varints_compiled import LOOP, split_runs

values = st.lists(st.integers(0, 2**64 - 1), max_size=6)
piece = st.tuples(st.booleans(), values)  # (packed?, values)


def built(pieces: list[tuple[bool, list[int]]]) -> tuple[bytes, Compact, list[int]]:
    data, kept, want = b"", Compact([]), []
    for packed, vs in pieces:
        if packed:
            run = b"".join(encode_varint(v) for v in vs)
            kept.append(LEN, len(data), len(data) + len(run))
            data += run
            want += vs
        elif vs:
            kept.append(VARINT, vs[0], 0)
            want.append(vs[0])
    return data, kept, want


@settings(max_examples=300, deadline=None)
@given(st.lists(piece, max_size=40))
def test_many_pieces_decode_in_order(pieces: list[tuple[bool, list[int]]]) -> None:
    data, kept, want = built(pieces)
    src = Source.of_buffer(data)
    assert field_values.varints(src, kept).tolist() == want
    low = field_values.varints(src, kept, np.uint32)
    assert low.dtype == np.uint32 and low.tolist() == [v & 0xFFFFFFFF for v in want]


def test_a_bad_run_is_named_by_its_offset() -> None:
    data, kept, _ = built([(True, [1, 2]), (True, [300])])
    bad = data[:3] + b"\x80"  # the second run's varint cut off
    src = Source.of_buffer(bad)
    kept = Compact([(LEN, 0, 2), (LEN, 2, 4)])
    with pytest.raises(WireError) as got:
        field_values.varints(src, kept)
    assert got.value.offset == 3


def measured_by_joining(src: Source, pieces: Any) -> tuple[int, bool, bool]:
    """``field_values.measure`` as it was before it scanned runs in place: each part of
    ``joined`` (many small runs copied into one) scanned by the numpy reference."""
    total, negative, zero = 0, False, False
    for part in field_values.joined(src, pieces):
        if part.dtype == np.uint64:
            total += int(part.size)
            negative = negative or bool((part >= np.uint64(1 << 63)).any())
            zero = zero or not part.all()
            continue
        count, long, has_negative, has_zero = decode.scan_varints_reference(part)
        if long:
            raise WireError("varint longer than 10 bytes in packed field", 0)
        total, negative, zero = total + count, negative or has_negative, zero or has_zero
    return total, negative, zero


def outcome(how: Callable[[], Any]) -> Any:
    try:
        return how()
    except WireError as exc:
        return ("error", exc.reason, exc.offset)


@settings(max_examples=150, deadline=None)
@given(split_runs(), st.lists(st.integers(0, 2**64 - 1), max_size=3),
       st.sampled_from([16, 64, 1 << 20]), st.sampled_from([1, 16]), st.booleans())
def test_runs_scanned_in_place_measure_as_joined_runs(
        case: tuple[bytes, int, list[tuple[int, int]]], singles: list[int], piece: int,
        near: int, as_list: bool) -> None:
    """``measure`` of many packed runs (a Compact: runs cut anywhere between varints, empty
    ones, one cut off or overlong at an edge, single values among them) scanned in place,
    compiled and pure: the count and facts, or the WireError (reason and offset), of
    scanning their join, part by part as ``joined`` cuts it (``piece`` bytes a part,
    runs far apart read one by one below ``near`` a window). The same for the pieces as
    a list (fewer than KEEP_PIECES: ``joined`` joins them its own way)."""
    data, base, spans = case
    src = Source.of_buffer(bytes(base) + data if base < 1 << 20 else data)
    shift = 0 if base < 1 << 20 else -base  # (offsets past 2**40: the window read at 0)
    kept = Compact([])
    for k, (a, b) in enumerate(spans):
        if singles and k == len(spans) // 2:
            for v in singles:
                kept.append(VARINT, v, 0)
        kept.append(LEN, a + shift, b + shift)
    pieces: Any = kept
    if as_list:
        pieces = [(LEN, a + shift, b + shift) for a, b in spans]
        if singles:
            pieces[len(spans) // 2:len(spans) // 2] = [(VARINT, array("Q", singles), 0)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(field_values, "PIECE", piece)
        mp.setattr(field_values, "_NEAR", near)
        want = outcome(lambda: measured_by_joining(src, pieces))
        for loop in (LOOP, None):
            mp.setattr(decode, "_LOOP", loop)
            assert outcome(lambda: field_values.measure(src, pieces)) == want, loop
            if want[0] != "error":
                assert field_values.varints(src, pieces).size == want[0]
