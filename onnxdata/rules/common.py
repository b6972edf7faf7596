"""What every validation rule shares: limits, the elem_types a map's values may have,
paths, the wording of counts and dims, per-field capped reports, and the
:class:`ProblemSink` that caps the problems of one call."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any, Final, Union

from onnxdata.core.dtypes import DATA_TYPES
from onnxdata.core.messages import ElemType
from onnxdata.core.paths import join_path
from onnxdata.errors import Problem

__all__ = [
    "EXTERNAL_KEYS",
    "MAP_VALUE_ELEM_TYPES",
    "MAX_REPORTED",
    "TYPED_FIELDS",
    "MAX_PROBLEMS",
    "ProblemSink",
    "joined_problems",
]


PathLike = Union[str, "os.PathLike[str]"]

#: Per-element faults reported for one field before a summary.
MAX_REPORTED: Final = 20
#: Problems listed per call before one "…and N more problems".
MAX_PROBLEMS: Final = 1000
#: Indices checked per chunk, bounding the temporary arrays of the sparse check.
CHUNK: Final = 1 << 16
#: Element counts above this are "more than 2**64" (dims are not multiplied further).
HUGE: Final = 1 << 64

#: elem_types a MapProto's values may have (not OPTIONAL).
MAP_VALUE_ELEM_TYPES: Final = frozenset(
    {ElemType.TENSOR, ElemType.SPARSE_TENSOR, ElemType.SEQUENCE, ElemType.MAP})
#: TensorProto's typed storage fields.
TYPED_FIELDS: Final = (
    "float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data",
)
#: The keys of TensorProto.external_data.
EXTERNAL_KEYS: Final = ("location", "offset", "length", "checksum")

INT64: Final = 7


# --------------------------------------------------------------------------- helpers


def type_name(code: int) -> str:
    dt = DATA_TYPES.get(code)
    return dt.name if dt else str(code)


def count_text(n: int) -> str:
    return "more than 2**64" if n > HUGE else str(n)


def elements_text(n: int) -> str:
    return f"{count_text(n)} element{'' if n == 1 else 's'}"


def capped_problems(path: str, field: str, found: list[tuple[int, str]],
                    total: int) -> list[Problem]:
    """Problems for the first MAX_REPORTED faulty elements of ``field``, then a summary."""
    out = [Problem(join_path(path, f"{field}[{i}]"), msg) for i, msg in found[:MAX_REPORTED]]
    if total > MAX_REPORTED:
        out.append(Problem(join_path(path, field),
                           f"{total - MAX_REPORTED} more faulty entries not listed"))
    return out


def dims_text(dims: Sequence[int]) -> str:
    """``[2, 3]``; a long list keeps its first dims (at most 8, about 60 characters):
    ``[1, 1, 1, 1, 1, 1, 1, 1, … (9000 dims)]``."""
    shown: list[str] = []
    width = 0
    for d in dims[:8]:
        shown.append(str(int(d)))
        width += len(shown[-1]) + 2
        if width > 60:
            break
    if len(shown) < len(dims):
        return "[" + ", ".join(shown) + f", … ({len(dims)} dims)]"
    return "[" + ", ".join(shown) + "]"


def short_repr(value: bytes, limit: int = 40) -> str:
    """``repr(value)``, cut to about ``limit`` characters with "…"."""
    text = repr(value[:limit + 1])
    return text if len(value) <= limit else text[:limit] + "…"


class ProblemSink:
    """The problems of one call, at most ``cap`` of them, in document order, then a count.

    ``add`` appends; ``insert`` puts a message's own problems (known only after
    its children were walked) before its children's. Once one problem is
    dropped the list is full, so what is kept is always the first ``cap`` of
    the true order, and ``dropped`` counts the rest exactly.
    """

    def __init__(self, cap: int = MAX_PROBLEMS) -> None:
        if cap < 0:
            raise ValueError(f"max_problems must be >= 0, not {cap}")
        self.cap = cap
        self.items: list[Problem] = []
        self.dropped = 0

    def __bool__(self) -> bool:
        return bool(self.items) or self.dropped > 0

    def mark(self) -> int:
        return len(self.items)

    def add(self, found: list[Problem]) -> None:
        room = self.cap - len(self.items)
        if len(found) <= room:
            self.items += found
        else:
            self.items += found[:max(room, 0)]
            self.dropped += len(found) - max(room, 0)

    def insert(self, at: int, found: list[Problem]) -> None:
        if not found:
            return
        self.items[at:at] = found
        over = len(self.items) - self.cap
        if over > 0:
            del self.items[self.cap:]
            self.dropped += over

    def drop(self, n: int) -> None:
        """``n`` problems known to lie past the ones kept (only when the list will be full)."""
        self.dropped += n

    def result(self) -> list[Problem]:
        if not self.dropped:
            return list(self.items)
        return [*self.items, more_problems(self.dropped)]


def more_problems(n: int) -> Problem:
    """The last problem of a capped list."""
    return Problem("", f"…and {n:,} more problems")


_MORE = re.compile(r"…and ([\d,]+) more problems")


def joined_problems(*lists: Sequence[Problem], cap: int = MAX_PROBLEMS) -> list[Problem]:
    """Lists of problems, each capped by its own check (then "…and N more problems"), as
    one list under the same cap: the first ``cap`` of them in order, then one count."""
    sink = ProblemSink(cap)
    for found in lists:
        more = 0
        last = found[-1] if found else None
        m = _MORE.fullmatch(last.message) if last is not None and not last.path else None
        if m is not None:
            found, more = found[:-1], int(m.group(1).replace(",", ""))
        sink.add(list(found))
        sink.drop(more)  # a capped list had ``cap`` kept: the sink is full past them
    return sink.result()


def has_field(message: Any, field: str) -> bool:
    return bool(message.HasField(field))
