"""diff and compare in bounded memory (issue 23, findings 4, 5 and 9): differences are
streamed (all counted, the first N kept), and the CLI's diff reads copies, so a file
truncated under it is an error, never SIGBUS."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import onnxdata
from onnxdata.cli.main import main
from onnxdata.convert.compare import compare


def _pair(tmp_path: Path, n: int = 3000) -> tuple[Path, Path]:
    a = [np.full(4, i, np.float32) for i in range(n)]
    b = [x * 2 + 1 for x in a]
    pa, pb = tmp_path / "a.pb", tmp_path / "b.pb"
    onnxdata.write(a, pa)
    onnxdata.write(b, pb)
    return pa, pb


@pytest.mark.slow
def test_collect_counts_every_difference_and_keeps_the_first(tmp_path: Path) -> None:
    from onnxdata.convert.compare import collect

    a = [np.full(4, i, np.float32) for i in range(3000)] + [[1], {b"k": np.zeros(1)}]
    b = [x * 2 + 1 for x in a[:3000]] + [[1, 2], {b"j": np.zeros(1)}]
    found = collect(a, b, keep=7)
    assert found.count == 3002 and len(found.kept) == 7
    assert [d.path for d in found.kept] == [f"[{i}]" for i in range(7)]
    assert found.left_out == {"values": 2993, "length": 1, "keys": 1}
    assert compare(a, b)[:7] == found.kept and len(compare(a, b)) == 3002


def test_equal_arrays_are_equal_by_their_bytes_and_nan_rules_still_hold() -> None:
    x = np.arange(1 << 20, dtype=np.float64)
    x[5] = np.nan
    assert compare(x, x.copy()) == []
    assert len(compare(x, x.copy(), equal_nan=False)) == 1  # NaN is not itself then
    z = np.zeros(3)
    assert compare(z, -z) == []  # different bytes, equal values


def test_diff_json_keeps_the_first_differences_and_counts_all(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from onnxdata.cases import diff

    pa, pb = _pair(tmp_path, diff.JSON_LIMIT + 500)
    assert main(["diff", str(pa), str(pb), "--json"]) == 1
    got = json.loads(capsys.readouterr().out)["files"][0]
    assert got["count"] == diff.JSON_LIMIT + 500 and len(got["differences"]) == diff.JSON_LIMIT
    assert got["left_out"] == {"values": 500}
    assert main(["diff", str(pa), str(pb)]) == 1
    text = capsys.readouterr().out
    assert f"{diff.JSON_LIMIT + 500} differences" in text
    assert len(text.splitlines()) == 1 + diff.SHOWN + 1


REWRITER = textwrap.dedent("""
    import os, sys, time
    path, whole = sys.argv[1], open(sys.argv[1], "rb").read()
    print("ready", flush=True)
    while True:  # whole long enough to be read, then short while it is compared
        time.sleep(0.15)
        os.truncate(path, 100)  # a mapped page past the end faults: SIGBUS
        time.sleep(0.15)
        with open(path, "r+b") as fh:
            fh.write(whole)
""")


@pytest.mark.slow
def test_diff_under_a_truncating_rewriter_never_dies_by_a_signal(tmp_path: Path) -> None:
    pa, pb = _pair(tmp_path, 200)
    big = [np.arange(1 << 20, dtype=np.float32) + i for i in range(8)]  # 32 MiB mapped
    onnxdata.write(big, pa)
    onnxdata.write(big, pb)
    writer = subprocess.Popen([sys.executable, "-c", REWRITER, str(pa)], stdout=subprocess.PIPE,
                              text=True)
    codes = []
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        for _ in range(int(os.environ.get("ONNXDATA_DIFF_RACE_RUNS", "12"))):
            codes.append(subprocess.run([sys.executable, "-m", "onnxdata", "diff", str(pa),
                                         str(pb)], capture_output=True, timeout=120).returncode)
    finally:
        writer.kill()
        writer.wait()
    killed = [signal.Signals(-c).name for c in codes if c < 0]
    assert not killed, f"killed by {killed}"
    assert set(codes) <= {0, 1, 2}
