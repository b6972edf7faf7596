"""One memory budget per call for densifying sparse tensors (issue 10, P8).

A sparse tensor of a few bytes can claim dims of a gigabyte, and a message
of a hundred bytes can hold several of them. The densify limit
(``onnxdata.set_densify_limit``, default 1 GiB) is therefore a budget for the
whole call, shared by every sparse tensor in it and by every tensor's external
data (a 2 KB file of 64 tensors can each name the whole of one 256 MiB file;
``external.read_external`` spends from it before it allocates):

- ``to_numpy`` adds up what every sparse tensor of the message needs
  (:func:`sparse_need`) before it densifies any, so an over-budget message is
  refused before anything is allocated;
- a reader that meets sparse tensors as it walks (``read``) opens a budget
  with :func:`densify_budget`, and ``densify`` spends from it
  (:func:`spend`), so the call as a whole stays under the limit.

STRING values count 8 bytes per element (one pointer of the object array),
whatever their claimed count. Going over raises ValidationError naming the
path and the bytes needed.
"""

from __future__ import annotations

import math
import threading
from contextvars import ContextVar, Token
from typing import Any

from onnxdata.core.dtypes import DATA_TYPES
from onnxdata.core.messages import ELEM_FIELDS, OPTIONAL_FIELDS, ElemType
from onnxdata.core.paths import join_path
from onnxdata.errors import Problem, ValidationError

__all__ = ["budget_mark", "budget_reset", "close_budget", "densify_budget",
           "get_densify_limit", "open_budget",
           "set_densify_limit", "spend", "sparse_need"]


# ---------------------------------------------------------------- the densify cap

_limit_lock = threading.Lock()
_densify_limit = 1 << 30


def get_densify_limit() -> int:
    """The most bytes one ``to_numpy`` or ``read`` call allocates to densify sparse
    tensors, all of them together (the budget below)."""
    return _densify_limit


def set_densify_limit(nbytes: int) -> int:
    """Set the densify cap in bytes (default 1 GiB); returns the previous cap."""
    global _densify_limit
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes < 0:
        raise ValueError(f"the densify limit must be an int >= 0, not {nbytes!r}")
    with _limit_lock:
        previous, _densify_limit = _densify_limit, nbytes
    return previous


#: What is left of the open budget (a one-item list, spent in place), or None.
_left: ContextVar[list[int] | None] = ContextVar("onnxdata_densify_budget", default=None)

#: The fields that may hold a sparse tensor, at any depth: every one but a tensor's.
_SEQUENCE_FIELDS = tuple(f for c, f in ELEM_FIELDS.items() if c != ElemType.TENSOR)
_OPTIONAL_FIELDS = tuple(f for c, f in OPTIONAL_FIELDS.items() if c != ElemType.TENSOR)
_POINTER = 8


class densify_budget:  # (lower case: used as a function, ``with densify_budget(n):``)
    """Share one budget of ``limit`` bytes among the densifies in the ``with`` block.

    A block inside another shares the outer block's budget. (A class, not a
    generator: ``read`` of a small file pays for its entry every call.)
    """

    __slots__ = ("limit", "tokens")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        # per entry, innermost last: the budget it opened, or None (it shared an outer one),
        # so one object entered again inside itself closes only what each entry opened
        self.tokens: list[Token[list[int] | None] | None] = []

    def __enter__(self) -> None:
        self.tokens.append(_left.set([self.limit]) if _left.get() is None else None)

    def __exit__(self, *exc: object) -> None:
        token = self.tokens.pop()
        if token is not None:
            _left.reset(token)


def open_budget(limit: int) -> Token[list[int] | None] | None:
    """``densify_budget(limit)``'s entry as one call, for ``close_budget`` to end (``read``
    of a small file paid 0.3 us a call for the with block's object)."""
    return _left.set([limit]) if _left.get() is None else None


def close_budget(token: Token[list[int] | None] | None) -> None:
    """End the budget ``open_budget`` gave ``token`` for (None: it shared an outer one)."""
    if token is not None:
        _left.reset(token)


def spend(nbytes: int, limit: int, path: str, what: str, doing: str = "densifying") -> None:
    """Take ``nbytes`` from the open budget (or check them against ``limit`` with none open).
    ``doing`` names the spending in the error: densifying, or reading external data."""
    left = _left.get()
    available = limit if left is None else left[0]
    if nbytes > available:
        raise over_budget(path, what, nbytes, limit, available, doing)
    if left is not None:
        left[0] -= nbytes


def budget_mark() -> int | None:
    """What is left of the open budget (None: none is open), for ``budget_reset``."""
    left = _left.get()
    return None if left is None else left[0]


def budget_reset(mark: int | None) -> None:
    """Give back what was spent since ``budget_mark`` gave ``mark``: the walk that spent
    it is done again (engine.groups, when a group's values are not built)."""
    left = _left.get()
    if left is not None and mark is not None:
        left[0] = mark


def over_budget(path: str, what: str, nbytes: int, limit: int, available: int,
                doing: str = "densifying") -> ValidationError:
    if available >= limit:
        why = f"over the limit of {limit} bytes for one call"
    else:
        why = (f"but other sparse or external tensors of this call took {limit - available} "
               f"of the {limit}-byte limit for one call, leaving {available}")
    return ValidationError([Problem(path, f"{doing} {what} needs {nbytes} bytes, {why} "
                                          "(onnxdata.set_densify_limit, or "
                                          "onnxdata.sparse_parts)")])


def dense_nbytes(sparse: Any) -> int:
    """The bytes densifying ``sparse`` (a SparseTensorProto) would allocate; 0 when its
    dims or data type are not valid (validation reports those)."""
    dims = list(sparse.dims)
    if any(d < 0 for d in dims):
        return 0
    dt = DATA_TYPES.get(sparse.values.data_type) if sparse.HasField("values") else None
    if dt is None:
        return 0
    itemsize = _POINTER if dt.is_string else dt.dtype.itemsize
    return int(math.prod(dims)) * int(itemsize)


def sparse_need(message: Any, limit: int) -> None:
    """Raise ValidationError when the sparse tensors of ``message`` need more than ``limit``
    bytes together, naming the first one that goes over and the total needed."""
    kind = message.DESCRIPTOR.name
    if kind in ("TensorProto", "SparseTensorProto"):
        return  # one sparse tensor at most: densify checks it
    total = 0
    first_over = ""
    stack: list[tuple[Any, str]] = [(message, "")]
    while stack:
        msg, path = stack.pop()
        kind = msg.DESCRIPTOR.name
        if kind == "SparseTensorProto":
            total += dense_nbytes(msg)
            if total > limit and not first_over:
                first_over = path
        elif kind == "SequenceProto":
            for field in reversed(_SEQUENCE_FIELDS):
                items = getattr(msg, field)
                stack.extend(reversed([(x, f"{join_path(path, field)}[{i}]")
                                       for i, x in enumerate(items)]))
        elif kind == "OptionalProto":
            for field in reversed(_OPTIONAL_FIELDS):
                if msg.HasField(field):
                    stack.append((getattr(msg, field), join_path(path, field)))
        elif kind == "MapProto" and msg.HasField("values"):
            stack.append((msg.values, join_path(path, "values")))
    if total > limit:
        raise ValidationError([Problem(first_over, f"the sparse tensors of this value need "
                                                   f"{total} bytes to densify together, over "
                                                   f"the limit of {limit} bytes for one call "
                                                   "(onnxdata.set_densify_limit, or "
                                                   "onnxdata.sparse_parts)")])


