"""``to_numpy`` of a message: the wire engine's walk of its bytes, for the containers.

``convert.values.to_numpy`` reads a message through protobuf's objects, one Python call per
field: a SequenceProto of 44,000 one-key maps took 3.7 s. Serializing it takes 20 ms,
and the engine reads those bytes a layout at a time (``layout_values``), so a sequence,
map or optional is read here that way. ``convert.values.to_numpy`` stays the reference: it
reads tensors, and every message whose walk finds a problem or stops (over the densify
budget, bad bytes, anything raised), so each error is the very one it gives. The value
is the one it gives too, flags included: ``raw_data`` and external data arrays
read-only, decoded ones writable (tests/io/test_message_values.py checks the two agree).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any, Final, overload

import numpy as np

from onnxdata.convert import values as convert
from onnxdata.convert.common import Array, StrPath
from onnxdata.convert.sparse import densify
from onnxdata.core.budget import densify_budget, get_densify_limit
from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.messages import (
    KIND_OF_MESSAGE,
    MapProto,
    SequenceProto,
    SparseTensorProto,
    TensorProto,
)
from onnxdata.core.strings import Strings, convert_strings
from onnxdata.engine.engine import Deferred, Engine
from onnxdata.engine.tensor import shape_errors
from onnxdata.errors import ValidationError, no_memory_error
from onnxdata.io.gc_pause import gc_paused
from onnxdata.rules.common import MAX_PROBLEMS
from onnxdata.wire.source import Source

__all__ = ["CONTAINERS", "small_elements", "to_numpy", "walked_kind"]

#: The kinds read through their bytes: the messages holding other values.
CONTAINERS: Final = ("sequence", "map", "optional")
_NOT_READ: Final = object()
_TYPED_WIDTHS: Final = (("float_data", 4), ("int32_data", 4), ("int64_data", 8),
                        ("double_data", 8), ("uint64_data", 8), ("string_data", 1))
#: Bytes per element above which a container is read by the reference (``small_elements``).
_SMALL_ELEMENT: Final = 4096


@overload
def to_numpy(message: TensorProto, *, base_dir: StrPath | None = None,
             strings: Strings = "bytes") -> Array: ...
@overload
def to_numpy(message: SparseTensorProto, *, base_dir: StrPath | None = None,
             strings: Strings = "bytes") -> Array: ...
@overload
def to_numpy(message: SequenceProto, *, base_dir: StrPath | None = None,
             strings: Strings = "bytes") -> list[Any]: ...
@overload
def to_numpy(message: MapProto, *, base_dir: StrPath | None = None,
             strings: Strings = "bytes") -> dict[Any, Any]: ...
@overload
def to_numpy(message: object, *, base_dir: StrPath | None = None,
             strings: Strings = "bytes") -> Any: ...
@no_memory_error("message")
@gc_paused()  # (the value: a list or dict per element, and no cycle among them)
def to_numpy(message: object, *, base_dir: StrPath | None = None,
             strings: Strings = "bytes") -> Any:
    """The numpy value of a message (see the ``onnxdata.convert.values`` docstring for the
    mapping).

    ``base_dir`` is the folder external tensor data is read from. Any fault
    raises ``ValidationError`` with every problem ``validate`` finds.
    ``strings="str"`` gives STRING elements and string map keys as ``str``
    (UTF-8; what ONNX Runtime takes) instead of ``bytes``. A sequence, map or
    optional is read through its bytes by the wire engine; every value and error
    is ``convert.values.to_numpy``'s.
    """
    kind = walked_kind(message)
    if kind is not None:
        value = _engine_value(message, kind, base_dir)
        if isinstance(value, ValidationError):
            raise value
        if value is not _NOT_READ:
            return convert_strings(value, strings)
    return convert.to_numpy_reference(message, base_dir=base_dir, strings=strings)


def walked_kind(message: object) -> str | None:
    """The kind of ``message`` when the engine's walk of its bytes is what reads it: a
    container (CONTAINERS) of small elements (``small_elements``); None otherwise."""
    name = getattr(getattr(message, "DESCRIPTOR", None), "name", "")
    kind = KIND_OF_MESSAGE.get(name) if isinstance(name, str) else None
    return kind if kind in CONTAINERS and small_elements(message, kind) else None


def small_elements(message: Any, kind: str) -> bool:
    """Whether ``message`` is worth the engine's walk: not a sequence of big tensors (64
    of 1 MiB), which protobuf has parsed already, and which serializing again (or even
    ByteSize, 0.17 s for 64 MiB) would cost more than the reference's reading. The first
    tensor's payload stands for all: a layout is one size."""
    if kind != "sequence" or not len(message.tensor_values):
        return True
    first = message.tensor_values[0]
    size = len(first.raw_data) + sum(len(getattr(first, f)) * width
                                     for f, width in _TYPED_WIDTHS)
    return size <= _SMALL_ELEMENT


def _engine_value(message: Any, kind: str, base_dir: StrPath | None) -> Any:
    """The value the engine reads from ``message``'s bytes, the ValidationError validate
    raises where the walk finds problems (the reference reader's error too: it raises
    validate's), or _NOT_READ."""
    try:
        data = message.SerializeToString()
        folder = Path(base_dir) if base_dir is not None else None
        # every problem, as validate finds them (message_checks): one walk, not a second
        engine = Engine(Source.of_buffer(data), base_dir=folder,
                        max_depth=MAX_DEPTH, values=True, max_problems=MAX_PROBLEMS)
        engine.fixed_copies = True  # float_data copied, decoded arrays left writable
        with densify_budget(get_densify_limit()):
            value = engine.run(kind).value
            if engine.problems:
                return ValidationError(engine.problems.result())
            if engine.deferred:
                value = _densified(value)
    except MemoryError:
        raise
    except Exception:  # the reference reads it again and says what is wrong
        return _NOT_READ
    return value


def _densified(value: Any) -> Any:
    """``value`` with its sparse tensors densified and writable, as ``convert.values.to_numpy``
    densifies them: each ``engine.Deferred``, and the dense arrays built a layout at a time
    (``layout_values.dense_rows``, read-only as ``read`` takes them). Every other array the
    engine left as made (``fixed_copies``); views of the bytes stay read-only."""
    if isinstance(value, Deferred):
        with shape_errors(value.path):
            return densify(value.parts, value.path, spent=True, checked=True)
    if isinstance(value, np.ndarray):
        if not value.flags.writeable:
            with contextlib.suppress(ValueError):  # a view of read-only bytes stays so
                value.flags.writeable = True
        return value
    if isinstance(value, list):
        return [_densified(v) for v in value]
    if isinstance(value, dict):
        return {k: _densified(v) for k, v in value.items()}
    return value
