"""strings="str": STRING values and string map keys as str (what ONNX Runtime takes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import onnxdata
import onnxdata.cases
from onnxdata import MapProto
from tests.conftest import CORPUS

STRING_CASE = CORPUS / "test_string_concat"


def _value() -> dict[bytes, list[np.ndarray]]:
    return {b"k\xc3\xa9": [np.array([[b"a", "\u00e9".encode()], [b"", b"xyz"]], dtype=object),
                          np.array([b"q"], dtype=object)]}


def test_str_decodes_elements_and_keys_in_every_reader(tmp_path: Path) -> None:
    path = tmp_path / "m.pb"
    onnxdata.save(onnxdata.from_numpy(_value(), elem_type="sequence"), path)
    expected_text = np.array([["a", "\u00e9"], ["", "xyz"]], dtype=object)
    for value in (onnxdata.read(path, "map", strings="str"),
                  onnxdata.to_numpy(onnxdata.load(path, MapProto), strings="str")):
        assert list(value) == ["k\u00e9"]
        text, more = value["k\u00e9"]
        assert text.dtype == object and text.tolist() == expected_text.tolist()
        assert more.tolist() == ["q"]
    as_bytes = onnxdata.read(path, "map")
    assert list(as_bytes) == [b"k\xc3\xa9"] and as_bytes[b"k\xc3\xa9"][0][0, 1] == "\u00e9".encode()


def test_the_first_string_that_is_not_utf8_is_named_by_path(tmp_path: Path) -> None:
    value = [np.array([b"ok", b"fine"], dtype=object),
             np.array([[b"a", b"\xff\xfe"]], dtype=object)]
    path = tmp_path / "s.pb"
    onnxdata.write(value, path)
    with pytest.raises(onnxdata.ValidationError) as info:
        onnxdata.read(path, "sequence", strings="str")
    assert str(path) in str(info.value)
    (problem,) = info.value.problems
    assert problem.path == "[1][0, 1]" and "not UTF-8" in problem.message
    with pytest.raises(onnxdata.ValidationError, match="not UTF-8"):
        onnxdata.to_numpy(onnxdata.load(path, "sequence"), strings="str")
    bad_key = tmp_path / "k.pb"
    onnxdata.save(onnxdata.from_numpy({b"\xff": np.zeros(1, np.float32)}), bad_key)
    with pytest.raises(onnxdata.ValidationError) as info:
        onnxdata.read(bad_key, "map", strings="str")
    assert info.value.problems[0].path == "[b'\\xff'] (key)"


def test_load_test_data_set_gives_str_for_a_string_model() -> None:
    if not STRING_CASE.exists():
        pytest.skip(f"{STRING_CASE.name} is not in this corpus")
    inputs, outputs = onnxdata.cases.load_test_data_set(STRING_CASE / "test_data_set_0",
                                                        strings="str")
    raw_in, _ = onnxdata.cases.load_test_data_set(STRING_CASE / "test_data_set_0")
    assert inputs[0].shape == raw_in[0].shape
    assert inputs[0].reshape(-1).tolist() == [s.decode() for s in raw_in[0].reshape(-1)]
    assert all(isinstance(s, str) for s in outputs[0].reshape(-1))


def test_numbers_pass_unchanged_and_a_wrong_choice_is_named() -> None:
    t = onnxdata.from_numpy(np.arange(3, dtype=np.int64))
    assert onnxdata.to_numpy(t, strings="str").dtype == np.int64
    with pytest.raises(ValueError, match="expected 'bytes' or 'str'"):
        onnxdata.to_numpy(t, strings="text")  # type: ignore[call-overload]
