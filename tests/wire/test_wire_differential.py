"""Our wire readers against protobuf's parser, on hypothesis-made messages and mutations.

Three readers of ours walk the wire by hand: ``wire.iter_fields``, the explorer's
``fit`` and the fast ``read``. Each must agree with protobuf on every input:
the same accept or reject and the same values (see ``wire_model.py`` for the
rules compared, and ``fuzz/targets.py`` for ``read`` against
``to_numpy(load())``). The messages are made at the wire level from ONNX's own
schema: fields in any order, repeated scalars packed and unpacked and mixed, a
singular field given several times, a singular message given twice, unknown
fields (groups too), zero-length payloads, and all varint widths. Raw byte
mutations of those and of the corpus cover the rest.

``ONNXDATA_DIFF_EXAMPLES`` sets the examples per test (default 100).
"""

from __future__ import annotations

import atexit
import os
import shutil
import struct
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onnxdata
from onnxdata.core.messages import KIND_NAMES, OptionalProto, TensorProto
from onnxdata.wire.format import I32, I64, LEN, VARINT, WireError, iter_fields
from onnxdata.wire.schema import FieldSpec, message_schema
from tests.wire_bytes import key, ld, varint

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(TESTS / "fuzz"))
import wire_model  # noqa: E402
from targets import known_bug, read_compare  # noqa: E402

from tests.conftest import CORPUS, MANIFEST  # noqa: E402

EXAMPLES = int(os.environ.get("ONNXDATA_DIFF_EXAMPLES", "100"))
DIFF = settings(max_examples=EXAMPLES, deadline=None, derandomize=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much])
KINDS = list(KIND_NAMES)
CORPUS_BYTES = [(CORPUS / e["path"]).read_bytes() for e in MANIFEST[::8]]


# --------------------------------------------------------------------------- encoding


# Values a varint field is given: small, at each width boundary, negatives as int32
# and int64 see them (10 bytes), and anything up to 2**64 - 1.
VARINTS = st.one_of(
    st.integers(0, 20),
    st.sampled_from([127, 128, 16383, 16384, 2**31 - 1, 2**31, 2**32 - 1, 2**32,
                     2**63 - 1, 2**63, 2**64 - 1]),
    st.integers(-(2**63), -1).map(lambda v: v & (2**64 - 1)),
    st.integers(0, 2**64 - 1),
)


def scalar_payload(spec: FieldSpec) -> st.SearchStrategy[bytes]:
    """One value of a scalar field, without its key."""
    if spec.wire_type == VARINT:
        return VARINTS.map(varint)
    if spec.wire_type == I32:
        return st.binary(min_size=4, max_size=4)
    return st.binary(min_size=8, max_size=8)


def unknown_field(schema: dict[int, FieldSpec]) -> st.SearchStrategy[bytes]:
    """A field the schema lacks, of any wire type, groups well formed; or a known number
    with a wrong wire type (protobuf keeps both as unknown fields)."""
    numbers = st.integers(1, 60).filter(lambda n: n not in schema) | st.sampled_from(
        [19000, 2**29 - 1])
    known = st.sampled_from(sorted(schema))

    def build(number: int, wt: int, payload: bytes, v: int) -> bytes:
        if wt == VARINT:
            return key(number, VARINT) + varint(v)
        if wt == I64:
            return key(number, I64) + payload.ljust(8, b"\0")[:8]
        if wt == I32:
            return key(number, I32) + payload.ljust(4, b"\0")[:4]
        if wt == LEN:
            return ld(number, payload)
        return key(number, 3) + key(1, VARINT) + varint(v) + key(number, 4)  # a group

    wrong = st.builds(lambda n, wt, p, v: (n, wt, p, v), known, st.sampled_from([0, 1, 2, 3, 5]),
                      st.binary(max_size=6), VARINTS).filter(
        lambda t: t[1] != schema[t[0]].wire_type and not (schema[t[0]].packable and t[1] == LEN))
    new = st.builds(lambda n, wt, p, v: (n, wt, p, v), numbers, st.sampled_from([0, 1, 2, 3, 5]),
                    st.binary(max_size=6), VARINTS)
    return (new | wrong).map(lambda t: build(*t))


