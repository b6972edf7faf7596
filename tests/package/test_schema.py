"""The vendored schema is ONNX 1.23.2's, and our renamed descriptors still equal onnx's."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import descriptor_pb2

from onnxdata.generated import onnx_data_pb2, onnx_ml_pb2

ROOT = Path(__file__).resolve().parents[2]


def test_vendored_files_match_the_recorded_sha256() -> None:
    readme = (ROOT / "proto" / "README.md").read_text()
    recorded = dict(re.findall(r"\| `([\w-]+\.proto)` \| `([0-9a-f]{64})` \|", readme))
    assert set(recorded) == {"onnx-ml.proto", "onnx-data.proto"}
    for name, digest in recorded.items():
        assert hashlib.sha256((ROOT / "proto" / name).read_bytes()).hexdigest() == digest, name


def test_our_descriptors_use_our_own_package_and_paths() -> None:
    assert onnx_ml_pb2.DESCRIPTOR.name == "onnxdata/generated/onnx-ml.proto"
    assert onnx_data_pb2.DESCRIPTOR.name == "onnxdata/generated/onnx-data.proto"
    assert onnx_ml_pb2.DESCRIPTOR.package == "onnxdata"
    assert onnx_ml_pb2.TensorProto.DESCRIPTOR.full_name == "onnxdata.TensorProto"
    assert onnx_data_pb2.SequenceProto.DESCRIPTOR.full_name == "onnxdata.SequenceProto"


def _file_proto(desc: Any) -> descriptor_pb2.FileDescriptorProto:
    fdp = descriptor_pb2.FileDescriptorProto()
    desc.CopyToProto(fdp)
    return fdp


def _normalise(fdp: descriptor_pb2.FileDescriptorProto) -> descriptor_pb2.FileDescriptorProto:
    """Undo the rename (package and paths) so only real schema differences remain."""
    text = fdp.SerializeToString()
    out = descriptor_pb2.FileDescriptorProto.FromString(text)
    out.name = out.name.replace("onnxdata/generated/", "onnx/")
    out.package = "onnx"
    for i, dep in enumerate(out.dependency):
        out.dependency[i] = dep.replace("onnxdata/generated/", "onnx/")

    def fix(msg: descriptor_pb2.DescriptorProto) -> None:
        for field in msg.field:
            if field.type_name.startswith(".onnxdata."):
                field.type_name = ".onnx." + field.type_name[len(".onnxdata."):]
        for nested in msg.nested_type:
            fix(nested)

    for msg in out.message_type:
        fix(msg)
    return out


def _walk(ours: descriptor_pb2.DescriptorProto, theirs: descriptor_pb2.DescriptorProto,
          path: str, diffs: list[str]) -> None:
    our_fields = {f.number: f for f in ours.field}
    their_fields = {f.number: f for f in theirs.field}
    for number in sorted(set(our_fields) | set(their_fields)):
        a, b = our_fields.get(number), their_fields.get(number)
        if a is None or b is None:
            diffs.append(f"{path}: field {number} only in {'onnx' if a is None else 'ours'}")
            continue
        for attr in ("name", "type", "label", "type_name", "default_value", "json_name"):
            if getattr(a, attr) != getattr(b, attr):
                ours_v, theirs_v = getattr(a, attr), getattr(b, attr)
                diffs.append(f"{path}.{a.name}.{attr}: {ours_v!r} != {theirs_v!r}")
        if a.options.SerializeToString() != b.options.SerializeToString():
            diffs.append(f"{path}.{a.name}: options differ")
    _enums(ours.enum_type, theirs.enum_type, path, diffs)
    our_nested = {m.name: m for m in ours.nested_type}
    their_nested = {m.name: m for m in theirs.nested_type}
    if set(our_nested) != set(their_nested):
        diffs.append(f"{path}: nested messages {sorted(our_nested)} != {sorted(their_nested)}")
    for name in set(our_nested) & set(their_nested):
        _walk(our_nested[name], their_nested[name], f"{path}.{name}", diffs)


def _enums(ours: Any, theirs: Any, path: str, diffs: list[str]) -> None:
    a = {e.name: [(v.name, v.number) for v in e.value] for e in ours}
    b = {e.name: [(v.name, v.number) for v in e.value] for e in theirs}
    if a != b:
        diffs.append(f"{path}: enums differ: {a} != {b}")


@pytest.mark.parametrize("ours, theirs_name", [
    (onnx_ml_pb2.DESCRIPTOR, "onnx.onnx_ml_pb2"),
    (onnx_data_pb2.DESCRIPTOR, "onnx.onnx_data_pb2"),
])
def test_descriptors_equal_onnx_field_by_field(onnx: Any, ours: Any, theirs_name: str) -> None:
    import importlib

    theirs = importlib.import_module(theirs_name).DESCRIPTOR
    a, b = _normalise(_file_proto(ours)), _file_proto(theirs)
    assert a.name == b.name and a.package == b.package
    assert list(a.dependency) == list(b.dependency)
    our_msgs = {m.name: m for m in a.message_type}
    their_msgs = {m.name: m for m in b.message_type}
    assert set(our_msgs) == set(their_msgs)
    diffs: list[str] = []
    for name in our_msgs:
        _walk(our_msgs[name], their_msgs[name], name, diffs)
    _enums(a.enum_type, b.enum_type, "<file>", diffs)
    assert diffs == []
    # Belt and braces: once renamed back, the whole file descriptors are identical.
    assert a.SerializeToString(deterministic=True) == b.SerializeToString(deterministic=True)


def test_the_comparison_sees_a_difference(onnx: Any) -> None:
    """The field-by-field walk is not vacuous: a changed field number is reported."""
    a = _normalise(_file_proto(onnx_data_pb2.DESCRIPTOR))
    b = _file_proto(onnx.onnx_data_pb2.DESCRIPTOR)
    seq = next(m for m in a.message_type if m.name == "SequenceProto")
    seq.field[1].number = 99
    diffs: list[str] = []
    _walk(seq, next(m for m in b.message_type if m.name == "SequenceProto"), "SequenceProto", diffs)
    assert any("field 99 only in ours" in d for d in diffs)


def test_the_walk_and_the_rules_read_the_one_schema() -> None:
    """The walk's schemas and the wire rule's are made from the descriptors (schema.py):
    every field of every message, by number, with an optional's fields a sequence's."""
    from onnxdata.core.messages import MESSAGE_CLASSES
    from onnxdata.rules.wire import wire_field_problems
    from onnxdata.wire import walk
    from onnxdata.wire.schema import LAST, MANY, SCALAR, VARINTS, message_schema, walk_schema

    for cls in MESSAGE_CLASSES.values():
        assert set(message_schema(cls.DESCRIPTOR.name)) == {f.number for f in
                                                             cls.DESCRIPTOR.fields}
    assert walk.TENSOR[1] == ("dims", VARINTS) and walk.TENSOR[9] == ("raw_data", LAST)
    assert walk.TENSOR[3] == ("segment", MANY)  # a message: every occurrence, to merge
    assert walk.SEGMENT == {1: ("begin", SCALAR), 2: ("end", SCALAR)}
    singular = {f"{k}_value": k for k in ("tensor", "sparse_tensor", "sequence", "map",
                                          "optional")}
    assert walk_schema("OptionalProto", singular) == walk.OPTIONAL == walk.SEQUENCE
    assert wire_field_problems("", "TensorProto", [(1, 2), (1, 0), (2, 2), (99, 0)]) != []
    assert [p.path for p in wire_field_problems("t", "Segment", [(1, 2)])] == ["t.begin"]
