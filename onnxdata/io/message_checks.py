"""``problems`` and ``validate`` of a message: the wire engine's walk of its bytes, for the
containers.

``rules.validation.problems_reference`` walks protobuf's objects, a Python call per field or so: a
sequence of 100,000 small tensors took 0.19 s. A sequence, map or optional of small
elements is serialized here (one C call) and its bytes checked by the engine, which
takes them a layout at a time and gives the same problems in the same order (the
engine's contract, checked by tests/io/test_message_checks.py).
``rules.validation.problems_reference`` stays the reference: it checks tensors,
containers of big tensors, and any message the engine's walk cannot take.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.messages import Message
from onnxdata.engine.engine import Engine
from onnxdata.errors import Problem, ValidationError
from onnxdata.io.message_values import walked_kind
from onnxdata.rules import validation
from onnxdata.rules.common import MAX_PROBLEMS, PathLike
from onnxdata.wire.source import Source

__all__ = ["problems", "validate"]


def problems(message: Message, *, base_dir: PathLike | None = None,
             max_depth: int = MAX_DEPTH,
             max_problems: int = MAX_PROBLEMS) -> list[Problem]:
    """Every problem of ``message`` (ours or onnx's), in document order: see
    ``onnxdata.rules.validation.problems_reference``, whose result this is."""
    kind = walked_kind(message)
    if kind is not None:
        found = _engine_problems(message, kind, base_dir, max_depth, max_problems)
        if found is not None:
            return found
    return validation.problems_reference(message, base_dir=base_dir, max_depth=max_depth,
                               max_problems=max_problems)


def validate(message: Message, *, base_dir: PathLike | None = None,
             max_depth: int = MAX_DEPTH, max_problems: int = MAX_PROBLEMS) -> None:
    """Return None if ``message`` is valid, else raise ValidationError listing every
    problem (see ``onnxdata.rules.validation.validate_reference``)."""
    found = problems(message, base_dir=base_dir, max_depth=max_depth,
                     max_problems=max_problems)
    if found:
        raise ValidationError(found)


def _engine_problems(message: Any, kind: str, base_dir: PathLike | None, max_depth: int,
                     max_problems: int) -> list[Problem] | None:
    """The engine's problems of ``message``'s bytes, or None where its walk stops."""
    if max_depth > MAX_DEPTH or max_problems < 1:
        return None  # (past the engine's own bounds: the reference says what it finds)
    try:
        data = message.SerializeToString()
        folder = Path(base_dir) if base_dir is not None else None
        engine = Engine(Source.of_buffer(data), base_dir=folder, max_depth=max_depth,
                        values=False, max_problems=max_problems)
        engine.run(kind)
    except MemoryError:
        raise
    except Exception:  # the reference walks it again and says what is wrong
        return None
    return engine.problems.result()
