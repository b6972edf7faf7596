"""``explore --html``: the page's facts, hex spans, caps and pictures; then a real browser.

The first half reads the HTML as text. The second opens pages in headless
Chromium (Debian's package, driven by Playwright; never a downloaded browser)
and clicks through them; it skips, saying why, where no browser is installed.
"""

from __future__ import annotations

import dataclasses
import json
import re
import tracemalloc
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from onnxdata.cli.main import main
from onnxdata.convert.values import from_numpy
from onnxdata.core.messages import SequenceProto, TensorProto
from onnxdata.explorer.readings import byte_table, explore, kind_of_message
from onnxdata.page.page import ENTRY_LIMIT, HEX_LIMIT, ROW_LIMIT, render_page
from onnxdata.wire.format import encode_varint
from tests.browser import launched, open_page
from tests.conftest import CORPUS

EXAMPLE = CORPUS / "test_loop16_seq_none/test_data_set_0/input_2.pb"
TENSOR_FILE = CORPUS / "test_abs/test_data_set_0/input_0.pb"
SEQUENCE_FILE = CORPUS / "test_sequence_insert_at_back/test_data_set_0/input_0.pb"
OPTIONAL_FILE = CORPUS / "test_optional_get_element_optional_tensor/test_data_set_0/input_0.pb"
EMPTY_OPTIONAL = (CORPUS / "test_optional_has_element_empty_optional_input/test_data_set_0/"
                  "input_0.pb")


def _facts(page: str) -> Any:
    found = re.search(r'<script type="application/json" id="facts">(.*?)</script>', page, re.S)
    assert found is not None
    return json.loads(found.group(1))


class _Spans(HTMLParser):
    """The hex text inside each ``data-r`` span of the hex view, nested spans included."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str | None] = []
        self.text: dict[str, str] = {}
        self.folds = 0
        self.in_hex = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id") == "hex":
            self.in_hex = 1
        elif self.in_hex:
            self.in_hex += tag == "div"
        if tag == "span" and self.in_hex:
            self.open.append(a.get("data-r"))
            self.folds += a.get("class") == "fold"

    def handle_endtag(self, tag: str) -> None:
        if tag == "span" and self.open:
            self.open.pop()
        elif tag == "div" and self.in_hex:
            self.in_hex -= 1

    def handle_data(self, data: str) -> None:
        for r in self.open:
            if r is not None and "…" not in data:
                self.text[r] = self.text.get(r, "") + data


def _spans(page: str) -> _Spans:
    p = _Spans()
    p.feed(page)
    return p


def _page(path: Path, **kwargs: Any) -> str:
    return render_page(explore(path, **kwargs))


# --- the page as text ----------------------------------------------------------------------

@pytest.mark.parametrize("path", [EXAMPLE, TENSOR_FILE, SEQUENCE_FILE, OPTIONAL_FILE,
                                  EMPTY_OPTIONAL], ids=lambda p: p.parent.parent.name)
def test_page_embeds_the_json_facts_and_fetches_nothing(
        path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "--json", str(path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    page = _page(path)
    facts = _facts(page)
    assert facts == explore(path).as_json()
    assert {k: printed[k] for k in facts} == facts  # --json may add more (a byte table)
    assert "://" not in page  # no network: nothing is fetched from anywhere
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=|@import|url\(", page)
    assert all(h.startswith("data:") for h in re.findall(r'href="([^"]*)"', page))
    assert len(re.findall(r"<tr", page.split("<table id=readings>")[1].split("</table>")[0])) \
        == 1 + len(printed["readings"])


def test_cli_page_embeds_exactly_what_json_prints(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "page.html"
    assert main(["explore", "--json", "--html", str(out), "--rows", "3", str(SEQUENCE_FILE)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert _facts(out.read_text(encoding="utf-8")) == printed
    assert printed["table"] is not None


def test_the_facts_embedded_are_the_callers_when_given() -> None:
    result = explore(EXAMPLE)
    facts = {**result.as_json(), "table": {"rows": ["</script><b>"]}}
    page = render_page(result, facts=facts)
    assert _facts(page) == facts and "</script><b>" not in page


def test_hex_spans_hold_exactly_their_rows_bytes() -> None:
    data = EXAMPLE.read_bytes()
    result = explore(EXAMPLE)
    rows = byte_table(data, result.chosen or "optional")
    text = _spans(render_page(result)).text
    assert sorted(map(int, text)) == list(range(len(rows)))
    for i, row in enumerate(rows):
        head, _, more = row.bytes.partition(" + ")
        end = row.offset + len(head.split()) + (int(more.split()[0]) if more else 0)
        assert text[str(i)].split() == [f"{b:02X}" for b in data[row.offset:end]], row.field


def test_long_payloads_fold_and_the_page_stays_small(tmp_path: Path) -> None:
    path = tmp_path / "big.pb"
    path.write_bytes(from_numpy(np.arange(1 << 22, dtype=np.float32).reshape(2048, 2048))
                     .SerializeToString())  # 16 MiB
    page = _page(path)
    assert "raw_data, 16 MiB" in page
    assert len(page) < 200_000
    assert 'data-kind=heatmap' in page and "every 22x22" in page


def _many_small(path: Path, count: int) -> None:
    s = from_numpy([np.full((3,), i, np.int64) for i in range(count)], "sequence")
    path.write_bytes(s.SerializeToString())


def test_rows_and_hex_are_capped_with_a_note(tmp_path: Path) -> None:
    """The page asks the engine for ROW_LIMIT rows; the walk's own elision row ("… N more
    fields", naming no bytes) closes the table, and the hex view stops with it."""
    path = tmp_path / "many.pb"
    _many_small(path, 3000)
    page = _page(path)
    every = len(byte_table(path.read_bytes(), "sequence", limit=None))
    assert every > ROW_LIMIT
    assert len(re.findall(r"<tr data-r=", page)) == ROW_LIMIT + 1
    assert f"… {every - ROW_LIMIT:,} more fields</td>" in page
    assert "The hex view stops with the byte table" in page
    assert "… 2936 more elements, not listed" in page  # 64 listed, 12 drawn
    assert page.count("data-kind=tensor>") == 12