@st.composite
def message_bytes(draw: Any, name: str, depth: int = 0, unknown: bool = True) -> bytes:
    """A message of type ``name`` at the wire level: a list of fields in any order."""
    schema = message_schema(name)
    numbers = sorted(schema)
    count = draw(st.integers(0, 6 if depth < 3 else 2))
    parts = []
    for _ in range(count):
        if unknown and draw(st.integers(0, 9)) == 0:
            parts.append(draw(unknown_field(schema)))
            continue
        spec = schema[draw(st.sampled_from(numbers))]
        if spec.message is not None:
            payload = b"" if depth >= 4 else draw(message_bytes(spec.message, depth + 1, unknown))
            parts.append(ld(spec.number, payload))
        elif spec.wire_type == LEN:
            parts.append(ld(spec.number, draw(st.binary(max_size=6))))
        elif spec.packable and draw(st.booleans()):
            run = draw(st.lists(scalar_payload(spec), max_size=4))
            parts.append(ld(spec.number, b"".join(run)))
        else:
            parts.append(key(spec.number, spec.wire_type) + draw(scalar_payload(spec)))
    return b"".join(parts)


@st.composite
def mutated(draw: Any, base: st.SearchStrategy[bytes]) -> bytes:
    """Bytes with a few random edits: flip, set, insert, delete, truncate, duplicate."""
    data = bytearray(draw(base))
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate", "dup"]))
        i = draw(st.integers(0, len(data)))
        if op == "insert" or not data:
            data[i:i] = draw(st.binary(min_size=1, max_size=4))
        elif op == "flip":
            data[min(i, len(data) - 1)] ^= 1 << draw(st.integers(0, 7))
        elif op == "set":
            data[min(i, len(data) - 1)] = draw(st.sampled_from([0, 1, 0x7F, 0x80, 0xFF, 0x0A]))
        elif op == "delete":
            del data[i:i + draw(st.integers(1, 4))]
        elif op == "truncate":
            del data[i:]
        else:
            j = draw(st.integers(i, len(data)))
            data[j:j] = data[i:j]
    return bytes(data)


def generated_any_kind(unknown: bool = True) -> st.SearchStrategy[bytes]:
    return st.one_of(*[message_bytes(k, unknown=unknown) for k in
                       ("SequenceProto", "OptionalProto", "MapProto", "TensorProto",
                        "SparseTensorProto")])


def reading(data: bytes, kind: str) -> Any:
    """The explorer's reading of ``data`` as ``kind`` (a kind name)."""
    return next(r for r in onnxdata.readings(data) if r.kind_name == kind)


def _tolerate_known(exc: AssertionError, data: bytes) -> None:
    """Re-raise unless this is a reported, unfixed bug (counted in the report)."""
    if known_bug(exc, data) is None:
        raise exc


def _fit_all(data: bytes) -> None:
    try:
        wire_model.check_iter_fields(data)
        for kind in KINDS:
            wire_model.check_fit(data, kind)
    except AssertionError as exc:
        _tolerate_known(exc, data)


# --------------------------------------------------------------------------- fit / iter_fields

@pytest.mark.slow
@pytest.mark.parametrize("name", ["SequenceProto", "OptionalProto", "MapProto", "TensorProto",
                                  "SparseTensorProto"])
@DIFF
@given(data=st.data())
def test_fit_and_iter_fields_agree_with_protobuf_on_generated(name: str, data: Any) -> None:
    _fit_all(data.draw(message_bytes(name)))


@pytest.mark.slow
@DIFF
@given(data=mutated(generated_any_kind()))
def test_fit_and_iter_fields_agree_with_protobuf_on_mutations(data: bytes) -> None:
    _fit_all(data)


@DIFF
@given(data=mutated(st.sampled_from(CORPUS_BYTES)))
def test_fit_and_iter_fields_agree_with_protobuf_on_mutated_corpus(data: bytes) -> None:
    _fit_all(data)


# --------------------------------------------------------------------------- well_formed
# Every reading's well_formed against upb's parse of its kind (issue 43): upb is what
# onnx's users run, and where protobuf's parsers disagree it is the reference.

needs_upb = pytest.mark.skipif(not wire_model.UPB, reason="protobuf's parser here is not upb")


def _padded(value: int, nbytes: int) -> bytes:
    out = bytearray(varint(value))
    if len(out) < nbytes:
        out[-1] |= 0x80
        out += b"\x80" * (nbytes - len(out) - 1) + b"\x00"
    return bytes(out)


