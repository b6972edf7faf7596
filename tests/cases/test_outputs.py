"""Outputs that cannot be forged or lost (issue 23, findings 3, 7, 11 and 17): names with
control characters or bytes that are not UTF-8 are printed escaped (JSON stays exact), the
page is written atomically and caps every string, and memoryviews of any shape load."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import onnxdata
from onnxdata.cli.main import main
from onnxdata.errors import DecodeError

BAD = "ev\x1b[2Jil\nname\udcff.pb"  # an ANSI escape, a newline, a byte that is not UTF-8


def test_printable_escapes_controls_escapes_and_undecodable_bytes() -> None:
    from onnxdata.cli.console import printable

    assert printable(BAD) == "ev\\x1b[2Jil\\nname\\xff.pb"
    assert printable("a\nb\tc", newlines=True) == "a\nb\\tc"
    assert printable("plain ü") == "plain ü"
    assert printable("\x9b\x7f") == "\\x9b\\x7f"


@pytest.mark.parametrize("command", ["validate", "show", "explore"])
def test_a_hostile_file_name_is_printed_escaped_on_one_line(tmp_path: Path, command: str,
                                                           capfd: pytest.CaptureFixture[str]
                                                           ) -> None:
    path = tmp_path / BAD
    onnxdata.write(np.arange(3, dtype=np.int64), path)
    assert main([command, os.fsdecode(path)]) == 0
    out, err = capfd.readouterr()
    assert "\x1b" not in out + err and "\udcff" not in out + err
    assert f"{tmp_path}/ev\\x1b[2Jil\\nname\\xff.pb" in out
    if command == "validate":
        assert len(out.splitlines()) == 1


def test_diff_prints_hostile_names_escaped_and_json_exact(tmp_path: Path,
                                                          capfd: pytest.CaptureFixture[str]
                                                          ) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    onnxdata.write(np.arange(3, dtype=np.int64), a / BAD)
    onnxdata.write(np.arange(1, 4, dtype=np.int64), b / BAD)
    assert main(["diff", str(a), str(b)]) == 1
    out, _ = capfd.readouterr()
    assert "\x1b" not in out and out.splitlines()[0].startswith("ev\\x1b[2Jil\\nname\\xff.pb")
    assert main(["diff", str(a), str(b), "--json"]) == 1
    got = json.loads(capfd.readouterr().out)
    assert got["files"][0]["name"] == BAD  # exact: json's \\udcff escape round-trips


def test_the_page_of_a_file_name_that_is_not_utf8_is_written(tmp_path: Path,
                                                             capfd: pytest.CaptureFixture[str]
                                                             ) -> None:
    path = tmp_path / "x\udcff.pb"
    onnxdata.write(np.arange(3, dtype=np.int64), path)
    page = tmp_path / "old.html"
    page.write_text("the old page")
    assert main(["explore", os.fsdecode(path), "--html", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert "x\\xff.pb" in text and "the old page" not in text


def test_a_full_disk_keeps_the_old_page(tmp_path: Path) -> None:
    path = tmp_path / "big.pb"
    onnxdata.write([np.arange(64, dtype=np.float32) + i for i in range(300)], path)
    page = tmp_path / "old.html"
    page.write_text("the old page")
    child = textwrap.dedent("""
        import resource, signal, sys
        from onnxdata.cli.main import main
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the cap fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))
        sys.exit(main(["explore", sys.argv[1], "--html", sys.argv[2]]))
    """)
    done = subprocess.run([sys.executable, "-c", child, str(path), str(page)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "cannot write" in done.stderr and str(page) in done.stderr
    assert page.read_text() == "the old page"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.pb", "old.html"]


def test_the_page_caps_every_string(tmp_path: Path) -> None:
    big = b"&" * (1 << 20)
    path = tmp_path / "s.pb"
    onnxdata.write({b"k" * 100_000: np.array([big] * 8, dtype=object)}, path, "map")
    page = tmp_path / "s.html"
    assert main(["explore", str(path), "--html", str(page)]) == 0
    assert page.stat().st_size < 200_000
    assert "more characters" in page.read_text()


@pytest.mark.parametrize("shape", [(2, 2), (3, 1, 2), (), (0, 4)])
def test_a_memoryview_of_any_shape_loads_or_raises_our_error(shape: tuple[int, ...]) -> None:
    view = memoryview(np.zeros(shape, np.uint8))
    try:
        onnxdata.load(view, "tensor")
    except DecodeError as exc:
        assert "<bytes>" in str(exc)


def test_a_two_dimensional_memoryview_of_a_message_loads(tmp_path: Path) -> None:
    onnxdata.write(np.arange(4, dtype=np.int64), tmp_path / "t.pb")
    data = (tmp_path / "t.pb").read_bytes()
    rows = np.frombuffer(data, np.uint8)
    for shape in ((1, -1), (-1, 1)):
        assert list(onnxdata.load(memoryview(rows.reshape(shape)), "tensor").dims) == [4]
