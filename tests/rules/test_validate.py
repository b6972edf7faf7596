"""validate/problems: every rule, with the exact path and a sentence; onnx's wrongs named."""

from __future__ import annotations

import os
import struct
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onnxdata
from onnxdata import (
    MapProto,
    OptionalProto,
    Problem,
    SequenceProto,
    SparseTensorProto,
    TensorProto,
    ValidationError,
)
from onnxdata.core.dtypes import DATA_TYPES
from onnxdata.rules.common import MAX_REPORTED
from onnxdata.rules.containers import map_problems, sparse_index_problems
from onnxdata.rules.tensor import external_data_problems, tensor_storage_problems
from onnxdata.rules.validation import problems_reference, validate_reference
from onnxdata.rules.wire import wire_field_problems
from tests.conftest import corpus_params

FLOAT, INT8, INT32, INT64, STRING, BOOL = 1, 3, 6, 7, 8, 9
SEQ_TENSOR, SEQ_SPARSE, SEQ_SEQUENCE, SEQ_MAP, SEQ_OPTIONAL = 1, 2, 3, 4, 5


# ----------------------------------------------------------------------------- builders

def tensor(values: Any = (1.0, 2.0), dtype: Any = np.float32, name: str = "t") -> TensorProto:
    a = np.asarray(values, dtype=dtype)
    code = {np.dtype(np.float32): FLOAT, np.dtype(np.int64): INT64,
            np.dtype(np.int8): INT8, np.dtype(np.int32): INT32}[a.dtype]
    return TensorProto(name=name, data_type=code, dims=a.shape, raw_data=a.tobytes())


def seq_of_tensors(*tensors: TensorProto) -> SequenceProto:
    s = SequenceProto(name="s", elem_type=SEQ_TENSOR)
    for t in tensors:
        s.tensor_values.add().CopyFrom(t)
    return s


def int_map(keys: list[int], key_type: int = INT64, n_values: int | None = None) -> MapProto:
    m = MapProto(name="m", key_type=key_type, keys=keys)
    m.values.CopyFrom(seq_of_tensors(*[tensor([float(i)]) for i in range(
        len(keys) if n_values is None else n_values)]))
    return m


def only(message: Any, **kw: Any) -> Problem:
    found = problems_reference(message, **kw)
    assert len(found) == 1, found
    return found[0]


def assert_valid(message: Any, **kw: Any) -> None:
    """No problem found, and validate agrees: it returns instead of raising."""
    assert problems_reference(message, **kw) == []
    validate_reference(message, **kw)


def assert_problem(message: Any, path: str, words: str, **kw: Any) -> None:
    found = problems_reference(message, **kw)
    assert any(p.path == path and words in p.message for p in found), found
    with pytest.raises(ValidationError) as info:
        validate_reference(message, **kw)
    assert info.value.problems == found


# ----------------------------------------------------------------------------- corpus

@pytest.mark.parametrize(("path", "kind"), corpus_params())
def test_corpus_file_is_valid(path: Path, kind: str) -> None:
    message = onnxdata.load(path, kind)
    assert problems_reference(message, base_dir=path.parent) == []
    validate_reference(message)


@pytest.mark.parametrize(("path", "kind"), corpus_params())
def test_corpus_file_is_valid_as_onnx_message(onnx: Any, path: Path, kind: str) -> None:
    cls = {"tensor": onnx.TensorProto, "sequence": onnx.SequenceProto,
           "optional": onnx.OptionalProto, "map": onnx.MapProto,
           "sparse_tensor": onnx.SparseTensorProto}[kind]
    message = cls.FromString(path.read_bytes())
    assert problems_reference(message) == problems_reference(onnxdata.load(path, kind)) == []


def test_valid_values_of_every_kind() -> None:
    inner = OptionalProto(name="o", elem_type=SEQ_TENSOR)  # typed empty optional
    s = SequenceProto(name="s", elem_type=SEQ_OPTIONAL)
    s.optional_values.add().CopyFrom(inner)
    s.optional_values.add().CopyFrom(OptionalProto(elem_type=0))
    assert_valid(s)
    assert_valid(SequenceProto(name="empty", elem_type=SEQ_MAP))
    assert_valid(int_map([1, 2, 3]))
    assert_valid(int_map([], key_type=STRING))
    oo = OptionalProto(elem_type=SEQ_OPTIONAL)
    oo.optional_value.elem_type = SEQ_TENSOR
    oo.optional_value.tensor_value.CopyFrom(tensor())
    assert_valid(oo)
    assert_valid(TensorProto(data_type=FLOAT, dims=[0, 5]))  # no elements, no storage


# ----------------------------------------------------------------------------- unknown fields

