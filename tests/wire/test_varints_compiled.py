"""The compiled varint loop (onnxdata.wire._varints) against the numpy decoder it stands in for:
the same arrays and the same WireErrors (reason and offset), and built where we develop."""

from __future__ import annotations

import hashlib
import importlib
import itertools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

import numpy as np
import pytest
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onnxdata import OptionalProto, SequenceProto, TensorProto
from onnxdata.wire import decode, loops
from onnxdata.wire.format import WireError, encode_varint, read_varint
from tests.conftest import CORPUS, MANIFEST

PURE = os.environ.get("ONNXDATA_PURE_PYTHON", "") not in ("", "0")


def built_loop() -> ModuleType | None:
    """The compiled loop if it is built, even where ONNXDATA_PURE_PYTHON turns it off."""
    try:
        return importlib.import_module("onnxdata.wire._varints")
    except ImportError:
        return None


LOOP = built_loop()
needs_loop = pytest.mark.skipif(LOOP is None, reason="onnxdata.wire._varints is not built "
                                "(test_the_loop_is_built fails for it in the dev venvs)")
SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
U64 = (1 << 64) - 1


def u8(data: bytes) -> np.ndarray:
    return np.frombuffer(data, np.uint8)


def outcome(decoder: Any, data: bytes, dtype: Any) -> Any:
    """The values as a list with their dtype, or the WireError's reason and offset."""
    try:
        got = decoder(u8(data), dtype)
    except WireError as exc:
        return ("error", exc.reason, exc.offset)
    return (got.dtype.str, got.tolist())


def assert_alike(data: bytes, chunk: int = decode.CHUNK) -> None:
    for dtype in (np.uint64, np.uint32):
        with mock.patch.object(decode, "CHUNK", chunk), mock.patch.object(decode, "_LOOP", LOOP):
            compiled = outcome(decode.decode_varints, data, dtype)
            numpy = outcome(decode.decode_varints_reference, data, dtype)
        assert compiled == numpy, (data.hex() if len(data) < 200 else len(data), chunk)


def test_the_loop_is_built() -> None:
    """CI must not pass on the fallback alone: the dev venvs build the extension."""
    if PURE:
        pytest.skip("ONNXDATA_PURE_PYTHON is set: the numpy decoder is wanted here")
    assert loops.COMPILED, "onnxdata.wire._varints did not import: was the extension built?"
    assert LOOP is not None and Path(LOOP.__file__ or "").suffix in (".so", ".pyd")


def varint_of_length(length: int) -> st.SearchStrategy[bytes]:
    """A minimal varint of exactly ``length`` bytes (10: any value from 2**63 up)."""
    low = 0 if length == 1 else 1 << (7 * (length - 1))
    high = min(U64, (1 << (7 * length)) - 1)
    return st.integers(low, high).map(encode_varint)


def padded(value: int, pad: int) -> bytes:
    """``value``'s varint made ``pad`` bytes longer with continuation bytes of zero."""
    e = encode_varint(value)
    return e[:-1] + bytes([e[-1] | 0x80]) + b"\x80" * (pad - 1) + b"\x00"


good = st.one_of(
    st.integers(1, 10).flatmap(varint_of_length),
    st.builds(padded, st.integers(0, (1 << 42) - 1), st.integers(1, 3)),
    st.builds(lambda top: b"\xff" * 9 + bytes([top]), st.integers(1, 127)),  # bits past 64
)
bad = st.one_of(
    st.builds(lambda n, last: b"\xff" * n + bytes([last]), st.integers(10, 14),
              st.integers(0, 127)),  # 11 bytes or more
    st.binary(min_size=1, max_size=12).map(lambda b: bytes(x | 0x80 for x in b)),  # no end
)
runs = st.lists(st.one_of(good, good, good, bad), max_size=60).map(b"".join)


@pytest.mark.slow
@needs_loop
@pytest.mark.parametrize("chunk", [1, 3, 11, 16, decode.CHUNK])
@SETTINGS
@given(runs)
def test_compiled_and_numpy_agree_on_runs(chunk: int, data: bytes) -> None:
    assert_alike(data, chunk)


