"""``onnxdata.cases.backends``: ORT, onnx's reference, any onnx Backend; onnxdata's
values in and out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
import onnxdata.cases
from onnxdata import compare
from onnxdata.cases.backend_errors import BackendUnavailable
from onnxdata.cases.backends import get_backend, to_declared
from onnxdata.cases.save import as_model
from onnxdata.errors import OnnxDataError
from onnxdata.model.types import DeclaredType

DATA = Path(__file__).parents[1] / "data"
NODE = DATA / "onnx-node"
# a tensor, a sequence, an optional sequence with None, strings, and a float8 cast
CASES = ["test_abs", "test_sequence_insert_at_back", "test_loop16_seq_none",
         "test_string_concat", "test_identity_opt", "test_cast_FLOAT_to_FLOAT8E4M3FN"]


def _backend(name: str) -> Any:
    if name == "ort":
        pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
    else:
        pytest.importorskip("onnx.reference", reason="the reference backend is onnx's")
    return get_backend(name)


def _ort_loads(case: Path) -> None:
    ort = pytest.importorskip("onnxruntime")
    try:
        ort.InferenceSession(str(case / "model.onnx"), providers=["CPUExecutionProvider"])
    except Exception as exc:
        pytest.skip(f"ONNX Runtime {ort.__version__} cannot load it: {str(exc)[:160]}")


@pytest.mark.parametrize("name", ["ort", "reference"])
@pytest.mark.parametrize("case", CASES)
def test_a_backend_runs_a_case_and_gives_the_expected_outputs(name: str, case: str) -> None:
    backend = _backend(name)
    if name == "ort":
        _ort_loads(NODE / case)
    inputs, expected = onnxdata.cases.load_test_data_set(NODE / case / "test_data_set_0")
    got = backend.run(NODE / case / "model.onnx", inputs)
    assert compare(got, expected) == []
    assert len(got) == len(expected)


@pytest.mark.parametrize("name", ["ort", "reference"])
def test_the_model_may_be_a_folder_our_message_or_onnx_message(name: str) -> None:
    backend = _backend(name)
    onnx = pytest.importorskip("onnx")
    case = NODE / "test_sequence_insert_at_back"
    inputs, expected = onnxdata.cases.load_test_data_set(case / "test_data_set_0")
    for model in (case, str(case / "model.onnx"), as_model(case / "model.onnx"),
                  onnx.load(str(case / "model.onnx"))):
        prepared = backend.prepare(model)
        assert compare(prepared.run(inputs), expected) == []
        assert compare(prepared.run(inputs), expected) == []  # prepared once, run twice


def test_strings_come_back_as_bytes_from_every_backend() -> None:
    for name in ("ort", "reference"):
        backend = _backend(name)
        inputs, _ = onnxdata.cases.load_test_data_set(
            NODE / "test_string_concat" / "test_data_set_0")
        (out,) = backend.run(NODE / "test_string_concat" / "model.onnx", inputs)
        assert out.dtype == object and all(isinstance(x, bytes) for x in out.reshape(-1)), name


def test_an_onnx_backend_named_module_attr_runs() -> None:
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    backend = get_backend("onnxruntime.backend:backend")
    assert backend.name == "onnxruntime.backend:backend"
    assert "onnxruntime" in backend.versions()
    inputs, expected = onnxdata.cases.load_test_data_set(NODE / "test_abs" / "test_data_set_0")
    assert compare(backend.run(NODE / "test_abs", inputs), expected) == []


def test_a_missing_provider_is_unavailable_with_the_reason() -> None:
    pytest.importorskip("onnxruntime")
    with pytest.raises(BackendUnavailable, match="NoSuchExecutionProvider is not available"):
        get_backend("ort", providers=["NoSuchExecutionProvider", "CPUExecutionProvider"])
    assert get_backend("ort", providers=["CPUExecutionProvider"]).versions()["providers"] == \
        "CPUExecutionProvider"


def test_bad_names_and_missing_modules_say_so() -> None:
    with pytest.raises(ValueError, match="'ort', 'reference' or 'module:attr'"):
        get_backend("tensorrt")
    with pytest.raises(BackendUnavailable, match="cannot import no_such_module_here"):
        get_backend("no_such_module_here:Backend")
    with pytest.raises(ValueError, match="has no NoSuch"):
        get_backend("onnxdata:NoSuch")
    with pytest.raises(ValueError, match="providers are for the ort backend"):
        get_backend("reference", providers=["CPUExecutionProvider"])


def test_without_onnxruntime_the_ort_backend_is_unavailable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(BackendUnavailable, match=r"onnxdata\[ort\]"):
        get_backend("ort")


def test_a_model_the_backend_cannot_load_and_too_many_inputs_are_our_errors(
        tmp_path: Path) -> None:
    for name in ("ort", "reference"):
        backend = _backend(name)
        model = as_model(NODE / "test_abs" / "model.onnx")
        model.graph.node[0].op_type = "NoSuchOp"
        (tmp_path / "model.onnx").write_bytes(model.SerializeToString())
        with pytest.raises(OnnxDataError, match="cannot load"):
            backend.prepare(tmp_path / "model.onnx")
        with pytest.raises(OnnxDataError, match=r"model\.onnx has 1 input but 2 were given: "
                                                r"input 0 'x' "):
            backend.run(NODE / "test_abs", [np.zeros(3, np.float32)] * 2)


def test_to_declared_types_python_values_as_the_model_declares() -> None:
    f = DeclaredType("tensor", 1)
    m = DeclaredType("map", 8, element=f)
    got = to_declared([{"a": 0.25}], DeclaredType("sequence", element=m))
    assert got == [{b"a": np.float32(0.25)}] and got[0][b"a"].dtype == np.float32
    import ml_dtypes

    bits = np.array([0x38, 0x40], np.uint8)  # ORT's uint8 for float8e4m3fn
    as_f8 = to_declared(bits, DeclaredType("tensor", 17))
    assert as_f8.dtype == ml_dtypes.float8_e4m3fn and as_f8.tolist() == [1.0, 2.0]
    assert to_declared(None, DeclaredType("optional", element=f)) is None
    strings = to_declared(np.array(["x", "é"], object), DeclaredType("tensor", 8))
    assert strings.tolist() == [b"x", "é".encode()]


def test_ort_sessions_do_not_spin_between_runs() -> None:
    """A test loop waits between runs; ORT's default spinning threads burn a core then."""
    backend = _backend("ort")
    prepared = backend.prepare(NODE / "test_abs" / "model.onnx")
    options = prepared.session.get_session_options()
    assert options.get_session_config_entry("session.intra_op.allow_spinning") == "0"


