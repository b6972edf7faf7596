"""Values of a declared type, built from a source of choices.

One walk of a ``DeclaredType`` builds the value (ndarrays, ``SparseParts``,
lists, dicts with unique keys, None); every random decision on the way is asked
of a ``Choices``. ``onnxdata.strategies`` answers them with hypothesis's
``draw`` (so failures shrink), ``onnxdata.cases.make`` with a seeded numpy
``Generator`` (so ``onnxdata make --seed S`` repeats without hypothesis).

Shapes follow the declared dims: a fixed dim is kept, a named (symbolic) dim
takes one size per ``Plan`` (shared by every input that names it), an
unnamed one a size of its own. A tensor whose shape is not declared at all
takes ``Plan.shape`` when given, else any rank (``open_dims="draw"``) or an
error naming the input (``open_dims="refuse"``, what ``make`` uses: nothing
says which rank the model wants; an unnamed dim is refused the same way).
``Plan.shape`` also fills the dims a declared shape leaves open (skl2onnx's
``[None, 4]``), checked against its rank and fixed sizes.
Every tensor's elements count against one budget for the whole plan, so a
test stays fast.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

import numpy as np

from onnxdata.convert.common import SparseParts
from onnxdata.core.dtypes import DATA_TYPES, KEY_TYPES, STRING, DataType
from onnxdata.errors import OnnxDataError
from onnxdata.model.types import DeclaredType, type_name

__all__ = ["Choices", "GenerationError", "NumpyChoices", "Plan", "Style", "generate"]

H = TypeVar("H", bound=Hashable)

#: "any": every bit pattern of the type (subnormals, the largest values, NaN payloads);
#: "small": integers in [-8, 8] and floats that are multiples of 1/4 in [-4, 4] (what an
#: operator's test wants, and what two runtimes agree on).
Style = Literal["any", "small"]
Dim = int | str | None


class GenerationError(OnnxDataError):
    """A declared type that cannot be generated (opaque, unknown rank, over the budget)."""


class Choices(Protocol):
    """The random decisions a generated value needs."""

    def integer(self, lo: int, hi: int) -> int:
        """An int in [lo, hi]."""

    def codes(self, count: int, lo: int, hi: int, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
        """``count`` integers in [lo, hi] as a 1-D array of ``dtype``."""

    def text(self, max_len: int, utf8: bool) -> bytes:
        """One STRING element: any bytes, or UTF-8 text when ``utf8``."""

    def unique_integers(self, lo: int, hi: int, count: int) -> list[int]:
        """Up to ``count`` distinct ints in [lo, hi]."""

    def unique_texts(self, count: int, max_len: int, utf8: bool) -> list[bytes]:
        """Up to ``count`` distinct STRING elements."""


@dataclass
class Plan:
    """What one generated set shares: named dims, the budget, and the knobs.

    ``dims`` maps a symbolic dim name to its size; names not in it are drawn
    once, on first use, and kept for the rest of the plan. ``shape`` is the
    shape (ints and dim names) of every tensor whose declared type gives none.
    """

    budget: int = 256
    max_len: int = 3
    length: int | None = None  # every sequence and map this long (SequenceMap wants equal ones)
    max_dim: int = 4
    min_named_dim: int = 0
    style: Style = "any"
    special_floats: bool = True
    utf8: bool = False
    open_dims: Literal["draw", "refuse"] = "draw"
    shape: tuple[Dim, ...] | None = None
    name: str = "NAME"  # the input drawn, as the refusals' --shape example names it
    dims: dict[str, int] = field(default_factory=dict)
    spent: int = 0


def _bits_dtype(dt: DataType) -> np.dtype[Any]:
    return np.dtype(f"u{dt.dtype.itemsize}")


def _elements(dt: DataType, count: int, ch: Choices, plan: Plan) -> np.ndarray[Any, Any]:
    """``count`` elements of a numeric type, 1-D."""
    if plan.style == "small":
        return _small(dt, count, ch)
    if dt.code == 9:  # BOOL: 0 or 1, never another byte
        return ch.codes(count, 0, 1, np.dtype(np.uint8)).astype(np.bool_)
    if dt.dtype.kind == "c":  # real and imaginary parts, each of the float type
        part = DATA_TYPES[1 if dt.code == 14 else 11]
        return np.ascontiguousarray(_elements(part, 2 * count, ch, plan)).view(dt.dtype)
    top = (1 << dt.bits) - 1
    bits = ch.codes(count, 0, top, _bits_dtype(dt))
    arr = bits.view(dt.dtype)
    if not plan.special_floats and _is_float(dt):
        arr = np.where(np.isfinite(arr.astype(np.float64)), arr, np.zeros(1, dt.dtype))
    return arr


def _is_float(dt: DataType) -> bool:
    return dt.dtype.kind == "f" or (dt.dtype.kind == "V" and dt.name.startswith("FLOAT")) \
        or dt.name == "BFLOAT16"


def _small(dt: DataType, count: int, ch: Choices) -> np.ndarray[Any, Any]:
    if dt.code == 9:
        return ch.codes(count, 0, 1, np.dtype(np.uint8)).astype(np.bool_)
    if dt.name == "FLOAT8E8M0":  # powers of two only: no zero, no sign
        powers = np.exp2(ch.codes(count, -4, 4, np.dtype(np.int8)).astype(np.float32))
        out: np.ndarray[Any, Any] = powers.astype(dt.dtype)
        return out
    if _is_float(dt) or dt.dtype.kind == "c":
        quarters = ch.codes(count, -16, 16, np.dtype(np.int8)).astype(np.float32) / 4
        return quarters.astype(dt.dtype)
    lo, hi = (-8, 8) if dt.name.startswith("INT") else (0, 8)
    if dt.bits < 8:
        lo, hi = (max(lo, -(1 << (dt.bits - 1))), min(hi, (1 << (dt.bits - 1)) - 1)) \
            if dt.name.startswith("INT") else (0, min(hi, (1 << dt.bits) - 1))
    return ch.codes(count, lo, hi, np.dtype(np.int8)).astype(dt.dtype)


def _example(t: DeclaredType, plan: Plan) -> str:
    """``--shape NAME=...`` for ``t``: its declared dims, an open one as 2 (or a new name)."""
    dims = ["2" if d is None or d == "" else str(d) for d in t.shape] \
        if t.shape is not None else ["2", "N"]
    return f"--shape {plan.name}={','.join(dims)} or shapes="


def _declared(t: DeclaredType, plan: Plan, where: str) -> tuple[Dim | None, ...] | None:
    """The dims to draw: ``plan.shape`` where given (checked against the declared rank and
    sizes: it fills the dims the model leaves open), else the declared ones."""
    given = plan.shape
    if given is None or t.shape is None:
        return t.shape if given is None else given
    declared = "[" + ", ".join("?" if d is None or d == "" else str(d) for d in t.shape) + "]"
    if len(given) != len(t.shape):
        raise GenerationError(f"{where}: --shape/shapes= gives {len(given)} dims, but the "
                              f"model declares {declared}; give {_example(t, plan)}")
    for axis, (d, g) in enumerate(zip(t.shape, given, strict=True)):
        if isinstance(d, int) and g != d:
            raise GenerationError(f"{where}: --shape/shapes= gives axis {axis} size {g}, but "
                                  f"the model declares {declared}")
    return given


def _shape(t: DeclaredType, ch: Choices, plan: Plan, where: str) -> tuple[int, ...]:
    declared = _declared(t, plan, where)
    if declared is None:
        if plan.open_dims == "refuse":
            raise GenerationError(f"{where}: the shape of its {t} is not declared (no rank), "
                                  "so nothing says what the model takes; give one "
                                  f"({_example(t, plan)})")
        left = plan.budget - plan.spent
        declared = (None,) * ch.integer(0 if left > 0 else 1, 3)  # 0-d takes one element
    out: list[int] = []
    for d in declared:
        if isinstance(d, int):
            out.append(d)
        elif isinstance(d, str) and d:
            if d not in plan.dims:
                plan.dims[d] = ch.integer(plan.min_named_dim, plan.max_dim)
            out.append(plan.dims[d])
        elif plan.open_dims == "refuse":
            raise GenerationError(f"{where}: axis {len(out)} of its {t} has neither a size "
                                  "nor a name, so nothing says what the model takes; give "
                                  f"the shape ({_example(t, plan)})")
        else:  # unnamed: a size of its own, within what the budget has left
            left = plan.budget - plan.spent
            out.append(ch.integer(0, max(0, min(plan.max_dim, left))))
    count = int(np.prod(out, dtype=np.int64)) if out else 1
    if plan.spent + count > plan.budget:
        shown = "[" + ", ".join(map(str, out)) + "]"
        if all(isinstance(d, int) for d in declared):
            raise GenerationError(f"{where}: its declared shape {shown} needs {count} "
                                  f"elements, over {_left(plan)}; raise the budget "
                                  "(--budget, budget=)")
        shrunk = [0 if not isinstance(d, int) else s for d, s in zip(declared, out,
                                                                       strict=True)]
        return tuple(shrunk)  # over budget: the free axes go empty
    plan.spent += count
    return tuple(out)


def _left(plan: Plan) -> str:
    """What is left of the budget, for a tensor that does not fit in it."""
    of = f"the budget of {plan.budget} element{'s' if plan.budget != 1 else ''} a set"
    if not plan.spent:
        return of
    return f"the {plan.budget - plan.spent} left of {of} (the values drawn before it took " \
           f"{plan.spent})"


def _tensor(t: DeclaredType, ch: Choices, plan: Plan, where: str) -> np.ndarray[Any, Any]:
    dt = DATA_TYPES.get(t.elem_type)
    if dt is None:
        raise GenerationError(f"{where}: data type {t.elem_type} is not an ONNX tensor type "
                              "that can be generated")
    shape = _shape(t, ch, plan, where)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if dt.code == STRING:
        flat = np.empty(count, dtype=object)
        for i in range(count):
            flat[i] = ch.text(6, plan.utf8)
        return flat.reshape(shape)
    return _elements(dt, count, ch, plan).reshape(shape)


def _sparse(t: DeclaredType, ch: Choices, plan: Plan, where: str) -> SparseParts:
    dense = _tensor(t, ch, plan, where)
    flat = dense.reshape(-1)
    keep = ch.codes(flat.size, 0, 1, np.dtype(np.uint8)).astype(bool)
    idx = np.flatnonzero(keep).astype(np.int64)
    return SparseParts(flat[idx], idx, tuple(dense.shape))


def _keys(code: int, count: int, ch: Choices, plan: Plan) -> list[Any]:
    if code == STRING:
        return list(ch.unique_texts(count, 6, plan.utf8))
    dt = DATA_TYPES[code]
    info = np.iinfo(dt.dtype)
    lo, hi = (int(info.min), int(info.max)) if plan.style == "any" else \
        (max(int(info.min), -8), min(int(info.max), 8))
    return ch.unique_integers(lo, hi, count)


def generate(t: DeclaredType, ch: Choices, plan: Plan, where: str = "value") -> Any:
    """A value of declared type ``t``: what ``from_numpy(value, declared=t)`` builds
    (sparse tensors as ``SparseParts``, map keys as Python ints or bytes)."""
    if t.kind == "tensor":
        return _tensor(t, ch, plan, where)
    if t.kind == "sparse_tensor":
        return _sparse(t, ch, plan, where)
    if t.element is None:
        raise GenerationError(f"{where}: {t} has no element type")
    if t.kind == "optional":
        if ch.integer(0, 3) == 0:
            return None
        return generate(t.element, ch, plan, where)
    n = plan.length if plan.length is not None else ch.integer(0, plan.max_len)
    if t.kind == "sequence":
        return [generate(t.element, ch, plan, f"{where}[{i}]") for i in range(n)]
    if t.elem_type not in KEY_TYPES:
        raise GenerationError(f"{where}: {type_name(t.elem_type)} is not a map key type")
    return {k: generate(t.element, ch, plan, f"{where}[{k!r}]")
            for k in _keys(t.elem_type, n, ch, plan)}


def check_generable(t: DeclaredType, plan: Plan, where: str) -> None:
    """Raise GenerationError for what ``generate`` would refuse, before drawing anything."""
    if t.kind in ("tensor", "sparse_tensor"):
        if t.elem_type not in DATA_TYPES:
            raise GenerationError(f"{where}: data type {t.elem_type} is not an ONNX tensor "
                                  "type that can be generated")
        shape = _declared(t, plan, where)
        if plan.open_dims == "refuse" and (shape is None or None in shape or "" in shape):
            _shape(t, NumpyChoices(0), Plan(open_dims="refuse", shape=plan.shape,
                                            name=plan.name, budget=1 << 62), where)  # raises
        return
    if t.element is None:
        raise GenerationError(f"{where}: {t} has no element type")
    if t.kind == "map" and t.element.kind == "optional":
        raise GenerationError(f"{where}: {t}: a MapProto's values cannot be optionals")
    if t.kind == "map" and t.elem_type not in KEY_TYPES:
        raise GenerationError(f"{where}: {type_name(t.elem_type)} is not a map key type")
    value = t.element
    if t.kind == "map" and value.kind == "tensor" and value.shape is None and plan.shape is None \
            and plan.open_dims == "refuse":
        raise GenerationError(f"{where}: the shape of its map's {value} values is not declared"
                              "; ONNX Runtime's maps hold one number per value: give "
                              f"--shape {plan.name}= (a scalar, the empty shape), or the "
                              "values' dims for another backend")
    check_generable(value, plan, where)


class NumpyChoices:
    """Choices from a seeded numpy ``Generator``: the same seed, the same values."""

    def __init__(self, seed: int | np.random.Generator) -> None:
        self.rng = seed if isinstance(seed, np.random.Generator) else \
            np.random.default_rng(seed)

    def integer(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi, endpoint=True))

    def codes(self, count: int, lo: int, hi: int, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
        return self.rng.integers(lo, hi, size=count, dtype=dtype, endpoint=True)

    def text(self, max_len: int, utf8: bool) -> bytes:
        n = self.integer(0, max_len)
        if utf8:
            alphabet = "abcxyz019 _-é€"
            return "".join(alphabet[i] for i in self.rng.integers(0, len(alphabet), n)
                           ).encode()
        return bytes(self.rng.integers(0, 256, n, dtype=np.uint8))

    def unique_integers(self, lo: int, hi: int, count: int) -> list[int]:
        return _distinct(lambda: self.integer(lo, hi), count)

    def unique_texts(self, count: int, max_len: int, utf8: bool) -> list[bytes]:
        return _distinct(lambda: self.text(max_len, utf8), count)


def _distinct(draw: Callable[[], H], count: int) -> list[H]:
    """``count`` distinct values of ``draw()`` in the order drawn, or fewer when 4 * count
    draws did not find that many (a small domain)."""
    out: dict[H, None] = {}
    for _ in range(4 * count):
        if len(out) == count:
            break
        out[draw()] = None
    return list(out)

