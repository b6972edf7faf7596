"""The command line's output streams: rich on a terminal, plain lines in a pipe, quiet
once the reader has gone. Every subcommand (explore, validate, show, diff, run) prints
through these, so all of them behave the same under ``| head -1`` and ``| grep``."""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from collections.abc import Iterable
from typing import IO as TextFile
from typing import Any, TextIO, cast

from rich.console import Console
from rich.text import Text

__all__ = ["Stream", "console", "message_lines", "printable", "silence", "write_checked",
           "write_text"]

#: Control characters (C0, DEL, C1), and the escaped form of each: what a file name or a
#: value must not put raw on a terminal (an ANSI escape repaints it, a newline breaks
#: "one record per line").
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\udc80-\udcff]")
_CONTROL_BUT_NEWLINE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\udc80-\udcff]")
_SURROGATE = re.compile(r"[\udc80-\udcff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    code = ord(c)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape): \xNN
        return f"\\x{code - 0xDC00:02x}"
    return _NAMED.get(c) or f"\\x{code:02x}"


def printable(text: str, *, newlines: bool = False) -> str:
    """``text`` safe to print: control characters, ANSI escapes and bytes that were not
    UTF-8 (a file name's surrogate escapes) shown as ``\\n``, ``\\x1b``, ``\\xff``.
    ``newlines=True`` keeps line breaks (text of several lines, not a name). JSON output
    never goes through this: it stays exact."""
    pattern = _CONTROL_BUT_NEWLINE if newlines else _CONTROL
    return pattern.sub(_escape, text) if pattern.search(text) else text


def message_lines(message: str, names: Iterable[str] = ()) -> str:
    """A message that may run over several lines (a ValidationError's problems, a
    runtime's own report) as printable text: its line breaks kept, each line after the
    first indented by two spaces at least (under the record it belongs to, so a record
    still starts at the line's start), empty lines dropped, every other control character
    escaped. A line break inside one of ``names`` (the file and folder names the message
    quotes) is the name's, not the message's: escaped with it, as ``printable`` does."""
    for name in sorted(names, key=len, reverse=True):
        if name and _CONTROL.search(name) and name in message:
            message = message.replace(name, printable(name))
    if "\n" not in message:
        return printable(message)
    lines = [line.rstrip() for line in message.split("\n")]
    rest = [line if line.startswith("  ") else "  " + line.lstrip() for line in lines[1:]
            if line.strip()]
    return "\n".join(printable(line) for line in [lines[0], *rest])



class Stream(io.TextIOBase):
    """stdout or stderr for rich: quiet once the reader has gone (``| head -1``), and,
    when not a terminal, each line without the padding rich adds to fill a table cell.

    A closed pipe points the file descriptor at /dev/null, so the command runs on and
    exits with its own status, and Python's final flush raises nothing.
    """

    def __init__(self, stderr: bool) -> None:
        super().__init__()
        self.stderr = stderr
        self.tty = self._target().isatty()

    def _target(self) -> TextIO:
        return sys.stderr if self.stderr else sys.stdout

    def isatty(self) -> bool:
        return self.tty

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not self.tty:
            text = "\n".join(line.rstrip() for line in text.split("\n"))
        # a file name's undecodable bytes, from a table cell
        if not text.isascii() and _SURROGATE.search(text):
            text = _SURROGATE.sub(_escape, text)
        return self.put(text)

    def put(self, text: str) -> int:
        """``text`` written as it is."""
        target = self._target()
        try:
            target.write(text)
            target.flush()
        except BrokenPipeError:
            silence(target)
        return len(text)

    def flush(self) -> None:
        with contextlib.suppress(BrokenPipeError):
            self._target().flush()


def silence(target: TextIO) -> None:
    """Send the rest of a closed pipe's output to /dev/null."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, target.fileno())
        os.close(devnull)


class _SafeConsole(Console):
    """A rich Console that prints every string and Text through ``printable`` (line breaks
    kept): no name or value can send a terminal escape or crash the encoder."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(_safe(o) for o in objects), **kwargs)


def _safe(obj: Any) -> Any:
    if isinstance(obj, str):
        return printable(obj, newlines=True)
    if isinstance(obj, Text) and printable(obj.plain, newlines=True) != obj.plain:
        offsets = sorted({i for span in obj.spans for i in (span.start, span.end)})
        pieces = obj.divide(offsets)
        safe = Text(style=obj.style, end=obj.end, justify=obj.justify, no_wrap=obj.no_wrap)
        for piece in pieces:
            styles = [str(span.style) for span in piece.spans]
            safe.append(printable(piece.plain, newlines=True), " ".join(styles) or None)
        return safe
    return obj


def console(stderr: bool = False) -> Console:
    """Rich output: colour and the terminal's width on a terminal; piped, plain text with
    one record per line (no wrapping, no padding), so grep and wc -l count records.
    Strings and Text are escaped (``printable``); tables are built from escaped cells."""
    stream = Stream(stderr)
    if stream.tty:
        return _SafeConsole(file=cast("TextFile[str]", stream), highlight=False)
    return _SafeConsole(file=cast("TextFile[str]", stream), highlight=False, width=1 << 20,
                        no_color=True, color_system=None, soft_wrap=True)


def write_text(text: str, stderr: bool = False) -> None:
    """Plain text (JSON, say) to stdout or stderr, quiet on a closed pipe."""
    Stream(stderr).write(text)


def write_checked(text: str) -> None:
    """``write_text(text)`` for text known to be printable (``printable(text,
    newlines=True)`` is ``text``) and, piped, to have no line ending in a space: written
    without the passes over it that would change nothing (a few ns a character, most of
    the writing of ``show``'s megabytes of lines)."""
    Stream(False).put(text)