@needs_loop
@SETTINGS
@given(st.lists(good, max_size=40).map(b"".join), st.binary(min_size=1, max_size=12))
def test_compiled_and_numpy_agree_on_truncated_ends(data: bytes, tail: bytes) -> None:
    assert_alike(data + bytes(x | 0x80 for x in tail))


@needs_loop
def test_empty_input() -> None:
    assert_alike(b"")  # an empty array of each dtype from both


@needs_loop
@pytest.mark.parametrize("lead", [-12, -11, -10, -9, -2, -1, 0, 1, 2, 9, 10])
@pytest.mark.parametrize("kind", ["fine", "long", "cut", "long-then-cut"])
def test_chunk_boundaries(lead: int, kind: str) -> None:
    """Runs of about CHUNK bytes with their odd varint just around the chunk's end (numpy
    looks at a chunk's end before its inside, so which error it names depends on it)."""
    head = b"\x81\x01" * ((decode.CHUNK + lead) // 2) + b"\x05" * ((decode.CHUNK + lead) % 2)
    body = {
        "fine": b"\xff" * 9 + b"\x01" + b"\x80\x80\x03",
        "long": b"\xff" * 11 + b"\x01" + b"\x07",
        "cut": b"\x02\x83\x84",
        "long-then-cut": b"\xff" * 12 + b"\x01" + b"\x08" * 3 + b"\xff" * 4,
    }[kind]
    data = head + body + (b"" if kind in ("cut", "long-then-cut") else b"\x7f" * 40)
    assert_alike(data)
    assert_alike(b"\xff" * 20 + data)  # numpy may name the later one: at the chunk's end


def corpus_tensors() -> Iterator[Message]:
    """Every TensorProto inside the corpus's value files, however deeply nested."""
    types: dict[str, type[Message]] = {"tensor": TensorProto, "sequence": SequenceProto,
                                       "optional": OptionalProto}

    def walk(message: Message) -> Iterator[Message]:
        if isinstance(message, TensorProto):
            yield message
        for field, value in message.ListFields():
            if field.message_type is None:
                continue
            for item in ([value] if isinstance(value, Message) else value):
                yield from walk(item)

    for entry in MANIFEST:
        yield from walk(types[entry["kind"]].FromString((CORPUS / entry["path"]).read_bytes()))


def packed(message: Message) -> bytes:
    """The payload of ``message``'s one packed field."""
    data = message.SerializeToString()
    _, pos = read_varint(data, 0, len(data))
    length, pos = read_varint(data, pos, len(data))
    return data[pos:pos + length]


@needs_loop
def test_corpus_int_payloads() -> None:
    payloads = []
    for t in corpus_tensors():
        for name in ("int32_data", "int64_data", "dims"):
            if len(getattr(t, name)):
                alone = TensorProto()
                getattr(alone, name).extend(getattr(t, name))
                payloads.append(packed(alone))
    assert len(payloads) > 50  # the corpus's int tensors, shapes and more
    for payload in payloads:
        assert_alike(payload)
        for cut in (1, 2):
            assert_alike(payload[:-cut])  # cut off, where the last varint is long enough


READ_CODE = """
import hashlib, sys
import numpy as np
import onnxdata, onnxdata.wire.loops
value = onnxdata.read(sys.argv[1])
print(onnxdata.wire.loops.COMPILED, value.dtype, value.shape,
      hashlib.sha256(np.ascontiguousarray(value).tobytes()).hexdigest())
"""


def test_read_alike_with_and_without_the_loop(tmp_path: Path) -> None:
    """A W5-like file (float16 in int32_data, several chunks) read in a fresh process with
    ONNXDATA_PURE_PYTHON=1 and without: the same array."""
    f16 = np.random.default_rng(5).standard_normal(300_000).astype(np.float16)
    t = TensorProto(data_type=TensorProto.FLOAT16, dims=[f16.size],
                    int32_data=f16.view(np.uint16).astype(np.int32).tolist())
    path = tmp_path / "w5.pb"
    path.write_bytes(t.SerializeToString())
    env = {k: v for k, v in os.environ.items() if k != "ONNXDATA_PURE_PYTHON"}
    lines = {}
    for pure in ("1", ""):
        out = subprocess.run([sys.executable, "-c", READ_CODE, str(path)], capture_output=True,
                             text=True, timeout=120, check=True,
                             env={**env, "ONNXDATA_PURE_PYTHON": pure} if pure else env)
        lines[pure] = out.stdout.split()
    want = hashlib.sha256(f16.tobytes()).hexdigest()
    assert lines["1"] == ["False", "float16", f"({f16.size},)", want]
    assert lines[""][1:] == lines["1"][1:]
    if not PURE:
        assert lines[""][0] == "True"  # the loop's run, as test_the_loop_is_built


@st.composite
def whole_run(draw: st.DrawFn) -> bytes:
    """Whole varints: minimal ones of every length, zeros padded with 0x80, any bytes up to
    a varint's end, runs of one-byte varints, and sometimes a run of continuation bytes too
    long to be a varint."""
    out = b""
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.integers(0, 11))
        if kind == 11:  # one-byte varints (text read as varints), zeros among them
            out += bytes(draw(st.lists(st.integers(0, 0x7F), max_size=40)))
        elif kind == 10:  # any bytes up to a varint's end (float data read as varints)
            out += draw(st.binary(max_size=24)) + bytes([draw(st.integers(0, 0x7F))])
        elif kind < 6:
            out += draw(varint_of_length(draw(st.integers(1, 10))))
        elif kind < 8:
            out += b"\x80" * draw(st.integers(0, 9)) + b"\x00"  # zero, padded
        elif kind == 8:  # 10 bytes; nine 0x80 then an even byte: 0 (bits past 64 dropped)
            more = draw(st.one_of(st.just(0x80), st.integers(0x80, 0xFF)))
            out += bytes([more]) * 9 + bytes([draw(st.integers(0, 0x7F))])
        else:
            out += b"\x81" * draw(st.integers(10, 12)) + b"\x01"  # over 10 bytes
    return out


