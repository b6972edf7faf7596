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


# --- plain_entries: many entries checked at once, decoded where asked -----------------------

odd_entries = st.one_of(  # bytes plain_entry refuses, now and then
    st.builds(entry, texts, texts),
    st.sampled_from([ld(2, b"v") + ld(1, b"k"), ld(1, b"k"), entry(b"k", b"v" * 200),
                     entry(b"k", b"v") + ld(1, b"again"), b"\x0a\x01k\x12\x05v", b"\x08\x01"
                     + ld(2, b"v"), b"", entry(b"k", b"v") + b"\x18\x01"]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.builds(entry, texts, texts), st.builds(entry, texts, texts),
                          odd_entries), min_size=key_values.MANY, max_size=120),
       st.sampled_from([b"", b"\x10\x01", ld(9, b"\x00" * 300)]))
def test_plain_entries_are_those_plain_entry_reads(parts: list[bytes], between: bytes) -> None:
    """Issue 39: an entry's key and value as ``plain_entry`` gives them, and None where any
    entry is not one it takes; each known key found where the list of keys has it first."""
    data, ranges = b"", []
    for part in parts:
        data += between + b"\x6a" + bytes([len(part)]) if len(part) < 128 else b""
        ranges.append((len(data), len(data) + len(part)))
        data += part
    got = key_values.plain_entries(Source.of_buffer(data), ranges)
    want = [key_values.plain_entry(data[a:b]) for a, b in ranges]
    if None in want:
        assert got is None
        return
    if got is None:  # only entries far apart (a payload between) are left alone
        assert between.startswith(b"\x4a") and len(data) > 65536
        return
    assert len(got) == len(want)
    assert list(got) == want and got[3:9] == want[3:9] and got[-1] == want[-1]
    keys = [k for k, _ in want]
    for key in ("location", "offset", "length", "x" * 40, "nowhere"):
        for start in (0, 5, len(want) - 1):
            rest = keys[start:]
            assert got.find_key(key, start) == (start + rest.index(key) if key in rest
                                                else None)


def test_few_entries_or_far_apart_are_left_to_the_others() -> None:
    one = entry(b"k", b"v")
    assert key_values.plain_entries(Source.of_buffer(one * 3), [(0, 6), (6, 12), (12, 18)]) \
        is None
    data = (one + ld(9, b"\x00" * 100_000)) * 20
    step = len(one) + len(ld(9, b"\x00" * 100_000))
    assert key_values.plain_entries(Source.of_buffer(data), [
        (k * step, k * step + len(one)) for k in range(20)]) is None
