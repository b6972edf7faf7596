"""A fixed-width repeated field in many pieces (payloads.fixed): floats and doubles
written one at a time are read in one strided copy when every piece has one width at one
stride, and piece by piece otherwise; the values are protobuf's either way."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

import onnxdata
from onnxdata.convert import values as convert
from onnxdata.wire import payloads
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
    real = payloads._fixed_strided

    def spied(*args: object) -> object:
        got = real(*args)  # type: ignore[arg-type]
        taken.append(got is not None)
        return got
    monkeypatch.setattr(payloads, "_fixed_strided", spied)
    path = tmp_path / "t.pb"
    path.write_bytes(data)
    got = onnxdata.read(path, "tensor")
    assert got.dtype == want.dtype and np.array_equal(got, want)
    assert any(taken) == strided
    reference = convert.to_numpy(onnxdata.load(data, "tensor"))
    assert reference.dtype == want.dtype and np.array_equal(reference, want)
