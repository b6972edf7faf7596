"""One vocabulary for every command: --kind (seq, opt, map, tensor, sparse), --json with an
"error" field even on failure, --model, --limit, one wording for a missing file, and - for
standard input."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
from onnxdata.cli.main import main
from tests.conftest import CORPUS

SEQUENCE = CORPUS / "test_sequence_insert_at_back/test_data_set_0/input_0.pb"


def _two_maps(path: Path) -> Path:
    """A sequence of two maps: valid as a sequence, and as an optional only by merging."""
    onnxdata.write([{b"a": np.array(0.25, np.float32), "日本".encode(): np.array(
        0.75, np.float32)}, {b"b": np.array(1.0, np.float32)}], path)
    return path


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_validate_json_prints_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out = _json(capsys, "validate", "--json", str(SEQUENCE), str(tmp_path / "gone.pb"))
    assert code == 2
    assert [f["status"] for f in out["files"]] == ["valid", "unreadable"]
    assert out["files"][0]["kind"] == "sequence" and out["files"][0]["error"] is None
    assert out["files"][1]["error"] == "no such file or folder"
    assert out["error"] == f"{tmp_path / 'gone.pb'}: no such file or folder"
    code, out = _json(capsys, "validate", "--json", str(SEQUENCE))
    assert code == 0 and out["valid"] is True and out["error"] is None


def test_show_json_prints_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out = _json(capsys, "show", "--json", "--limit", "1", str(_two_maps(tmp_path / "m.pb")))
    assert code == 0 and out["error"] is None and out["kind"] == "sequence"
    assert out["value"]["type"] == "list" and out["value"]["length"] == 2
    assert out["value"]["more"] == 1  # --limit 1
    first = out["value"]["items"][0]["items"][0]
    assert first == {"key": "a", "value": {"type": "ndarray", "dtype": "float32", "shape": [],
                                           "values": [0.25], "more": 0}}
    code, out = _json(capsys, "show", "--json", str(tmp_path / "gone.pb"))
    assert code == 2 and out["error"] == f"{tmp_path / 'gone.pb'}: no such file or folder"


def test_json_strings_are_exact(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A string that is not UTF-8 and the text that spells it (b"\\xff", the four characters
    \\xff) stay apart in show's and diff's JSON, and each gives its bytes back."""
    strings = [b"\xff", b"\\xff", b"a\x00", "日本".encode()]
    path = tmp_path / "s.pb"
    onnxdata.write(np.array(strings, dtype=object), path, "tensor")
    onnxdata.write({b"\xfe": np.array(1), b"\\xfe": np.array(2)}, tmp_path / "m.pb", "map")
    code, out = _json(capsys, "show", "--json", str(path))
    assert code == 0
    values = out["value"]["values"]
    assert len(set(values)) == 4
    assert [v.encode("utf-8", "surrogateescape") for v in values] == strings
    code, out = _json(capsys, "show", "--json", str(tmp_path / "m.pb"))
    assert [item["key"].encode("utf-8", "surrogateescape") for item in out["value"]["items"]] \
        == [b"\xfe", b"\\xfe"]
    onnxdata.write(np.array([b"\xfe", *strings[1:]], dtype=object), tmp_path / "t.pb", "tensor")
    code, out = _json(capsys, "diff", "--json", str(path), str(tmp_path / "t.pb"))
    assert code == 1
    (mismatch,) = out["files"][0]["differences"][0]["mismatches"]
    assert (mismatch["actual"], mismatch["expected"]) == ("\udcff", "\udcfe")


def test_json_on_stdout_when_a_command_fails(capsys: pytest.CaptureFixture[str],
                                             tmp_path: Path) -> None:
    gone = str(tmp_path / "gone.pb")
    for argv in (["explore", gone], ["diff", gone, str(SEQUENCE)]):
        code, out = _json(capsys, *argv, "--json")
        assert code == 2 and out["error"] == f"{gone}: no such file or folder", argv
    with pytest.raises(SystemExit) as e:  # a usage error too
        main(["explore", "--json", "--limit", "many", str(SEQUENCE)])
    assert e.value.code == 2
    assert "--limit needs a whole number" in json.loads(capsys.readouterr().out)["error"]


def test_a_missing_file_is_worded_once(capsys: pytest.CaptureFixture[str],
                                       tmp_path: Path) -> None:
    gone = str(tmp_path / "gone.pb")
    for argv in (["explore", gone], ["show", gone], ["diff", gone, gone]):
        assert main(argv) == 2
        assert capsys.readouterr().err.strip() == f"onnxdata: {gone}: no such file or folder"
    assert main(["validate", gone]) == 2
    assert capsys.readouterr().err.strip() == f"onnxdata: {gone}: no such file or folder"


DATA_COMMANDS = [["explore"], ["validate"], ["show"], ["diff", "-"]]  # diff A B: A the path


def _argv(command: list[str], path: str) -> list[str]:
    return [command[0], path, path] if command[0] == "diff" else [*command, path]