def test_float_tensor_read_as_sequence_has_unknown_fields() -> None:
    data = tensor([1.0, 2.0, 3.0]).SerializeToString()
    s = SequenceProto.FromString(data)  # protobuf accepts it silently
    assert len(s.tensor_values) == 0
    found = problems_reference(s)
    assert Problem("name", "field 1 (name) has wire type VARINT, but the schema says LEN; "
                           "were these bytes another message?") in found
    assert any(p.path == "" and p.message.startswith("unknown field 9 (LEN)") for p in found)


def test_known_field_with_wrong_wire_type() -> None:
    good = TensorProto(data_type=FLOAT, dims=[1], float_data=[1.0]).SerializeToString()
    t = TensorProto.FromString(good + b"\x20\x05")  # float_data (4) as a VARINT
    assert_problem(t, "float_data", "field 4 (float_data) has wire type VARINT, but the schema "
                                    "says I32 or packed LEN")


def test_unknown_field_in_nested_message_has_its_path() -> None:
    t = TensorProto.FromString(tensor().SerializeToString() + b"\xa0\x06\x01")  # field 100
    s = seq_of_tensors(tensor(), t)
    assert_problem(s, "tensor_values[1]", "unknown field 100 (VARINT): TensorProto has no")


@pytest.mark.parametrize("entries", [3, 200])  # (200: over _MANY_ENTRIES, walked whole)
@pytest.mark.parametrize("where", ["metadata_props", "external_data", "segment", "none"])
def test_unknown_fields_of_a_tensor_s_entries_have_their_path(entries: int, where: str) -> None:
    """An unknown field in one of many metadata_props or external_data entries, or in the
    segment, is named by its path whether the entries are checked one by one or the
    tensor's bytes walked whole first; with none, no problem."""
    from onnxdata.generated.onnx_ml_pb2 import StringStringEntryProto

    t = tensor()
    t.segment.begin = 0
    t.segment.end = 2
    for i in range(entries):
        t.metadata_props.add(key=f"k{i}", value="v")
    stray = b"\xa0\x06\x01"  # field 100, a VARINT
    if where == "segment":
        t.segment.MergeFromString(stray)
    elif where != "none":
        entry = StringStringEntryProto(key="location", value="x.bin") if \
            where == "external_data" else t.metadata_props[entries - 2]
        entry.MergeFromString(stray)
        if where == "external_data":
            t.external_data.append(entry)
    found = [p for p in problems_reference(t) if "unknown field" in p.message]
    at = {"metadata_props": f"metadata_props[{entries - 2}]", "external_data": "external_data[0]",
          "segment": "segment"}.get(where)
    assert [p.path for p in found] == ([] if at is None else [at])


def test_enum_value_out_of_range_is_reported() -> None:
    t = TensorProto.FromString(tensor().SerializeToString() + b"\x70\x05")  # data_location=5
    assert only(t) == Problem("data_location", "5 is not DEFAULT (0) or EXTERNAL (1)")


def test_wire_field_problems_pure() -> None:
    assert wire_field_problems("x", "MapProto", [(1, 2), (3, 0), (3, 2), (4, 2)]) == []
    assert wire_field_problems("x", "MapProto", [(4, 0), (9, 5)]) == [
        Problem("x.string_keys", "field 4 (string_keys) has wire type VARINT, but the schema "
                                 "says LEN; were these bytes another message?"),
        Problem("x", "unknown field 9 (I32): MapProto has no such field; were these bytes "
                     "another message?"),
    ]


# ----------------------------------------------------------------------------- SequenceProto

def test_sequence_without_elem_type_even_empty() -> None:
    assert only(SequenceProto(name="s")) == Problem(
        "elem_type", "elem_type is missing; every sequence needs one, even an empty one")


def test_sequence_undefined_elem_type() -> None:
    assert_problem(SequenceProto(name="s", elem_type=0), "elem_type", "elem_type is UNDEFINED")


def test_sequence_unknown_elem_type() -> None:
    assert_problem(SequenceProto(elem_type=9), "elem_type", "9 is not an element type")


def test_sequence_elements_under_wrong_field() -> None:
    s = seq_of_tensors(tensor())
    s.map_values.add().CopyFrom(int_map([1]))
    s.map_values.add().CopyFrom(int_map([2]))
    assert only(s) == Problem("map_values", "2 elements here, but elem_type TENSOR keeps its "
                                            "elements in tensor_values")


def test_sequence_tensors_share_one_data_type() -> None:
    s = seq_of_tensors(tensor([1.0]), tensor([1], np.int64), tensor([2.0]))
    assert only(s) == Problem(
        "tensor_values[1]", "data type INT64 differs from FLOAT of tensor_values[0]; the "
                            "tensors of a sequence share one data type")


def test_sequence_sparse_tensors_share_one_data_type() -> None:
    s = SequenceProto(elem_type=SEQ_SPARSE)
    for values in (tensor([1.0]), tensor([1], np.int64)):
        sp = s.sparse_tensor_values.add(dims=[4])
        sp.values.CopyFrom(values)
        sp.indices.CopyFrom(tensor([2], np.int64))
    assert only(s).path == "sparse_tensor_values[1]"