@pytest.mark.slow
@needs_loop
@SETTINGS
@given(whole_run())
def test_the_compiled_scan_gives_the_numpy_facts(data: bytes) -> None:
    """Count, a varint over 10 bytes, a negative int64 and a zero: the same both ways (the
    numpy scan says no more than "long" once it finds a long run, as measure then raises),
    and what decoding says (a zero: any varint whose low 64 bits are 0, 0x80 * 9 + 0x02
    too). Again with every 0x00 made 0x01 (the same varint ends), so a zero that is no
    0x00 byte is not hidden by one that is."""
    assert LOOP is not None
    for run in (data, data.replace(b"\x00", b"\x01")):
        count, long, negative, zero = LOOP.scan(u8(run))
        expected = decode.scan_varints_reference(u8(run))
        assert (count, long) == expected[:2]
        if not long:
            assert (negative, zero) == expected[2:]
            values = [] if not run else decode.decode_varints_reference(u8(run)).tolist()
            assert count == len(values)
            assert negative == any(v >= 1 << 63 for v in values)
            assert zero == (0 in values)


@needs_loop
@SETTINGS
@given(st.binary(max_size=300), st.lists(st.tuples(st.integers(0, 320), st.integers(0, 40)),
                                         max_size=60))
def test_strings_are_the_numpy_strings(data: bytes, spans: list[tuple[int, int]]) -> None:
    """``_varints.strings`` against ``strings_array_reference``: the same bytes objects for
    spans within the data (NUL bytes at their ends, empty ones, 40 bytes long: numpy's
    rows), and False, nothing written, where a span runs past it."""
    starts = np.array([a for a, _ in spans], np.int64)
    ends = starts + np.array([n for _, n in spans], np.int64)
    inside = bool((ends <= len(data)).all())
    assert LOOP is not None
    out = np.empty(len(spans), dtype=object)
    assert LOOP.strings(u8(data), starts, ends, out) is inside
    if inside:
        want = decode.strings_array_reference(data, starts, ends, np.empty(len(spans), object))
        sliced = [data[a:b] for a, b in zip(starts, ends, strict=True)]
        assert out.tolist() == want.tolist() == sliced
        assert decode.strings_array(data, starts, ends).tolist() == out.tolist()
    else:
        assert out.tolist() == [None] * len(spans)


