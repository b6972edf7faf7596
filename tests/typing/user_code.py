"""Code as a user writes it; `mypy --strict` must accept it (tests/package/test_typing.py)."""

from __future__ import annotations

import onnxdata
from onnxdata import MapProto, OptionalProto, SequenceProto, TensorProto


def build_sequence(name: str) -> SequenceProto:
    seq = SequenceProto(name=name, elem_type=SequenceProto.TENSOR)
    tensor: TensorProto = seq.tensor_values.add()
    tensor.dims.extend([2, 3])
    tensor.data_type = TensorProto.FLOAT
    tensor.raw_data = bytes(24)
    return seq


def wrap(seq: SequenceProto) -> OptionalProto:
    opt = OptionalProto(name=seq.name, elem_type=OptionalProto.SEQUENCE)
    opt.sequence_value.CopyFrom(seq)
    return opt


def keys_of(m: MapProto) -> list[int]:
    return list(m.keys)


def first_dims(path: str) -> list[int]:
    seq = onnxdata.load(path, SequenceProto)
    kind: int = seq.elem_type
    assert kind == SequenceProto.TENSOR
    return list(seq.tensor_values[0].dims)


def round_trip(path: str) -> None:
    onnxdata.save(wrap(build_sequence("x")), path)
