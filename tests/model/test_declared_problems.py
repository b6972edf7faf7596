"""Problems against a model's declared type obey the cap every check has: the first 1,000,
then "…and N more problems", in the library and in every command (issue 43, finding 14:
validate printed 32,259 lines for a set whose model declared another element type)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import onnxdata
from onnxdata.cases import load_test_data_set
from onnxdata.cli.main import main
from onnxdata.errors import ValidationError
from onnxdata.generated.onnx_ml_pb2 import ModelProto
from onnxdata.model.types import declared_type, type_problems_reference
from onnxdata.rules.common import MAX_PROBLEMS, joined_problems, more_problems
from onnxdata.wire.field_tree import field_tree

N = 3000  # elements, each one declared-type problem


def _case(tmp_path: Path) -> Path:
    """A set whose input 0 holds N float tensors where the model declares int64 ones."""
    model = ModelProto()
    vi = model.graph.input.add()
    vi.name = "x"
    vi.type.sequence_type.elem_type.tensor_type.elem_type = 7  # int64
    (tmp_path / "model.onnx").write_bytes(model.SerializeToString())
    folder = tmp_path / "test_data_set_0"
    folder.mkdir()
    onnxdata.write([np.zeros(2, np.float32)] * N, folder / "input_0.pb", "sequence")
    return folder / "input_0.pb"


def test_type_problems_are_the_first_1000_then_a_count(tmp_path: Path) -> None:
    data = _case(tmp_path).read_bytes()
    t = declared_type(ModelProto.FromString((tmp_path / "model.onnx").read_bytes())
                      .graph.input[0].type)
    found = type_problems_reference(field_tree(data, "SequenceProto").root, t)
    assert len(found) == MAX_PROBLEMS + 1  # was N
    assert found[0].path == "tensor_values[0].data_type"
    assert found[-1] == more_problems(N - MAX_PROBLEMS)
    assert len(type_problems_reference(field_tree(data, "SequenceProto").root, t,
                                       max_problems=5)) == 6
    with pytest.raises(ValidationError) as info:
        load_test_data_set(tmp_path / "test_data_set_0")
    assert len(info.value.problems) == MAX_PROBLEMS + 1


def test_every_command_caps_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_case(tmp_path))
    assert main(["validate", path]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 + MAX_PROBLEMS + 1, len(lines)  # the verdict, 1,000, the count
    assert lines[-1] == f"  - {more_problems(N - MAX_PROBLEMS)}"
    assert main(["validate", path, "--json"]) == 1
    (f,) = json.loads(capsys.readouterr().out)["files"]
    assert len(f["problems"]) == MAX_PROBLEMS + 1
    assert main(["explore", path, "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["type_problems"]) == MAX_PROBLEMS + 1
    assert main(["explore", path]) == 0
    out = capsys.readouterr().out
    assert out.count("declared tensor(int64) but holds float") == MAX_PROBLEMS
    assert f"  {more_problems(N - MAX_PROBLEMS)}\n" in out


def test_a_value_s_own_problems_and_its_declared_type_s_share_one_cap() -> None:
    from onnxdata.errors import Problem

    own = [Problem(f"a{i}", "x") for i in range(MAX_PROBLEMS)] + [more_problems(7)]
    declared = [Problem(f"b{i}", "y") for i in range(3)]
    assert joined_problems(own, declared) == [*own[:-1], more_problems(10)]
    few = [Problem("a", "x")]
    assert joined_problems(few, declared) == few + declared
    many = [Problem(f"b{i}", "y") for i in range(MAX_PROBLEMS)] + [more_problems(2)]
    assert joined_problems(few, many) == [*few, *many[:MAX_PROBLEMS - 1], more_problems(3)]