def test_nested_path_map_count() -> None:
    outer = SequenceProto(elem_type=SEQ_SEQUENCE)
    outer.sequence_values.add(elem_type=SEQ_MAP)
    inner = outer.sequence_values.add(elem_type=SEQ_MAP)
    inner.map_values.add().CopyFrom(int_map([1, 2, 3], n_values=2))
    assert only(outer) == Problem("sequence_values[1].map_values[0]", "3 keys but 2 values")


def test_nested_tensor_dims_path() -> None:
    t = TensorProto(data_type=FLOAT, dims=[2, -3])
    assert only(seq_of_tensors(t)) == Problem("tensor_values[0].dims[1]",
                                              "-3 is negative; dims must be >= 0")


# ----------------------------------------------------------------------------- OptionalProto

def test_optional_without_elem_type() -> None:
    assert only(OptionalProto(name="o")) == Problem(
        "elem_type", "elem_type is missing; write UNDEFINED (0) for an absent value")


def test_optional_unknown_elem_type() -> None:
    assert_problem(OptionalProto(elem_type=6), "elem_type", "6 is not an element type")


def test_optional_undefined_with_a_value() -> None:
    o = OptionalProto(elem_type=0)
    o.tensor_value.CopyFrom(tensor())
    assert only(o) == Problem("tensor_value", "set, but elem_type is UNDEFINED, which means no "
                                              "value")


def test_optional_two_values() -> None:
    o = OptionalProto(elem_type=SEQ_TENSOR)
    o.tensor_value.CopyFrom(tensor())
    o.sequence_value.elem_type = SEQ_TENSOR
    found = problems_reference(o)
    assert Problem("", "tensor_value and sequence_value are all set; an optional holds at most "
                       "one value") in found
    assert Problem("sequence_value", "set, but elem_type TENSOR keeps its value in "
                                     "tensor_value") in found


def test_optional_value_in_wrong_field() -> None:
    o = OptionalProto(elem_type=SEQ_MAP)
    o.tensor_value.CopyFrom(tensor())
    assert only(o).path == "tensor_value"


def test_typed_empty_optional_is_valid() -> None:
    assert_valid(OptionalProto(name="absent", elem_type=SEQ_TENSOR))
    assert_valid(OptionalProto(name="absent", elem_type=0))


# ----------------------------------------------------------------------------- MapProto

def test_map_key_type_missing_and_values_missing() -> None:
    found = problems_reference(MapProto(name="m"))
    assert found == [Problem("key_type", "key_type is missing"),
                     Problem("values", "values is missing; a map needs its values sequence, "
                                       "even when empty")]


def test_map_float_key_type() -> None:
    assert_problem(int_map([1], key_type=FLOAT), "key_type",
                   "FLOAT is not a key type; expected INT8, INT16, INT32, INT64, UINT8, UINT16, "
                   "UINT32, UINT64 or STRING")


def test_map_int8_key_out_of_range() -> None:
    assert only(int_map([1, 1000], key_type=INT8)) == Problem(
        "keys[1]", "1000 is outside INT8's range [-128, 127]")


def test_map_uint32_negative_key() -> None:
    assert only(int_map([-1], key_type=12)).path == "keys[0]"


def test_map_uint64_keys_are_the_int64_bits() -> None:
    assert_valid(int_map([-1, 1 << 62], key_type=13))  # -1 is 2**64 - 1


def test_map_duplicate_int_keys() -> None:
    assert only(int_map([5, 6, 5])) == Problem("keys[2]", "5 appears again (first at keys[0])")


def test_map_duplicate_string_keys() -> None:
    m = MapProto(key_type=STRING, string_keys=[b"a", b"b", b"a"])
    m.values.CopyFrom(seq_of_tensors(*[tensor([1.0])] * 3))
    assert only(m) == Problem("string_keys[2]", "b'a' appears again (first at string_keys[0])")


def test_map_keys_in_wrong_field() -> None:
    m = MapProto(key_type=INT64, string_keys=[b"a"])
    m.values.CopyFrom(seq_of_tensors(tensor()))
    assert_problem(m, "string_keys", "1 string keys, but key_type INT64 keeps its keys in keys")
    m = MapProto(key_type=STRING, keys=[1])
    m.values.CopyFrom(seq_of_tensors(tensor()))
    assert_problem(m, "keys", "1 integer keys, but key_type STRING keeps its keys in "
                              "string_keys")


def test_map_count_mismatch() -> None:
    assert only(int_map([1, 2], n_values=3)) == Problem("", "2 keys but 3 values")


def test_map_values_cannot_be_optional() -> None:
    m = MapProto(key_type=INT64, keys=[1])
    m.values.elem_type = SEQ_OPTIONAL
    m.values.optional_values.add(elem_type=0)
    assert only(m) == Problem("values.elem_type", "map values cannot be OPTIONAL; expected "
                                                  "TENSOR, SPARSE_TENSOR, SEQUENCE or MAP")


