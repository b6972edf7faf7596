"""The command line's output streams: rich on a terminal, plain lines in a pipe, quiet
once the reader has gone. Every subcommand (explore, validate, show, diff, run) prints
through these, so all of them behave the same under ``| head -1`` and ``| grep``."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import IO as TextFile
from typing import TextIO, cast

from rich.console import Console

__all__ = ["Stream", "console", "silence", "write_text"]


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


def console(stderr: bool = False) -> Console:
    """Rich output: colour and the terminal's width on a terminal; piped, plain text with
    one record per line (no wrapping, no padding), so grep and wc -l count records."""
    stream = Stream(stderr)
    if stream.tty:
        return Console(file=cast("TextFile[str]", stream), highlight=False)
    return Console(file=cast("TextFile[str]", stream), highlight=False, width=1 << 20,
                   no_color=True, color_system=None, soft_wrap=True)


def write_text(text: str, stderr: bool = False) -> None:
    """Plain text (JSON, say) to stdout or stderr, quiet on a closed pipe."""
    Stream(stderr).write(text)