@st.composite
def upb_edits(draw: Any, base: st.SearchStrategy[bytes]) -> bytes:
    """Bytes with edits aimed at the checks upb makes: a varint (most often a length)
    padded to 2 to 10 bytes, a field-0 tag, a stray end-group, a group around some
    fields closed by its own or another number, groups nested deep, wire types 6 and 7."""
    data = bytearray(draw(base))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["length", "length", "length", "pad", "zero", "egroup",
                                   "group", "deep", "wt67"]))
        if op == "length":  # the next one-byte length after a LEN tag, padded
            j = next((j for j in range(i, len(data) - 1)
                      if data[j] & 7 == LEN and data[j] < 0x80 and data[j + 1] < 0x80), None)
            if j is not None:
                data[j + 1:j + 2] = _padded(data[j + 1], draw(st.integers(2, 10)))
        elif op == "pad":  # whatever varint ends at or after i
            j = next((j for j in range(i, len(data)) if data[j] < 0x80), None)
            if j is not None:
                data[j:j + 1] = _padded(data[j], draw(st.integers(2, 10)))
        elif op == "zero":
            data[i:i] = draw(st.sampled_from([b"\x00\x01", b"\x02\x00", b"\x03\x04",
                                              b"\x05\0\0\0\0"]))
        elif op == "egroup":
            data[i:i] = key(draw(st.integers(1, 20)), 4)
        elif op in ("group", "deep"):
            j = draw(st.integers(i, len(data)))
            n = draw(st.integers(1, 20))
            depth = 1 if op == "group" else draw(st.integers(90, 101))
            close = n if draw(st.integers(0, 3)) else n + 1
            data[j:j] = key(close, 4) * depth
            data[i:i] = key(n, 3) * depth
        else:
            data[i:i] = bytes([draw(st.sampled_from([6, 7, 14, 15]))])
    return bytes(data)


@st.composite
def padded_lengths(draw: Any) -> bytes:
    """A generated message of any kind whose LEN lengths are some of them padded (a
    message's own length counts its children's padding: the bytes stay whole)."""
    data = draw(generated_any_kind())
    return _repad(draw, data, 0, len(data), 0) if data else data


def _repad(draw: Any, data: bytes, start: int, end: int, depth: int) -> bytes:
    out = bytearray()
    try:
        for f in iter_fields(data, start, end):
            if f.wire_type != LEN:
                out += data[f.offset:f.end]
                continue
            payload = data[f.start:f.end]
            if depth < 4 and draw(st.booleans()):  # (maybe a message: repad inside)
                payload = _repad(draw, data, f.start, f.end, depth + 1)
            width = draw(st.sampled_from([0, 0, 0, 0, 5, 6, 10]))
            head = data[f.offset:f.start - len(varint(f.end - f.start))]
            out += head + _padded(len(payload), max(width, len(varint(len(payload))))) + payload
    except WireError:
        return data[start:end]
    return bytes(out)


def _well_formed_all(data: bytes) -> None:
    try:
        wire_model.check_well_formed(data)
    except AssertionError as exc:
        _tolerate_known(exc, data)


@needs_upb
@DIFF
@given(data=upb_edits(generated_any_kind()))
def test_well_formed_agrees_with_upb_on_aimed_edits(data: bytes) -> None:
    _well_formed_all(data)


@needs_upb
@DIFF
@given(data=padded_lengths())
def test_well_formed_agrees_with_upb_on_padded_lengths(data: bytes) -> None:
    _well_formed_all(data)


@needs_upb
@DIFF
@given(data=st.one_of(mutated(st.sampled_from(CORPUS_BYTES)),
                      upb_edits(st.sampled_from(CORPUS_BYTES))))
def test_well_formed_agrees_with_upb_on_mutated_corpus(data: bytes) -> None:
    _well_formed_all(data)


def test_the_well_formed_check_sees_an_overlong_length() -> None:
    """The check is real: a length padded to 6 bytes is refused by upb, and by every
    reading; to 5 bytes, taken by both."""
    six = key(2, VARINT) + varint(1) + key(8, LEN) + _padded(1, 6) + b"t"
    assert not any(r.well_formed for r in onnxdata.readings(six))
    if wire_model.UPB:
        assert wire_model.proto_parse(six, TensorProto) is None
        wire_model.check_well_formed(six)
        five = key(2, VARINT) + varint(1) + key(8, LEN) + _padded(1, 5) + b"t"
        assert wire_model.proto_parse(five, TensorProto) is not None
        wire_model.check_well_formed(five)


# --------------------------------------------------------------------------- read

_READ_DIR = Path(tempfile.mkdtemp(prefix="onnxdata-diff-"))
atexit.register(shutil.rmtree, _READ_DIR, ignore_errors=True)


