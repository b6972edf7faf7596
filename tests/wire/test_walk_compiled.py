"""The compiled scan (onnxdata.wire._walk) against the Python walk it stands in for
(``walk.scan_reference``, the reference): the same Fields for every message, in memory and
read by pread windows, where the compiled loop stops the Python walk raises (or skips a
group), and built where we develop."""

from __future__ import annotations

import os
import sys
from array import array
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onnxdata.wire import compiled, fields, loops, walk
from onnxdata.wire.fields import Occurrences, occurrence_batches
from onnxdata.wire.format import I32, I64, SGROUP, VARINT, WireError, encode_varint
from onnxdata.wire.occurrences import ROW, Compact, RangeStore
from onnxdata.wire.schema import Schema
from onnxdata.wire.source import Source
from onnxdata.wire.walk import ENTRY, MAP, SEGMENT, SEQUENCE, SPARSE, TENSOR, Fields, scan_reference
from tests.conftest import CORPUS, DATA, MANIFEST

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
from tests.wire.test_wire_differential import ld, message_bytes, mutated  # noqa: E402
from tests.wire_bytes import vint  # noqa: E402

PURE = os.environ.get("ONNXDATA_PURE_PYTHON", "") not in ("", "0")
needs_loop = pytest.mark.skipif(not loops.COMPILED,
                                reason="onnxdata.wire._walk is not built or "
                                "ONNXDATA_PURE_PYTHON is set (test_the_loop_is_built says which)")
