"""The CLI in pipes and scripts: one record per line, quiet on a closed pipe, show capped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import onnxdata
from onnxdata.cli.main import main
from tests.conftest import CORPUS

CORPUS_FILES = sorted(str(p) for p in CORPUS.rglob("*.pb"))
TENSOR_FILE = CORPUS / "test_abs/test_data_set_0/input_0.pb"


def test_validate_prints_one_line_per_file_when_piped(capsys: pytest.CaptureFixture[str]) -> None:
    assert len(CORPUS_FILES) == 245
    assert main(["validate", *CORPUS_FILES]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(CORPUS_FILES)
    assert [line.split(": ", 1)[0] for line in lines] == CORPUS_FILES
    assert all(line == line.rstrip() for line in lines)


def test_explore_table_has_no_padding_and_a_legend(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", str(TENSOR_FILE)]) == 0
    text = capsys.readouterr().out
    assert all(line == line.rstrip() for line in text.splitlines())
    assert "← the reading used" in text and "fits:" in text and "valid:" in text


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"onnxdata {onnxdata.__version__}"


@pytest.fixture(scope="module")
def long_sequence(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("seq") / "long.pb"
    onnxdata.write([np.full(2, i, np.float32) for i in range(1000)], path)
    return path


def test_show_caps_lists_and_says_how_many_more(capsys: pytest.CaptureFixture[str],
                                               long_sequence: Path) -> None:
    assert main(["show", "--kind", "sequence", str(long_sequence)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{long_sequence}  sequence" and lines[1] == "list of 1000"
    assert lines[-1] == "… 980 more (--limit N shows more)"
    assert sum(line.startswith("[") for line in lines) == 20
    assert main(["show", "--kind", "SequenceProto", "--limit", "2", str(long_sequence)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "… 998 more (--limit N shows more)"


def test_show_of_a_wrong_kind_is_our_error_naming_the_file(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    broken = tmp_path / "t.pb"
    broken.write_bytes(TENSOR_FILE.read_bytes()[:-3])
    assert main(["show", "--kind", "map", str(broken)]) == 2
    err = capsys.readouterr().err
    assert str(broken) in err and "MapProto" in err
    assert "Wire format" not in err and "Error parsing" not in err


# Every command, with enough output to overflow a pipe, and the status it exits with.
def _commands(long_sequence: Path) -> list[tuple[list[str], int]]:
    return [
        (["explore", str(long_sequence)], 0),
        (["explore", "--json", str(long_sequence)], 0),
        (["validate", *CORPUS_FILES * 4], 0),
        (["validate", *CORPUS_FILES * 4, str(long_sequence.parent / "missing.pb")], 2),
        (["show", "--kind", "sequence", "--limit", "1000", str(long_sequence)], 0),
        (["--help"], 0),
        (["--version"], 0),
    ]


@pytest.mark.slow
def test_every_command_through_head_is_quiet_and_keeps_its_status(long_sequence: Path) -> None:
    for argv, status in _commands(long_sequence):
        proc = subprocess.Popen([sys.executable, "-m", "onnxdata", *argv],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()  # what `| head -1` reads, then it closes the pipe
        proc.stdout.close()
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=300) == status, (argv, err)
        assert first, argv
        assert "Traceback" not in err and "BrokenPipe" not in err, (argv[0], err)


def test_show_of_ambiguous_bytes_says_pass_kind(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    lone = tmp_path / "v.pb"  # no model beside it: a sequence and an optional both fit
    lone.write_bytes((CORPUS / "test_loop16_seq_none/test_data_set_0/input_2.pb").read_bytes())
    assert main(["show", str(lone)]) == 2
    err = capsys.readouterr().err
    assert str(lone) in err and "--kind" in err and f"onnxdata explore {lone}" in err