def test_nested_outlines_share_one_entry_budget(tmp_path: Path) -> None:
    path = tmp_path / "nested.pb"
    inner = [[np.zeros(2, np.float32)] * 3] * 30
    path.write_bytes(from_numpy([inner] * 30).SerializeToString())  # 30 x 30 x 3 tensors
    whole = _page(path)
    # two valid readings are laid out: the sequence, and (merged) the optional, hidden
    views = whole.split("<section class=view ")[1:]
    assert len(views) == 2 and 'data-kind="optional" hidden>' in views[1]
    page = views[0]  # each view has its own budget
    assert page.count("<li><details open>") == ENTRY_LIMIT
    assert page.count("data-kind=tensor>") == 12
    # depth first: 30 + (30 + 30 x 3) + (30 + 25 x 3 + 1) entries, then nothing is left
    assert "… 2 more elements, not listed" in page
    assert page.count("… 30 more elements, not listed") == 28
    assert len(whole) < 300_000


def test_hex_cap_names_what_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "strings.pb"
    path.write_bytes(from_numpy(np.array([b"x" * 60] * 150, dtype=object)).SerializeToString())
    page = _page(path)
    assert re.search(rf"The hex view stops at byte \d+ after {HEX_LIMIT >> 10} KiB shown", page)
    assert "strings" in page and "data-kind=strings" in page


def _big_sequence(path: Path, count: int, each: int) -> None:
    t = TensorProto(data_type=TensorProto.FLOAT, dims=[each // 4])
    element = t.SerializeToString() + b"\x4a" + encode_varint(each)
    with open(path, "wb") as fh:
        fh.write(SequenceProto(elem_type=SequenceProto.TENSOR).SerializeToString())
        for _ in range(count):
            fh.write(b"\x1a" + encode_varint(len(element) + each) + element)
            fh.write(b"\x3f" * each)


def test_drawing_a_big_sequence_allocates_little(tmp_path: Path) -> None:
    path = tmp_path / "seq.pb"
    _big_sequence(path, 16, 4 << 20)  # 64 MiB on disk, memory-mapped when read
    result = explore(path)
    tracemalloc.start()
    page = render_page(result)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8 << 20, peak
    assert "65536 values in 64 runs" in page and "0.747059" in page


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
                                   ml_dtypes.float4_e2m1fn, ml_dtypes.int4])
def test_narrow_types_are_drawn_through_their_float_values(tmp_path: Path, dtype: Any) -> None:
    path = tmp_path / "t.pb"
    values = np.array([[-2, 0.5], [1, 3]], dtype=np.float32)
    if dtype is ml_dtypes.int4:
        values = np.array([[-2, 0], [1, 3]], dtype=np.float32)
    path.write_bytes(from_numpy(values.astype(dtype)).SerializeToString())
    page = _page(path)
    assert "<th>min</th><td>-2</td>" in page and "<th>max</th><td>3</td>" in page
    assert "data-kind=heatmap" in page and "data-kind=histogram" in page


