"""The cyclic garbage collector paused while ``read`` and ``to_numpy`` build a value.

A sequence or map's value is a list or dict per element: a sequence of 2,188 chains of
sequences 96 deep is 210,000 lists. CPython starts a collection every 700 new containers,
and as the value grows its full collections walk every object the process holds, the
growing value among them: two took 55 of nested-seq-96's 125 ms. The value's lists and
dicts hold arrays, bytes, numbers and each other, never a cycle, so those walks find
nothing. The collector is paused for the build and resumed as it was (a caller that
disabled it finds it disabled); calls on several threads at once share one pause.
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["gc_paused"]

_P = ParamSpec("_P")
_R = TypeVar("_R")
_lock = threading.Lock()
_pauses = 0  # calls inside gc_paused now
_resume = False  # whether the collector was enabled when the first of them began


class gc_paused:  # (lower case: used as a function, ``@gc_paused()``)
    """Pause the cyclic collector for a ``with`` block, or for each call of the function
    it decorates. (A class, not contextlib's generator: ``read`` of a small file pays for
    its entry every call.)"""

    __slots__ = ()

    def __enter__(self) -> None:
        global _pauses, _resume
        with _lock:
            if _pauses == 0:
                _resume = gc.isenabled()
                gc.disable()
            _pauses += 1

    def __exit__(self, *exc: object) -> None:
        global _pauses
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _resume:
                gc.enable()

    def __call__(self, func: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(func)
        def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            with self:
                return func(*args, **kwargs)
        return paused
