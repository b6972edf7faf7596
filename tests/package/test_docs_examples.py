"""Every ```python block of the documentation's pages (docs/*.md) runs as written.

A page's blocks run in order, in one namespace, in a temporary folder: a copy of the
bundled case the page names in a comment ``<!-- examples run in: tests/data/onnx-node/NAME
-->``, else an empty one. A block the reader cannot run as it stands is marked just above
its fence ``<!-- not run: why -->``; one that needs an optional package,
``<!-- needs: module -->`` (skipped without it). A ```sh block marked
``<!-- commands run in: FOLDER -->`` has its ``onnxdata`` lines run in a copy of FOLDER.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^(?P<marks>(?:<!-- [^\n]*-->\n)*)```(?P<lang>\w*)[^\n]*\n(?P<code>.*?)^```",
                   re.S | re.M)


@dataclass
class Block:
    line: int
    code: str
    skip: str | None  # why it is not run
    needs: list[str]


def blocks(text: str) -> list[Block]:
    """The page's ```python blocks, with the marks just above each."""
    out = []
    for m in FENCE.finditer(text):
        if m["lang"] != "python":
            continue
        marks = m["marks"]
        skip = re.search(r"<!-- not run: (.*?) -->", marks)
        needs = re.findall(r"<!-- needs: (\S+) -->", marks)
        line = text.count("\n", 0, m.start("code")) + 1
        out.append(Block(line, m["code"], skip[1] if skip else None, needs))
    return out


PAGES = sorted(p for p in DOCS.glob("*.md") if blocks(p.read_text(encoding="utf-8")))


def test_the_guide_has_examples_and_marks_are_read() -> None:
    names = {p.stem for p in PAGES}
    assert {"getting-started", "format", "values", "validation", "test-loop",
            "generating"} <= names
    sample = ("<!-- not run: needs your model -->\n```python\nx = 1\n```\n"
              "```python\ny = 2\n```\n<!-- needs: onnxruntime -->\n```python\nz = 3\n```\n")
    got = blocks(sample)
    assert [(b.code, b.skip, b.needs) for b in got] == [
        ("x = 1\n", "needs your model", []), ("y = 2\n", None, []),
        ("z = 3\n", None, ["onnxruntime"])]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_python_example_runs(page: Path, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    text = page.read_text(encoding="utf-8")
    where = re.search(r"<!-- examples run in: (\S+) -->", text)
    folder = tmp_path / "work"
    if where:
        shutil.copytree(ROOT / where[1], folder)
    else:
        folder.mkdir()
    monkeypatch.chdir(folder)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    ran, missing = 0, set()
    for block in blocks(text):
        if block.skip is not None:
            assert block.skip.strip(), f"{page.name}:{block.line}: say why it is not run"
            continue
        absent = {m for m in block.needs if importlib.util.find_spec(m) is None}
        if absent:
            missing |= absent
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            exec(compile(block.code, f"docs/{page.name}:{block.line}", "exec"), namespace)
        ran += 1
    if ran == 0 and missing:
        pytest.skip(f"every example of {page.name} needs {', '.join(sorted(missing))}")
    assert ran > 0, f"no example of {page.name} ran"


def command_blocks(text: str) -> list[tuple[str, list[list[str]]]]:
    """``(folder, commands)`` of each ```sh block marked ``<!-- commands run in: FOLDER -->``:
    its ``onnxdata`` lines as argument lists, comments dropped."""
    out = []
    for m in FENCE.finditer(text):
        where = re.search(r"<!-- commands run in: (\S+) -->", m["marks"])
        if m["lang"] == "sh" and where:
            out.append((where[1], [shlex.split(line.split("#")[0])[1:]
                                   for line in m["code"].splitlines()
                                   if line.startswith("onnxdata ")]))
    return out


COMMAND_PAGES = sorted(p for p in DOCS.glob("*.md")
                       if command_blocks(p.read_text(encoding="utf-8")))


def test_the_tours_commands_are_marked() -> None:
    assert {"index", "getting-started"} <= {p.stem for p in COMMAND_PAGES}


@pytest.mark.parametrize("page", COMMAND_PAGES, ids=[p.name for p in COMMAND_PAGES])
def test_every_marked_command_runs(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The shell sessions of the guide, as the README's tour runs in test_readme.py: each
    ``onnxdata`` line in a copy of the folder the block names, exiting 0."""
    from onnxdata.cli.main import main

    has_ort = importlib.util.find_spec("onnxruntime") is not None
    for n, (where, commands) in enumerate(command_blocks(page.read_text(encoding="utf-8"))):
        folder = tmp_path / f"block{n}"
        shutil.copytree(ROOT / where, folder)
        monkeypatch.chdir(folder)
        assert commands
        for argv in commands:
            argv = [x for arg in argv for x in (sorted(str(p.relative_to(folder))
                    for p in folder.glob(arg)) if "*" in arg else [arg])]
            argv = [str(tmp_path / "x.html") if a == "/tmp/x.html" else a for a in argv]
            if argv[0] == "run" and not has_ort:
                continue
            assert main(argv) == 0, (page.name, argv, capsys.readouterr())