def test_map_values_sequence_is_checked_too() -> None:
    m = MapProto(key_type=INT64, keys=[])
    m.values.name = "v"  # present, but no elem_type
    assert only(m) == Problem("values.elem_type", "elem_type is missing; every sequence needs "
                                                  "one, even an empty one")


def test_map_problems_pure_reports_many_capped() -> None:
    found = map_problems("m", INT8, list(range(200, 300)), [], values_elem_type=1,
                         n_values=100)
    assert len(found) == MAX_REPORTED + 1
    assert found[-1] == Problem("m.keys", f"{100 - MAX_REPORTED} more faulty entries not "
                                          "listed")


# ----------------------------------------------------------------------------- TensorProto

def test_tensor_undefined_data_type() -> None:
    assert_problem(TensorProto(dims=[1], raw_data=b"x"), "data_type",
                   "data_type is UNDEFINED or missing")


def test_tensor_unknown_data_type() -> None:
    assert_problem(TensorProto(data_type=99, dims=[1], raw_data=b"x"), "data_type",
                   "99 is not an ONNX tensor data type")


# (code, elements, raw bytes, typed entries): the packing rules written out independently.
STORAGE = [
    (1, 3, 12, 3), (2, 3, 3, 3), (3, 3, 3, 3), (4, 3, 6, 3), (5, 3, 6, 3), (6, 3, 12, 3),
    (7, 3, 24, 3), (9, 3, 3, 3), (10, 3, 6, 3), (11, 3, 24, 3), (12, 3, 12, 3),
    (13, 3, 24, 3), (14, 3, 24, 6), (15, 3, 48, 6), (16, 3, 6, 3), (17, 3, 3, 3),
    (18, 3, 3, 3), (19, 3, 3, 3), (20, 3, 3, 3), (21, 5, 3, 3), (22, 5, 3, 3), (23, 5, 3, 3),
    (24, 3, 3, 3), (25, 5, 2, 2), (26, 5, 2, 2), (27, 5, 4, 5), (28, 5, 4, 5),
    (27, 4, 3, 4), (28, 8, 6, 8), (25, 4, 1, 1), (21, 4, 2, 2),
]


@pytest.mark.parametrize(("code", "n", "nbytes", "entries"), STORAGE)
def test_tensor_storage_counts_every_type(code: int, n: int, nbytes: int, entries: int) -> None:
    dt = DATA_TYPES[code]
    ok_raw = TensorProto(data_type=code, dims=[n], raw_data=bytes(nbytes))
    assert problems_reference(ok_raw) == []
    bad_raw = TensorProto(data_type=code, dims=[n], raw_data=bytes(nbytes + 1))
    assert only(bad_raw).path == "raw_data"
    assert f"raw_data has {nbytes + 1} bytes" in only(bad_raw).message
    ok_typed = TensorProto(data_type=code, dims=[n])
    getattr(ok_typed, dt.field).extend([0] * entries)
    assert problems_reference(ok_typed) == []
    bad_typed = TensorProto(data_type=code, dims=[n])
    getattr(bad_typed, dt.field).extend([0] * (entries + 1))
    assert only(bad_typed).message.endswith(f"but {dt.field} has {entries + 1}")


def test_tensor_storage_counts_strings() -> None:
    assert_valid(TensorProto(data_type=STRING, dims=[2], string_data=[b"a", b""]))
    assert_problem(TensorProto(data_type=STRING, dims=[3], string_data=[b"a"]), "string_data",
                   "3 entries of string_data, but string_data has 1")
    assert_problem(TensorProto(data_type=STRING, dims=[1], raw_data=b"a"), "raw_data",
                   "STRING tensors cannot use raw_data")


def test_tensor_raw_count_message() -> None:
    assert only(TensorProto(data_type=FLOAT, dims=[2, 3], raw_data=bytes(20))) == Problem(
        "raw_data", "dims [2, 3] declare 6 elements of FLOAT, 24 bytes, but raw_data has 20 "
                    "bytes")


def test_tensor_only_one_storage() -> None:
    t = TensorProto(data_type=FLOAT, dims=[1], float_data=[1.0], raw_data=bytes(4))
    assert only(t) == Problem("", "data in float_data and raw_data: only one storage may be "
                                  "used")


def test_tensor_empty_raw_data_is_still_a_storage() -> None:
    t = TensorProto(data_type=FLOAT, dims=[1], float_data=[1.0], raw_data=b"")
    assert "only one storage" in only(t).message


def test_tensor_data_under_wrong_typed_field() -> None:
    t = TensorProto(data_type=INT32, dims=[2], float_data=[1.0, 2.0])
    assert only(t) == Problem("float_data", "float_data holds 2 entries but INT32 is stored in "
                                            "int32_data or raw_data")


