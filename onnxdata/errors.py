"""The one error family: everything onnxdata raises for bad input is an OnnxDataError."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["DecodeError", "OnnxDataError", "Problem", "ValidationError"]


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
            cut = self.message[:MESSAGE_LIMIT - 50] + " … " + self.message[-47:]
            object.__setattr__(self, "message", cut)

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class ValidationError(OnnxDataError, ValueError):
    """A value breaks the rules of the format; ``problems`` lists every fault found."""

    def __init__(self, problems: Iterable[Problem], *, source: str | None = None) -> None:
        self.problems: list[Problem] = list(problems)
        self.source = source
        head = f"{source}: " if source else ""
        n = len(self.problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"{head}{n} problem{'s' if n != 1 else ''}:\n{lines}")
