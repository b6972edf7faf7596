"""``field_values.varints`` of many pieces (a Compact: packed runs and single values, as a
bogus reading's keys or a merged int64_data come): the values in order, decoded into
one array, as uint64 and as an int32 field's low 32 bits; a bad run names itself."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnxdata.wire import field_values
from onnxdata.wire.format import LEN, VARINT, WireError, encode_varint
from onnxdata.wire.occurrences import Compact
from onnxdata.wire.source import Source

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
