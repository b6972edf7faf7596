"""One rule for ambiguous bytes in every command, the byte table's row cap, and the
progress bar: on a terminal only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import onnxdata
from onnxdata.cli.main import main
from onnxdata.errors import DecodeError
from onnxdata.explorer.readings import byte_table
from tests.conftest import CORPUS

#: A sequence of one sequence: also an optional holding that sequence (the same bytes).
FOUR_WAY = CORPUS / "test_loop16_seq_none/test_data_set_0/input_2.pb"
BAR = "━"


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture
def ambiguous(tmp_path: Path) -> Path:
    p = tmp_path / "value.pb"  # outside the test-data layout: no model says which
    p.write_bytes(FOUR_WAY.read_bytes())
    return p


def test_validate_says_every_valid_reading(ambiguous: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(ambiguous)]) == 0
    out = _flat(capsys.readouterr().out)
    assert "valid as SequenceProto or OptionalProto (the same bytes)" in out
    assert main(["validate", "--kind", "optional", str(ambiguous)]) == 0
    out = _flat(capsys.readouterr().out)
    assert "valid OptionalProto" in out and "the same bytes" not in out


def test_explore_json_says_ambiguous(ambiguous: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", "--json", str(ambiguous)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ambiguous"] is True and out["chosen"] is None
    assert out["valid_readings"] == ["sequence", "optional"]
    assert [r["kind"] for r in out["readings"] if r["valid"]] == out["valid_readings"]
    assert out["table"]["reading"] == "sequence"
    assert main(["explore", "--json", "--reading", "optional", str(ambiguous)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["ambiguous"] is False and out["chosen"] == "optional"
    assert out["table"]["reading"] == "optional"
    kinds = {r["kind"] for r in out["readings"]}
    assert out["chosen"] in kinds  # one naming scheme for readings, declared and chosen
    assert main(["explore", "--json", str(FOUR_WAY)]) == 0  # the model says which
    out = json.loads(capsys.readouterr().out)
    assert out["ambiguous"] is False and out["declared"] == out["chosen"] == "optional"
    assert out["declared"] in kinds


def test_explore_table_names_the_ambiguity(ambiguous: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", str(ambiguous)]) == 0
    out = _flat(capsys.readouterr().out)
    assert "valid as SequenceProto or OptionalProto (the same bytes); pick one with " \
           "--kind KIND" in out
    assert "bytes as SequenceProto (one of the valid readings)" in out


def test_show_and_read_say_which_kind_to_pass(ambiguous: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(ambiguous)]) == 2
    err = _flat(capsys.readouterr().err)
    assert "valid as SequenceProto or OptionalProto (the same bytes)" in err
    assert "say which with --kind sequence or --kind optional" in err
    with pytest.raises(DecodeError, match=r'say which with kind="sequence" or '
                                          r'kind="optional"'):
        onnxdata.read(ambiguous)
    assert main(["show", "--kind", "sequence", str(ambiguous)]) == 0
    assert onnxdata.read(ambiguous, "optional") == onnxdata.read(ambiguous, "sequence")[0]


# --- the byte table's row cap ---------------------------------------------------------------

@pytest.fixture
def many_fields(tmp_path: Path) -> Path:
    p = tmp_path / "many.pb"
    onnxdata.write([np.arange(3, dtype=np.int64)] * 150, p)  # 4 rows per tensor
    return p


def test_rows_cap_and_elision_row(many_fields: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    total = len(byte_table(many_fields.read_bytes(), "sequence", limit=None))
    assert total > 250
    assert main(["explore", "--rows", "10", str(many_fields)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    elided = [line for line in lines if "more fields" in line]
    assert len(elided) == 1 and f"… {total - 10:,} more fields" in elided[0]
    table = lines[lines.index(next(x for x in lines if x.startswith("Bytes"))) + 2:]
    assert len(table) == 11 and "more fields" in table[-1]
    assert main(["explore", str(many_fields)]) == 0  # 200 by default
    assert f"… {total - 200:,} more fields" in capsys.readouterr().out
    assert main(["explore", "--rows", "all", str(many_fields)]) == 0
    assert "more fields" not in capsys.readouterr().out


def test_rows_in_json(many_fields: Path, capsys: pytest.CaptureFixture[str]) -> None:
    total = len(byte_table(many_fields.read_bytes(), "sequence", limit=None))
    assert main(["explore", "--json", "--rows", "5", str(many_fields)]) == 0
    rows = json.loads(capsys.readouterr().out)["table"]["rows"]
    assert len(rows) == 6 and rows[-1] == {"elided": total - 5,
                                           "value": f"… {total - 5:,} more fields"}
    assert {"offset", "depth", "bytes", "field", "value"} == rows[0].keys()
    assert main(["explore", "--json", "--rows", "all", str(many_fields)]) == 0
    assert len(json.loads(capsys.readouterr().out)["table"]["rows"]) == total


def test_rows_keep_the_misfit_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "cut.pb"
    onnxdata.write([np.arange(3, dtype=np.int64)] * 20, p)
    p.write_bytes(p.read_bytes()[:-3])
    assert main(["explore", "--json", "--rows", "3", "--reading", "sequence", str(p)]) == 0
    rows = json.loads(capsys.readouterr().out)["table"]["rows"]
    assert len(rows) == 5 and "elided" in rows[3]
    assert rows[4]["value"].startswith("does not fit")


def test_rows_usage(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("-1", "some"):
        with pytest.raises(SystemExit) as e:
            main(["explore", "--rows", bad, str(FOUR_WAY)])
        assert e.value.code == 2
        assert "--limit needs a whole number >= 0 or 'all'" in capsys.readouterr().err


# --- the progress bar: a terminal gets one, a pipe never -------------------------------------

def _env() -> dict[str, str]:
    return dict(os.environ, ONNXDATA_PROGRESS_BYTES="1", TERM="xterm-256color",
                PYTHONPATH=os.pathsep.join(sys.path))


def _on_a_terminal(argv: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run the CLI with stdout and stderr on a pseudo-terminal; its exit code and output."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))  # 100 columns
    proc = subprocess.Popen([sys.executable, "-m", "onnxdata", *argv], stdin=slave,
                            stdout=slave, stderr=slave, env=env or _env())
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 1 << 16)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["explore"], ["validate"], ["show", "--kind", "sequence"]],
                         ids=lambda a: a[0])
def test_progress_bar_on_a_terminal_only(argv: list[str], ambiguous: Path) -> None:
    code, shown = _on_a_terminal([*argv, str(ambiguous)])
    assert code == 0
    assert BAR in shown and "0:00:0" in shown
    piped = subprocess.run([sys.executable, "-m", "onnxdata", *argv, str(ambiguous)],
                           capture_output=True, text=True, env=_env())
    assert piped.returncode == 0
    assert BAR not in piped.stdout + piped.stderr and "\x1b[" not in piped.stdout + piped.stderr


def test_no_bar_under_the_threshold(ambiguous: Path) -> None:
    env = dict(_env(), ONNXDATA_PROGRESS_BYTES=str(1 << 20))
    code, shown = _on_a_terminal(["validate", str(ambiguous)], env)
    assert code == 0 and "(the same bytes)" in shown and BAR not in shown


def test_progress_bar_while_show_chooses_the_kind(tmp_path: Path) -> None:
    p = tmp_path / "t.pb"
    onnxdata.write(np.arange(6, dtype=np.float32).reshape(2, 3), p)
    code, shown = _on_a_terminal(["show", str(p)])
    assert code == 0 and BAR in shown and "ndarray float32 shape (2, 3)" in shown
    assert " 33%" in shown  # the kind is chosen: a third of the way
