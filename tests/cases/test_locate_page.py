"""The page of ``onnxdata locate --report out.html`` in a real headless Chromium: the graph
path with the located node marked, the differing value's pictures, no error and no
request leaving the file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onnxdata.cli.main import main
from tests.browser import launched, open_page

pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
pytest.importorskip("onnx", reason="locate edits the model with onnx")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launched() as b:
        yield b


def test_the_locate_page_in_a_browser(browser: Any, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cases.test_locate import PERTURBED, _chain

    case = _chain(tmp_path / "chain", "relu")
    page = tmp_path / "where.html"
    assert main(["locate", str(case), "--backend", PERTURBED, "--in-process", "--report",
                 str(page)]) == 1
    capsys.readouterr()
    tab, errors = open_page(browser, page)
    steps = tab.locator("ol.path li")
    assert [s.text_content() for s in steps.all()] == [
        "'add' (Add)", "'construct' (SequenceConstruct)", "'at' (SequenceAt)", "'relu' (Relu)"]
    assert tab.locator("ol.path li.here").text_content() == "'relu' (Relu)"
    assert "Output 0 'r' at [0, 1]" in (tab.text_content("h3:nth-of-type(2)") or "")
    figures = tab.locator(".figs figure")
    assert figures.count() == 2 and all(f.is_visible() for f in figures.all())
    assert PERTURBED in (figures.nth(0).text_content() or "")
    assert "reference" in (figures.nth(1).text_content() or "")
    facts = json.loads(tab.text_content("#facts") or "")
    assert (facts["node"]["name"], facts["spread"]) == ("relu", 4)
    assert errors == []
