"""``diff`` and ``run`` behave as the other commands do: plain lines and quiet on a closed
pipe, errors that name the user's path, ``--kind`` in either spelling, and a ``--help``
that says what each command does and what its exit status means."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from onnxdata.cases.save import write_value
from onnxdata.cli.main import EXIT_CODES, main
from tests.conftest import CORPUS

TENSOR_SET = CORPUS / "test_abs" / "test_data_set_0"


@pytest.fixture(scope="module")
def differing_folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two folders of 300 files that all differ: enough output to overflow a pipe."""
    actual, expected = tmp_path_factory.mktemp("actual"), tmp_path_factory.mktemp("expected")
    for i in range(300):
        write_value(actual / f"input_{i}.pb", np.arange(40, dtype=np.float32), "tensor",
                    name="x")
        write_value(expected / f"input_{i}.pb", -np.arange(40, dtype=np.float32), "tensor",
                    name="x")
    return actual, expected


def _through_head(argv: list[str]) -> tuple[int, bytes, str]:
    """Run the command as `| head -1` would: read one line, close the pipe."""
    proc = subprocess.Popen([sys.executable, "-m", "onnxdata", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=300), first, err


@pytest.mark.slow
@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_diff_through_head_is_quiet_and_exits_1_for_differences(
        differing_folders: tuple[Path, Path], json_flag: list[str]) -> None:
    actual, expected = differing_folders
    status, first, err = _through_head(["diff", *json_flag, str(actual), str(expected)])
    assert first
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert status == 1, err  # the command's own status, not 0 for the closed pipe


def test_piped_diff_prints_one_line_per_file_and_difference(
        differing_folders: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    actual, expected = differing_folders
    assert main(["diff", str(actual), str(expected)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 600  # a head line and one difference per file, none wrapped
    assert all(line == line.rstrip() for line in lines)


def test_diff_error_is_one_line_naming_the_missing_path(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    typo = tmp_path / "test_data_set_O"
    assert main(["diff", str(TENSOR_SET), str(typo)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err  # not wrapped at 80 columns in a pipe
    assert str(typo) in err and "no such file or folder" in err
    assert "is not a folder" not in err
    assert main(["diff", str(typo), str(TENSOR_SET)]) == 2
    assert str(typo) in capsys.readouterr().err


def test_diff_takes_kind_as_validate_and_show_do(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    one = tmp_path / "one.pb"  # a one-element sequence is also a valid optional
    write_value(one, [np.ones(2, np.float32)], "sequence", name="s")
    assert main(["diff", "--kind", "SequenceProto", str(one), str(one)]) == 0
    assert main(["diff", "--kind", "sequence", str(one), str(one)]) == 0
    assert main(["show", "--kind", "SequenceProto", str(one)]) == 0
    assert main(["diff", "--kind", "seq", str(one), str(one)]) == 0  # ONNX's own spelling
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        main(["diff", "--kind", "sq", str(one), str(one)])
    assert e.value.code == 2
    assert "unknown kind 'sq': expected seq, opt, map, tensor or sparse" in \
        capsys.readouterr().err


def test_run_errors_are_one_line_when_piped(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    case = tmp_path / ("a-long-folder-name-" * 6)
    case.mkdir()
    shutil.copy(CORPUS / "test_abs" / "model.onnx", case / "model.onnx")
    assert main(["run", str(case)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    if importlib.util.find_spec("onnxruntime") is None:  # the backend is the first thing asked
        assert "needs ONNX Runtime" in err, err
    else:
        assert str(case / "model.onnx") in err, err


@pytest.mark.parametrize("command", ["explore", "validate", "show", "diff", "run"])
def test_each_command_help_says_what_it_does_and_its_exit_status(
        command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    description = out.split("\n\n")[1]  # after the usage lines
    assert not description.startswith(("positional arguments", "options")), out
    flat = " ".join(out.split())  # argparse wraps the description
    # the exit status is said once, the same table under every command's help
    assert " ".join(EXIT_CODES.split()) in flat
    positional = out.split("positional arguments:")[1].split("options:")[0]
    assert all(len(line.split()) > 1 for line in positional.strip().splitlines()
               if line.startswith("  ") and not line.startswith("   ")), positional


def test_top_level_help_has_no_rst_markup(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "``" not in out and "--html OUT.html" in out and "[--kind KIND] [--json]" in out


@pytest.mark.parametrize("flags", [["--input", "0"], ["--model", "m.onnx"]])
def test_explore_flag_errors_show_explores_usage(flags: list[str],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["explore", "x.pb", *flags])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: onnxdata explore") and "onnxdata explore: error: " in err


def test_a_model_given_where_data_is_expected_says_it_is_a_model(
        capsys: pytest.CaptureFixture[str]) -> None:
    model = str(CORPUS / "test_abs" / "model.onnx")
    hint = f"onnxdata: {model}: an ONNX model, not a data file"
    for argv in (["validate", model], ["show", model], ["explore", model],
                 ["diff", model, model]):
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert err.startswith(hint) and out == "", argv  # explore: the hint, no table
    assert main(["validate", str(TENSOR_SET / "input_0.pb")]) == 0
    assert hint not in capsys.readouterr().out


def test_diff_of_two_test_case_folders_compares_their_data_sets(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Case folders hold no .pb files of their own: diff printed nothing and exited 0."""
    ours = tmp_path / "ours"
    shutil.copytree(CORPUS / "test_abs", ours)
    assert main(["diff", str(ours), str(CORPUS / "test_abs")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "test_data_set_0/input_0.pb: equal", "test_data_set_0/output_0.pb: equal"]
    write_value(ours / "test_data_set_0" / "output_0.pb",
                np.zeros((3, 4, 5), np.float32), "tensor", name="y")
    shutil.copytree(ours / "test_data_set_0", ours / "test_data_set_1")
    assert main(["diff", str(ours), str(CORPUS / "test_abs")]) == 1
    out = capsys.readouterr().out
    assert "test_data_set_0/output_0.pb: different" in out
    assert "test_data_set_1/: missing: only in" in out


def test_diff_of_folders_with_nothing_to_compare_is_an_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    assert main(["diff", str(a), str(b)]) == 2
    err = capsys.readouterr().err
    assert "no .pb files and no test_data_set_N folders" in err and str(a) in err


def test_run_on_one_data_set_folder_runs_that_set(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnxruntime")
    case = tmp_path / "case"
    shutil.copytree(CORPUS / "test_abs", case)
    shutil.copytree(case / "test_data_set_0", case / "test_data_set_1")
    assert main(["run", str(case / "test_data_set_1")]) == 0
    assert capsys.readouterr().out.splitlines() == ["test_data_set_1 output 0 'y': pass"]


def test_run_on_a_value_file_says_it_is_not_a_model(capsys: pytest.CaptureFixture[str]) -> None:
    value = TENSOR_SET / "input_0.pb"
    assert main(["run", str(value)]) == 2
    err = capsys.readouterr().err
    assert f"{value}: a data file, not an ONNX model" in err and \
        "test_data_set_N folder" not in err


@pytest.mark.parametrize("width", [70, 100])
def test_a_narrow_terminal_folds_field_paths_and_values_never_cuts_them(width: int) -> None:
    """On a terminal rich fits the byte table to the width: it cut the deepest field paths
    to 'sequence_value.tensor_values[0].data_t…', the one column people search for."""
    import io

    from rich.console import Console

    from onnxdata.cli.main import _print_exploration
    from onnxdata.explorer.readings import explore

    buf = io.StringIO()
    out = Console(file=buf, width=width, no_color=True, highlight=False)
    _print_exploration(out, explore(CORPUS / "test_loop16_seq_none/test_data_set_0/input_2.pb"))
    table = buf.getvalue().split("bytes as OptionalProto")[1]
    assert "…" not in table, table


def test_help_and_readme_say_the_same_of_every_command(
        capsys: pytest.CaptureFixture[str]) -> None:
    import re

    with pytest.raises(SystemExit):
        main(["--help"])
    top = capsys.readouterr().out
    commands = sorted(re.search(r"\{([a-z,]+)\}", top).group(1).split(","))  # type: ignore[union-attr]
    assert "make" in commands
    flags = {}
    for name in commands:
        assert f"\n  onnxdata {name} " in top, name  # make was left out
        with pytest.raises(SystemExit):
            main([name, "--help"])
        text = capsys.readouterr().out
        assert EXIT_CODES in text, name  # make had no exit statuses
        flags[name] = set(re.findall(r"(--[a-z-]+)", text))
    assert [n for n in commands if "--json" not in flags[n]] == []  # make had none
    assert [n for n in commands if "--limit" in flags[n]] == ["explore", "show"]
    guide = " ".join((Path(__file__).parents[2] / "docs" / "getting-started.md")
                     .read_text().split())
    assert "`--limit N|all` (`explore` and `show`," in guide  # said every command took it
    assert guide.count("does (`| head`), exiting with its own status.") == 1


def test_make_json_lists_the_sets_written_or_the_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnx.reference", reason="make's default backend is onnx's reference "
                        "evaluator (pip install onnx)")
    import json

    out = tmp_path / "new"
    assert main(["make", str(CORPUS / "test_abs"), "-n", "1", "--out", str(out),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "written": [str(out / "test_data_set_0")], "error": None}
    assert main(["make", str(tmp_path / "gone.onnx"), "--json"]) == 2
    assert json.loads(capsys.readouterr().out) == {
        "written": [], "error": f"{tmp_path / 'gone.onnx'}: no such file or folder"}


def test_top_level_help_opens_with_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    """Its first sentence names each command the usage line lists, locate included."""
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    usage, description = out.split("\n\n")[:2]
    commands = re.search(r"\{([a-z,]+)\}", usage)
    assert commands is not None, usage
    first = " ".join(description.split())
    missing = [c for c in commands[1].split(",") if not re.search(rf"\b{c}\b", first)]
    assert not missing, (missing, first)


def test_a_file_of_another_kind_is_said_alike_by_every_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A tensor file where the model declares a sequence: validate, show, diff, run and
    load_test_data_set all say what the file is and what the model declares, not the
    problems of reading a tensor's bytes as a sequence."""
    from onnxdata.cases import load_test_data_set
    from onnxdata.errors import DecodeError

    good, bad = tmp_path / "good", tmp_path / "bad"
    shutil.copytree(CORPUS / "test_sequence_insert_at_back", good)
    shutil.copytree(good, bad)
    output = bad / "test_data_set_0" / "output_0.pb"
    write_value(output, np.zeros(3, np.int64), "tensor", name="")
    said = "valid TensorProto, but the model declares sequence(tensor(int64))"
    assert main(["validate", str(output)]) == 1
    assert said in capsys.readouterr().out
    assert main(["show", str(output)]) == 1
    assert said in capsys.readouterr().out
    assert main(["diff", str(good), str(bad)]) == 2
    out = capsys.readouterr().out
    assert f"output_0.pb: unreadable: cannot read {output}: {said}" in out
    assert "wire type" not in out
    if importlib.util.find_spec("onnx") is not None:  # (the reference backend is onnx's)
        assert main(["run", str(bad), "--backend", "reference"]) != 0
        assert said in capsys.readouterr().out
    with pytest.raises(DecodeError, match=re.escape(said)):
        load_test_data_set(bad / "test_data_set_0")
    assert main(["diff", str(good), str(good)]) == 0  # (a file of its kind: as before)