def test_vectors_draw_bars_or_lines_and_maps_draw_tables(tmp_path: Path) -> None:
    short, long, mapped = tmp_path / "s.pb", tmp_path / "l.pb", tmp_path / "m.pb"
    short.write_bytes(from_numpy(np.array([1.0, np.nan, -1.0])).SerializeToString())
    long.write_bytes(from_numpy(np.sin(np.arange(5000.0))).SerializeToString())
    mapped.write_bytes(from_numpy({b"key</script>": np.array([1.5]), b"b": np.array([2.0])})
                       .SerializeToString())
    assert "data-kind=bar" in _page(short) and "<th>NaN</th><td>1</td>" in _page(short)
    assert "data-kind=line" in _page(long) and "every 13th" in _page(long)
    page = _page(mapped, reading="map")
    assert "data-kind=map" in page and "key&lt;/script&gt;" in page
    assert "key</script>" not in page


def test_bytes_no_message_fits_mark_no_reading(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\xff\xff\xff")
    page = _page(bad)
    assert "none is valid, so none is laid out above" in page and "← marks" not in page
    assert "No reading is valid" in page
    assert "← marks the one shown above" in _page(TENSOR_FILE)


def test_a_single_value_is_listed_not_drawn(tmp_path: Path) -> None:
    for shape in [(1,), (1, 1), (1, 1, 1)]:
        path = tmp_path / "one.pb"
        path.write_bytes(from_numpy(np.full(shape, 2.5, np.float32)).SerializeToString())
        page = _page(path)
        assert "<th>min</th><td>2.5</td>" in page, shape
        assert all(f"data-kind={k}" not in page for k in ("bar", "heatmap", "histogram")), shape


def test_big_values_read_would_build_whole_are_not_drawn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import onnxdata.page.page

    path = tmp_path / "strings.pb"
    path.write_bytes(from_numpy([np.array([b"abc"] * 50, dtype=object)]).SerializeToString())
    assert "data-kind=strings" in _page(path)
    monkeypatch.setattr(onnxdata.page.page, "DRAW_LIMIT", 100)
    page = _page(path)
    assert "Not drawn: a 259 bytes value of string would be built whole" in page
    assert "data-kind=strings" not in page


def test_problems_are_listed_with_paths_up_to_a_cap(tmp_path: Path) -> None:
    s = SequenceProto(elem_type=SequenceProto.TENSOR)
    for _ in range(50):
        s.tensor_values.add(data_type=TensorProto.FLOAT, dims=[3], raw_data=b"\0" * 8)
    path = tmp_path / "bad.pb"
    path.write_bytes(s.SerializeToString())
    page = _page(path, reading="sequence")
    assert "<code>tensor_values[0].raw_data</code>" in page
    assert "<code>tensor_values[19].raw_data</code>" in page
    assert "<code>tensor_values[20].raw_data</code>" not in page
    assert "… 30 more, in the facts at the end" in page
    (seq,) = [r for r in _facts(page)["readings"] if r["kind"] in ("sequence", "SequenceProto")]
    assert len(seq["problems"]) == 50


def test_ambiguous_bytes_are_shown_as_the_first_valid_reading_and_say_so() -> None:
    """With no model, a one-element sequence is also an optional: an Exploration that
    chose neither is laid out and drawn as the first valid reading, with a note."""
    result = dataclasses.replace(explore(EXAMPLE, find=False), chosen=None)
    page = render_page(result)
    assert "<h2>Bytes as SequenceProto</h2>" in page
    assert "valid as SequenceProto and as OptionalProto, and nothing says which" in page
    assert "<tr class=chosen><th>SequenceProto ←" in page
    assert "data-kind=sequence" in page


def test_short_kind_names_in_the_facts_still_show_message_names(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Facts whose readings give ``kind`` as a short name and ``message`` as the message
    name (and a model warning) read the same on the page."""
    from onnxdata.explorer.readings import Exploration

    plain = Exploration.as_json

    def short(self: Exploration) -> dict[str, Any]:
        out = plain(self)
        for r in out["readings"]:
            if "message" not in r:
                r["message"], r["kind"] = r["kind"], kind_of_message(r["kind"])
        out["model_warning"] = "model.onnx is not a model"
        return out

    monkeypatch.setattr(Exploration, "as_json", short)
    page = _page(EXAMPLE)
    assert "<tr class=chosen><th>OptionalProto ← <span class=tag>declared</span>" in page
    assert "<th>SequenceProto</th>" in page and "warning: model.onnx is not a model" in page


def test_an_invalid_reading_is_laid_out_but_not_drawn() -> None:
    page = _page(EXAMPLE, reading="tensor")
    assert "<h2>Bytes as TensorProto</h2>" in page
    assert "Not drawn: the TensorProto reading is not valid." in page
    assert "the value matches the declared type" in _page(EXAMPLE)
    misfit = _page(EXAMPLE, reading="sparse_tensor")
    assert "matches the declared type" not in misfit
    assert '<tr data-r="1" class="d0 misfit">' in misfit


def test_cli_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "explore.html"
    assert main(["explore", str(EXAMPLE), "--html", str(out)]) == 0
    assert capsys.readouterr().out.split() == ["wrote", str(out)]  # the page, not the tables
    assert _facts(out.read_text(encoding="utf-8"))["chosen"] == "optional"
    assert main(["explore", str(EXAMPLE), "--json", "--html", str(out)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["chosen"] == "optional"
    assert captured.err.split() == ["wrote", str(out)]
    assert main(["explore", str(EXAMPLE), "--html", str(tmp_path / "no" / "x.html")]) == 2
    assert "cannot write" in capsys.readouterr().err


# --- in a real browser ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launched() as b:
        yield b


def _write(path: Path, out: Path) -> Path:
    assert main(["explore", str(path), "--html", str(out)]) == 0
    return out


def test_browser_example_page(browser: Any, tmp_path: Path) -> None:
    page_file = _write(EXAMPLE, tmp_path / "explore.html")
    tab, errors = open_page(browser, page_file)
    facts = json.loads(tab.text_content("#facts"))
    assert tab.locator("#readings tbody tr").count() == len(facts["readings"]) == 5
    rows = tab.locator("#bytes tbody tr")
    assert rows.count() == 7
    for i in range(rows.count()):
        rows.nth(i).click()
        span = tab.locator(f'#hex span[data-r="{i}"]')
        assert "pin" in (span.get_attribute("class") or "").split(), i
        assert tab.locator("#hex .pin").count() == 1
    tab.locator('#hex span[data-r="6"]').click()  # raw_data, a leaf: its centre is its own
    assert "pin" in (rows.nth(6).get_attribute("class") or "").split()
    assert "raw_data" in tab.text_content("#info")
    assert tab.locator("#value figure[data-kind=optional]").is_visible()
    tab.screenshot(path=str(tmp_path / "explore.png"), full_page=True)
    assert (tmp_path / "explore.png").stat().st_size > 10_000
    assert errors == []


@pytest.mark.parametrize(("path", "selector"), [
    (TENSOR_FILE, "figure[data-kind=tensor] svg[data-kind=heatmap]"),
    (SEQUENCE_FILE, "figure[data-kind=sequence] figure[data-kind=tensor] svg"),
    (OPTIONAL_FILE, "figure[data-kind=optional] figure[data-kind=tensor] svg"),
], ids=["tensor", "sequence", "optional"])
def test_browser_value_pictures(browser: Any, tmp_path: Path, path: Path, selector: str
                                ) -> None:
    tab, errors = open_page(browser, _write(path, tmp_path / "page.html"))
    picture = tab.locator(f"#value {selector}").first
    assert picture.is_visible()
    box = picture.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 50
    assert tab.evaluate("Array.from(document.images).every(i => i.complete)")
    assert errors == []


def test_browser_charts_are_parsed_as_drawn(browser: Any, tmp_path: Path) -> None:
    """Bars, lines and heatmaps as the browser parses them: every bar a direct child of
    its chart (an unquoted ``class=bar/>`` would nest them and hide all but one), lines
    unfilled, the heatmap's inline PNG decoded."""
    path = tmp_path / "charts.pb"
    values = [np.array([3, 1, 4, 1, 5, 9, 2, 6], np.float32),
              np.sin(np.arange(2000, dtype=np.float32) / 50),
              np.arange(12, dtype=np.float32).reshape(3, 4)]
    path.write_bytes(from_numpy(values).SerializeToString())
    tab, errors = open_page(browser, _write(path, tmp_path / "charts.html"))
    assert tab.locator("svg[data-kind=bar] > rect").count() == 8
    assert tab.locator("svg[data-kind=histogram] > rect").count() >= 3
    fills = tab.eval_on_selector_all("svg[data-kind=line] > polyline",
                                     "ls => ls.map(l => getComputedStyle(l).fill)")
    assert fills == ["none"]
    size = tab.eval_on_selector("svg[data-kind=heatmap] image",
                                "i => i.getBBox().width * i.getBBox().height")
    assert size > 10_000
    assert errors == []


@pytest.mark.parametrize("path", [TENSOR_FILE, SEQUENCE_FILE, OPTIONAL_FILE],
                         ids=["tensor", "sequence", "optional"])
def test_browser_short_hex_view_has_no_scrollbar(browser: Any, tmp_path: Path,
                                                 path: Path) -> None:
    """The nested spans' underlines fit inside the hex box: a few bytes show no scrollbar
    (they overflowed it by a pixel, and every small file's hex view scrolled)."""
    tab, errors = open_page(browser, _write(path, tmp_path / "page.html"))
    scroll, client = tab.evaluate(
        "(() => { const h = document.getElementById('hex');"
        " return [h.scrollHeight, h.clientHeight]; })()")
    assert scroll <= client
    assert errors == []


def test_browser_switches_between_the_valid_readings(browser: Any, tmp_path: Path) -> None:
    """A one-element sequence is also an optional: both are laid out, the selector shows
    one in place of the other, and each view links its own hex and byte table."""
    path = tmp_path / "one.pb"
    path.write_bytes(from_numpy([np.arange(6, dtype=np.float32).reshape(2, 3)])
                     .SerializeToString())
    tab, errors = open_page(browser, _write(path, tmp_path / "one.html"))
    lead = tab.text_content(".lead") or ""
    assert lead.startswith("Read as SequenceProto (one of several valid readings")
    sequence = tab.locator('section.view[data-kind="sequence"]')
    optional = tab.locator('section.view[data-kind="optional"]')
    assert sequence.is_visible() and not optional.is_visible()
    assert sequence.locator("figure[data-kind=sequence]").is_visible()
    assert tab.locator("#reading option").all_text_contents() == ["SequenceProto",
                                                                  "OptionalProto"]
    assert "Name one with --reading" not in tab.content()
    tab.select_option("#reading", "optional")
    assert optional.is_visible() and not sequence.is_visible()
    assert (optional.locator(".lead").text_content() or "").startswith(
        "Read as OptionalProto (also valid: the same bytes)")
    assert optional.locator("figure[data-kind=optional] figure[data-kind=tensor] svg") \
        .first.is_visible()
    assert (optional.locator("h2").first.text_content() or "") == "Value as OptionalProto"
    rows = optional.locator("table.bytes tbody tr")
    rows.nth(1).click()
    span = optional.locator('.hex span[data-r="1"]')
    assert "pin" in (span.get_attribute("class") or "").split()
    assert sequence.locator(".hex .pin").count() == 0  # the hidden view is untouched
    assert "tensor_value" in (optional.locator(".info").text_content() or "")
    tab.screenshot(path=str(tmp_path / "switched.png"), full_page=True)
    assert (tmp_path / "switched.png").stat().st_size > 10_000
    tab.select_option("#reading", "sequence")
    assert sequence.is_visible() and not optional.is_visible()
    assert errors == []


def test_browser_page_leads_with_the_reading_and_folds_the_others(
        browser: Any, tmp_path: Path) -> None:
    """A plain 3-D tensor: the value comes first, and the four wrong readings are one line
    each, their problems folded until clicked."""
    tab, errors = open_page(browser, _write(TENSOR_FILE, tmp_path / "tensor.html"))
    assert (tab.text_content(".lead") or "").startswith("Read as TensorProto (the reading "
                                                        "the model declares, valid)")
    headings = tab.locator("h2").all_text_contents()
    assert headings[:3] == ["Value as TensorProto", "Bytes as TensorProto", "Readings"]
    assert tab.locator("#switch").count() == 0  # one valid reading: nothing to switch
    rows = tab.locator("#readings tbody tr")
    heights = [rows.nth(i).bounding_box()["height"] for i in range(1, rows.count())]
    assert max(heights) < 80  # one line (and a folded summary), not a list of problems
    folded = tab.locator("#readings details")
    assert folded.count() >= 1
    first = folded.first
    assert not first.locator("ul.problems").is_visible()
    first.locator("summary").click()
    assert first.locator("ul.problems").is_visible()
    tab.screenshot(path=str(tmp_path / "tensor.png"), full_page=True)
    assert errors == []