def test_tensor_without_data() -> None:
    assert only(TensorProto(data_type=FLOAT, dims=[3])) == Problem(
        "", "dims [3] declare 3 elements of FLOAT but the tensor holds no data (expected 3 "
            "entries of float_data or 12 bytes of raw_data)")


def test_tensor_segment_not_supported() -> None:
    t = tensor()
    t.segment.begin = 0
    t.segment.end = 2
    assert_problem(t, "segment", "segment is not supported")


@pytest.mark.parametrize(("code", "field", "value"), [
    (INT8, "int32_data", 300), (BOOL, "int32_data", 2), (10, "int32_data", 1 << 16),
    (27, "int32_data", 64), (22, "int32_data", -1), (12, "uint64_data", 1 << 32),
])
def test_tensor_typed_entry_out_of_range(code: int, field: str, value: int) -> None:
    t = TensorProto(data_type=code, dims=[1])
    getattr(t, field).append(value)
    p = only(t)
    assert p.path == f"{field}[0]"
    assert p.message.startswith(f"{value} is outside [")


def test_dims_bomb_refused_without_allocating() -> None:
    t = TensorProto(data_type=FLOAT, dims=[1 << 40], float_data=[1.0, 2.0])
    data = t.SerializeToString()
    assert len(data) <= 40
    bomb = TensorProto.FromString(data)
    many = TensorProto(data_type=FLOAT, dims=[(1 << 62)] * 10_000, raw_data=bytes(4))
    tracemalloc.start()
    try:
        found = problems_reference(bomb)
        found_many = problems_reference(many)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2 * 1024 * 1024, peak
    assert found == [Problem("float_data", f"dims [{1 << 40}] declare {1 << 40} elements of "
                                           f"FLOAT, {1 << 40} entries of float_data, but "
                                           "float_data has 2")]
    assert "more than 2**64 elements" in found_many[0].message


def test_storage_problems_pure_huge_counts() -> None:
    found = tensor_storage_problems("x", 1, [1 << 62, 1 << 62], {}, 8)
    assert found == [Problem("x.raw_data", "dims [4611686018427387904, 4611686018427387904] "
                                           "declare more than 2**64 elements of FLOAT, more "
                                           "than 2**64 bytes, but raw_data has 8 bytes")]


# ----------------------------------------------------------------------------- external data

def external(entries: dict[str, str] | list[tuple[str, str]], *, location: int = 1,
             code: int = FLOAT, dims: tuple[int, ...] = (3,)) -> TensorProto:
    t = TensorProto(name="t", data_type=code, dims=dims, data_location=location)
    for k, v in (entries.items() if isinstance(entries, dict) else entries):
        t.external_data.add(key=k, value=v)
    return t


def test_external_valid_without_base_dir() -> None:
    assert_valid(external({"location": "w.bin", "offset": "4096", "length": "12",
                           "checksum": "abc"}))


def test_external_without_entries() -> None:
    assert only(external({})) == Problem("external_data",
                                         "data_location is EXTERNAL but external_data is empty")


def test_external_entries_without_external_location() -> None:
    t = external({"location": "w.bin"}, location=0)
    t.raw_data = bytes(12)
    assert_problem(t, "external_data", "data_location is not EXTERNAL")


def test_external_and_inline_data() -> None:
    t = external({"location": "w.bin"})
    t.float_data.extend([1, 2, 3])
    assert_problem(t, "", "data_location is EXTERNAL but the tensor also holds data in "
                          "float_data")


def test_external_string_tensor() -> None:
    assert_problem(external({"location": "w.bin"}, code=STRING), "",
                   "STRING tensors cannot be stored in external data")


@pytest.mark.parametrize(("location", "words"), [
    ("/etc/passwd", "is absolute"), ("C:\\w.bin", "is absolute"), ("\\\\srv\\w", "is absolute"),
    ("../w.bin", "'..' part"), ("a/../../w.bin", "'..' part"), ("a\\..\\..\\w", "'..' part"),
    ("", "location is empty"), ("w\0.bin", "NUL"),
])
def test_external_location_unsafe(location: str, words: str) -> None:
    assert_problem(external({"location": location}), "external_data[0]", words)


def test_external_location_missing() -> None:
    assert_problem(external({"offset": "0"}), "external_data", "no location")


@pytest.mark.parametrize("value", ["-1", "1.5", "0x10", " 4", "+4", "", "١٢"])
def test_external_offset_length_integers(value: str) -> None:
    t = external([("location", "w.bin"), ("offset", value), ("length", value)])
    found = problems_reference(t)
    assert [p.path for p in found] == ["external_data[1]", "external_data[2]"]
    assert f"offset {value!r} is not an integer >= 0" in found[0].message


