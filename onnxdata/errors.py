"""The one error family: everything onnxdata raises for bad input is an OnnxDataError."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

__all__ = ["DecodeError", "OnnxDataError", "Problem", "UnknownFieldsWarning", "ValidationError"]


class OnnxDataError(Exception):
    """Base class of every error onnxdata raises for bad input."""


class DecodeError(OnnxDataError):
    """Bytes that are not a message of the kind asked for.

    ``source`` names the file (or ``<bytes>``), ``kind`` the message expected,
    ``offset`` the byte where reading failed when it is known.
    """

    def __init__(self, message: str, *, source: str = "<bytes>", kind: str = "",
                 offset: int | None = None) -> None:
        where = source if offset is None else f"{source} at byte {offset}"
        what = f" as {kind}" if kind else ""
        super().__init__(f"cannot read {where}{what}: {message}")
        self.source = source
        self.kind = kind
        self.offset = offset
        self.reason = message


#: A problem's message is cut to about this many characters (its middle elided with "…").
MESSAGE_LIMIT = 200


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a value: where it is (``path``) and what (``message``).

    A message longer than ``MESSAGE_LIMIT`` characters keeps its start and end
    around "…", so one problem never carries megabytes of dims or values.
    """

    path: str
    message: str

    def __post_init__(self) -> None:
        if len(self.message) > MESSAGE_LIMIT:
            object.__setattr__(self, "message", _elide(self.message))

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def _elide(message: str) -> str:
    """The start and end of a long message around " … ", cut between words where a space
    is near (never in the middle of a number or a field name)."""
    head = message[:MESSAGE_LIMIT - 50]
    tail = message[-47:]
    space = head.rfind(" ", len(head) - 30)
    if space > 0:
        head = head[:space]
    space = tail.find(" ", 0, 20)
    if space >= 0:
        tail = tail[space + 1:]
    return f"{head} … {tail}"


class ValidationError(OnnxDataError, ValueError):
    """A value breaks the rules of the format; ``problems`` lists every fault found."""

    def __init__(self, problems: Iterable[Problem], *, source: str | None = None) -> None:
        self.problems: list[Problem] = list(problems)
        self.source = source
        head = f"{source}: " if source else ""
        n = len(self.problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{head}{n} problem{'s' if n != 1 else ''}:\n{lines}")


_P = ParamSpec("_P")
_R = TypeVar("_R")


def no_memory_error(source: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Make an entry point raise OnnxDataError, naming its ``source`` argument (the file, or
    the kind of value), where it runs out of memory, with the MemoryError chained.

    A value may claim more memory than the process may use; the caller gets our
    error, and the CLI its exit code, not a bare MemoryError.
    """
    def wrap(func: Callable[_P, _R]) -> Callable[_P, _R]:
        signature = inspect.signature(func)

        @functools.wraps(func)
        def guarded(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return func(*args, **kwargs)
            except MemoryError as exc:
                try:
                    value = signature.bind_partial(*args, **kwargs).arguments.get(source)
                except TypeError:
                    value = None
                raise OnnxDataError(f"{_describe(value)}: out of memory in {func.__name__}; "
                                    "the value needs more memory than this process may "
                                    "use") from exc
        return guarded
    return wrap


def _describe(value: object) -> str:
    if isinstance(value, (str, os.PathLike)):
        return str(os.fspath(value))
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "<bytes>"
    kind = getattr(getattr(value, "DESCRIPTOR", None), "name", None)
    return f"<{kind or type(value).__name__}>"


class UnknownFieldsWarning(UserWarning):
    """``load`` parsed the bytes as the kind asked only by keeping fields aside as unknown.

    Usually the file holds another message (a tensor read as a sequence gives
    ``elem_type`` 1 and little else); ``onnxdata explore FILE`` shows what it can be.
    """