@st.composite
def split_runs(draw: st.DrawFn) -> tuple[bytes, int, list[tuple[int, int]]]:
    """Whole varints cut into many packed runs (a cut only after a varint's last byte),
    with gaps between them (a tag and a length, never read) and empty runs; sometimes
    a run's last byte made a continuation byte (a varint cut off at the run's edge), or
    an overlong varint (11 bytes and more) at a run's start or end. The window starts
    at ``base``, as a file's bytes do."""
    runs: list[bytes] = []
    for _ in range(draw(st.integers(0, 12))):
        body = draw(whole_run())
        ends = [i + 1 for i, b in enumerate(body) if b < 0x80]
        cuts = sorted(set(draw(st.lists(st.sampled_from(ends), max_size=4)))) if ends else []
        bounds = [0, *cuts, len(body)]
        runs += [body[a:b] for a, b in itertools.pairwise(bounds)]
        if draw(st.integers(0, 3)) == 0:
            runs.append(b"")
    for _ in range(draw(st.integers(0, 2))):
        if not runs:
            break
        k = draw(st.integers(0, len(runs) - 1))
        how = draw(st.sampled_from(["cut", "long-start", "long-end"]))
        long = b"\x81" * draw(st.integers(10, 12)) + b"\x01"
        if how == "cut" and runs[k]:
            runs[k] = runs[k][:-1] + bytes([runs[k][-1] | 0x80])
        elif how == "long-start":
            runs[k] = long + runs[k]
        else:
            runs[k] = runs[k] + long
    base = draw(st.sampled_from([0, 7, 1 << 40]))
    data, spans = bytearray(), []
    for run in runs:
        data += bytes(draw(st.sampled_from([0, 0, 2, 3, 17])))
        spans.append((base + len(data), base + len(data) + len(run)))
        data += run
    return bytes(data), base, spans


@needs_loop
@SETTINGS
@given(split_runs())
def test_scan_runs_gives_the_facts_of_the_join(case: tuple[bytes, int, list[tuple[int, int]]]
                                               ) -> None:
    """``_varints.scan_runs`` (each run scanned in place) against ``scan_runs_reference`` (the
    runs joined, then scanned): the same first bad run, the same count and long; with no
    long varint, the same negative and zero. And both say what joining the good runs and
    decoding them says. Again with every 0x00 made 0x01 (the same varint ends), so a zero
    that is no 0x00 byte is not hidden by one that is."""
    data, base, spans = case
    assert_scan_runs_facts(data, base, spans)
    assert_scan_runs_facts(data.replace(b"\x00", b"\x01"), base, spans)


def assert_scan_runs_facts(data: bytes, base: int, spans: list[tuple[int, int]]) -> None:
    starts = np.array([a for a, _ in spans], np.int64)
    ends = np.array([b for _, b in spans], np.int64)
    assert LOOP is not None
    got = LOOP.scan_runs(u8(data), base, starts, ends)
    want = decode.scan_runs_reference(u8(data), base, starts, ends)
    assert (got[0], got[1], got[4]) == (want[0], want[1], want[4])
    if not got[1]:
        assert got[2:4] == want[2:4]
    good = spans if got[4] < 0 else spans[:got[4]]
    joined = b"".join(data[a - base:b - base] for a, b in good)
    if got[4] >= 0:
        a, b = spans[got[4]]
        assert b > a and data[b - base - 1] >= 0x80
    if not got[1] and joined:
        values = decode.decode_varints_reference(u8(joined)).tolist()
        assert got[0] == len(values)
        assert got[2] == any(v >= 1 << 63 for v in values)
        assert got[3] == (0 in values)  # (0x80 * 9 + 0x02 too: its bit 64 dropped)
    with mock.patch.object(decode, "_LOOP", LOOP):
        assert decode.scan_runs(u8(data), base, starts, ends) == got


