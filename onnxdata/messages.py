"""The generated message classes, and the names users give their kinds."""

from __future__ import annotations

from typing import Literal, TypeAlias, Union

from onnxdata.generated.onnx_data_pb2 import MapProto, OptionalProto, SequenceProto
from onnxdata.generated.onnx_ml_pb2 import SparseTensorProto, TensorProto

__all__ = [
    "KIND_NAMES",
    "MESSAGE_CLASSES",
    "Kind",
    "KindName",
    "MapProto",
    "Message",
    "OptionalProto",
    "SequenceProto",
    "SparseTensorProto",
    "TensorProto",
    "kind_class",
    "kind_name",
]

Message: TypeAlias = Union[TensorProto, SparseTensorProto, SequenceProto, OptionalProto, MapProto]
KindName = Literal["tensor", "sparse_tensor", "sequence", "optional", "map"]
Kind: TypeAlias = Union[
    KindName,
    type[TensorProto], type[SparseTensorProto], type[SequenceProto],
    type[OptionalProto], type[MapProto],
]

MESSAGE_CLASSES: dict[str, type[Message]] = {
    "tensor": TensorProto,
    "sparse_tensor": SparseTensorProto,
    "sequence": SequenceProto,
    "optional": OptionalProto,
    "map": MapProto,
}
KIND_NAMES: tuple[KindName, ...] = ("tensor", "sparse_tensor", "sequence", "optional", "map")


def kind_class(kind: Kind | str) -> type[Message]:
    """The class for a kind given by name or class; ValueError names the choices."""
    if isinstance(kind, str):
        try:
            return MESSAGE_CLASSES[kind]
        except KeyError:
            raise ValueError(
                f"unknown kind {kind!r}: expected one of {', '.join(KIND_NAMES)}"
            ) from None
    if kind in MESSAGE_CLASSES.values():
        return kind
    raise ValueError(f"unknown kind {kind!r}: expected one of {', '.join(KIND_NAMES)} or their classes")


def kind_name(kind: Kind | str | Message) -> KindName:
    """The kind's name, from a name, a class, or a message of ours or onnx's."""
    if isinstance(kind, str):
        kind_class(kind)
        return kind  # type: ignore[return-value]
    cls = kind if isinstance(kind, type) else type(kind)
    full = cls.DESCRIPTOR.full_name.rsplit(".", 1)[-1]  # type: ignore[union-attr]
    for name, ours in MESSAGE_CLASSES.items():
        if ours.DESCRIPTOR.name == full:
            return name  # type: ignore[return-value]
    raise ValueError(f"not an ONNX data message: {cls.__name__}")
