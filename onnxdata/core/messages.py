"""The generated message classes, and the names users give their kinds."""

from __future__ import annotations

import enum
from typing import Any, Final, Literal, TypeAlias

from google.protobuf.descriptor import FieldDescriptor

from onnxdata.generated.onnx_data_pb2 import MapProto, OptionalProto, SequenceProto
from onnxdata.generated.onnx_ml_pb2 import SparseTensorProto, TensorProto

__all__ = [
    "ELEM_FIELDS",
    "ELEM_TYPE_OF_KIND",
    "EXTERNAL",
    "ElemType",
    "KIND_OF_ELEM_TYPE",
    "KIND_OF_MESSAGE",
    "KIND_NAMES",
    "MESSAGE_CLASSES",
    "MESSAGE_OF_KIND",
    "OPTIONAL_FIELDS",
    "Kind",
    "KindName",
    "MessageName",
    "MapProto",
    "Message",
    "OptionalProto",
    "SequenceProto",
    "SparseTensorProto",
    "TensorProto",
    "kind_class",
    "elem_type_name",
    "is_repeated",
    "kind_name",
    "kind_word",
]

#: TensorProto.data_location when a tensor's data is in an external file.
EXTERNAL: Final = int(TensorProto.EXTERNAL)

Message: TypeAlias = TensorProto | SparseTensorProto | SequenceProto | OptionalProto | MapProto
KindName = Literal["tensor", "sparse_tensor", "sequence", "optional", "map"]
MessageName = Literal["TensorProto", "SparseTensorProto", "SequenceProto", "OptionalProto",
                      "MapProto"]
#: A kind as users give it: "sequence", "SequenceProto" or the class (ours; onnx's
#: classes are accepted at run time too, by their descriptor's name).
Kind: TypeAlias = (
    KindName
    | MessageName
    | type[TensorProto]
    | type[SparseTensorProto]
    | type[SequenceProto]
    | type[OptionalProto]
    | type[MapProto]
)

MESSAGE_CLASSES: dict[str, type[Message]] = {
    "tensor": TensorProto,
    "sparse_tensor": SparseTensorProto,
    "sequence": SequenceProto,
    "optional": OptionalProto,
    "map": MapProto,
}
KIND_NAMES: tuple[KindName, ...] = ("tensor", "sparse_tensor", "sequence", "optional", "map")


def kind_class(kind: Kind | str | type[Message]) -> type[Message]:
    """Our class for a kind given by name ("sequence" or "SequenceProto") or class
    (ours or onnx's); ValueError names the choices."""
    return MESSAGE_CLASSES[kind_name(kind)]


def is_repeated(fd: FieldDescriptor) -> bool:
    """Whether a field is repeated, on every protobuf we support.

    protobuf 6 added ``is_repeated`` and 7 dropped ``label``; 4.25 has only ``label``.
    """
    flag = getattr(fd, "is_repeated", None)
    if flag is not None:
        return bool(flag)
    old: Any = fd
    return bool(old.label == FieldDescriptor.LABEL_REPEATED)


#: The kind of each message name.
KIND_OF_MESSAGE: Final[dict[str, KindName]] = {
    "TensorProto": "tensor",
    "SparseTensorProto": "sparse_tensor",
    "SequenceProto": "sequence",
    "OptionalProto": "optional",
    "MapProto": "map",
}
#: The message name of each kind.
MESSAGE_OF_KIND: Final[dict[str, str]] = {k: m for m, k in KIND_OF_MESSAGE.items()}


class ElemType(enum.IntEnum):
    """The elem_type codes of SequenceProto and OptionalProto: their ``DataType`` enum,
    the same names and numbers in both (tests/core/test_elem_type.py checks them against
    the generated descriptors). An int, so a message's ``elem_type`` compares equal to it."""

    UNDEFINED = 0
    TENSOR = 1
    SPARSE_TENSOR = 2
    SEQUENCE = 3
    MAP = 4
    OPTIONAL = 5


#: The kind of each elem_type code that holds an element (every one but UNDEFINED).
KIND_OF_ELEM_TYPE: Final[dict[int, KindName]] = {
    ElemType.TENSOR: "tensor",
    ElemType.SPARSE_TENSOR: "sparse_tensor",
    ElemType.SEQUENCE: "sequence",
    ElemType.MAP: "map",
    ElemType.OPTIONAL: "optional",
}
ELEM_TYPE_OF_KIND: Final[dict[KindName, ElemType]] = {
    k: ElemType(c) for c, k in KIND_OF_ELEM_TYPE.items()}
#: The SequenceProto field holding the elements of each elem_type (``map_values``).
ELEM_FIELDS: Final[dict[int, str]] = {c: f"{k}_values" for c, k in KIND_OF_ELEM_TYPE.items()}
#: The OptionalProto field holding the value of each elem_type (``map_value``).
OPTIONAL_FIELDS: Final[dict[int, str]] = {c: f"{k}_value" for c, k in KIND_OF_ELEM_TYPE.items()}


def elem_type_name(code: int) -> str:
    """An elem_type code's name ("TENSOR"), or its number when it is none of them."""
    try:
        return ElemType(code).name
    except ValueError:
        return str(code)


def kind_name(kind: Kind | str | Message | type[Message]) -> KindName:
    """The kind's name, from a kind or message name, a class, or a message of ours or onnx's."""
    if isinstance(kind, str):
        if kind in MESSAGE_CLASSES:
            return kind  # type: ignore[return-value]  # a KindName, checked just above
        if kind in KIND_OF_MESSAGE:
            return KIND_OF_MESSAGE[kind]
        raise ValueError(f"unknown kind {kind!r}: expected one of {', '.join(KIND_NAMES)} "
                         f"(or {', '.join(KIND_OF_MESSAGE)}, or a message class)")
    descriptor = getattr(kind, "DESCRIPTOR", None)
    name = getattr(descriptor, "name", None)
    if name not in KIND_OF_MESSAGE:
        raise ValueError(f"unknown kind {kind!r}: expected one of {', '.join(KIND_NAMES)}, "
                         "their message names (SequenceProto, ...) or classes")
    return KIND_OF_MESSAGE[name]


#: The short words the command line takes too, as ONNX's type strings spell them
#: (``seq(map(...))``, ``opt(...)``), and ``sparse``.
_SHORT_KINDS: dict[str, KindName] = {"seq": "sequence", "opt": "optional",
                                     "sparse": "sparse_tensor"}


def kind_word(text: str) -> KindName:
    """A kind as a person types it on the command line: "seq", "opt", "map", "tensor",
    "sparse", the kind names or the message names, in any case; ValueError names them."""
    low = text.strip().lower()
    if low in _SHORT_KINDS:
        return _SHORT_KINDS[low]
    for name in KIND_NAMES:
        if low == name:
            return name
    for message, kind in KIND_OF_MESSAGE.items():
        if low == message.lower():
            return kind
    raise ValueError(f"unknown kind {text!r}: expected seq, opt, map, tensor or sparse "
                     f"(or {', '.join(KIND_NAMES)}, or {', '.join(KIND_OF_MESSAGE)})")