@pytest.mark.parametrize("last", range(0x80))
def test_scans_count_a_ten_byte_varint_as_zero_as_decoding_does(last: int) -> None:
    """A 10-byte varint keeps bit 0 of its last byte (bit 63) and drops the rest, as
    protobuf (python and upb) does: nine 0x80 then an even byte is 0. Every scan (the
    numpy one, the compiled one, each on the run and on it cut into runs) says "zero" as
    decoding says it, with the varint at each offset in a 64-bit word, in the word loop
    or in the last bytes, after nine bytes of 0x80 or of others."""
    for nine in (b"\x80" * 9, b"\x81" + b"\x80" * 8, b"\x80" * 8 + b"\xc0"):
        for lead, tail in itertools.product(range(17), (0, 9)):
            data = b"\x05" * lead + nine + bytes([last]) + b"\x07" * tail
            values = decode.decode_varints_reference(u8(data)).tolist()
            zero = 0 in values
            assert zero == (nine == b"\x80" * 9 and last % 2 == 0)  # (as protobuf reads it)
            cut = lead + 10
            starts = np.array([0, lead, cut], np.int64)
            ends = np.array([lead, cut, len(data)], np.int64)
            facts = [decode.scan_varints_reference(u8(data))[3],
                     decode.scan_runs_reference(u8(data), 0, starts, ends)[3]]
            if LOOP is not None:
                facts += [LOOP.scan(u8(data))[3], LOOP.scan_runs(u8(data), 0, starts, ends)[3]]
            assert facts == [zero] * len(facts), (data.hex(), facts)


@needs_loop
def test_scan_runs_refuses_runs_outside_the_window() -> None:
    assert LOOP is not None
    for scan_runs in (LOOP.scan_runs, decode.scan_runs_reference):
        with pytest.raises(ValueError):
            scan_runs(u8(b"\x01\x02"), 10, np.array([9], np.int64), np.array([11], np.int64))
        with pytest.raises(ValueError):
            scan_runs(u8(b"\x01\x02"), 10, np.array([10], np.int64), np.array([13], np.int64))


@needs_loop
@pytest.mark.parametrize("seed", range(4))
def test_scan_runs_of_many_short_and_long_runs(seed: int) -> None:
    """Thousands of short runs (joined on the stack a buffer at a time by ``scan_runs``)
    among runs of a few kB (scanned in place), zeros and negatives anywhere: the facts of
    their join, as the reference finds them."""
    rng = np.random.default_rng(seed)
    values = [0, 1, 127, 128, 300, 1 << 35, (1 << 64) - 1, 1 << 63]
    data, spans = bytearray(), []
    for _ in range(3000):
        data += b"\x0a\x05"
        n = int(rng.choice([0, 1, 2, 5, 400]))
        run = b"".join(encode_varint(int(v)) for v in rng.choice(values[1:-2], n))
        if rng.random() < 0.002:
            run += encode_varint(int(rng.choice([0, (1 << 64) - 1])))
        spans.append((len(data), len(data) + len(run)))
        data += run
    starts = np.array([a for a, _ in spans], np.int64)
    ends = np.array([b for _, b in spans], np.int64)
    assert LOOP is not None
    got = LOOP.scan_runs(u8(bytes(data)), 0, starts, ends)
    assert got == decode.scan_runs_reference(u8(bytes(data)), 0, starts, ends)
    joined = b"".join(data[a:b] for a, b in spans)
    assert got[:4] == decode.scan_varints_reference(u8(joined)) and got[4] == -1
