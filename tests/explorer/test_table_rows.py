"""The byte table's rows are the reference's, byte for byte (``table_reference``: each
message scanned before its rows, every row worded on its own), where the table takes a
message's facts from its own walk, words a repeated varint or payload once and prints
int, bool and float64 values from ``tolist()``: over tensors whose raw_data is every data
type's edge bits (NaN, inf, -0.0, subnormals; float16, bfloat16, float8, int4, complex,
strings), data_type and dims given again (the last wins), optionals whose value comes
before or after their elem_type, sequences of alike elements (what is worded once), and
hypothesis-made and mutated messages of every kind, at every limit; from a file read by
pread as from bytes."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onnxdata.core.dtypes import DATA_TYPES
from onnxdata.explorer import meaning
from onnxdata.explorer.table import rows
from onnxdata.wire.field_tree import MESSAGE_NAMES
from onnxdata.wire.format import I32, I64, LEN, VARINT
from onnxdata.wire.source import Source
from tests.explorer.table_reference import reference_rows
from tests.wire.test_wire_differential import VARINTS, message_bytes, mutated
from tests.wire_bytes import key, ld, varint, vint

TESTS = Path(__file__).resolve().parents[1]
FILES = sorted((TESTS / "data" / "hostile").glob("*.pb")) + sorted(
    (TESTS / "data" / "onnx-dtypes").rglob("*.pb"))

# TensorProto, SequenceProto and OptionalProto field numbers
T_DIMS, T_DTYPE, T_FLOAT, T_INT64, T_NAME, T_RAW, T_DOUBLE, T_DOC = 1, 2, 4, 7, 8, 9, 10, 12
S_ELEM, S_TENSORS = 1, 2
O_ELEM = 1

#: Edge bit patterns by width: zeros, signs, NaNs, infinities, subnormals, the largest,
#: for float16/bfloat16 (2), float32 (4), float64 (8); complex takes two of its part's.
EDGES: dict[int, list[int]] = {
    1: [0x00, 0x80, 0x7F, 0xFF, 0x01, 0x81, 0x7E, 0xFE, 0x78, 0xF8, 0x7C, 0xFC],
    2: [0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x0001, 0x03FF, 0x7BFF, 0x3C00,
        0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0x0080, 0x007F, 0x7F7F, 0x3F80, 0x3DCD],
    4: [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,
        0x00000001, 0x007FFFFF, 0x7F7FFFFF, 0x3F800000, 0x3DCCCCCD, 0x4B800000, 0x5A0E1BCA],
    8: [0, 1 << 63, 0x7FF0 << 48, 0xFFF0 << 48, 0x7FF8 << 48, (0x7FF0 << 48) | 1, 1,
        0x000FFFFFFFFFFFFF, 0x7FEFFFFFFFFFFFFF, 0x3FF0000000000000, 0x3FB999999999999A,
        0x4341C37937E08000, 0x3F1A36E2EB1C432D],
}


def _same(data: bytes, message: str, limit: int | None, *, path: Path | None = None) -> None:
    src = Source.of_buffer(data) if path is None else Source.of_file(str(path), "pread")
    ref = Source.of_buffer(data) if path is None else Source.of_file(str(path), "pread")
    assert rows(src, message, limit=limit) == reference_rows(ref, message, limit)


def _every_way(data: bytes, limits: tuple[int | None, ...] = (None, 0, 1, 3, 200)) -> None:
    for message in MESSAGE_NAMES:
        for limit in limits:
            _same(data, message, limit)


@st.composite
def payload(draw: Any) -> bytes:
    """A raw_data payload: edge values of one width, random bytes, or both, of any length
    (past the six values a row shows, not a whole number of values, empty)."""
    width = draw(st.sampled_from(sorted(EDGES)))
    values = draw(st.lists(st.sampled_from(EDGES[width]) | st.integers(0, (1 << 8 * width) - 1),
                           max_size=14))
    out = b"".join(v.to_bytes(width, "little") for v in values)
    return out + draw(st.binary(max_size=3)) if draw(st.booleans()) else out


DATA_TYPE_CODES = st.sampled_from(sorted(DATA_TYPES)) | st.sampled_from(
    [0, 29, 2**31, 2**32 - 1, 2**32 + 1, 2**64 - 1])


@st.composite
def tensor(draw: Any) -> bytes:
    """A TensorProto of fields in any order, data_type, dims and raw_data given again or
    not at all, dims one by one or packed."""
    parts: list[bytes] = []
    for _ in range(draw(st.integers(0, 3))):
        dims = draw(st.lists(VARINTS, max_size=8))
        if draw(st.booleans()):
            parts.append(ld(T_DIMS, b"".join(varint(d) for d in dims)))
        else:
            parts += [vint(T_DIMS, d) for d in dims]
    parts += [vint(T_DTYPE, draw(DATA_TYPE_CODES)) for _ in range(draw(st.integers(0, 2)))]
    parts += [ld(T_RAW, draw(payload())) for _ in range(draw(st.integers(0, 2)))]
    extra = st.sampled_from([
        ld(T_NAME, "ünï".encode()), ld(T_DOC, b"\xff\xfe not utf-8"), ld(T_NAME, b""),
        key(T_FLOAT, I32) + struct.pack("<f", float("nan")), key(T_DOUBLE, I64) + bytes(8),
        ld(T_FLOAT, struct.pack("<3f", -0.0, float("inf"), 1e-45)),
        ld(T_INT64, varint(2**64 - 1) + varint(5)), key(40, VARINT) + varint(7),
        key(T_DTYPE, LEN) + b"\x00",
    ])
    parts += draw(st.lists(extra, max_size=3))
    return b"".join(draw(st.permutations(parts)))


@st.composite
def sequence(draw: Any) -> bytes:
    """A SequenceProto of tensors drawn from a few, so most come again (worded once), some
    with a field after them that changes what their payload means."""
    pool = draw(st.lists(tensor(), min_size=1, max_size=3))
    elements = []
    for _ in range(draw(st.integers(0, 8))):
        one = draw(st.sampled_from(pool))
        if draw(st.integers(0, 3)) == 0:
            one += vint(T_DTYPE, draw(DATA_TYPE_CODES))
        elements.append(ld(S_TENSORS, one))
    head = [vint(S_ELEM, draw(st.integers(0, 7)))] if draw(st.booleans()) else []
    return b"".join(head + elements)


@st.composite
def optional(draw: Any) -> bytes:
    """An OptionalProto: elem_type (any, given twice, or not) before or after value fields
    (any of the five, or none)."""
    parts = [vint(O_ELEM, draw(st.integers(0, 7))) for _ in range(draw(st.integers(0, 2)))]
    for _ in range(draw(st.integers(0, 2))):
        number = draw(st.integers(2, 6))
        parts.append(ld(number, draw(tensor()) if number == 2 else b""))
    return b"".join(draw(st.permutations(parts)))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.one_of(tensor(), sequence(), optional()), st.sampled_from([None, 0, 1, 2, 5, 200]))
def test_made_messages(data: bytes, limit: int | None) -> None:
    for message in MESSAGE_NAMES:
        _same(data, message, limit)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(MESSAGE_NAMES).flatmap(
    lambda name: message_bytes(name) | mutated(message_bytes(name)) |
    mutated(st.one_of(tensor(), sequence(), optional()))))
def test_any_message(data: bytes) -> None:
    _every_way(data, (None, 2))


@pytest.mark.parametrize("code", sorted(DATA_TYPES))
def test_every_data_type_edges(code: int) -> None:
    """Each data type's raw_data of every edge pattern of each width, six values a row
    (what the row shows), as one tensor each in a sequence."""
    elements = []
    for width, edges in EDGES.items():
        for first in range(0, len(edges), 6):
            raw = b"".join(v.to_bytes(width, "little") for v in edges[first:first + 6])
            elements.append(ld(S_TENSORS, vint(T_DTYPE, code) + ld(T_RAW, raw)))
    elements.append(ld(S_TENSORS, vint(T_DTYPE, code) + ld(T_RAW, bytes(range(256)))))
    _same(vint(S_ELEM, 1) + b"".join(elements), "SequenceProto", None)


def test_a_tensor_of_many_fields_takes_its_facts_from_a_scan() -> None:
    """Past WALKED_FIELDS fields the payload's facts come from ``scan``, as before."""
    data = (vint(T_DTYPE, 10) + ld(T_DIMS, varint(3)) * (meaning.WALKED_FIELDS + 5)
            + ld(T_RAW, bytes(range(20))) + vint(T_DTYPE, 1))
    _every_way(data, (None, 200))
    assert "float32 [3, 3, 3, 3, … (1029 dims)], 20 bytes" in rows(
        Source.of_buffer(data), "TensorProto", limit=None)[-2].value


def test_a_payload_cut_by_the_limit_takes_its_facts_from_a_scan() -> None:
    """A tensor whose rows the limit cuts after its raw_data: its data_type comes later."""
    raw = struct.pack("<2f", 1.5, -0.0)
    data = ld(T_RAW, raw) + vint(T_DTYPE, 1) + vint(T_DTYPE, 11)
    _every_way(data, (1, 2, None))
    assert rows(Source.of_buffer(data), "TensorProto", limit=1)[0].value == \
        f"float64 [], 8 bytes: {struct.unpack('<d', raw)[0]!r}"


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(TESTS)) for p in FILES])
def test_files(path: Path) -> None:
    data = path.read_bytes()
    for message in MESSAGE_NAMES:
        _same(data, message, 200, path=path)
        _same(data, message, 200)