@pytest.mark.parametrize("command", [*DATA_COMMANDS, ["make"], ["run"]], ids=lambda c: c[0])
def test_a_path_no_command_can_take_is_one_line_in_one_wording_exit_2(
        command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = tmp_path / "case"
    shutil.copytree(CORPUS / "test_abs", case)
    data = command[0] not in ("make", "run")
    gone, folder = tmp_path / "nosuch.onnx", tmp_path / "empty"
    folder.mkdir()
    model, value = case / "model.onnx", case / "test_data_set_0" / "input_0.pb"
    said = {gone: f"{gone}: no such file or folder",
            # make and run take a case folder: theirs is the case folder it is not, in the
            # pytest plugin's words (run looks under it too; make wants its model.onnx)
            folder: f"{folder}: a folder, not a file" if data else
            f"no case folder (model.onnx beside test_data_set_N) at or under {folder}"
            if command[0] == "run" else f"no model.onnx in {folder}, so no case folder "
            "(model.onnx beside test_data_set_N) to make sets for",
            model if data else value:
            f"{model}: an ONNX model, not a data file: onnxdata reads the "
            "test_data_set_N/*.pb files beside it, and onnxdata run runs the model on them "
            "(--kind reads it as data anyway)" if data else
            f"{value}: a data file, not an ONNX model: pass the test case folder "
            "(model.onnx and test_data_set_N) or its model.onnx"}
    if command[0] == "diff":
        said[folder] = f"no .pb files and no test_data_set_N folders in {folder} or {folder}" \
            ": pass two .pb files, two test_data_set_N folders or two test case folders"
    for path, line in said.items():
        assert main(_argv(command, str(path))) == 2, path
        out, err = capsys.readouterr()
        assert err == f"onnxdata: {line}\n", path  # one line, first: no table before it
        assert out == "", path


def test_a_model_or_data_file_given_as_the_other_to_model_is_refused_in_our_words(
        capsys: pytest.CaptureFixture[str]) -> None:
    value = str(CORPUS / "test_abs" / "test_data_set_0" / "input_0.pb")
    for command in (["explore"], ["validate"], ["show"]):
        assert main([*command, value, "--model", value]) == 2
        assert capsys.readouterr().err == f"onnxdata: {value}: a data file, not an ONNX " \
            "model: pass the test case folder (model.onnx and test_data_set_N) or its " \
            "model.onnx\n"
    model = str(CORPUS / "test_abs" / "model.onnx")
    assert main(["explore", model, "--kind", "tensor"]) == 0  # --kind: read it as data


def test_a_model_named_pb_is_a_model(capsys: pytest.CaptureFixture[str],
                                      tmp_path: Path) -> None:
    """ONNX names some models .pb: one that reads as a model (a graph) is taken as one, by
    every command that takes a model; a .pb that does not is still refused."""
    case = tmp_path / "case"
    shutil.copytree(CORPUS / "test_abs", case)
    model = case / "model.pb"
    (case / "model.onnx").rename(model)
    value = str(case / "test_data_set_0" / "input_0.pb")
    for command in (["explore"], ["validate"], ["show"]):
        assert main([*command, value, "--model", str(model)]) == 0, command
        assert "a data file" not in capsys.readouterr().err
    if importlib.util.find_spec("onnx") is not None:  # (make draws with onnx's reference)
        assert main(["make", str(model), "--out", str(tmp_path / "made"), "-n", "1"]) == 0
        assert "a data file" not in capsys.readouterr().err
    if importlib.util.find_spec("onnxruntime") is not None:  # (run's default backend)
        assert main(["run", str(model)]) == 0
        assert "a data file" not in capsys.readouterr().err
    junk = tmp_path / "junk.pb"
    junk.write_bytes(b"\x0a\x03abc")
    assert main(["validate", value, "--model", str(junk)]) == 2
    assert "a data file, not an ONNX model" in capsys.readouterr().err


@pytest.mark.parametrize("word", ["seq", "sequence", "SequenceProto", "SEQ"])
def test_kind_seq_works_everywhere(word: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _json(capsys, "explore", "--kind", word, "--json", str(SEQUENCE))
    assert code == 0 and out["chosen"] == "sequence"
    code, out = _json(capsys, "validate", "--kind", word, "--json", str(SEQUENCE))
    assert code == 0 and out["files"][0]["kind"] == "sequence"
    code, out = _json(capsys, "show", "--kind", word, "--json", str(SEQUENCE))
    assert code == 0 and out["kind"] == "sequence"
    code, out = _json(capsys, "diff", "--kind", word, "--json", str(SEQUENCE), str(SEQUENCE))
    assert code == 0 and out["equal"] is True


def test_the_short_kind_words(capsys: pytest.CaptureFixture[str]) -> None:
    one = CORPUS / "test_loop16_seq_none/test_data_set_0/input_2.pb"
    for word, chosen in (("opt", "optional"), ("map", "map"), ("tensor", "tensor"),
                         ("sparse", "sparse_tensor")):
        code, out = _json(capsys, "explore", "--kind", word, "--json", str(one))
        assert code == 0 and out["chosen"] == chosen


def test_explore_kind_and_limit(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = _json(capsys, "explore", "--kind", "seq", "--limit", "3", "--json",
                      str(SEQUENCE))
    assert code == 0 and out["table"]["reading"] == "sequence"
    assert len([r for r in out["table"]["rows"] if "elided" not in r]) == 3
    code, same = _json(capsys, "explore", "--reading", "seq", "--rows", "3", "--json",
                       str(SEQUENCE))  # the old spellings still work
    assert same["table"] == out["table"]
    assert main(["explore", "--kind", "seq", "--limit", "2", str(SEQUENCE)]) == 0
    assert "--limit all shows them" in capsys.readouterr().out


def test_show_of_two_maps_takes_the_reading_that_needs_no_merging(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    two = _two_maps(tmp_path / "maps.pb")
    assert main(["show", str(two)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(f"{two}  sequence\nlist of 2\n")
    assert captured.err.strip() == (
        f"onnxdata: {two}: read as SequenceProto, the only valid reading that needs no "
        "merging (also valid: OptionalProto only by merging map_value given 2 times and 1 "
        "more)")
    assert "'日本':" in captured.out  # a UTF-8 string key prints as text
    assert main(["diff", str(two), str(two)]) == 0
    assert "the only valid reading that needs no merging" in capsys.readouterr().err
    assert main(["validate", str(two)]) == 0
    assert "valid SequenceProto: sequence of 2 maps (the only valid reading that needs no " \
           "merging)" in capsys.readouterr().out


def test_one_element_is_still_ambiguous(capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    one = tmp_path / "one.pb"  # the same bytes as a sequence and as an optional
    onnxdata.write([np.ones(2, np.float32)], one)
    assert main(["show", str(one)]) == 2
    assert "--kind sequence or --kind optional" in capsys.readouterr().err


def test_explore_ranks_and_marks_the_merged_reading(capsys: pytest.CaptureFixture[str],
                                                    tmp_path: Path) -> None:
    two = _two_maps(tmp_path / "maps.pb")
    code, out = _json(capsys, "explore", "--json", str(two))
    assert code == 0 and out["chosen"] == "sequence" and not out["ambiguous"]
    assert [r["kind"] for r in out["readings"][:2]] == ["sequence", "optional"]
    assert out["readings"][1]["merged"][0] == {"path": "map_value", "occurrences": 2}
    assert out["note"].startswith("read as SequenceProto, the only valid reading")
    assert main(["explore", str(two)]) == 0
    text = capsys.readouterr().out
    assert "yes (merged)" in text and "valid only by merging map_value given 2 times" in text


def test_a_model_declaring_another_kind(capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    sets = tmp_path / "case" / "test_data_set_0"
    sets.mkdir(parents=True)
    shutil.copy(CORPUS / "test_abs" / "model.onnx", tmp_path / "case")  # input: tensor(float)
    value = _two_maps(sets / "input_0.pb")
    assert main(["validate", str(value)]) == 1
    assert capsys.readouterr().out.startswith(
        f"{value}: invalid: valid SequenceProto, but the model declares tensor(float)\n")
    assert main(["show", str(value)]) == 1
    assert "valid SequenceProto, but the model declares tensor(float)" in \
        capsys.readouterr().out
    code, out = _json(capsys, "explore", "--json", str(value))
    assert code == 0
    assert out["mismatch"] == "valid SequenceProto, but the model declares tensor(float)"
    # --model names it for a file anywhere, its index from the name (or --input K)
    loose = _two_maps(tmp_path / "input_0.pb")
    model = str(tmp_path / "case" / "model.onnx")
    for argv in (["validate", str(loose), "--model", model],
                 ["validate", str(_two_maps(tmp_path / "x.pb")), "--model", model,
                  "--input", "0"]):
        assert main(argv) == 1
        assert "but the model declares tensor(float)" in capsys.readouterr().out


def _cli(*argv: str, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "onnxdata", *argv], input=stdin,
                          capture_output=True, check=False, timeout=120)


@pytest.mark.slow
def test_dash_is_standard_input_for_every_command() -> None:
    data = SEQUENCE.read_bytes()
    for argv in (["explore", "-"], ["validate", "-"], ["show", "-"], ["diff", "-", str(SEQUENCE)],
                 ["diff", str(SEQUENCE), "-"]):
        got = _cli(*argv, "--json", stdin=data)
        assert got.returncode == 0, (argv, got.stderr)
        out = json.loads(got.stdout)
        assert out["error"] is None, argv
    got = _cli("validate", "-", stdin=data)
    assert got.stdout.decode().startswith("-: valid SequenceProto")
    got = _cli("show", "-", stdin=data)
    assert got.stdout.decode().startswith("-  sequence\n")


def test_run_on_folders_without_a_case_says_so_as_the_pytest_plugin_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from onnxdata.cases.case_folder import no_case_folder

    (tmp_path / "a" / "sub").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert main(["run", a, b]) == 2
    assert capsys.readouterr().err == "onnxdata: no case folder (model.onnx beside " \
        f"test_data_set_N) at or under {a}, {b}\n"
    assert main(["run", a, "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == no_case_folder([a])
