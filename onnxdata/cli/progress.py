"""A progress bar (rich's) on a terminal while a command works on a big file; none when piped.

Files of at least ``ONNXDATA_PROGRESS_BYTES`` bytes (default 256 MiB) get a
bar on stderr, removed when the work is done. Output that is not a terminal
never gets one, so piped and redirected output stays plain text.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

__all__ = ["DEFAULT_THRESHOLD", "THRESHOLD_ENV", "progress_bar"]

THRESHOLD_ENV: Final = "ONNXDATA_PROGRESS_BYTES"
DEFAULT_THRESHOLD: Final = 256 << 20


def _threshold() -> int:
    value = os.environ.get(THRESHOLD_ENV, "")
    try:
        return int(value) if value else DEFAULT_THRESHOLD
    except ValueError:
        return DEFAULT_THRESHOLD


@contextmanager
def progress_bar(size: int, label: str) -> Iterator[Callable[[float], None] | None]:
    """A callback taking the fraction done (0 to 1) that moves a bar, or None when no bar is
    shown (a small file, or stderr is not a terminal)."""
    console = Console(stderr=True)
    if size < _threshold() or not console.is_terminal:
        yield None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=1.0)

        def advance(fraction: float) -> None:
            bar.update(task, completed=fraction, refresh=True)

        advance(0.0)
        yield advance
