"""One API convention: value before path, kinds by any name, load without a kind as read."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import onnxdata
import onnxdata.cases
from onnxdata import SequenceProto, TensorProto
from tests.conftest import CORPUS, import_onnx

TENSOR_FILE = CORPUS / "test_abs/test_data_set_0/input_0.pb"
SEQUENCE_FILE = CORPUS / "test_sequence_insert_at_back/test_data_set_0/input_0.pb"
FOUR_WAY = CORPUS / "test_loop16_seq_none/test_data_set_0/input_2.pb"


def test_write_takes_the_value_first(tmp_path: Path) -> None:
    value = [np.arange(3, dtype=np.float32)]
    onnxdata.write(value, tmp_path / "w.pb")
    onnxdata.save(onnxdata.from_numpy(value), tmp_path / "s.pb")
    assert (tmp_path / "w.pb").read_bytes() == (tmp_path / "s.pb").read_bytes()


@pytest.mark.parametrize("kind", ["sequence", "SequenceProto", SequenceProto])
def test_every_spelling_of_a_kind_is_accepted(kind: object, tmp_path: Path) -> None:
    expected = SequenceProto()
    expected.ParseFromString(SEQUENCE_FILE.read_bytes())
    assert onnxdata.load(SEQUENCE_FILE, kind) == expected  # type: ignore[call-overload]
    value = onnxdata.read(SEQUENCE_FILE, kind)  # type: ignore[arg-type]
    assert len(value) == len(expected.tensor_values)
    onnxdata.write(value, tmp_path / "v.pb", kind)  # type: ignore[arg-type]
    assert onnxdata.from_numpy(value, kind) == onnxdata.from_numpy(value, "sequence")  # type: ignore[call-overload]


def test_onnx_classes_are_kinds_and_load_gives_onnx_messages() -> None:
    onnx = import_onnx()
    message = onnxdata.load(SEQUENCE_FILE, onnx.SequenceProto)
    assert type(message) is onnx.SequenceProto
    assert len(onnxdata.read(SEQUENCE_FILE, onnx.SequenceProto)) == len(message.tensor_values)


def test_an_unknown_kind_names_the_choices() -> None:
    with pytest.raises(ValueError, match=r"expected one of tensor, sparse_tensor.*SequenceProto"):
        onnxdata.load(SEQUENCE_FILE, "tensr")  # type: ignore[call-overload]


def test_load_without_a_kind_follows_read(tmp_path: Path) -> None:
    assert isinstance(onnxdata.load(TENSOR_FILE), TensorProto)
    declared = onnxdata.load(FOUR_WAY)  # the model declares an optional
    assert declared.DESCRIPTOR.name == "OptionalProto"
    assert isinstance(onnxdata.load(TENSOR_FILE.read_bytes()), TensorProto)


def test_load_without_a_kind_on_ambiguous_bytes_says_pass_kind(tmp_path: Path) -> None:
    lone = tmp_path / "v.pb"  # no model beside it: sequence and optional are both valid
    shutil.copy(FOUR_WAY, lone)
    for call in (onnxdata.load, onnxdata.read):
        with pytest.raises(onnxdata.DecodeError) as info:
            call(lone)
        text = str(info.value)
        assert str(lone) in text and f"onnxdata explore {lone}" in text
        # the kinds to pass, once: 'say which with kind="sequence" or kind="optional"'
        assert 'kind="sequence" or kind="optional"' in text and "pass kind=" not in text


def test_load_of_bytes_no_message_fits_lists_the_kinds() -> None:
    with pytest.raises(onnxdata.DecodeError) as info:
        onnxdata.load(b"\xff\xff")
    assert "pass kind= (one of tensor, sparse_tensor, sequence, optional, map)" in str(info.value)


def test_a_wrong_kind_that_parses_warns_to_explore() -> None:
    with pytest.warns(onnxdata.UnknownFieldsWarning, match=r"onnxdata explore .*input_0\.pb"):
        junk = onnxdata.load(TENSOR_FILE, "sequence")
    assert junk.elem_type == 1  # what protobuf makes of a tensor's data_type


def test_a_wrong_kind_that_does_not_parse_names_the_byte_and_hints(tmp_path: Path) -> None:
    bad = tmp_path / "t.pb"
    bad.write_bytes(TENSOR_FILE.read_bytes()[:-3])
    with pytest.raises(onnxdata.DecodeError) as info:
        onnxdata.load(bad, "map")
    text = str(info.value)
    assert str(bad) in text and "MapProto" in text and "onnxdata explore" in text
    assert "Wire format" not in text and "Error parsing" not in text


def test_load_test_data_set_names_a_missing_or_case_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope"):
        onnxdata.cases.load_test_data_set(tmp_path / "nope")
    with pytest.raises(onnxdata.DecodeError, match=r"test case folder.*test_data_set_0"):
        onnxdata.cases.load_test_data_set(FOUR_WAY.parent.parent)


def test_save_into_a_missing_folder_names_the_users_path(tmp_path: Path) -> None:
    target = tmp_path / "nodir" / "x.pb"
    for call in (lambda: onnxdata.save(SequenceProto(), target),
                 lambda: onnxdata.write([], target, elem_type="tensor")):
        with pytest.raises(FileNotFoundError) as info:
            call()
        assert str(target) in str(info.value) and "onnxdata-tmp" not in str(info.value)


def test_write_with_the_old_argument_order_says_value_first(tmp_path: Path) -> None:
    target = tmp_path / "x.pb"
    with pytest.raises(TypeError, match=r"not list \(write takes the value first, then the "
                                        r"path: write\(value, path\)\)"):
        onnxdata.write(str(target), [np.zeros(3, np.float32)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"not int$"):
        onnxdata.write([np.zeros(3, np.float32)], 3)  # type: ignore[arg-type]
    assert not target.exists()


def test_save_with_the_arguments_swapped_says_message_first(tmp_path: Path) -> None:
    target = tmp_path / "x.pb"
    with pytest.raises(TypeError, match=r"not SequenceProto \(save takes the message first"):
        onnxdata.save(str(target), SequenceProto())  # type: ignore[arg-type]
    assert not target.exists()
