"""``onnxdata.cases.feeds``: a backend's inputs checked against the model's declared inputs
before it runs (the backends' own tests run it through ``Backend.run``)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

from onnxdata.cases.case_run import run_set
from onnxdata.cases.expectations import Expectation
from onnxdata.cases.feeds import CheckedInputs, FeedError, fit_inputs
from onnxdata.cases.load import load_checked_set, load_test_data_set
from onnxdata.errors import OnnxDataError
from onnxdata.model.types import DeclaredType

NODE = Path(__file__).parents[1] / "data" / "onnx-node"
F32 = DeclaredType("tensor", 1)
I64 = DeclaredType("tensor", 7)
STR = DeclaredType("tensor", 8)


def _misfit(value: Any, t: DeclaredType) -> str:
    with pytest.raises(FeedError) as info:
        fit_inputs([value], [("v", t)], "m.onnx", set)
    assert isinstance(info.value, OnnxDataError)
    return str(info.value)


def _fits(value: Any, t: DeclaredType) -> None:
    assert fit_inputs([value], [("v", t)], "m.onnx", set) == [("v", t, value)]


def test_tensors_take_numpy_arrays_and_scalars_of_the_declared_element_type() -> None:
    _fits(np.zeros(3, np.float32), F32)
    _fits(np.float32(1), F32)
    _fits(np.zeros(2, ">f4"), F32)  # another byte order is the same element type
    _fits(np.array([b"a"], object), STR)
    _fits(np.array(["a"]), STR)
    _fits(np.zeros(2, ml_dtypes.bfloat16), DeclaredType("tensor", 16))
    _fits(np.zeros(2, np.float64), DeclaredType("tensor", 0))  # none declared
    assert _misfit(np.zeros(2), F32) == \
        "m.onnx: input 0 'v': declared tensor(float) but given an array of float64"
    assert "given a Python float (a tensor is a numpy array)" in _misfit(0.5, F32)
    assert "given a list of 2 (a tensor is a numpy array)" in _misfit([1, 2], I64)
    assert "given an array of uint8" in _misfit(np.zeros(2, np.uint8),
                                                DeclaredType("tensor", 17))
    assert "given an array of int64" in _misfit(np.arange(2), STR)


def test_sequences_maps_and_optionals_are_checked_element_by_element() -> None:
    seq = DeclaredType("sequence", element=F32)
    _fits([], seq)
    _fits((np.zeros(1, np.float32),), seq)
    assert "'v'[2]: declared tensor(float) but given an array of int64" in \
        _misfit([np.zeros(1, np.float32)] * 2 + [np.arange(2)], seq)
    assert "'v': declared sequence(tensor(float)) but given a numpy array of float32, " \
        "shape [3] (a sequence is a list" in _misfit(np.zeros(3, np.float32), seq)
    m = DeclaredType("map", 7, element=F32)
    _fits({1: np.float32(0.5), np.int64(2): np.float32(1)}, m)
    assert "'v'[3]: declared tensor(float) but given a Python float" in \
        _misfit({3: 0.5}, m)
    assert "given a key b'k'" in _misfit({b"k": np.float32(1)}, m)
    assert "given a key True" in _misfit({True: np.float32(1)}, m)
    assert "given a key 1" in _misfit({1: np.float32(1)}, DeclaredType("map", 8, element=F32))
    assert "(a map is a dict)" in _misfit([np.float32(1)], m)
    opt = DeclaredType("optional", element=seq)
    _fits(None, opt)
    assert "'v'[0]: declared tensor(float) but given None" in _misfit([None], opt)
    _fits([None, np.zeros(1, np.float32)],
          DeclaredType("sequence", element=DeclaredType("optional", element=F32)))
    nested = DeclaredType("sequence", element=DeclaredType("map", 8, element=seq))
    assert "'v'[0][b'k'][1]: declared tensor(float) but given an array of int64" in \
        _misfit([{b"k": [np.zeros(1, np.float32), np.arange(1)]}], nested)


def test_loaded_inputs_are_not_walked_again_when_the_model_declares_their_types() -> None:
    seq = DeclaredType("sequence", element=I64)
    wrong = [np.arange(3)]  # what a caller might pass: an ndarray for a sequence
    assert fit_inputs(CheckedInputs(wrong, [seq]), [("s", seq)], "m", set)[0][2] is wrong[0]
    with pytest.raises(FeedError, match="a sequence is a list"):  # other types: checked
        fit_inputs(CheckedInputs(wrong, [F32]), [("s", seq)], "m", set)
    with pytest.raises(FeedError, match="has 1 input but 2 were given"):  # counts: always
        fit_inputs(CheckedInputs(wrong * 2, [seq] * 2), [("s", seq)], "m", set)
    again = pickle.loads(pickle.dumps(CheckedInputs(wrong, [seq])))
    assert isinstance(again, CheckedInputs) and again.declared == (seq,)
    assert again[0].tolist() == [0, 1, 2]


def test_the_test_loop_gives_the_backend_the_loaded_set_checked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    case = NODE / "test_sequence_insert_at_back"
    inputs, _ = load_checked_set(case / "test_data_set_0")
    assert isinstance(inputs, CheckedInputs) and [t.kind for t in inputs.declared] == \
        ["sequence", "tensor"]
    plain, _ = load_test_data_set(case / "test_data_set_0")
    assert type(plain) is list  # what callers get: theirs to change, so checked again

    def walked(*_: Any) -> None:
        raise AssertionError("a loaded set's values were walked again")

    pytest.importorskip("onnx.reference")
    from onnxdata.cases.backends import get_backend

    prepared = get_backend("reference").prepare(case / "model.onnx")
    monkeypatch.setattr("onnxdata.cases.feeds._misfit", walked)
    result = run_set([prepared], case / "model.onnx", case / "test_data_set_0",
                     Expectation())
    assert result.status == "pass", result.message
