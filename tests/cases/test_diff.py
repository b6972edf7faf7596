"""``onnxdata diff``: files and test data set folders, exit codes, and paths to the element."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
import onnxdata.cases
from onnxdata.cases.diff import diff_paths
from onnxdata.cases.save import write_value
from onnxdata.cli.main import main

NODE = Path(__file__).parents[1] / "data" / "onnx-node"


def _nested() -> dict[bytes, list[Any]]:
    return {b"a": [np.zeros((2, 3), np.float32)],
            b"k": [np.ones(2, np.float32), np.arange(12, dtype=np.float32).reshape(3, 4)]}


def test_one_element_deep_inside_a_nested_value_is_named_by_path_and_index(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    actual, expected = _nested(), _nested()
    expected[b"k"][1][0, 2] = 2.5
    write_value(tmp_path / "a.pb", actual, "map", name="m")
    write_value(tmp_path / "b.pb", expected, "map", name="m")
    assert main(["diff", str(tmp_path / "a.pb"), str(tmp_path / "b.pb")]) == 1
    out = capsys.readouterr().out
    assert "different, 1 difference" in out
    assert "['k'][1]: 1 of 12 values differ" in out
    assert "['k'][1][0, 2]: actual 2 vs expected 2.5" in out
    assert main(["diff", str(tmp_path / "a.pb"), str(tmp_path / "b.pb"), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    (f,) = report["files"]
    (d,) = f["differences"]
    assert (d["path"], d["what"], d["count"]) == ("['k'][1]", "values", 1)
    assert d["mismatches"] == [{"index": [0, 2], "actual": 2.0, "expected": 2.5}]
    assert main(["diff", str(tmp_path / "a.pb"), str(tmp_path / "a.pb")]) == 0


def test_folders_are_matched_by_file_name(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    case = tmp_path / "test_loop16_seq_none"
    shutil.copytree(NODE / "test_loop16_seq_none", case)
    theirs = case / "test_data_set_9"
    inputs, outputs = onnxdata.cases.load_test_data_set(case / "test_data_set_0")
    outputs[0][3] = outputs[0][3] + np.array([0, 0.5, 0], np.float32)  # output 0: a sequence
    onnxdata.cases.save_test_data_set(theirs, inputs, outputs, model=case / "model.onnx")
    ours = str(case / "test_data_set_0")
    assert main(["diff", ours, ours]) == 0
    assert main(["diff", ours, str(theirs)]) == 1
    out = capsys.readouterr().out
    assert "input_0.pb: equal" in out
    assert "output_0.pb: different" in out
    assert "[3][1]: actual 2 vs expected 2.5" in out
    assert main(["diff", ours, str(theirs), "--atol", "1"]) == 0
    (theirs / "input_2.pb").unlink()
    found = diff_paths(ours, theirs)
    assert [(f.name, f.status) for f in found][:3] == [
        ("input_0.pb", "equal"), ("input_1.pb", "equal"), ("input_2.pb", "missing")]


def test_unreadable_and_mismatched_arguments_exit_2(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    good = NODE / "test_abs" / "test_data_set_0" / "input_0.pb"
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\xff\xff\xff")
    assert main(["diff", str(good), str(bad)]) == 2
    assert "unreadable" in capsys.readouterr().out
    assert main(["diff", str(good), str(tmp_path)]) == 2
    assert "folder" in capsys.readouterr().err
    assert main(["diff", str(good), str(tmp_path / "none.pb")]) == 2


def test_a_kind_only_one_side_can_tell_is_used_for_both(tmp_path: Path) -> None:
    # a one-element sequence is also a valid optional: alone it is ambiguous
    one = tmp_path / "one.pb"
    write_value(one, [np.ones(2, np.float32)], "sequence", name="s")
    two = tmp_path / "two.pb"
    write_value(two, [np.ones(2, np.float32), np.ones(1, np.float32)], "sequence", name="s")
    (f,) = diff_paths(one, two)
    assert f.status == "different"
    assert [d.what for d in f.differences] == ["length"]
    (f,) = diff_paths(one, one)  # the same bytes: equal whatever they are read as
    assert f.status == "equal"
    other = tmp_path / "other.pb"
    write_value(other, [np.zeros(2, np.float32)], "sequence", name="s")
    (f,) = diff_paths(one, other)  # both ambiguous, and different: say how to pick
    assert f.status == "unreadable" and "say which" in f.error and "--kind sequence" in f.error
    (f,) = diff_paths(one, one, kind="sequence")
    assert f.status == "equal"
    (f,) = diff_paths(one, other, kind="sequence")
    assert f.status == "different"


def _two_cases(tmp_path: Path) -> tuple[Path, Path]:
    """Two copies of a test case whose output_0 differs in one nested element."""
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(NODE / "test_sequence_insert_at_back", a)
    shutil.copytree(NODE / "test_sequence_insert_at_back", b)
    out = b / "test_data_set_0" / "output_0.pb"
    value = [np.array(v) for v in onnxdata.read(out)]
    value[2][0] = 99
    onnxdata.write(value, out, "sequence")
    return a, b


def test_case_folders_with_loose_files_still_compare_their_data_sets(tmp_path: Path) -> None:
    # a loose .pb beside the sets (the README's tour writes copy.pb there) hid every set
    a, b = _two_cases(tmp_path)
    shutil.copy(a / "test_data_set_0" / "input_0.pb", a / "copy.pb")
    found = {f.name: f.status for f in diff_paths(a, b)}
    assert found["test_data_set_0/output_0.pb"] == "different"
    assert found["test_data_set_0/input_0.pb"] == "equal"
    assert found["copy.pb"] == "missing"


def test_a_data_set_against_a_case_folder_says_how_to_compare(tmp_path: Path) -> None:
    a, b = _two_cases(tmp_path)
    with pytest.raises(onnxdata.OnnxDataError, match="test case folder") as info:
        diff_paths(a / "test_data_set_0", b)
    assert f"{b}/test_data_set_0" in str(info.value)


def test_a_broken_model_is_one_warning_line_of_ours(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _two_cases(tmp_path)
    model = a / "model.onnx"
    model.write_bytes(model.read_bytes()[:50])
    assert main(["diff", str(a / "test_data_set_0"), str(b / "test_data_set_0")]) == 1
    err = capsys.readouterr().err
    assert err.count("onnxdata: warning: cannot read") == 1, err
    assert "UserWarning" not in err and ".py:" not in err