def _read_all(data: bytes) -> None:
    path = _READ_DIR / "value.pb"
    path.write_bytes(data)
    for kind in KINDS:
        try:
            read_compare(path, kind)
        except AssertionError as exc:
            _tolerate_known(exc, data)
        except ValueError as exc:
            if known_bug(exc, data) is None:
                raise


@pytest.mark.slow
@DIFF
@given(data=generated_any_kind())
def test_read_agrees_with_protobuf_on_generated(data: bytes) -> None:
    _read_all(data)


@pytest.mark.slow
@DIFF
@given(data=mutated(generated_any_kind(unknown=False)))
def test_read_agrees_with_protobuf_on_mutations(data: bytes) -> None:
    _read_all(data)


@DIFF
@given(data=mutated(st.sampled_from(CORPUS_BYTES)))
def test_read_agrees_with_protobuf_on_mutated_corpus(data: bytes) -> None:
    _read_all(data)


# Valid values made by from_numpy, then reordered at the wire level: every reader must
# still see the same value.

VALUES = st.one_of(
    st.lists(st.integers(-5, 5), min_size=0, max_size=5).map(lambda v: np.array(v, np.int64)),
    st.lists(st.floats(width=32), max_size=5).map(lambda v: np.array(v, np.float32)),
    st.lists(st.binary(max_size=3), max_size=3).map(lambda v: np.array(v, dtype=object)
                                                     if v else np.zeros(0, np.float64)),
)


def _shuffled(data: bytes, order: list[int]) -> bytes:
    fields = [data[f.offset:f.end] for f in onnxdata.wire.format.iter_fields(data)]
    return b"".join(fields[i] for i in order if i < len(fields)) + b"".join(
        f for i, f in enumerate(fields) if i not in order)


@DIFF
@given(value=st.lists(VALUES, min_size=1, max_size=3),
       order=st.permutations(range(6)))
def test_valid_values_read_the_same_in_any_field_order(value: list[Any],
                                                       order: list[int]) -> None:
    if len({v.dtype for v in value}) != 1:
        value = [value[0]]
    data = _shuffled(onnxdata.from_numpy(value).SerializeToString(), list(order))
    path = _READ_DIR / "ordered.pb"
    path.write_bytes(data)
    read_compare(path, "sequence")
    wire_model.check_fit(data, "sequence")
    got = onnxdata.read(path, "sequence")
    assert len(got) == len(value)


# --------------------------------------------------------------------------- the named rules

def _tensor_bytes(*fields: bytes) -> bytes:
    return b"".join(fields)


def _agree(data: bytes, kind: str) -> Any:
    """fit and read agree with protobuf on ``data``; returns read's value (or its error)."""
    wire_model.check_fit(data, kind)
    path = _READ_DIR / f"rule-{kind}.pb"
    path.write_bytes(data)
    read_compare(path, kind)
    try:
        return onnxdata.read(path, kind)
    except onnxdata.OnnxDataError as exc:
        return exc


def test_packed_and_unpacked_dims_mixed() -> None:
    data = _tensor_bytes(key(1, VARINT) + varint(2), ld(1, varint(1) + varint(3)),
                         key(2, VARINT) + varint(1), ld(9, b"\0" * 24))
    assert onnxdata.load(data, "tensor").dims == [2, 1, 3]
    assert _agree(data, "tensor").shape == (2, 1, 3)


def test_packed_and_unpacked_float_data_mixed() -> None:
    data = _tensor_bytes(key(1, VARINT) + varint(3), key(2, VARINT) + varint(1),
                         key(4, I32) + struct.pack("<f", 1.0),
                         ld(4, struct.pack("<2f", 2.0, 3.0)))
    assert _agree(data, "tensor").tolist() == [1.0, 2.0, 3.0]


def test_last_value_wins_for_a_singular_scalar() -> None:
    data = _tensor_bytes(key(2, VARINT) + varint(7), key(1, VARINT) + varint(1),
                         ld(9, b"\0" * 4), key(2, VARINT) + varint(1))  # INT64 then FLOAT
    assert onnxdata.load(data, "tensor").data_type == 1
    value = _agree(data, "tensor")
    assert value.dtype == np.float32 and value.shape == (1,)


def test_last_value_wins_for_a_singular_bytes_field() -> None:
    data = _tensor_bytes(key(1, VARINT) + varint(1), key(2, VARINT) + varint(1),
                         ld(9, b"\1\1\1\1\1\1\1\1"), ld(9, b"\0\0\x80\x3f"))
    assert _agree(data, "tensor").tolist() == [1.0]


