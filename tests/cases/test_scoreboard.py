"""The scoreboard page (``onnxdata run ... --report out.html``), in headless chromium: rows,
the filters, a failure's differences and pictures, the header; and it is written atomically."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onnxdata.cases.case_run import SetResult
from onnxdata.cases.scoreboard import render_page, write_report
from onnxdata.cli.main import main
from onnxdata.errors import OnnxDataError
from tests.browser import launched, open_page

DATA = Path(__file__).parents[1] / "data"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launched() as b:
        yield b


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
    root = tmp_path_factory.mktemp("board")
    for name in ("test_abs", "test_sequence_insert_at_back"):
        shutil.copytree(DATA / "onnx-node" / name, root / "cases" / name)
    shutil.copytree(DATA / "ort-known" / "test_dft", root / "cases" / "test_dft")
    (root / "e.toml").write_text('[[skip]]\ncase = "test_abs"\nreason = "<b>not</b> now"\n')
    out = root / "board.html"
    assert main(["run", str(root / "cases"), "--expectations", str(root / "e.toml"),
                 "--report", str(out)]) == 1
    return out


def test_the_page_in_a_browser(browser: Any, page_file: Path) -> None:
    tab, errors = open_page(browser, page_file)
    rows = tab.locator("tbody tr.row")
    assert rows.count() == 3
    assert tab.text_content("#shown") == "3"
    facts = json.loads(tab.text_content("#facts") or "")
    assert facts["summary"]["counts"] == {"pass": 1, "fail": 1, "xfail": 0, "skip": 1,
                                          "error": 0, "unchecked": 0}
    assert "onnxruntime" in facts["header"] and "CPUExecutionProvider" in tab.text_content("dl")
    detail = tab.locator("tr.detail")
    assert detail.count() == 1
    text = detail.text_content() or ""
    assert "output 0 'y'" in text and "[0, 0, 0, 1]" in text
    assert detail.locator("figure").count() == 2 and detail.locator("svg").count() >= 2
    assert tab.locator("td", has_text="<b>not</b> now").count() == 1  # escaped, not bold
    tab.select_option("#status", "fail")
    assert tab.text_content("#shown") == "1" and detail.is_visible()
    assert [r.is_visible() for r in rows.all()] == [False, True, False]  # by case name
    tab.select_option("#status", "")
    tab.fill("#name", "sequence")
    assert tab.text_content("#shown") == "1" and not detail.is_visible()
    tab.fill("#name", "")
    assert tab.text_content("#shown") == "3"
    assert errors == []


def test_a_failed_write_keeps_the_old_report(tmp_path: Path) -> None:
    out = tmp_path / "board.html"
    out.write_text("old")
    results = [SetResult("test_x", str(tmp_path / "test_x" / "test_data_set_0"),
                         "test_data_set_0", "pass", 0.5)]
    (tmp_path / "dir.html").mkdir()
    with pytest.raises(OnnxDataError, match="a folder, not a file"):
        write_report(tmp_path / "dir.html", results, {"backend": "ort"})
    write_report(out, results, {"backend": "ort"})
    assert "test_x[test_data_set_0]" in out.read_text()
    assert "\ud800" not in render_page([SetResult("a\udce9", "f", "s", "pass")], {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["board.html", "dir.html"]


def test_a_failure_line_on_the_page_says_which_side_is_which() -> None:
    import numpy as np

    from onnxdata.cases.case_run import OutputCheck
    from onnxdata.convert.compare import compare

    found = tuple(compare([np.array([[1.0, 8.0]])], [np.array([[1.0, 8.5]])]))
    result = SetResult("test_x", "f", "test_data_set_0", "fail",
                       outputs=(OutputCheck(0, "y", found),))
    page = render_page([result], {})
    assert "[0][0, 1]: actual 8 vs expected 8.5" in page  # was "[0][0, 1]: 8 vs 8.5"
