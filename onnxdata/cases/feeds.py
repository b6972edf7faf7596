"""The inputs given to ``Backend.run``, checked against the model's declared inputs before
the backend sees them.

A backend given a value that does not fit says so in its own words, or not at all: onnx's
reference iterates an ndarray given for a sequence into 0-d elements, runs a float32
element in a sequence of int64 and returns a mixed sequence, and names a missing input only
by its internals ("Unable to find input 'tensor' in known results"). ``fit_inputs`` says
it first, naming the input (and the element) and the model:

* too many inputs, or too few: the missing ones are named. ONNX lets trailing inputs
  that have an initializer (a default value) be left out; an ``optional(...)`` input is
  given None when it is empty, not left out;
* a value of another container kind than declared (an ndarray for a sequence, a list
  for a tensor, None for anything but an optional, a dict for anything but a map);
* a tensor (or sparse tensor, given dense) whose dtype is not the declared element type;
  STRING takes object, bytes or str arrays (their elements are not looked at);
* a map key of the wrong kind (an int for string keys, a string for integer keys).

The check never builds an object per element of a tensor; it visits each element of a
sequence and each entry of a map once, as the conversion for the backend does after it.
Inputs read by ``load_test_data_set`` were checked against the declared types already:
``CheckedInputs`` carries the types they were read with, and when those are the model's,
only their count is checked again.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from onnxdata.core.dtypes import DATA_TYPES, STRING, data_type_for_dtype
from onnxdata.errors import OnnxDataError
from onnxdata.model.types import DeclaredType

__all__ = ["CheckedInputs", "FeedError", "fit_inputs"]


class FeedError(OnnxDataError, ValueError):
    """Inputs that do not fit the model's declared inputs, found before the backend runs."""


class CheckedInputs(tuple[Any, ...]):
    """Input values read with the declared types ``declared`` (``load_test_data_set``
    checked each one's kind, element types and shape): ``fit_inputs`` does not walk them
    again when the model declares the same types. A tuple, so no value can be swapped in
    after the check."""

    declared: tuple[DeclaredType, ...]

    def __new__(cls, values: Sequence[Any], declared: Sequence[DeclaredType]
                ) -> CheckedInputs:
        made = super().__new__(cls, values)
        made.declared = tuple(declared)
        return made

    def __reduce__(self) -> tuple[Any, ...]:
        return CheckedInputs, (tuple(self), self.declared)


Declared = Sequence[tuple[str, DeclaredType]]


def fit_inputs(inputs: Sequence[Any], declared: Declared, shown: str,
               initializers: Callable[[], Collection[str]]
               ) -> list[tuple[str, DeclaredType, Any]]:
    """``(name, declared type, value)`` for each input given, after checking them against
    the model's ``declared`` inputs (``shown`` names the model); FeedError saying which
    input does not fit and how. ``initializers`` gives the names of the graph's
    initializers, asked only when fewer inputs than declared are given."""
    if len(inputs) > len(declared):
        listed = ", ".join(f"input {i} {n!r} ({t})" for i, (n, t) in enumerate(declared))
        raise FeedError(f"{shown} has {_inputs(len(declared))} but {len(inputs)} were given"
                        f"{': ' if declared else ''}{listed}")
    if len(inputs) < len(declared):
        _left_out(len(inputs), declared, shown, initializers())
    fed = [(n, t, v) for (n, t), v in zip(declared, inputs, strict=False)]
    if isinstance(inputs, CheckedInputs) and \
            inputs.declared == tuple(t for _, t in declared[:len(inputs)]):
        return fed
    for i, (name, t, value) in enumerate(fed):
        problem = _misfit(value, t)
        if problem is not None:
            raise FeedError(f"{shown}: input {i} {name!r}{problem[0]}: {problem[1]}")
    return fed


def _inputs(n: int) -> str:
    return "1 input" if n == 1 else f"{n} inputs"


def _left_out(given: int, declared: Declared, shown: str, initialized: Collection[str]
              ) -> None:
    """FeedError naming the inputs left out that have no initializer (none: all is well)."""
    missing = [(i, n, t) for i, (n, t) in enumerate(declared)
               if i >= given and n not in initialized]
    if not missing:
        return
    names = " and ".join(f"input {i} {n!r} ({t})" for i, n, t in missing)
    verb = "is" if len(missing) == 1 else "are"
    hint = "only trailing inputs with an initializer may be left out"
    if any(t.kind == "optional" for _, _, t in missing):
        hint += "; give None for an empty optional"
    count = "1 was" if given == 1 else f"{given} were"
    raise FeedError(f"{shown} has {_inputs(len(declared))} but {count} given: {names} "
                    f"{verb} missing ({hint})")


#: A misfit: the path within the input (``[2]['k']``, "" for the input itself) and what.
Misfit = tuple[str, str]


def _misfit(value: Any, t: DeclaredType) -> Misfit | None:
    """How ``value`` does not fit declared type ``t``, or None when it fits. The path is
    made only for a misfit: a sequence of many tensors costs one comparison of each's
    type and dtype, no string."""
    if t.kind == "optional":
        assert t.element is not None
        return None if value is None else _misfit(value, t.element)
    if value is None:
        return "", f"declared {t} but given None (None is an empty optional; only " \
                   "optional(...) inputs and elements take it)"
    if t.kind == "tensor" or t.kind == "sparse_tensor":
        return _tensor_misfit(value, t)
    element = t.element
    assert element is not None
    if t.kind == "sequence":
        if not isinstance(value, (list, tuple)):
            return "", f"declared {t} but given {_what(value)} (a sequence is a list of " \
                       "its elements)"
        want = _dtype(element)
        for i, v in enumerate(value):
            if type(v) is np.ndarray and v.dtype is want:
                continue  # the common case, with no call
            problem = _misfit(v, element)
            if problem is not None:
                return f"[{i}]{problem[0]}", problem[1]
        return None
    if not isinstance(value, dict):  # a map
        return "", f"declared {t} but given {_what(value)} (a map is a dict)"
    strings = t.elem_type == STRING
    for k, v in value.items():
        if not (isinstance(k, (str, bytes)) if strings else _is_int(k)):
            return "", f"declared {t} but given a key {k!r}"
        problem = _misfit(v, element)
        if problem is not None:
            return f"[{k!r}]{problem[0]}", problem[1]
    return None


def _dtype(t: DeclaredType) -> np.dtype[Any] | None:
    """The numpy dtype of declared tensor type ``t`` (None for another kind, or STRING)."""
    dt = DATA_TYPES.get(t.elem_type) if t.kind == "tensor" else None
    return dt.dtype if dt is not None and dt.code != STRING else None


def _is_int(k: Any) -> bool:
    return isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))


def _tensor_misfit(value: Any, t: DeclaredType) -> Misfit | None:
    if not isinstance(value, (np.ndarray, np.generic)):
        return "", f"declared {t} but given {_what(value)} (a tensor is a numpy array)"
    if not t.elem_type:
        return None  # no element type declared: the backend decides
    dt = data_type_for_dtype(value.dtype)
    if dt is not None and dt.code == t.elem_type:
        return None
    return "", f"declared {t} but given an array of {value.dtype}"


def _what(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"a numpy array of {value.dtype}, shape {list(value.shape)}"
    if isinstance(value, np.generic):
        return f"a numpy {value.dtype} scalar"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)}"
    if isinstance(value, dict):
        return f"a dict of {len(value)}"
    return f"a Python {type(value).__name__}"
