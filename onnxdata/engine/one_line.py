"""One line about a value, made from the facts the engine gathers as it walks.

``sequence of 3 tensors, float32 [2, 3]``, ``optional sequence of 1 tensor,
float32 []``, ``map of 2 int64 keys to sequence of 2 tensors, float32 []``. The
engine keeps, per message, only what the line needs (at most two distinct
element details), so a sequence of a million elements costs no more memory
than one of two.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from onnxdata.core.dtypes import data_type
from onnxdata.core.messages import KIND_OF_ELEM_TYPE, ElemType

__all__ = ["ELEM_WORDS", "SequenceFacts", "dims_text", "dtype_name", "map_summary",
           "optional_summary", "sequence_summary", "sparse_detail", "tensor_detail"]

#: Each elem_type's element in words, one and many: "sparse tensor", "sparse tensors".
ELEM_WORDS: Final = {code: (kind.replace("_", " "), kind.replace("_", " ") + "s")
                     for code, kind in KIND_OF_ELEM_TYPE.items()}
# ints, not the IntEnum's members: optional_summary runs per element walked one by one
_UNDEFINED: Final = int(ElemType.UNDEFINED)
_TENSOR: Final = int(ElemType.TENSOR)
_SPARSE_TENSOR: Final = int(ElemType.SPARSE_TENSOR)
#: Distinct element details kept per sequence: two say "they differ".
_DISTINCT: Final = 2


@functools.lru_cache(maxsize=256)
def dtype_name(code: int) -> str:
    """A short name for a tensor data type: float32, int64, bfloat16, string, … (kept per
    code: numpy's dtype.name is a Python property, and every element walked asks)."""
    dt = data_type(code)
    if dt is None:
        return "no data type" if code == 0 else f"data type {code}"
    return "string" if dt.is_string else dt.dtype.name


def dims_text(dims: Sequence[int] | None) -> str:
    if dims is None:
        return "[…]"
    if len(dims) > 6:
        return "[" + ", ".join(map(str, dims[:4])) + f", … ({len(dims)} dims)]"
    return "[" + ", ".join(map(str, dims)) + "]"


def tensor_detail(code: int, dims: Sequence[int] | None, external: bool) -> str:
    text = f"{dtype_name(code)} {dims_text(dims)}"
    return text + " (external data)" if external else text


def sparse_detail(code: int, dims: Sequence[int] | None,
                  values_dims: Sequence[int] | None) -> str:
    text = f"{dtype_name(code)} {dims_text(dims)}"
    if values_dims:
        text += f", {values_dims[0]} non-zero"
    return text


def optional_summary(code: int, child: str | None) -> str:
    if code == _UNDEFINED:
        return "empty optional"
    if code not in KIND_OF_ELEM_TYPE:
        return f"optional of unknown elem_type {code}"
    if child is None:
        return f"empty optional ({ELEM_WORDS[code][0]})"
    return f"optional {child}"


@dataclass
class SequenceFacts:
    """What a sequence's summary needs: its elements' details (at most two distinct),
    their data types (at most two), their summaries (at most two)."""

    elem_type: int
    count: int = 0
    details: list[str] = field(default_factory=list)
    codes: list[int] = field(default_factory=list)
    inner: list[str] = field(default_factory=list)

    def add(self, detail: str | None, code: int | None, inner: str | None) -> None:
        self.count += 1
        for kept, x in ((self.details, detail), (self.codes, code), (self.inner, inner)):
            if x is not None and len(kept) < _DISTINCT and x not in kept:
                kept.append(x)  # type: ignore[arg-type]


def sequence_summary(facts: SequenceFacts, total: int) -> str:
    """``total`` counts every element, whatever field holds it (for a bad elem_type)."""
    code = facts.elem_type
    if code not in KIND_OF_ELEM_TYPE:
        what = "no elem_type" if code == _UNDEFINED else f"unknown elem_type {code}"
        return f"sequence with {what}, {total} element{'s' if total != 1 else ''}"
    one, many = ELEM_WORDS[code]
    n = facts.count
    if not n:
        return f"empty sequence of {many}"
    head = f"sequence of {n} {one if n == 1 else many}"
    if code in (_TENSOR, _SPARSE_TENSOR):
        if len(facts.details) == 1:
            return f"{head}, {facts.details[0]}"
        if code == _TENSOR and len(facts.codes) == 1:
            return f"{head}, {dtype_name(facts.codes[0])}, shapes vary"
        return f"{head}, mixed"
    if len(facts.inner) == 1:
        return f"{head} ({facts.inner[0]})" if n == 1 else f"{head}, each {facts.inner[0]}"
    return head


def map_summary(key_type: int, nkeys: int | None, values: str | None) -> str:
    count = "" if nkeys is None else f"{nkeys} "
    if values is None:
        return f"map of {count}{dtype_name(key_type)} keys, no values"
    return f"map of {count}{dtype_name(key_type)} keys to {values}"
