"""The command line: explore (tables and JSON), validate (exit codes), show."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from onnxdata.cli.main import main
from onnxdata.core.messages import SequenceProto, TensorProto
from tests.conftest import CORPUS

FOUR_WAY = CORPUS / "test_loop16_seq_none/test_data_set_0/input_2.pb"
EMPTY_OPTIONAL = (CORPUS / "test_optional_has_element_empty_optional_input/test_data_set_0/"
                  "input_0.pb")
TENSOR_FILE = CORPUS / "test_abs/test_data_set_0/input_0.pb"
MESSAGES = {"SequenceProto", "OptionalProto", "MapProto", "TensorProto", "SparseTensorProto"}
KINDS = {"sequence", "optional", "map", "tensor", "sparse_tensor"}


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    assert main(["explore", "--json", *argv]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_explore_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    out = _json(capsys, str(FOUR_WAY))
    assert {"file", "size", "readings", "declared", "chosen"} <= out.keys()
    assert out["file"] == str(FOUR_WAY) and out["size"] == FOUR_WAY.stat().st_size
    readings = out["readings"]
    assert isinstance(readings, list)
    assert {r["kind"] for r in readings} == KINDS
    assert {r["message"] for r in readings} == MESSAGES
    for r in readings:
        assert {"kind", "message", "well_formed", "valid", "problems", "summary"} <= r.keys()
        assert all({"path", "message"} <= p.keys() for p in r["problems"])
    assert out["declared"] == "optional" and out["chosen"] == "optional"
    assert out["declared_type"] == "optional(sequence(tensor(float)))"
    assert [r["kind"] for r in readings if r["valid"]] == ["sequence", "optional"]
    assert out["ambiguous"] is False  # the model says which


def test_explore_json_without_model(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = tmp_path / "x.pb"
    p.write_bytes(EMPTY_OPTIONAL.read_bytes())
    out = _json(capsys, str(p))
    assert out["declared"] is None and out["chosen"] == "optional"
    garbage = tmp_path / "g.pb"
    garbage.write_bytes(b"\xff\xff\xff")
    out = _json(capsys, str(garbage))
    assert out["chosen"] is None
    assert not any(r["well_formed"] for r in out["readings"])  # type: ignore[union-attr]


def test_explore_with_model_and_reading(capsys: pytest.CaptureFixture[str],
                                        tmp_path: Path) -> None:
    p = tmp_path / "v.pb"
    p.write_bytes(FOUR_WAY.read_bytes())
    model = str(FOUR_WAY.parent.parent / "model.onnx")
    out = _json(capsys, str(p), "--model", model, "--input", "2")
    assert out["declared"] == "optional" and out["chosen"] == "optional"
    out = _json(capsys, str(p), "--reading", "SequenceProto")
    assert out["chosen"] == "sequence"
    out = _json(capsys, str(p), "--reading", "map")
    assert out["chosen"] == "map"


def test_explore_table_is_plain_when_piped(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explore", str(EMPTY_OPTIONAL)]) == 0
    text = capsys.readouterr().out
    assert "\x1b[" not in text
    lines = [line.rstrip() for line in text.splitlines()]
    assert any(line.split() == ["0A", "0E", "+", "14", "bytes", "name", "optional_input"]
               for line in lines)
    assert any("10 00" in line and "0, UNDEFINED: the value is absent" in line for line in lines)
    assert "declared: optional(tensor(int32))" in text


def test_explore_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plain = tmp_path / "value.pb"  # not named input_K.pb: --model needs --input or --output
    plain.write_bytes(FOUR_WAY.read_bytes())
    with pytest.raises(SystemExit) as e:
        main(["explore", str(plain), "--model", "m.onnx"])
    assert e.value.code == 2
    assert "--model needs --input K or --output K" in capsys.readouterr().err
    # input_2.pb names its index: the missing model is then said as every missing file is
    assert main(["explore", str(FOUR_WAY), "--model", "m.onnx"]) == 2
    assert "m.onnx: no such file or folder" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["explore", str(FOUR_WAY), "--reading", "nonsense"])
    assert e.value.code == 2
    assert main(["explore", str(CORPUS / "missing.pb")]) == 2
    assert "missing.pb: no such file or folder" in capsys.readouterr().err


def test_validate_exit_codes(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    files = sorted(str(p) for p in CORPUS.glob("test_loop16_seq_none/test_data_set_0/*.pb"))
    assert main(["validate", *files]) == 0
    assert "valid" in capsys.readouterr().out
    bad = SequenceProto(elem_type=SequenceProto.TENSOR)
    t = bad.tensor_values.add(data_type=TensorProto.FLOAT)
    t.dims.extend([2, 3])
    t.raw_data = np.zeros(5, np.float32).tobytes()
    p = tmp_path / "bad.pb"
    p.write_bytes(bad.SerializeToString())
    assert main(["validate", "--kind", "sequence", str(p)]) == 1
    out = capsys.readouterr().out
    assert "tensor_values[0].raw_data" in out and "invalid" in out
    assert main(["validate", str(TENSOR_FILE), str(p)]) == 1
    capsys.readouterr()
    assert main(["validate", str(TENSOR_FILE), str(tmp_path / "nope.pb")]) == 2
    assert "nope.pb: no such file or folder" in capsys.readouterr().err
    garbage = tmp_path / "g.pb"
    garbage.write_bytes(b"\x0a\xff")
    assert main(["validate", str(garbage)]) == 2
    assert main(["validate", "--kind", "tensor", str(FOUR_WAY)]) == 1
    assert main(["validate", "--kind", "SparseTensorProto", str(FOUR_WAY)]) == 2


def test_validate_reports_declared_type_mismatch(capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    case = tmp_path / "case"
    (case / "test_data_set_0").mkdir(parents=True)
    (case / "model.onnx").write_bytes((TENSOR_FILE.parent.parent / "model.onnx").read_bytes())
    t = TensorProto(data_type=TensorProto.INT64)
    t.dims.extend([3, 4, 5])
    t.raw_data = np.zeros(60, np.int64).tobytes()
    f = case / "test_data_set_0" / "input_0.pb"
    f.write_bytes(t.SerializeToString())
    assert main(["validate", str(f)]) == 1
    assert "declared tensor(float) but holds int64" in capsys.readouterr().out


def test_show(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(FOUR_WAY)]) == 0
    out = capsys.readouterr().out
    assert "optional" in out and "list of 1" in out and "ndarray float32 shape ()" in out
    assert main(["show", str(TENSOR_FILE)]) == 0
    out = capsys.readouterr().out
    assert "ndarray float32 shape (3, 4, 5)" in out and "array([[[" in out
    assert main(["show", "--kind", "optional", str(EMPTY_OPTIONAL)]) == 0
    assert "None (empty optional)" in capsys.readouterr().out
    assert main(["show", "--kind", "tensor", str(FOUR_WAY)]) == 1
    assert main(["show", str(CORPUS / "missing.pb")]) == 2


def test_explore_takes_kind_as_the_other_commands_spell_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    f = str(Path(__file__).parents[1] / "data" / "onnx-node" / "test_sequence_insert_at_back" /
            "test_data_set_0" / "input_0.pb")
    assert main(["explore", f, "--reading", "optional", "--json"]) == 0
    by_reading = capsys.readouterr().out
    assert main(["explore", f, "--kind", "optional", "--json"]) == 0
    assert capsys.readouterr().out == by_reading


def test_problems_of_merged_fields_say_so(capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    """Six tensors read as an optional are one tensor_value whose dims are all six's (protobuf
    merges them): validate and show say so, or the dims [1, ..., 6] named by the problem
    are in no field of the file."""
    import onnxdata

    path = tmp_path / "seq6.pb"
    onnxdata.write([np.zeros(k + 1, np.float32) for k in range(6)], path, "sequence")
    note = "(tensor_value given 6 times, which protobuf merges into one)"
    assert main(["validate", "--kind", "opt", str(path)]) == 1
    out = capsys.readouterr().out
    assert f"invalid as OptionalProto, 1 problem {note}:" in out
    assert "dims [1, 2, 3, 4, 5, 6]" in out
    assert main(["show", "--kind", "opt", str(path)]) == 1
    assert f"invalid as optional {note}:" in capsys.readouterr().out
    assert main(["show", "--kind", "opt", "--json", str(path)]) == 1
    assert json.loads(capsys.readouterr().out)["error"] == f"invalid as optional {note}"
    assert main(["show", "--kind", "seq", str(path)]) == 0  # (valid: no note)
    one = tmp_path / "one.pb"
    onnxdata.write(np.zeros(2, np.float32), one, "tensor")
    assert main(["show", "--kind", "opt", str(one)]) == 1
    assert "invalid as optional:" in capsys.readouterr().out  # nothing merged: as before


def test_validate_of_a_fifo_says_cannot_read_once(capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    """The file's name and "cannot read" once, not the verdict's and the error's both."""
    import os

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert main(["validate", str(fifo)]) == 2
    assert capsys.readouterr().out == f"{fifo}: cannot read: a pipe or FIFO that gave no " \
        "bytes: no process wrote to it (a writer is waited for 1.0 s)\n"
    assert main(["validate", str(fifo), "--json"]) == 2
    said = json.loads(capsys.readouterr().out)
    assert said["error"] == f"{fifo}: a pipe or FIFO that gave no bytes: no process wrote " \
        "to it (a writer is waited for 1.0 s)"
    assert said["files"][0]["status"] == "unreadable"
