"""A fixed-width repeated field in many pieces (field_values.fixed): floats and doubles
written one at a time are read in one strided copy when every piece has one width at one
stride, and piece by piece otherwise; the values are protobuf's either way."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import onnxdata
from onnxdata.convert import values as convert
from onnxdata.wire import field_values, loops
from tests.wire_bytes import ld, vint

N = 3000  # past KEEP_PIECES: the pieces are kept as a Compact


def one_float(v: float) -> bytes:
    return b"\x25" + struct.pack("<f", v)  # float_data, wire type I32


def one_double(v: float) -> bytes:
    return b"\x51" + struct.pack("<d", v)  # double_data, wire type I64


CASES = {  # name: (bytes, values, strided)
    "floats-one-at-a-time": (vint(1, N) + vint(2, 1) + b"".join(one_float(i / 3) for i in range(N)),
                             np.arange(N, dtype=np.float32) / np.float32(3), True),
    "doubles-one-at-a-time": (vint(1, N) + vint(2, 11) +
                              b"".join(one_double(i / 7) for i in range(N)),
                              np.arange(N) / 7, True),
    "packed-and-single-mixed": (vint(1, N + 2) + vint(2, 1) + ld(4, struct.pack("<2f", -1, -2)) +
                                b"".join(one_float(i) for i in range(N)),
                                np.array([-1, -2, *range(N)], dtype=np.float32), False),
    "a-name-between": (vint(1, N) + vint(2, 1) + b"".join(  # the stride changes once
        one_float(i) + (ld(8, b"x") if i == N // 2 else b"") for i in range(N)),
        np.arange(N, dtype=np.float32), False),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_are_protobufs(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data, want, strided = CASES[name]
    taken: list[bool] = []
    real = field_values._fixed_strided

    def spied(*args: object) -> object:
        got = real(*args)  # type: ignore[arg-type]
        taken.append(got is not None)
        return got
    rows: list[int] = []
    real_row = field_values._row

    def row(*args: Any) -> Any:
        rows.append(args[3] - args[2])
        return real_row(*args)
    monkeypatch.setattr(field_values, "_fixed_strided", spied)
    monkeypatch.setattr(field_values, "_row", row)
    path = tmp_path / "t.pb"
    path.write_bytes(data)
    got = onnxdata.read(path, "tensor")
    assert got.dtype == want.dtype and np.array_equal(got, want)
    if not loops.COMPILED:  # the Python walk's single values: one strided copy
        assert any(taken) == strided
    else:  # values one after another: a ROW piece (each one strided copy), however many
        assert sorted(rows) == {"a-name-between": [5 * (N - N // 2 - 1) - 1,
                                                   5 * (N // 2 + 1) - 1],
                                "packed-and-single-mixed": [5 * N - 1],
                                "floats-one-at-a-time": [5 * N - 1],
                                "doubles-one-at-a-time": [9 * N - 1]}[name]
    reference = convert.to_numpy_reference(onnxdata.load(data, "tensor"))
    assert reference.dtype == want.dtype and np.array_equal(reference, want)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["one", "run", "bad-run", "gap"]), st.integers(0, 5)),
                min_size=1, max_size=60),
       st.booleans())
def test_pieces_gathered_in_one_read_are_the_pieces_read_one_by_one(
        spec: list[tuple[str, int]], decode: bool) -> None:
    """field_values._fixed_gathered (one read of the pieces' span, numpy gathers their bytes)
    gives what reading them piece by piece gives: the count, the values, or the same
    WireError for the first packed run that is not whole values."""
    from onnxdata.wire.format import I32, LEN, WireError
    from onnxdata.wire.occurrences import Compact
    from onnxdata.wire.source import Source

    buf = bytearray()
    pieces = []
    for what, k in spec:
        a = len(buf)
        if what == "gap":
            buf += b"\xee" * k
            continue
        n = 4 if what == "one" else 4 * k + (1 if what == "bad-run" else 0)
        buf += struct.pack(f"<{n // 4}f", *range(a, a + n // 4)) + b"\x01" * (n % 4)
        pieces.append((I32 if what == "one" else LEN, a, len(buf)))
    src = Source.of_buffer(bytes(buf))
    dtype = np.dtype("<f4")

    def outcome(fn: Any) -> Any:
        try:
            count, values = fn()
        except WireError as exc:
            return f"{exc}"
        return count, None if values is None else values.tolist()
    gathered = outcome(lambda: field_values._fixed_gathered(src, Compact(pieces), dtype, decode)
                       or (None, None))
    if gathered == (None, None):
        return  # (not taken: the pieces are read one by one)
    assert gathered == outcome(lambda: field_values.fixed(src, list(pieces), dtype, decode))