SCHEMAS: dict[str, Schema] = {"TensorProto": TENSOR, "SparseTensorProto": SPARSE,
                              "SequenceProto": SEQUENCE, "OptionalProto": SEQUENCE,
                              "MapProto": MAP, "StringStringEntryProto": ENTRY,
                              "TensorProto.Segment": SEGMENT}
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def plain(value: Any) -> Any:
    """Fields' stores as plain lists, to compare."""
    if isinstance(value, RangeStore):
        return ("ranges", list(value))
    if isinstance(value, Compact):
        return ("compact", list(value.wts), list(value.starts), list(value.ends))
    if isinstance(value, array):
        return list(value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def singles(pieces: Any) -> list[tuple[int, int, int]]:
    """A field's pieces one per value: each varint alone, and each ROW (the compiled walk's
    fixed values one after another, one piece) as the single values the Python walk
    keeps; so a list and a Compact of the same values compare alike."""
    out: list[tuple[int, int, int]] = []
    for wt, a, b in pieces:
        if wt == VARINT:
            out += [(VARINT, int(v), 0) for v in a]
        elif wt & ROW:
            width = 4 if wt & 7 == I32 else 8
            out += [(wt & 7, at, at + width) for at in range(a, b, width + 1)]
        else:
            out.append((wt, int(a), int(b)))
    return out


def facts(f: Fields) -> dict[str, Any]:
    got = {k: plain(getattr(f, k)) for k in ("scalars", "bad_enum", "last", "many", "counts",
                                               "unknown", "unknown_more", "over")}
    return got | {"pieces": {name: singles(kept) for name, kept in f.pieces.items()}}


def compiled_scan(src: Source, at: Occurrences, schema: Schema, limit: int) -> Fields | None:
    """The compiled loop's Fields as ``walk.scan`` returns them (the pieces of a field past
    COMPACT_PIECES forgotten, as scan_reference forgets them), or None where it stops."""
    out = Fields()
    ok = compiled.compiled_scan(src, at.ranges, lambda: occurrence_batches(src, at), schema,
                                     out, limit)
    return walk._forget_over(out) if ok else None


def sources(data: bytes) -> list[Source]:
    """The bytes in memory, as a file read whole (one pread: at most source.WHOLE bytes),
    and as a file read by pread windows (64 KiB and 4 KiB hops)."""
    folder = Path(os.environ.get("TMPDIR", "/tmp"))
    path = folder / f"onnxdata-walk-{os.getpid()}.pb"
    path.write_bytes(data)
    windows = Source.of_file(str(path))
    windows.read_whole = False
    return [Source.of_buffer(data), Source.of_file(str(path)), windows]


def check(data: bytes, schema: Schema, where: Occurrences | None = None, limit: int = 1000) -> None:
    for src in sources(data):
        with src:
            at = where or Occurrences([(0, len(data))])
            got = compiled_scan(src, at, schema, limit)
            try:
                want = facts(scan_reference(Source.of_buffer(data), at, schema, limit))
            except WireError:
                assert got is None, "the compiled loop took bytes the Python walk refuses"
                continue
            if got is None:  # only a group past the window stops it on bytes the Python
                # walk takes (many occurrences, a RangeStore, by pread: read at once)
                assert any(wt == SGROUP for _, wt, *_ in fields.fields_in(src, fields.occurrences(
                    src, at))), data.hex()
                continue
            assert facts(got) == want, data.hex()


def test_the_loop_is_built() -> None:
    """CI must not pass on the Python walk alone: the dev venvs build the extension."""
    if PURE:
        pytest.skip("ONNXDATA_PURE_PYTHON is set: the Python walk is wanted here")
    assert loops.COMPILED, "onnxdata.wire._walk or _layouts did not import: built?"
    from onnxdata.wire import _layouts, _walk

    assert Path(_walk.__file__ or "").suffix in (".so", ".pyd")
    assert Path(_layouts.__file__ or "").suffix in (".so", ".pyd")


@pytest.mark.slow
@needs_loop
@SETTINGS
@given(st.sampled_from(sorted(SCHEMAS)).flatmap(
    lambda name: st.tuples(st.just(name), message_bytes(name) | mutated(message_bytes(name)))))
def test_compiled_scan_gives_the_python_fields(case: tuple[str, bytes]) -> None:
    name, data = case
    check(data, SCHEMAS[name])
    check(data, SCHEMAS[name], limit=1)  # unknown fields past the cap are counted


@pytest.mark.slow
@needs_loop
@SETTINGS
@given(st.sampled_from(sorted(SCHEMAS)).flatmap(
    lambda name: st.tuples(st.just(name), st.lists(message_bytes(name) | mutated(
        message_bytes(name)), min_size=1, max_size=6))),
    st.sampled_from([b"", ld(2, b"x"), encode_varint(1 << 3) + b"\x05"]))
def test_compiled_scan_of_occurrences_not_kept(case: tuple[str, list[bytes]],
                                               between: bytes) -> None:
    """A message given several times (field 7 of its parent, other fields between) whose
    occurrences are found again (past what a walk keeps): the compiled loop takes them as
    ``occurrence_batches``' arrays and gives the Python walk's fields."""
    name, parts = case
    parent = b"".join(between + ld(7, part) for part in parts)
    check(parent, SCHEMAS[name], Occurrences(None, Occurrences([(0, len(parent))]), 7))


@needs_loop
@SETTINGS
@given(st.binary(max_size=64))
def test_compiled_scan_on_any_bytes(data: bytes) -> None:
    for schema in (TENSOR, SEQUENCE, MAP):
        check(data, schema)


@needs_loop
@pytest.mark.parametrize("entry", MANIFEST[::2], ids=lambda e: e["path"])
def test_corpus(entry: dict[str, Any]) -> None:
    data = (CORPUS / entry["path"]).read_bytes()
    for schema in (TENSOR, SEQUENCE, MAP, SPARSE):
        check(data, schema)


@needs_loop
@pytest.mark.parametrize("path", sorted((DATA / "hostile").glob("*.pb")), ids=lambda p: p.name)
def test_hostile(path: Path) -> None:
    data = path.read_bytes()
    for schema in (TENSOR, SEQUENCE, MAP, SPARSE):
        check(data, schema)


@needs_loop
@pytest.mark.parametrize("inner", [0, 5, 70000])
def test_groups_across_windows_stay_in_the_loop(inner: int) -> None:
    """A tensor of unknown groups read by pread windows: a group across a window's end (or
    wider than a window) is read again from its start in a wider window, by the compiled
    loop, not handed to the Python walk (issue 39: a 1 MB tensor of groups took 0.3 s)."""
    group = b"\x9b\x03" + vint(1, 5) + ld(2, b"x" * inner) + b"\x9c\x03"  # field 51
    nested = b"\x9b\x03" + group.replace(b"\x9b\x03", b"\xa3\x03").replace(
        b"\x9c\x03", b"\xa4\x03") + b"\x9c\x03"  # a group in a group
    data = vint(1, 2) + vint(2, 7) + (group + nested) * max(2, 150000 // len(group))
    data += ld(7, b"\x01\x02")
    for src in sources(data):
        with src:
            at = Occurrences([(0, len(data))])
            got = compiled_scan(src, at, TENSOR, 1000)
            assert got is not None, "the compiled loop handed the groups to the Python walk"
            assert facts(got) == facts(scan_reference(Source.of_buffer(data), at, TENSOR, 1000))
    broken = data[:-6] + b"\x9b\x03" + ld(2, b"xy")  # a group never closed: still refused
    for src in sources(broken):
        with src:
            assert compiled_scan(src, Occurrences([(0, len(broken))]), TENSOR, 1000) is None


def _element(i: int) -> bytes:
    return ld(3, b"\x08" + encode_varint(i % 300) + b"\x10\x01" + ld(9, b"\x00" * (i % 5)))


@needs_loop
@pytest.mark.parametrize("n", [63, 64, 65, 1023, 1024, 1025, 5000, 30000])
def test_many_occurrences_and_pieces(n: int) -> None:
    """Past KEEP ranges (a RangeStore, sized ahead and given its true size after each call:
    30,000 elements are five pread windows) and KEEP_PIECES pieces (a Compact), and a
    message merged from many occurrences (one call for them all, in memory)."""
    seq = b"".join(_element(i) for i in range(n))
    check(seq, SEQUENCE)
    dims = b"".join(b"\x08" + encode_varint(i) + (ld(1, b"\x01\x02") if i % 3 else b"")
                    for i in range(n))
    check(dims + b"\x25\x00\x00\x80\x3f" * (n // 2), TENSOR)
    check(b"\x08\x03" * n + b"\x10\x05", SEQUENCE)  # unknown VARINTs, over the cap of 1000
    check(b"\x70\x02" * 3 + b"\x70\x01", TENSOR)  # data_location out of its enum, then 1
    src = Source.of_buffer(seq)
    outer = scan_reference(src, Occurrences([(0, len(seq))]), SEQUENCE)
    tensors = outer.where("tensor", Occurrences([(0, len(seq))]), SEQUENCE)
    assert tensors is not None
    check(seq, TENSOR, tensors)


@needs_loop
@pytest.mark.parametrize("big", [0, 1, 300_000])
def test_ranges_sized_ahead_from_the_first_occurrences(big: int) -> None:
    """A MANY field's arrays are sized ahead from the density of its first KEEP occurrences:
    small ones then a big one (whose bytes promise many more that never come), then small
    ones again, each way read (the windows size ahead once per call)."""
    small = b"".join(_element(i) for i in range(100))
    seq = small + ld(3, b"\x10\x01" + ld(9, b"\x00" * big)) + small * 3
    check(seq, SEQUENCE)
    src = Source.of_buffer(seq)
    outer = scan_reference(src, Occurrences([(0, len(seq))]), SEQUENCE)
    tensors = outer.where("tensor", Occurrences([(0, len(seq))]), SEQUENCE)
    assert tensors is not None and len(tensors.ranges) == 401
    check(seq, TENSOR, tensors)


ELEMENTS = {  # small elements of a sequence, valid and not, by field number
    3: [b"", b"\x10\x01", b"\x10\x01\x08\x02", b"\x10\x08\x32\x00", b"\x08\x01", b"\x78\x01"],
    5: [b"", b"\x10\x01", b"\x10\x01\x1a\x00", b"\x1a\x00\x22\x00"],
    6: [b"", b"\x10\x07", b"\x10\x07\x18\x01", b"\x10\x08\x22\x00"],
    7: [b"", b"\x10\x01", b"\x10\x01\x1a\x00", b"\x10\x02\x1a\x00"],
}


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(ELEMENTS)).flatmap(lambda n: st.tuples(
    st.just(n), st.lists(st.sampled_from(ELEMENTS[n]), min_size=1, max_size=6),
    st.integers(1, 40))), st.sampled_from([0, 1, 3, 1000]), st.booleans())
def test_like_elements_remembered(case: tuple[int, list[bytes], int], cap: int,
                                  values: bool) -> None:
    """A sequence of small elements repeated (valid and invalid ones, each walked once and
    its problems added again under the next element's path): the problems
    ``validate(load(...))`` lists, capped at ``cap``, and read's verdict."""
    import onnxdata
    from onnxdata.explorer.readings import reading
    from onnxdata.rules.validation import problems_reference

    number, elements, times = case
    data = b"\x10" + bytes([number - 2]) + b"".join(ld(number, e) for e in elements) * times
    want = problems_reference(onnxdata.load(data, "sequence"), max_problems=cap)
    assert list(reading(data, "sequence", max_problems=cap).problems) == want
    if values and cap == 1000:
        path = Path(os.environ.get("TMPDIR", "/tmp")) / f"onnxdata-like-{os.getpid()}.pb"
        path.write_bytes(data)
        try:
            onnxdata.read(path, "sequence")
            got: list[Any] = []
        except onnxdata.ValidationError as exc:
            got = list(exc.problems)
        assert got == want


_FLOAT, _DOUBLE = b"\x25\x00\x00\x80\x3f", b"\x51" + bytes(7) + b"\x40"  # float_data, double_data
#: A tensor's float_data and double_data written a value at a time, between the pieces
#: that end a ROW: a packed run, another field, the other wire type, an unknown field.
unpacked = st.lists(st.one_of(
    st.integers(1, 30).map(lambda k: _FLOAT * k),
    st.integers(1, 30).map(lambda k: _DOUBLE * k),
    st.just(b"\x21" + bytes(8)),  # float_data with a double's wire type: unknown
    st.just(ld(4, bytes(8))),  # float_data packed
    st.just(ld(8, b"x")),  # a name
    st.just(b"\xa5\x01" + bytes(4)),  # an I32 field of two-byte tag (unknown)
), min_size=1, max_size=12).map(b"".join)


@needs_loop
@SETTINGS
@given(unpacked, st.integers(0, 3))
def test_rows_of_values_written_one_at_a_time(data: bytes, cut: int) -> None:
    """The compiled walk keeps fixed values one after another as one ROW piece; they are
    the Python walk's single values, and a cut value stops both alike."""
    check(data, TENSOR)
    check(data[:max(0, len(data) - cut)], TENSOR)


@needs_loop
@pytest.mark.parametrize("n", [2, 1025, 40_000])
def test_a_row_read_across_windows(n: int) -> None:
    """A row of ``n`` floats, a name, then ``n`` doubles: read by pread windows (a row goes
    on from one window to the next), the rows are the Python walk's values, and
    ``field_values.fixed`` gives protobuf's values from them."""
    from onnxdata.wire.field_values import fixed

    data = _FLOAT * n + ld(8, b"x") + _DOUBLE * n
    check(data, TENSOR)
    for src in sources(data):
        with src:
            f = compiled_scan(src, Occurrences([(0, len(data))]), TENSOR, 1000)
            assert f is not None
            kept = [list(f.pieces_of(name, Occurrences([(0, len(data))]), TENSOR, src))
                    for name in ("float_data", "double_data")]
            assert [[wt for wt, _, _ in pieces] for pieces in kept] == [[I32 | ROW],
                                                                        [I64 | ROW]]
            pieces = f.pieces_of("float_data", Occurrences([(0, len(data))]), TENSOR, src)
            floats = fixed(src, pieces, np.dtype("<f4"))
            assert floats[0] == n and bool((floats[1] == 1.0).all())
            doubles = fixed(src, f.pieces_of("double_data", Occurrences([(0, len(data))]), TENSOR,
                                             src), np.dtype("<f8"))
            assert doubles[0] == n and bool((doubles[1] == 2.0).all())
