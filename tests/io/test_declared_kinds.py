"""``read`` and ``load`` without a kind: the kind the model beside the file declares, looked
up once per file of a test-data set folder and remembered while model.onnx stays the same
file (``io.load_save._declared_kinds``); a model rewritten or removed is looked at again."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
import onnxdata.io.load_save as load_save
from onnxdata import DecodeError
from tests.conftest import CORPUS

#: A sequence of one float tensor: valid as a SequenceProto and as an OptionalProto.
ONE_TENSOR_SEQUENCE = CORPUS / "test_if_seq" / "test_data_set_0" / "output_0.pb"
#: Models whose input 0 is seq(tensor(float)) and optional(tensor(float)).
SEQUENCE_MODEL = CORPUS / "test_identity_sequence" / "model.onnx"
OPTIONAL_MODEL = CORPUS / "test_optional_get_element_optional_tensor" / "model.onnx"


@pytest.fixture
def case(tmp_path: Path) -> Path:
    """case/model.onnx (input 0: a sequence) and case/test_data_set_0/input_0.pb."""
    folder = tmp_path / "case" / "test_data_set_0"
    folder.mkdir(parents=True)
    shutil.copy(SEQUENCE_MODEL, tmp_path / "case" / "model.onnx")
    f = folder / "input_0.pb"
    f.write_bytes(ONE_TENSOR_SEQUENCE.read_bytes())
    return f


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files whose model was looked up (``declared_for``), not answered from memory."""
    calls: list[str] = []
    real = load_save.declared_for

    def spy(file: Any, **kwargs: Any) -> Any:
        calls.append(str(file))
        return real(file, **kwargs)

    monkeypatch.setattr(load_save, "_declared_kinds", {})
    monkeypatch.setattr(load_save, "declared_for", spy)
    return calls


def test_the_model_is_looked_up_once_per_file(case: Path, lookups: list[str]) -> None:
    output = case.with_name("output_0.pb")
    output.write_bytes(case.read_bytes())
    for _ in range(3):
        assert isinstance(onnxdata.read(case), list)
        assert isinstance(onnxdata.read(output), list)
        assert len(onnxdata.load(case).tensor_values) == 1
    assert lookups == [str(case), str(output)]


def test_a_rewritten_model_is_read_again(case: Path, lookups: list[str]) -> None:
    assert isinstance(onnxdata.read(case), list)
    shutil.copy(OPTIONAL_MODEL, case.parent.parent / "model.onnx")  # same inode, new bytes
    value = onnxdata.read(case)
    assert isinstance(value, np.ndarray) and value.tolist() == [1, 2, 3, 4, 5]
    assert len(lookups) == 2


def test_a_removed_model_is_not_remembered(case: Path, lookups: list[str]) -> None:
    assert isinstance(onnxdata.read(case), list)
    (case.parent.parent / "model.onnx").unlink()
    with pytest.raises(DecodeError, match="valid as SequenceProto or OptionalProto"):
        onnxdata.read(case)
    (case.parent.parent / "model.onnx").mkdir()  # not a regular file: no model either
    with pytest.raises(DecodeError, match="valid as SequenceProto or OptionalProto"):
        onnxdata.read(case)


def test_an_unusable_model_warns_at_every_read(case: Path, lookups: list[str]) -> None:
    (case.parent.parent / "model.onnx").write_bytes(b"\x3a\x10\x00")  # cut short
    for _ in range(2):
        with pytest.warns(UserWarning, match="runs past the end"), \
                pytest.raises(DecodeError, match="valid as SequenceProto or OptionalProto"):
            onnxdata.read(case)
