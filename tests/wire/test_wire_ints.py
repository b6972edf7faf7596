"""Dims in many pieces (wire_ints.WireInts): kept decoded from the pass that counts them
when they are few, streamed chunk by chunk when they are many; either way the same
values, indices, slices and facts (negative, zero, product) as a list of the values."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onnxdata.rules.tensor import element_count
from onnxdata.wire import field_values, loops, wire_ints
from onnxdata.wire.format import LEN, VARINT
from onnxdata.wire.occurrences import Compact
from onnxdata.wire.source import Source
from tests.wire_bytes import varint

INT64 = st.integers(-(1 << 63), (1 << 63) - 1)


def pieces_of(runs: list[list[int]]) -> tuple[bytes, list[tuple[int, int, int]]]:
    """The runs as packed pieces two bytes apart (as a message's fields lie)."""
    data = bytearray()
    pieces = []
    for run in runs:
        data += b"\x0a\x00"  # a tag and a length, never read
        body = b"".join(varint(v) for v in run)
        pieces.append((LEN, len(data), len(data) + len(body)))
        data += body
    return bytes(data), pieces


@settings(max_examples=150, deadline=None)
@given(runs=st.lists(st.lists(st.one_of(INT64, st.integers(0, 3)), max_size=6), max_size=40),
       kept=st.booleans(), compact=st.booleans(), eager=st.booleans())
def test_kept_and_streamed_dims_equal_the_list(runs: list[list[int]], kept: bool,
                                               compact: bool, eager: bool) -> None:
    """Kept (decoded when measured, or, past KEPT_EAGER, when first walked, from the
    measured bytes) or streamed: the same values, slices and facts."""
    data, pieces = pieces_of(runs)
    values = [v for run in runs for v in run]
    src = Source.of_buffer(data)
    given_pieces = Compact(pieces) if compact else pieces
    with pytest.MonkeyPatch.context() as mp:
        if not kept:
            mp.setattr(field_values, "KEPT_INTS", 0)  # streamed: nothing kept
            mp.setattr(wire_ints, "KEPT_INTS", 0)
        if not eager:
            mp.setattr(wire_ints, "KEPT_EAGER", 0)
        wi = wire_ints.WireInts.measured(src, lambda: given_pieces)
        assert (wi._kept is not None) == (kept and eager and bool(values))
        assert len(wi) == len(values)
        if values and not eager:
            mp.setattr(wire_ints, "KEPT_EAGER", 8)  # a prefix decoded alone, none kept
            assert wi[:3] == values[:3] and wi[0] == values[0]
            assert wi._kept is None
            if min(values) >= 0 and len(values) <= 8:  # the product of the first values
                # (a negative dim, or a product under 2**64 past them: all decoded, kept)
                assert element_count(wi) == element_count(values) and wi._kept is None
            mp.setattr(wire_ints, "KEPT_EAGER", 0)
        assert list(wi) == values and list(wi) == values  # walked twice
        assert wi[1:4] == values[1:4] and wi[::2] == values[::2]
        for i in (0, len(values) - 1, -1):
            if values:
                assert wi[i] == values[i]
        with pytest.raises(IndexError):
            wi[len(values)]
        assert element_count(wi) == element_count(values)
        assert wi.smallest() == min([0, *values])


def test_single_varint_values_are_kept_too() -> None:
    src = Source.of_buffer(b"")
    from array import array
    wi = wire_ints.WireInts.measured(src, lambda: [(VARINT, array("Q", [3, 0, 5]), 0)])
    assert wi._kept is not None and list(wi) == [3, 0, 5] and element_count(wi) == 0


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_compiled_join_equals_the_numpy_join(data: st.DataObject) -> None:
    """field_values._part joins many small packed runs with the compiled loop (decode.join_runs)
    or with numpy (the reference): the same bytes, the same first bad run."""
    import numpy as np

    from onnxdata.wire import decode

    if not loops.COMPILED:
        pytest.skip("the compiled varint loop is not built or is turned off")
    window = np.frombuffer(data.draw(st.binary(min_size=1, max_size=200)), np.uint8)
    cuts = sorted(data.draw(st.lists(st.integers(0, window.size), max_size=30)))
    starts = np.array(cuts[0::2][:len(cuts) // 2], np.int64)
    ends = np.array(cuts[1::2][:len(cuts) // 2], np.int64)
    base = data.draw(st.integers(0, 1 << 40))  # the window's offset in its file
    got = decode.join_runs(window, base, starts + base, ends + base)
    assert got is not None
    part, bad = got
    used = ends > starts
    s, e = starts[used], ends[used]
    bad_numpy = np.flatnonzero(window[e - 1] & 0x80)
    if bad_numpy.size:
        assert bad >= 0 and ends[bad] == e[bad_numpy[0]]
    else:
        assert bad == -1
        want = window[field_values._inside(s, e, int(window.size))] if s.size else window[:0]
        assert part.tobytes() == want.tobytes()


@settings(max_examples=100, deadline=None)
@given(runs=st.lists(st.lists(st.integers(0, 1 << 40), min_size=1, max_size=4), min_size=1,
                     max_size=60),
       gaps=st.lists(st.one_of(st.integers(2, 8), st.integers(2, 400)), min_size=60,
                     max_size=60), piece=st.sampled_from(
           [16, 64, field_values.PIECE]))
def test_runs_far_apart_are_joined_a_window_at_a_time(runs: list[list[int]], gaps: list[int],
                                                      piece: int) -> None:
    """field_values._part reads runs a window of 4 * PIECE bytes at a time (runs far apart one
    by one): the values are the same whatever the window, and a run cut inside a varint
    is refused at its last byte (16 MB of runs 11 bytes apart had been read run by run)."""
    data = bytearray()
    pieces = []
    for run, gap in zip(runs, gaps, strict=False):
        data += bytes(gap)
        body = b"".join(varint(v) for v in run)
        pieces.append((LEN, len(data), len(data) + len(body)))
        data += body
    values = [v for run in runs for v in run]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(field_values, "PIECE", piece)
        src = Source.of_buffer(bytes(data))
        assert list(wire_ints.WireInts.measured(src, lambda: Compact(pieces))) == values
        bad = bytearray(data)
        _, _a, b = pieces[len(pieces) // 2]
        bad[b - 1] |= 0x80  # the run's last varint now goes on past the run
        from onnxdata.wire.format import WireError
        with pytest.raises(WireError) as caught:
            wire_ints.WireInts.measured(Source.of_buffer(bytes(bad)), lambda: Compact(pieces))
        assert caught.value.offset == b - 1


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([LEN, LEN, VARINT, 5]), st.integers(0, (1 << 63) - 1),
                          st.integers(0, 300)), max_size=40))
def test_varint_bytes_counts_each_piece(pieces: list[tuple[int, int, int]]) -> None:
    """A packed run counts its bytes and any other piece 1 (a single value), with runs
    at offsets whose sums pass 2**64 (the packed-only path sums starts and ends)."""
    kept = Compact([])
    for wt, a, size in pieces:
        kept.append(wt, a, a + size if wt == LEN else 0)
    want = sum(size if wt == LEN else 1 for wt, _, size in pieces)
    assert kept.varint_bytes() == want


@pytest.mark.parametrize("compact", [False, True])
def test_a_long_field_is_counted_once_per_source(compact: bool,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A map's keys and a sparse tensor's dims are the root's field 3 alike: the second
    reading takes the first's count (a list of pieces, or few long runs kept as a
    Compact) rather than reading them again; its values are read when a prefix or all
    of them are asked for, and nothing holds the field's bytes joined in between."""
    runs = [[5] * 2000 for _ in range(40)]  # 80,000 bytes in runs of 2,000
    data, pieces = pieces_of(runs)
    src = Source.of_buffer(data)
    passes: list[bool] = []  # scan (a count) or not (the bytes) of each pass
    real = field_values._joined
    monkeypatch.setattr(field_values, "_joined",
                        lambda s, p, scan, piece: passes.append(scan) or real(s, p, scan, piece))
    assert field_values.varint_count(src, Compact(pieces) if compact else pieces) == 80_000
    wi = wire_ints.WireInts.measured(src, lambda: Compact(pieces) if compact else pieces)
    assert passes == [True]
    assert list(src.measured.values()) == [(80_000, False, False)]
    assert len(wi) == 80_000 and wi[:2] == [5, 5]
    assert (element_count(wi) or 0) > 1 << 64
    assert passes.count(True) == 1
    assert list(wi) == [5] * 80_000


@pytest.mark.parametrize("empty_first", [0, 300, 5000])
def test_a_prefix_of_many_runs_is_read_from_the_first_ones(empty_first: int) -> None:
    """A WireInts over thousands of short runs (a bogus reading's keys: 10 bytes each)
    decodes its first values from the first runs alone (joined_head: 256 runs, then four
    times more while they hold too few values, as when many runs are empty): the values
    of the list, and the list's facts."""
    runs = [[] for _ in range(empty_first)] + [[k % 7, 300 + k, 1 << 40] for k in range(3000)]
    data, pieces = pieces_of(runs)
    values = [v for run in runs for v in run]
    src = Source.of_buffer(data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(wire_ints, "KEPT_EAGER", 1000)
        wi = wire_ints.WireInts.measured(src, lambda: Compact(pieces))
        assert wi[:1000] == values[:1000] and wi[999] == values[999] and wi._kept is None
        assert element_count(wi) == element_count(values)
        assert list(wi) == values