# ---------------------------------------------------------------- inputs against the model

SEQ = NODE / "test_sequence_insert_at_back"  # input 0 'sequence': sequence(tensor(int64))


@pytest.mark.parametrize("name", ["ort", "reference"])
def test_an_array_for_a_sequence_input_is_refused_before_the_backend(name: str) -> None:
    backend = _backend(name)
    with pytest.raises(OnnxDataError) as info:
        backend.run(SEQ / "model.onnx", [np.arange(3), np.arange(2)])
    message = str(info.value)
    assert "input 0 'sequence'" in message and "sequence(tensor(int64))" in message
    assert "numpy array" in message and "model.onnx" in message
    assert "failed" not in message  # said before the backend ran, not by it


@pytest.mark.parametrize("name", ["ort", "reference"])
def test_a_sequence_element_of_another_dtype_is_refused(name: str) -> None:
    backend = _backend(name)
    with pytest.raises(OnnxDataError,
                       match=r"input 0 'sequence'\[1\]: declared tensor\(int64\) but given "
                             r"an array of float32"):
        backend.run(SEQ, [[np.arange(3), np.arange(3, dtype=np.float32)], np.arange(2)])
    with pytest.raises(OnnxDataError, match=r"input 1 'tensor': declared tensor\(int64\) but "
                                            r"given an array of float64"):
        backend.run(SEQ, [[np.arange(3)], np.zeros(2)])
    with pytest.raises(OnnxDataError, match=r"input 0 'sequence'\[0\]: declared "
                                            r"tensor\(int64\) but given a list"):
        backend.run(SEQ, [[[0, 1]], np.arange(2)])


@pytest.mark.parametrize("name", ["ort", "reference"])
def test_too_few_inputs_name_the_missing_ones(name: str) -> None:
    backend = _backend(name)
    with pytest.raises(OnnxDataError, match=r"has 2 inputs but 1 was given: input 1 "
                                            r"'tensor' \(tensor\(int64\)\) is missing"):
        backend.run(SEQ, [[np.arange(3)]])
    with pytest.raises(OnnxDataError, match=r"input 0 'sequence' .* and input 1 'tensor' "):
        backend.run(SEQ, [])


@pytest.mark.parametrize("name", ["ort", "reference"])
def test_none_is_for_optional_inputs_only(name: str) -> None:
    backend = _backend(name)
    with pytest.raises(OnnxDataError, match=r"input 1 'tensor': declared tensor\(int64\) but "
                                            r"given None"):
        backend.run(SEQ, [[np.arange(3)], None])
    loop = NODE / "test_loop16_seq_none"  # input 2 is optional(sequence(tensor(float)))
    inputs, _ = onnxdata.cases.load_test_data_set(loop / "test_data_set_0")
    (out,) = backend.run(loop, [*inputs[:2], None])  # an empty optional: runs
    assert isinstance(out, list)
    with pytest.raises(OnnxDataError, match=r"input 2 'opt_seq' \(optional\(.*\)\) is missing "
                                            r".*None for an empty optional"):
        backend.run(loop, inputs[:2])


def _add_with_initializer(tmp_path: Path, onnx: Any) -> Path:
    """Add(x, y) where y is a graph input with an initializer (a default value)."""
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "y"], ["z"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.array([10, 20], np.float32), "y")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = tmp_path / "model.onnx"
    path.write_bytes(model.SerializeToString())
    return path


@pytest.mark.parametrize("name", ["ort", "reference"])
def test_trailing_inputs_with_an_initializer_may_be_left_out(name: str, tmp_path: Path,
                                                             onnx: Any) -> None:
    backend = _backend(name)
    model = _add_with_initializer(tmp_path, onnx)
    x = np.array([1, 2], np.float32)
    assert backend.run(model, [x])[0].tolist() == [11, 22]
    assert backend.run(model, [x, x])[0].tolist() == [2, 4]
    with pytest.raises(OnnxDataError, match=r"input 0 'x' \(tensor\(float\)\) is missing"):
        backend.run(model, [])
