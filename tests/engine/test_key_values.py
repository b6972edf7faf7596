"""``key_values.distinct_entries``: each entry's bytes are the distinct bytes it is said to
be, and the distinct ones are each once; a table at a time of at most
_CELLS bytes (730,000 external_data entries of a merged tensor are many tables), so
entries past one table are grouped as those within it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnxdata.engine import key_values
from onnxdata.wire.source import Source
from tests.wire_bytes import ld


def entry(key: bytes, value: bytes) -> bytes:
    return ld(1, key) + ld(2, value)


texts = st.sampled_from([b"", b"location", b"offset", b"length", b"x" * 40, b"\xff\x00"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(texts, texts), min_size=key_values.MANY, max_size=200),
       st.sampled_from([8, 16, 64, 1 << 22]))
def test_each_entry_is_the_distinct_bytes_it_is_said_to_be(
        pairs: list[tuple[bytes, bytes]], cells: int) -> None:
    parts = [b"\x0a" + bytes([len(e)]) + e for e in (entry(k, v) for k, v in pairs)]
    data = b"".join(parts)
    ranges, at = [], 0
    for part in parts:
        ranges.append((at + 2, at + len(part)))
        at += len(part)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(key_values, "_CELLS", cells)
        got = key_values.distinct_entries(Source.of_buffer(data), ranges)
    assert got is not None
    distinct, which = got
    assert [distinct[w] for w in which] == [data[a:b] for a, b in ranges]
    assert len(set(distinct)) == len(distinct)  # each once
    assert set(distinct) == {data[a:b] for a, b in ranges}


def test_long_or_few_entries_are_left_to_the_scan() -> None:
    few = entry(b"k", b"v")
    assert key_values.distinct_entries(Source.of_buffer(few * 3), [(0, 6)] * 3) is None
    long = entry(b"k", b"v" * 300)
    data = long * 20
    ranges = [(k * len(long), (k + 1) * len(long)) for k in range(20)]
    assert key_values.distinct_entries(Source.of_buffer(data), ranges) is None