def test_fields_in_any_order() -> None:
    fields = [key(1, VARINT) + varint(2), key(2, VARINT) + varint(1), ld(8, b"t"),
              ld(9, struct.pack("<2f", 1, 2))]
    for order in ([3, 2, 1, 0], [2, 0, 3, 1], [1, 3, 0, 2]):
        data = b"".join(fields[i] for i in order)
        assert _agree(data, "tensor").tolist() == [1.0, 2.0]


def test_a_singular_message_given_twice_is_merged() -> None:
    """protobuf merges the two copies; read does too, and so does the explorer's reading
    (one engine: a merge protobuf accepts is valid everywhere, not a misfit)."""
    t1 = ld(1, varint(2)) + key(2, VARINT) + varint(1)  # dims [2], FLOAT
    t2 = ld(9, struct.pack("<2f", 5, 6))  # raw_data only
    data = key(2, VARINT) + varint(1) + ld(3, t1) + ld(3, t2)  # OptionalProto.tensor_value x2
    merged = onnxdata.load(data, OptionalProto)
    assert list(merged.tensor_value.dims) == [2] and merged.tensor_value.raw_data
    assert _agree(data, "optional").tolist() == [5.0, 6.0]
    r = reading(data, "optional")
    assert r.well_formed and r.valid and r.summary == "optional tensor float32 [2]"


def test_unknown_fields_are_kept_by_protobuf_and_refused_by_every_reader() -> None:
    base = key(1, VARINT) + varint(1) + key(2, VARINT) + varint(1) + ld(9, b"\0" * 4)
    for extra in (key(40, VARINT) + varint(1), ld(41, b"abc"), key(42, I64) + b"\0" * 8,
                  key(43, 3) + key(1, VARINT) + varint(0) + key(43, 4),
                  key(2, LEN) + varint(0)):  # data_type as LEN: a wrong wire type
        data = base + extra
        message = onnxdata.load(data, TensorProto)
        assert onnxdata.problems(message), extra
        assert isinstance(_agree(data, "tensor"), onnxdata.ValidationError), extra
        r = reading(data, "tensor")  # kept as unknown, as protobuf does: a problem, not a misfit
        assert r.well_formed and list(r.problems) == onnxdata.problems(message)


def test_zero_length_payloads() -> None:
    cases = {
        "tensor": key(1, VARINT) + varint(0) + key(2, VARINT) + varint(1) + ld(9, b""),
        "sequence": key(2, VARINT) + varint(1) + ld(3, b""),  # an empty TensorProto element
        "optional": key(2, VARINT) + varint(1) + ld(3, b""),
        "map": key(2, VARINT) + varint(7) + ld(3, b"") + ld(5, b""),
    }
    for kind, data in cases.items():
        _agree(data, kind)
    empty_packed = key(2, VARINT) + varint(1) + ld(1, b"") + ld(4, b"")
    # No dims (a scalar) and zero floats: one entry missing, for every reader.
    assert isinstance(_agree(empty_packed, "tensor"), onnxdata.ValidationError)


def test_tags_are_at_most_5_bytes_as_protobuf_reads_them() -> None:
    """Found by the wire harness: a zero-padded 6-byte tag was taken by wire and read."""
    five = b"\x88\x80\x80\x80\x00" + varint(2)  # dims = 2, tag padded to 5 bytes
    six = b"\x88\x80\x80\x80\x80\x00" + varint(2)
    tail = key(2, VARINT) + varint(1) + ld(9, b"\0" * 8)
    assert onnxdata.load(five + tail, TensorProto).dims == [2]
    assert _agree(five + tail, "tensor").shape == (2,)
    with pytest.raises(onnxdata.DecodeError):
        onnxdata.load(six + tail, TensorProto)
    assert isinstance(_agree(six + tail, "tensor"), onnxdata.DecodeError)
    wire_model.check_iter_fields(six + tail)


def test_a_known_field_with_another_wire_type_is_an_unknown_field_everywhere() -> None:
    """Found by the read harness: dims sent as I64 made read's fast path a DecodeError."""
    data = key(1, I64) + b"\xf8" + b"\xff" * 7
    assert onnxdata.problems(onnxdata.load(data, TensorProto))
    assert isinstance(_agree(data, "tensor"), onnxdata.ValidationError)