def test_external_unknown_and_repeated_keys() -> None:
    t = external([("location", "w.bin"), ("shape", "3"), ("location", "x.bin")])
    assert problems_reference(t) == [
        Problem("external_data[1]", "unknown key 'shape'; expected one of location, offset, "
                                    "length, checksum"),
        Problem("external_data[2]", "key 'location' appears again (first at "
                                    "external_data[0])"),
    ]


def test_external_length_must_match() -> None:
    assert only(external({"location": "w.bin", "length": "8"})) == Problem(
        "external_data[1]", "length 8 but the tensor needs 12 bytes")


def test_external_with_base_dir(tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(bytes(16))
    assert_valid(external({"location": "w.bin", "offset": "4"}), base_dir=tmp_path)
    assert_problem(external({"location": "w.bin", "offset": "8"}), "external_data[0]",
                   "has 16 bytes but offset 8 + 12 bytes runs past its end", base_dir=tmp_path)
    assert_problem(external({"location": "none.bin"}), "external_data[0]",
                   "location 'none.bin' is not a file in", base_dir=tmp_path)


def test_external_symlink_out_of_base_dir(tmp_path: Path) -> None:
    base = tmp_path / "model"
    base.mkdir()
    (tmp_path / "secret.bin").write_bytes(bytes(12))
    os.symlink(tmp_path / "secret.bin", base / "w.bin")
    os.symlink(tmp_path, base / "up")
    assert_problem(external({"location": "w.bin"}), "external_data[0]",
                   "outside base_dir", base_dir=base)
    assert_problem(external({"location": "up/secret.bin"}), "external_data[0]",
                   "outside base_dir", base_dir=base)
    assert_valid(external({"location": "w.bin"}))  # without base_dir: text checks only


def test_external_data_problems_pure() -> None:
    assert external_data_problems("t", [("location", "a/b.bin"), ("length", "4")],
                                  nbytes=4) == []


# ----------------------------------------------------------------------------- SparseTensorProto

def sparse(dims: list[int], values: Any, indices: Any, idims: list[int] | None = None,
           ) -> SparseTensorProto:
    s = SparseTensorProto(dims=dims)
    s.values.CopyFrom(tensor(values))
    ind = np.asarray(indices, dtype=np.int64)
    s.indices.CopyFrom(TensorProto(data_type=INT64, dims=idims or list(ind.shape),
                                   int64_data=ind.ravel().tolist()))
    return s


def test_sparse_valid_linear_and_coordinate() -> None:
    assert_valid(sparse([3, 4], [1.0, 2.0], [1, 11]))
    assert_valid(sparse([3, 4], [1.0, 2.0], [[0, 1], [2, 3]]))
    assert_valid(sparse([5], [1.0, 2.0], [[1], [3]]))
    empty = SparseTensorProto(dims=[3])
    empty.values.CopyFrom(TensorProto(data_type=FLOAT, dims=[0]))
    assert_valid(empty)


def test_sparse_values_missing() -> None:
    assert only(SparseTensorProto(dims=[3])) == Problem(
        "values", "values is missing; a sparse tensor needs it")


def test_sparse_values_not_1d() -> None:
    s = sparse([4], [1.0, 2.0], [0, 1])
    s.values.CopyFrom(tensor([[1.0], [2.0]]))
    assert only(s) == Problem("values.dims", "values must be 1-D [NNZ], but dims are [2, 1]")


def test_sparse_indices_missing_with_values() -> None:
    s = SparseTensorProto(dims=[4])
    s.values.CopyFrom(tensor([1.0]))
    assert_problem(s, "indices", "indices is missing but values holds 1 elements")


def test_sparse_indices_int64_only() -> None:
    s = sparse([4], [1.0], [1])
    s.indices.CopyFrom(tensor([1], np.int32))
    assert only(s) == Problem("indices.data_type", "indices must be INT64, not INT32")


def test_sparse_indices_shape() -> None:
    s = sparse([3, 4], [1.0, 2.0], [[0, 1, 0], [2, 3, 0]])
    assert only(s) == Problem("indices.dims", "indices dims [2, 3] must be [NNZ] = [2] or "
                                              "[NNZ, rank] = [2, 2]")


def test_sparse_counts_disagree() -> None:
    assert_problem(sparse([10], [1.0, 2.0], [1, 2, 3]), "indices.dims", "must be [NNZ] = [2]")


def test_sparse_index_outside_dims() -> None:
    assert only(sparse([3, 4], [1.0, 2.0], [1, 12])) == Problem(
        "indices[1]", "index 12 lies outside [0, 12)")
    assert only(sparse([3, 4], [1.0, 2.0], [[0, 1], [1, 4]])) == Problem(
        "indices[1]", "index (1, 4) lies outside dims [3, 4]")
    assert only(sparse([3], [1.0], [-1])).message == "index -1 lies outside [0, 3)"


def test_sparse_indices_ascending_without_duplicates() -> None:
    assert only(sparse([10], [1.0, 2.0, 3.0], [1, 5, 5])) == Problem(
        "indices[2]", "not after indices[1]: indices must be ascending without duplicates")
    assert only(sparse([3, 4], [1.0, 2.0], [[2, 0], [1, 3]])).path == "indices[1]"


def test_sparse_indices_from_raw_data() -> None:
    s = sparse([10], [1.0, 2.0], [1, 2])
    s.indices.ClearField("int64_data")
    s.indices.raw_data = np.array([3, 12], dtype="<i8").tobytes()
    assert only(s) == Problem("indices[1]", "index 12 lies outside [0, 10)")


def test_sparse_index_check_in_chunks_across_boundary() -> None:
    n = (1 << 16) + 10
    idx = np.arange(n, dtype=np.int64)
    assert sparse_index_problems("s", [n], False, idx) == []
    idx[1 << 16] = idx[(1 << 16) - 1]  # a duplicate straddling the chunk boundary
    assert sparse_index_problems("s", [n], False, idx) == [
        Problem(f"s.indices[{1 << 16}]", f"not after indices[{(1 << 16) - 1}]: indices must be "
                                         "ascending without duplicates")]
    idx = np.arange(n, dtype=np.int64)
    coords = np.stack([idx // 7, idx % 7], axis=1).ravel()
    assert len(sparse_index_problems("s", [n, 7], True, coords)) == 0  # lexicographic ok


def test_sparse_values_and_indices_are_tensors_too() -> None:
    s = sparse([4], [1.0], [1])
    s.values.raw_data = b"\0"
    assert_problem(s, "values.raw_data", "raw_data has 1 bytes")


# ----------------------------------------------------------------------------- together

def test_multiple_problems_reported_together() -> None:
    s = SequenceProto(name="s", elem_type=SEQ_SEQUENCE)
    a = s.sequence_values.add(elem_type=SEQ_TENSOR)
    a.tensor_values.add().CopyFrom(TensorProto(data_type=FLOAT, dims=[2, -3]))
    b = s.sequence_values.add(elem_type=SEQ_MAP)
    b.map_values.add().CopyFrom(int_map([1, 1000, 1], key_type=INT8, n_values=2))
    s.optional_values.add()
    with pytest.raises(ValidationError) as info:
        validate_reference(s)
    assert [str(p) for p in info.value.problems] == [
        "optional_values: 1 element here, but elem_type SEQUENCE keeps its elements in "
        "sequence_values",
        "sequence_values[1]: sequence(map(INT8, tensor(FLOAT))) differs from "
        "sequence(tensor(FLOAT)) of the elements before it; the elements of a sequence share "
        "one type all the way down",  # issue 10, P11
        "sequence_values[0].tensor_values[0].dims[1]: -3 is negative; dims must be >= 0",
        "sequence_values[1].map_values[0].keys[1]: 1000 is outside INT8's range [-128, 127]",
        "sequence_values[1].map_values[0].keys[2]: 1 appears again (first at keys[0])",
        "sequence_values[1].map_values[0]: 3 keys but 2 values",
        "optional_values[0].elem_type: elem_type is missing; write UNDEFINED (0) for an "
        "absent value",
    ]
    assert str(info.value).startswith("7 problems:\n  - optional_values: 1 element")


def test_not_a_message() -> None:
    with pytest.raises(TypeError, match="not an ONNX data message"):
        problems_reference(42)  # type: ignore[arg-type]  # deliberately wrong, checks the runtime guard


# ----------------------------------------------------------------------------- depth

def chain(n: int) -> OptionalProto:
    """n nested OptionalProtos, built in place (no recursion)."""
    root = OptionalProto(elem_type=SEQ_OPTIONAL if n > 1 else 0)
    o = root
    for i in range(1, n):
        o = o.optional_value
        o.elem_type = SEQ_OPTIONAL if i < n - 1 else 0
    return root


def test_depth_matches_protobuf_parser() -> None:
    assert_valid(OptionalProto.FromString(chain(101).SerializeToString()))
    deep = chain(102)
    p = only(deep)
    assert p.path == ".".join(["optional_value"] * 101)
    assert p.message.startswith("nested deeper than 100 levels")


def test_depth_cap_settable_and_no_recursion_error() -> None:
    assert only(chain(5), max_depth=3).path == ".".join(["optional_value"] * 4)
    assert_valid(chain(5), max_depth=4)
    very = chain(3000)
    assert only(very).message.startswith("nested deeper than 100")
    assert problems_reference(very, max_depth=5000) == []


# ----------------------------------------------------------------------------- onnx's messages

def test_onnx_messages_accepted_in_place(onnx: Any) -> None:
    from onnx import numpy_helper
    t = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "t")
    s = onnx.SequenceProto(name="s", elem_type=onnx.SequenceProto.TENSOR)
    s.tensor_values.append(t)
    assert_valid(s)
    assert_valid(t)
    s.tensor_values[0].dims[1] = -3
    assert_problem(s, "tensor_values[0].dims[1]", "-3 is negative")
    o = onnx.OptionalProto(name="o", elem_type=onnx.OptionalProto.TENSOR)
    assert_valid(o)
    m = onnx.MapProto(key_type=onnx.TensorProto.INT8, keys=[1])
    m.values.elem_type = 1
    m.values.tensor_values.append(t)
    assert_valid(m)
    unknown = onnx.SequenceProto.FromString(t.SerializeToString())
    assert any("unknown field" in p.message for p in problems_reference(unknown))


def test_onnx_accepts_int8_key_1000_we_refuse(onnx: Any) -> None:
    from onnx import numpy_helper
    m = onnx.MapProto(key_type=onnx.TensorProto.INT8, keys=[1000])
    m.values.elem_type = 1
    m.values.tensor_values.append(numpy_helper.from_array(np.array([1.0], np.float32)))
    assert list(numpy_helper.to_dict(m)) == [1000]  # onnx: an INT8 key of 1000
    with pytest.raises(ValidationError, match=r"keys\[0\]: 1000 is outside INT8's range"):
        validate_reference(m)


def test_onnx_collapses_duplicate_keys_we_refuse(onnx: Any) -> None:
    from onnx import numpy_helper
    m = onnx.MapProto(key_type=onnx.TensorProto.INT64, keys=[5, 5])
    m.values.elem_type = 1
    for v in (1.0, 2.0):
        m.values.tensor_values.append(numpy_helper.from_array(np.array([v], np.float32)))
    assert len(numpy_helper.to_dict(m)) == 1  # onnx: two values, one survives
    with pytest.raises(ValidationError, match=r"keys\[1\]: 5 appears again"):
        validate_reference(m)


def test_onnx_accepts_float_key_type_we_refuse(onnx: Any) -> None:
    from onnx import numpy_helper
    m = onnx.MapProto(key_type=onnx.TensorProto.FLOAT, keys=[5])
    m.values.elem_type = 1
    m.values.tensor_values.append(numpy_helper.from_array(np.array([1.0], np.float32)))
    assert list(numpy_helper.to_dict(m)) == [5]
    with pytest.raises(ValidationError, match="key_type: FLOAT is not a key type"):
        validate_reference(m)


def test_onnx_accepts_mixed_dtypes_in_sequence_we_refuse(onnx: Any) -> None:
    from onnx import numpy_helper
    s = onnx.SequenceProto(elem_type=onnx.SequenceProto.TENSOR)
    s.tensor_values.append(numpy_helper.from_array(np.array([1.0], np.float32)))
    s.tensor_values.append(numpy_helper.from_array(np.array([1], np.int64)))
    assert [a.dtype for a in numpy_helper.to_list(s)] == [np.float32, np.int64]
    with pytest.raises(ValidationError, match=r"tensor_values\[1\]: data type INT64 differs"):
        validate_reference(s)


def test_onnx_to_list_silently_drops_data_under_wrong_field_we_refuse(onnx: Any) -> None:
    from onnx import numpy_helper
    s = onnx.SequenceProto(elem_type=onnx.SequenceProto.TENSOR)
    m = s.map_values.add(key_type=onnx.TensorProto.INT64, keys=[1])
    m.values.elem_type = 1
    m.values.tensor_values.append(numpy_helper.from_array(np.array([1.0], np.float32)))
    assert numpy_helper.to_list(s) == []  # onnx: the map vanishes
    with pytest.raises(ValidationError, match="map_values: 1 element here, but elem_type "
                                              "TENSOR keeps its elements in tensor_values"):
        validate_reference(s)


# ----------------------------------------------------------------------------- property

KINDS = [TensorProto, SparseTensorProto, SequenceProto, OptionalProto, MapProto]


def _fields() -> st.SearchStrategy[bytes]:
    """Plausible protobuf fields with small numbers, so parses often succeed."""
    number = st.integers(1, 16)
    varint = st.builds(lambda n, v: _varint(n << 3) + _varint(v), number,
                       st.integers(0, (1 << 64) - 1))
    length = st.builds(lambda n, b: _varint(n << 3 | 2) + _varint(len(b)) + b, number,
                       st.binary(max_size=24))
    fixed = st.builds(lambda n, v: _varint(n << 3 | 5) + struct.pack("<I", v), number,
                      st.integers(0, (1 << 32) - 1))
    return st.one_of(varint, length, fixed)


def _varint(v: int) -> bytes:
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(kind=st.sampled_from(KINDS),
       data=st.one_of(st.binary(max_size=64), st.lists(_fields(), max_size=8).map(b"".join)))
def test_validate_random_bytes_raises_only_validation_error(kind: Any, data: bytes) -> None:
    try:
        message = kind.FromString(data)
    except Exception:
        return  # not a message at all: load's job, not validate's
    found = problems_reference(message)
    try:
        validate_reference(message)
    except ValidationError as e:
        assert found and e.problems == found
    else:
        assert found == []
