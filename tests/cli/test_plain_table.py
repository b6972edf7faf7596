"""A long byte table printed as plain lines (issue 23, finding 10: ``explore --rows all``
cost about 0.55 ms a row in rich's table layout, a 1 MB file over 300 s), laid out as the
rich table of a short one, and ``--json``'s documented row cap."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import onnxdata
from onnxdata.cli import main as cli
from onnxdata.explorer.readings import byte_table, explore


def _sequence(path: Path, n: int) -> Path:
    onnxdata.write([np.arange(2, dtype=np.int64) + i for i in range(n)], path)
    return path


def _explore(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert cli.main(["explore", *argv]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("limit", ["all", "7"])
def test_the_plain_table_is_laid_out_as_rich_lays_out_a_short_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        limit: str) -> None:
    path = str(_sequence(tmp_path / "seq.pb", 12))
    rich_text = _explore(capsys, path, "--kind", "seq", "--limit", limit)
    monkeypatch.setattr(cli, "PLAIN_ROWS", 0)
    plain_text = _explore(capsys, path, "--kind", "seq", "--limit", limit)
    assert "Bytes" in rich_text and "tensor_values[1]" in rich_text
    assert plain_text == rich_text


def test_limit_all_prints_every_row_of_a_long_table_one_line_each(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    n = cli.PLAIN_ROWS  # 4 rows a tensor and elem_type: well past the plain threshold
    path = _sequence(tmp_path / "seq.pb", n)
    rows = byte_table(path.read_bytes(), explore(str(path), reading="sequence").chosen,
                      limit=None)
    assert len(rows) == 4 * n + 1
    lines = _explore(capsys, str(path), "--kind", "seq", "--limit", "all").splitlines()
    start = lines.index("bytes as SequenceProto") + 3  # the header and its rule
    body = lines[start:]
    assert len(body) == len(rows)
    for line, row in zip(body, rows, strict=True):
        assert line.startswith(row.bytes) and f"   {row.field} " in line
        assert line.rstrip().endswith(row.value.rstrip())
    assert body[-1].split()[0:3] == ["4A", "10", "+"]


def test_a_cell_of_the_plain_table_cannot_break_its_line() -> None:
    from onnxdata.cli.plain_table import plain_table_lines

    lines = list(plain_table_lines(("A", "B"), [("x\ny", "\x1b[31mred"), ("z", "ok")]))
    assert lines == ["A      B", "─" * (4 + 3 + 11), "x\\ny   \\x1b[31mred", "z      ok"]


def test_json_keeps_at_most_json_rows_even_with_limit_all(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli.JSON_ROWS == 100_000
    with pytest.raises(SystemExit):
        cli.main(["explore", "--help"])
    assert "keep at most 100,000" in " ".join(capsys.readouterr().out.split())  # documented
    monkeypatch.setattr(cli, "JSON_ROWS", 10)
    path = _sequence(tmp_path / "seq.pb", 20)
    got = json.loads(_explore(capsys, str(path), "--kind", "seq", "--json", "--limit", "all"))
    rows = got["table"]["rows"]
    assert len(rows) == 11 and rows[-1]["elided"] == 4 * 20 + 1 - 10, rows[-1]
