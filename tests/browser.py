"""The tests' headless Chromium (through playwright), in which the explorer's page
(tests/page/test_page.py) and the run scoreboard (tests/cases/test_scoreboard.py) are
opened: the browser found once, launched once per module, and a page opened with every
console error, page error and request that leaves the file collected."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]


def chromium() -> str | None:
    for name in (os.environ.get("ONNXDATA_CHROMIUM"), "/usr/bin/chromium",
                 shutil.which("chromium"), shutil.which("chromium-browser")):
        if name and os.path.isfile(name) and os.access(name, os.X_OK):
            return name
    return None


@contextlib.contextmanager
def launched() -> Iterator[Any]:
    """A headless Chromium for a module's browser fixture; the test skips without one."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("no browser test: the playwright package is not installed "
                    "(tools/requirements-dev.txt has it)")
    path = chromium()
    if path is None:
        pytest.skip("no browser test: no Chromium at /usr/bin/chromium or on PATH "
                    "(make's test setup installs Debian's chromium when run as root)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield b
        b.close()


def open_page(browser: Any, page_file: Path) -> tuple[Any, list[str]]:
    """A tab showing ``page_file``, and the list its errors and outside requests go to."""
    tab = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.on("request", lambda r: errors.append(f"request {r.url}")
           if not r.url.startswith(("file:", "data:")) else None)
    tab.goto(page_file.as_uri())
    return tab, errors
