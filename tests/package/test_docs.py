"""The documentation site (docs/, mkdocs.yml; `make docs`) cannot drift from the code: the CLI
pages are the parser's, every public name is in the API reference with a docstring, and the
built site loads nothing from another host (it works offline and from file://)."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import pytest

import onnxdata
import onnxdata.cases

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MKDOCS = ROOT / ".venv-docs" / "bin" / "mkdocs"
#: The generated message classes' docstrings are in their stubs (the classes protobuf builds
#: at run time all say "A ProtocolMessage"); the reference shows the stubs' text.
STUBS = [ROOT / "generated" / "onnx_data_pb2.pyi", ROOT / "generated" / "onnx_ml_pb2.pyi"]


def _cli_pages(out: Path) -> dict[str, str]:
    """The pages tools/cli_pages.py writes, run as a developer runs it, into ``out``."""
    subprocess.run([sys.executable, str(ROOT / "tools" / "cli_pages.py"), "--out", str(out)],
                   check=True, capture_output=True, text=True, timeout=120)
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(out.glob("*.md"))}


def stale_pages(kept: Path, written: dict[str, str]) -> list[str]:
    """The CLI pages in ``kept`` that differ from ``written`` (or are missing or extra)."""
    have = {p.name: p.read_text(encoding="utf-8") for p in sorted(kept.glob("*.md"))}
    return sorted(n for n in set(have) | set(written) if have.get(n) != written.get(n))


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("cli_pages", ROOT / "tools" / "cli_pages.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_pages_are_the_parsers(tmp_path: Path) -> None:
    stale = stale_pages(DOCS / "cli", _cli_pages(tmp_path))
    assert stale == [], f"docs/cli/ is stale ({', '.join(stale)}): python tools/cli_pages.py"


def test_a_hand_edit_is_caught(tmp_path: Path) -> None:
    written = _cli_pages(tmp_path / "written")
    kept = tmp_path / "kept"
    shutil.copytree(DOCS / "cli", kept)
    page = kept / "run.md"
    page.write_text(page.read_text(encoding="utf-8").replace("a second backend", "another"),
                    encoding="utf-8")
    (kept / "gone.md").write_text("# a page no subcommand has\n", encoding="utf-8")
    assert stale_pages(kept, written) == ["gone.md", "run.md"]


def test_a_parser_change_without_regeneration_is_caught(
        monkeypatch: pytest.MonkeyPatch) -> None:
    generator = _generator()
    assert stale_pages(DOCS / "cli", generator.pages()) == []
    real = generator.build_parser

    def changed() -> argparse.ArgumentParser:
        parser = real()
        sub = parser._subparsers._group_actions[0]  # type: ignore[union-attr]
        sub.choices["run"].add_argument("--seed", type=int, help="a new option")
        return parser

    monkeypatch.setattr(generator, "build_parser", changed)
    assert stale_pages(DOCS / "cli", generator.pages()) == ["run.md"]


def test_every_subcommand_has_a_page_with_its_options_and_exit_codes(tmp_path: Path) -> None:
    from onnxdata.cli.main import EXIT_CODES, build_parser

    pages = _cli_pages(tmp_path)
    sub = build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
    assert set(pages) == {"index.md"} | {f"{n}.md" for n in sub.choices}
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for name, parser in sub.choices.items():
        page = pages[f"{name}.md"]
        assert f"cli/{name}.md" in nav, f"mkdocs.yml's nav lacks cli/{name}.md"
        assert EXIT_CODES in page
        for action in parser._actions:
            for option in action.option_strings:
                assert f"`{option}" in page, (name, option)


def _stub_docstrings() -> dict[str, str]:
    out = {}
    for stub in STUBS:
        for node in ast.parse(stub.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                out[node.name] = ast.get_docstring(node) or ""
    return out


def _docstring(module: object, name: str) -> str:
    obj = getattr(module, name)
    if getattr(obj, "DESCRIPTOR", None) is not None:  # a generated message class
        return _stub_docstrings().get(name, "")
    return inspect.getdoc(obj) or ""


PUBLIC = [(onnxdata, n) for n in onnxdata.__all__] + \
    [(onnxdata.cases, n) for n in onnxdata.cases.__all__]


@pytest.mark.parametrize(("module", "name"), PUBLIC,
                         ids=[f"{m.__name__}.{n}" for m, n in PUBLIC])
def test_every_public_name_is_in_the_reference_with_a_docstring(module: object,
                                                                name: str) -> None:
    pages = "\n".join(p.read_text(encoding="utf-8") for p in (DOCS / "api").glob("*.md"))
    qualified = f"{module.__name__}.{name}"  # type: ignore[attr-defined]
    assert re.search(rf"^::: {re.escape(qualified)}$", pages, re.M), \
        f"{qualified} is missing from docs/api/"
    assert _docstring(module, name).strip(), f"{qualified} has no docstring"


def test_the_message_classes_have_their_schemas_docstrings() -> None:
    assert "associative table" in _docstring(onnxdata, "MapProto")
    assert _docstring(onnxdata, "load").startswith("Parse one message")


# --- the built site ---------------------------------------------------------------------

class _Loads(HTMLParser):
    """Every URL a page loads by itself: <link href>, <script src>, <img src> and the like
    (an <a href> is a link the reader may follow, not a load), and url()/@import in styles."""

    TAGS: ClassVar[dict[str, tuple[str, ...]]] = {
        "link": ("href",), "script": ("src",), "img": ("src", "srcset"),
        "iframe": ("src",), "source": ("src", "srcset"), "video": ("src", "poster"),
        "audio": ("src",), "embed": ("src",), "object": ("data",), "input": ("src",)}

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if value and key in self.TAGS.get(tag, ()):
                self.urls += [u.split()[0] for u in value.split(",")] if key == "srcset" \
                    else [value]
            if key == "style" and value:
                self.urls += css_urls(value)
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.urls += css_urls(data)


def css_urls(css: str) -> list[str]:
    found = re.findall(r"""url\(\s*['"]?([^'")\s]+)""", css)
    return found + re.findall(r"""@import\s+['"]([^'"]+)""", css)


def external(url: str) -> bool:
    """A URL on another host (a scheme's //host, or protocol-relative //host)."""
    parts = urlsplit(url.strip())
    return bool(parts.netloc) or parts.scheme in ("http", "https", "ftp")


def external_loads(site: Path) -> list[str]:
    """``"page: url"`` for every load from another host in the built site's pages and CSS."""
    out = []
    for page in sorted(site.rglob("*.html")):
        loads = _Loads()
        loads.feed(page.read_text(encoding="utf-8"))
        out += [f"{page.relative_to(site)}: {u}" for u in loads.urls if external(u)]
    for sheet in sorted(site.rglob("*.css")):
        text = sheet.read_text(encoding="utf-8")
        out += [f"{sheet.relative_to(site)}: {u}" for u in css_urls(text) if external(u)]
    return out


def test_the_load_check_finds_a_font_a_script_and_an_import(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text(
        '<link rel="stylesheet" href="https://fonts.googleapis.com/css?family=Roboto">'
        '<script src="//cdn.example.org/x.js"></script><img src="img/ok.png">'
        '<a href="https://onnx.ai">a link is not a load</a>'
        '<style>@import "https://x.org/a.css"; b { background: url(local.png) }</style>')
    (tmp_path / "a.css").write_text("@font-face { src: url('https://x.org/f.woff2') }")
    assert external_loads(tmp_path) == [
        "index.html: https://fonts.googleapis.com/css?family=Roboto",
        "index.html: //cdn.example.org/x.js", "index.html: https://x.org/a.css",
        "a.css: https://x.org/f.woff2"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as `make docs` builds it (strict), into a temporary folder."""
    if not MKDOCS.exists():
        why = "the docs venv (.venv-docs) is absent: `make .venv-docs/.ok` creates it"
        if os.environ.get("ONNXDATA_REQUIRE_GEN"):
            pytest.fail(why)
        pytest.skip(why)
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run([str(MKDOCS), "build", "--strict", "--quiet", "--site-dir", str(out)],
                           cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert built.returncode == 0, built.stderr
    return out


@pytest.mark.builds
def test_the_built_site_loads_nothing_from_outside(site: Path) -> None:
    assert (site / "index.html").exists() and (site / "expectations.html").exists()
    assert external_loads(site) == []


@pytest.mark.builds
def test_the_built_reference_shows_every_public_name(site: Path) -> None:
    pages = (site / "api" / "index.html").read_text(encoding="utf-8") + \
        (site / "api" / "cases.html").read_text(encoding="utf-8")
    for module, name in PUBLIC:
        assert f'id="{module.__name__}.{name}"' in pages, name  # type: ignore[attr-defined]
