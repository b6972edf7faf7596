"""Many tensors of one layout, checked in one pass over their bytes.

A sequence of 100,000 small tensors (or a map's 1,000,000 scalar values) costs
a Python loop of protobuf calls per tensor to check one by one, several times
what onnx's C++ checker spends. Such tensors usually differ only in their
``raw_data`` bytes. :func:`uniform_raw_tensors` proves that in one vectorised
pass: the sequence is serialized once (one C call), the first tensor is
checked by the rules (``quick_tensor``), and every other tensor's bytes before
its raw payload are compared with the first's. Equal bytes are equal fields
(same dims, data type, name, raw_data length, nothing else), so every tensor
has the first one's verdict.

Why equal prefixes prove it: protobuf writes a message's known fields in
field-number order and its unknown fields last. The first tensor has no field
after ``raw_data`` (no doc_string, no unknown fields), so its serialization is
``prefix + payload``. Every element of the serialized sequence is the field
tag and length, then its tensor. When the sequence's bytes are its header
then ``n`` records of the first record's length, and record ``k`` starts with
the first record's prefix, record ``k`` (by induction from the first) is a
tensor field whose message is that prefix, including the raw_data tag and
length, followed by exactly that many payload bytes: nothing else fits.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

from onnxdata.wire import encode_varint

__all__ = ["MIN_TENSORS", "uniform_raw_arrays", "uniform_raw_tensors"]

#: Fewer tensors than this are cheaper to check one by one.
MIN_TENSORS: Final = 32
#: The largest raw payload per tensor taken this way: the sequence is serialized once,
#: which copies every payload; larger tensors are few, and cheap to check one by one.
MAX_PAYLOAD: Final = 1 << 16
#: The most bytes of payload in all taken this way: protobuf serializes a large message
#: slower than the tensors' raw_data can be read one by one (40 MiB: 7x slower).
MAX_BYTES: Final = 16 << 20
_TENSOR_VALUES_TAG: Final = b"\x1a"  # SequenceProto.tensor_values: field 3, wire type 2


def uniform_raw_tensors(seq: Any, tensors: Any, first_ok: Any) -> bool:
    """Whether every tensor of ``seq`` (its ``tensor_values``, given as ``tensors``) has
    the same fields as the first, raw_data's bytes aside.

    ``first_ok`` is what ``quick_tensor`` said of the first tensor (None: unsure),
    so this is True only when every tensor is valid and of one data type and
    dims. False says nothing: check them one by one. ``seq`` may be ours or
    onnx's SequenceProto.
    """
    return _layout(seq, tensors, first_ok) is not None


def uniform_raw_arrays(seq: Any, tensors: Any, first_ok: Any,
                       formats: dict[int, tuple[np.dtype[Any], int]]) -> list[Any] | None:
    """The tensors' arrays when :func:`uniform_raw_tensors` holds: read-only views of one
    serialization of the sequence, made by one strided view; None otherwise, or when
    the data type is not in ``formats`` (data type -> (dtype, itemsize)) or the dims
    hold a zero."""
    layout = _layout(seq, tensors, first_ok)
    if layout is None:
        return None
    code, dims = first_ok[0], first_ok[1]
    fmt = formats.get(code)
    if fmt is None or (dims and min(dims) <= 0) or len(dims) > 32:
        return None
    data, at, size, payload = layout
    count = payload // fmt[1]
    rows = np.ndarray((len(tensors), count), dtype=fmt[0], buffer=data, offset=at,
                      strides=(size, fmt[1]))
    if not dims:  # scalars: 0-d views, as one tensor's to_numpy gives
        flat = rows.reshape(-1)
        return [flat[i, ...] for i in range(len(tensors))]
    return list(rows.reshape((len(tensors), *dims)))


def _layout(seq: Any, tensors: Any, first_ok: Any) -> tuple[bytes, int, int, int] | None:
    """(the sequence's bytes, where the first payload starts, the size of each element's
    record, the payload's size) when every tensor is the first but for its payload."""
    n = len(tensors)
    if n < MIN_TENSORS or first_ok is None:
        return None
    raw = first_ok[2]
    if raw is None or len(raw) > MAX_PAYLOAD or n * len(raw) > MAX_BYTES:
        return None
    first = tensors[0]
    if first.HasField("doc_string"):
        return None  # a field after raw_data: the payload would not end the bytes
    body = first.SerializeToString()
    if not body.endswith(raw):
        return None
    record = _TENSOR_VALUES_TAG + encode_varint(len(body)) + body
    size = len(record)
    head = type(seq)()
    if seq.HasField("name"):
        head.name = seq.name
    if seq.HasField("elem_type"):
        head.elem_type = seq.elem_type
    header = head.SerializeToString()
    data = seq.SerializeToString()
    if len(data) != len(header) + n * size or not data.startswith(header) or \
            data[len(header):len(header) + size] != record:
        return None  # other elements, unknown fields, or tensors of other lengths
    prefix = size - len(raw)
    rows = np.frombuffer(data, np.uint8, n * size, len(header)).reshape(n, size)[:, :prefix]
    if not bool((rows == rows[0]).all()):
        return None
    return data, len(header) + prefix, size, len(raw)
