"""The compiled ``_walk.plain_fields`` gives what its Python reference,
``tensor.plain_fields_reference``, gives for the same bytes: the fields the plain-tensor
path reads, or None where it leaves the tensor to the full scan. On generated tensors of
every storage, on mutated and random bytes, on messages inside a bigger buffer, and on
every tensor of the bundled node cases; and the reference read a window at a time (a
mapped file) agrees with both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onnxdata.core.messages import EXTERNAL
from onnxdata.engine import tensor as engine_tensor
from onnxdata.engine.tensor import plain_fields_reference
from onnxdata.rules.common import EXTERNAL_KEYS
from onnxdata.rules.tensor import MAX_NDIM
from onnxdata.wire import loops
from onnxdata.wire.source import Source
from tests.conftest import CORPUS, MANIFEST
from tests.engine.test_plain_tensors import dataless_tensors, string_tensors, typed_tensors
from tests.wire.test_wire_differential import message_bytes, mutated
from tests.wire_bytes import ld, varint, vint

needs_loop = pytest.mark.skipif(not loops.COMPILED, reason="the compiled walk is not built "
                                "(tests/wire/test_walk_compiled.py::test_the_loop_is_built)")
SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def compiled(buf: bytes, start: int, end: int) -> Any:
    assert loops.walk_loop is not None
    return loops.walk_loop.plain_fields(buf, start, end, MAX_NDIM, EXTERNAL,
                                        engine_tensor._PACKED_DIMS,
                                        engine_tensor._PLAIN_STRINGS, len(EXTERNAL_KEYS))


def check(data: bytes, tmp: Path | None = None) -> Any:
    """Both give the same for ``data`` alone and inside a buffer with bytes around it."""
    want = plain_fields_reference(Source.of_buffer(data), 0, len(data))
    assert compiled(data, 0, len(data)) == want
    padded = b"\xff" * 7 + data + b"\x08"
    got = compiled(padded, 7, 7 + len(data))
    assert got == _shifted(plain_fields_reference(Source.of_buffer(padded), 7, 7 + len(data)))
    assert _shifted(got, -7) == want
    if tmp is not None:  # the reference a window at a time, as a mapped file is read
        path = tmp / "t.pb"
        path.write_bytes(padded)
        with Source.of_file(str(path), "pread") as src:
            assert src.in_memory() is None
            assert plain_fields_reference(src, 7, 7 + len(data)) == got
    return want


def _shifted(found: Any, by: int = 0) -> Any:
    """``found`` with every offset moved by ``by``."""
    if found is None or not by:
        return found
    code, dims, raw, raw_len, location, entries, strings, typed = found
    return (code, dims, raw + by if raw >= 0 else raw, raw_len, location,
            [(a + by, b + by) for a, b in entries], [(a + by, b + by) for a, b in strings],
            (typed[0], typed[1] + by) if typed is not None else None)


@needs_loop
@SETTINGS
@given(typed_tensors() | string_tensors() | dataless_tensors()
       | mutated(typed_tensors() | string_tensors()))
def test_generated_tensors(data: bytes) -> None:
    check(data)


@needs_loop
@SETTINGS
@given(message_bytes("TensorProto") | mutated(message_bytes("TensorProto"))
       | st.binary(max_size=48))
def test_any_tensor_bytes(data: bytes) -> None:
    check(data)


@needs_loop
@pytest.mark.parametrize("data", [
    vint(1, 2) + vint(1, 3) + vint(2, 1) + ld(9, b"\0" * 24),  # dims, data_type, raw_data
    ld(1, varint(2) + varint(3)) + vint(2, 1) + ld(4, b"\0" * 24),  # packed dims, float_data
    vint(1, 1 << 63) + vint(2, 1),  # a negative dim
    b"".join(vint(1, 1) for _ in range(MAX_NDIM + 1)),  # more dims than numpy holds
    ld(1, b"".join(varint(1) for _ in range(700))),  # a long packed run
    vint(2, 1) + ld(13, ld(1, b"location") + ld(2, b"x")) + vint(14, 1),  # external data
    vint(2, 1) + b"".join(ld(13, b"") for _ in range(len(EXTERNAL_KEYS) + 1)),
    vint(2, 1) + vint(14, 2),  # data_location out of its enum
    vint(2, 8) + b"".join(ld(6, b"s") for _ in range(engine_tensor._PLAIN_STRINGS + 1)),
    vint(2, 1) + ld(4, b"\0" * 4) + ld(4, b"\0" * 4),  # float_data packed twice
    vint(2, 1) + b"\x4a\x85\x80\x80\x80\x80\x00",  # a length written in 7 bytes
    vint(2, 1) + b"\x4a\x05ab",  # a length past the end
    vint(2, 1) + ld(8, b"name") + vint(15, 1),  # another field (data_location's neighbour)
    b"\x08",  # a tag and no value
], ids=lambda d: d.hex()[:24])
def test_edges(data: bytes, tmp_path: Path) -> None:
    check(data, tmp_path)


@needs_loop
def test_the_bundled_node_cases(tmp_path: Path) -> None:
    taken = 0
    for entry in MANIFEST:
        if entry["kind"] == "tensor":
            taken += check((CORPUS / entry["path"]).read_bytes()) is not None
    assert taken > 150  # (the plain path takes nearly every tensor of them)
