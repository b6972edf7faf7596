"""The bounded model.onnx reader: the same inputs and outputs as protobuf's parse, read
without the initializers; one rule for a model that cannot be used, in every command."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from google.protobuf.message import DecodeError as ProtobufDecodeError

import onnxdata
import onnxdata.cases
import onnxdata.model.file as model_file
from onnxdata.cli.main import main
from onnxdata.errors import DecodeError
from onnxdata.generated.onnx_ml_pb2 import ModelProto, TypeProto, ValueInfoProto
from onnxdata.model.file import declared_for, read_model_types
from onnxdata.model.types import declared_type, find_model
from onnxdata.wire.format import encode_varint
from tests.conftest import CORPUS

MODELS = sorted(CORPUS.glob("*/model.onnx"))
TENSOR_CASE = CORPUS / "test_abs"


def _protobuf_view(data: bytes) -> list[list[tuple[str, bytes]]]:
    model = ModelProto()
    model.ParseFromString(data)
    return [[(v.name, v.type.SerializeToString()) for v in values]
            for values in (model.graph.input, model.graph.output)]


def _ours(path: Path) -> list[list[tuple[str, bytes]]]:
    types = read_model_types(path)
    out = []
    for values in (types.inputs, types.outputs):
        row = []
        for v in values:
            tp = TypeProto()
            tp.ParseFromString(v.type_bytes)
            row.append((v.name, tp.SerializeToString()))
        out.append(row)
    return out


def test_corpus_models_have_models() -> None:
    assert len(MODELS) > 50


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.parent.name)
def test_same_inputs_and_outputs_as_protobuf(path: Path) -> None:
    assert _ours(path) == _protobuf_view(path.read_bytes())
    types = read_model_types(path)
    model = ModelProto()
    model.ParseFromString(path.read_bytes())
    for io, values in (("input", model.graph.input), ("output", model.graph.output)):
        for i, v in enumerate(values):
            try:
                want = declared_type(v.type)
            except ValueError:
                with pytest.raises(DecodeError, match="not one of the data message types"):
                    types.declared(io, i)  # type: ignore[arg-type]
                continue
            assert types.declared(io, i) == want  # type: ignore[arg-type]


def _value_info(name: str, elem_type: int) -> bytes:
    v = ValueInfoProto(name=name)
    v.type.tensor_type.elem_type = elem_type
    return v.SerializeToString()


def _field(number: int, payload: bytes) -> bytes:
    return encode_varint(number << 3 | 2) + encode_varint(len(payload)) + payload


def _graph(*parts: bytes) -> bytes:
    return _field(7, b"".join(parts))


def test_merges_as_protobuf_does(tmp_path: Path) -> None:
    """Two graph fields add up their inputs; a type written twice merges; a name written
    twice keeps the last; a graph with the wrong wire type, varints, fixed-width fields and
    groups are stepped over, all as protobuf parses the same bytes."""
    twice = ValueInfoProto(name="a")
    twice.type.tensor_type.elem_type = 1
    more = TypeProto()
    more.tensor_type.shape.dim.add(dim_value=3)
    twice_bytes = (twice.SerializeToString() + _field(2, more.SerializeToString())
                   + _field(1, b"b"))
    group = b"\x9b\x01" + b"\x08\x01" + b"\x9c\x01"  # field 19 start-group, a varint, end
    data = b"".join([
        b"\x08\x08",  # ir_version
        b"\x3d\x00\x00\x00\x00",  # field 7 as a 32-bit value: an unknown field to protobuf
        _graph(_field(11, twice_bytes), b"\x11" + bytes(8), group,
               _field(5, _field(9, bytes(1000)))),  # an initializer's raw_data, stepped over
        _field(8, b"\x0a\x00"),
        _graph(_field(11, _value_info("c", 7)), _field(12, _value_info("y", 1))),
    ])
    path = tmp_path / "model.onnx"
    path.write_bytes(data)
    assert _ours(path) == _protobuf_view(data)
    types = read_model_types(path)
    assert [v.name for v in types.inputs] == ["b", "c"]
    assert str(types.declared("input", 0)) == "tensor(float)"
    assert types.declared("input", 0).shape == (3,)


@pytest.mark.parametrize("data, reason", [
    (_graph(_field(11, _value_info("x", 1)))[:-3], "runs past the end"),
    (b"\x3a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", "varint longer than 10 bytes"),
    (b"\x3a", "truncated varint"),
    (_graph(b"\x5a\x05\x0a"), "runs past the end"),
    (b"\x08", "truncated varint"),
    (b"\x39\x00\x00", "truncated 64-bit value"),
    (b"\x0c", "unexpected end-group"),
    (b"\x0b\x08\x01", "group 1 is not closed"),
    (b"\x00", "invalid field number 0"),
])
def test_corrupt_models_are_one_decode_error(tmp_path: Path, data: bytes, reason: str) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(data)
    with pytest.raises(DecodeError, match=reason) as e:
        read_model_types(path)
    assert str(path) in str(e.value) and "ModelProto" in str(e.value)
    assert e.value.offset is not None and 0 <= e.value.offset <= len(data)
    with pytest.raises(ProtobufDecodeError):  # protobuf refuses them too
        ModelProto().ParseFromString(data)


def test_reads_headers_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A 20 MB initializer is stepped over: only a few windows of the file are read."""
    big = _field(5, _field(9, bytes(20 << 20)))  # an initializer's raw_data
    data = _graph(_field(11, _value_info("x", 1)), big, _field(12, _value_info("y", 1)))
    path = tmp_path / "model.onnx"
    path.write_bytes(data)
    read: list[int] = []
    real = os.pread

    def counting(fd: int, n: int, offset: int) -> bytes:
        out = real(fd, n, offset)
        read.append(len(out))
        return out

    monkeypatch.setattr(model_file.os, "pread", counting)
    types = read_model_types(path)
    assert [v.name for v in types.outputs] == ["y"]
    assert sum(read) < 256 << 10  # a few of the wire engine's 64 KiB windows
    assert len(data) > 20 << 20


def test_type_bytes_are_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_file, "MAX_TYPE_BYTES", 100)
    v = ValueInfoProto(name="x", doc_string="d" * 500)
    v.type.tensor_type.elem_type = 1
    v.type.denotation = "t" * 200
    path = tmp_path / "model.onnx"
    path.write_bytes(_graph(_field(11, v.SerializeToString())))
    with pytest.raises(DecodeError, match="more than 100 bytes"):
        read_model_types(path)


def test_declared_errors_name_the_model(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    opaque = ValueInfoProto(name="o")
    opaque.type.opaque_type.name = "thing"
    path.write_bytes(_graph(_field(11, _value_info("x", 1)), _field(11, opaque.SerializeToString()),
                            _field(11, b"\x0a\x01z\x12\x02\x0a\xff")))  # a type cut short
    types = read_model_types(path)
    with pytest.raises(DecodeError) as e:
        types.declared("input", 3)
    assert str(e.value) == f"{path} has 3 inputs, no input 3"
    with pytest.raises(DecodeError) as e:
        types.declared("output", 0)
    assert str(e.value) == f"{path} has 0 outputs, no output 0"
    with pytest.raises(DecodeError, match=r"input 1 \('o'\): type opaque_type"):
        types.declared("input", 1)
    with pytest.raises(DecodeError, match=r"input 2 \('z'\): its type cannot be parsed"):
        types.declared("input", 2)


# --- the layout and the one rule for an unusable model ------------------------------------

def _flat(text: str) -> str:
    """Console text with rich's line wrapping undone."""
    return " ".join(text.split())


def _case(tmp_path: Path, model: bytes | None) -> Path:
    """case/model.onnx (when given) and case/test_data_set_0/input_0.pb, a float tensor."""
    case = tmp_path / "case"
    (case / "test_data_set_0").mkdir(parents=True)
    if model is not None:
        (case / "model.onnx").write_bytes(model)
    f = case / "test_data_set_0" / "input_0.pb"
    f.write_bytes((TENSOR_CASE / "test_data_set_0" / "input_0.pb").read_bytes())
    return f


def test_find_model_only_in_the_layout(tmp_path: Path) -> None:
    f = _case(tmp_path, (TENSOR_CASE / "model.onnx").read_bytes())
    assert find_model(f) == (f.parent.parent / "model.onnx", "input", 0)
    other = f.parent.parent / "test_data_set_x"
    other.mkdir()
    (other / "input_0.pb").write_bytes(f.read_bytes())
    assert find_model(other / "input_0.pb") is None
    (f.parent.parent / "input_0.pb").write_bytes(f.read_bytes())  # beside the model
    assert find_model(f.parent.parent / "input_0.pb") is None


def test_find_model_asks_for_the_model_at_every_call(tmp_path: Path) -> None:
    """The folder's layout is worked out once per folder; whether model.onnx is there is
    asked each time: a model written after a first look is found, one removed is not."""
    f = _case(tmp_path, None)
    assert find_model(f) is None
    model = f.parent.parent / "model.onnx"
    model.write_bytes((TENSOR_CASE / "model.onnx").read_bytes())
    assert find_model(f) == (model, "input", 0)
    assert find_model(f.parent / "." / "input_0.pb") == (model, "input", 0)
    assert find_model(f"{f.parent}//output_3.pb") == (model, "output", 3)
    model.unlink()
    assert find_model(f) is None


def test_a_declared_type_is_parsed_once_and_an_error_every_time() -> None:
    types = read_model_types(TENSOR_CASE / "model.onnx")
    assert types.declared("input", 0) is types.declared("input", 0)
    for _ in range(2):
        with pytest.raises(DecodeError, match="no input 7"):
            types.declared("input", 7)


def test_corrupt_found_model_is_ignored_with_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The rule: a model found beside the file that cannot be used is left out, with a
    warning, by validate, explore, show and read alike."""
    f = _case(tmp_path, b"\x3a\x10\x00")
    found = declared_for(f)
    assert found.type is None and found.warning is not None
    assert "model.onnx" in found.warning and "runs past the end" in found.warning
    assert main(["validate", str(f)]) == 0
    out = _flat(capsys.readouterr().out)
    assert "warning" in out and "runs past the end" in out and "valid TensorProto" in out
    assert main(["explore", "--json", str(f)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["declared"] is None and got["chosen"] == "tensor"
    assert "runs past the end" in got["model_warning"]
    assert main(["explore", str(f)]) == 0
    assert "runs past the end" in _flat(capsys.readouterr().err)
    assert main(["show", str(f)]) == 0
    captured = capsys.readouterr()
    assert "runs past the end" in _flat(captured.err) and "shape (3, 4, 5)" in captured.out
    with pytest.warns(UserWarning, match="runs past the end"):
        value = onnxdata.read(f)
    assert value.shape == (3, 4, 5)


def test_model_without_that_input_is_ignored_too(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    f = _case(tmp_path, _graph(_field(12, _value_info("y", 1))))
    assert main(["validate", str(f)]) == 0
    assert "model.onnx has 0 inputs, no input 0: the file's type is not checked against it" \
        in _flat(capsys.readouterr().out)


def test_a_readable_model_without_the_files_input_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The model is read: the warning says it has no such input (one input: singular), not
    that it cannot be read; validate, show, explore and read say the same words."""
    f = _case(tmp_path, (TENSOR_CASE / "model.onnx").read_bytes())
    f = f.rename(f.with_name("input_9.pb"))
    model = f.parent.parent / "model.onnx"
    said = f"{model} has 1 input, no input 9: the file's type is not checked against it"
    assert declared_for(f).warning == said
    assert main(["validate", str(f)]) == 0
    out = _flat(capsys.readouterr().out)
    assert f"warning: {said}" in out and "cannot read" not in out and "valid TensorProto" in out
    for command in ("show", "explore"):
        assert main([command, str(f)]) == 0
        err = _flat(capsys.readouterr().err)
        assert err == f"onnxdata: warning: {said}", (command, err)
    with pytest.warns(UserWarning) as caught:
        onnxdata.read(f)
    assert [str(w.message) for w in caught] == [said]
    with pytest.raises(DecodeError) as e:  # named: the model must be usable
        onnxdata.explore(f, model=model, io="input", index=9)
    assert str(e.value) == f"{model} has 1 input, no input 9"


def test_named_model_must_be_usable(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _case(tmp_path, b"\x3a\x10\x00")
    model = str(f.parent.parent / "model.onnx")
    assert main(["explore", str(f), "--model", model, "--input", "0"]) == 2
    assert "runs past the end" in _flat(capsys.readouterr().err)
    with pytest.raises(DecodeError, match="runs past the end"):
        onnxdata.cases.load_test_data_set(f.parent)
    with pytest.raises(DecodeError, match="no input 1"):
        onnxdata.explore(f, model=TENSOR_CASE / "model.onnx", io="input", index=1)


def test_good_model_still_declares(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _case(tmp_path, (TENSOR_CASE / "model.onnx").read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert onnxdata.read(f).shape == (3, 4, 5)
    assert main(["validate", str(f)]) == 0
    out = _flat(capsys.readouterr().out)
    assert "(declared tensor(float))" in out and "warning" not in out


def test_load_test_data_set_names_the_folder(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="nope") as e:
        onnxdata.cases.load_test_data_set(tmp_path / "nope")
    assert "model.onnx" not in str(e.value) and "as a test data set: no such folder" in str(e.value)
    f = _case(tmp_path, (TENSOR_CASE / "model.onnx").read_bytes())
    (tmp_path / "model.onnx").write_bytes(b"\x3a\x10\x00")  # a model one level up
    with pytest.raises(DecodeError, match=r"test case folder: pass one of its data sets "
                                          r"\(test_data_set_0\)"):
        onnxdata.cases.load_test_data_set(f.parent.parent)
    with pytest.raises(NotADirectoryError, match="as a test data set: a file, not a folder"):
        onnxdata.cases.load_test_data_set(f)
    inputs, _ = onnxdata.cases.load_test_data_set(f.parent)
    assert np.array_equal(inputs[0], onnxdata.read(f, "tensor"))


def test_a_value_file_given_as_the_model_is_not_an_onnx_model() -> None:
    # it parsed as a ModelProto of no graph, and was then "a model of 0 inputs"
    value = TENSOR_CASE / "test_data_set_0" / "input_0.pb"
    with pytest.raises(DecodeError, match=r"no graph .* not an ONNX model"):
        read_model_types(value)


@pytest.mark.skipif(not getattr(model_file, "COMPILED", True),
                    reason="the compiled wire loop is not built")
@pytest.mark.parametrize("where", ["model", "graph", "value"])
def test_many_tiny_fields_are_stepped_over_by_the_compiled_loop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    """Issue 42: a 30 MB model of 10 million tiny fields took 12 s of CPU, one Python step
    per field; the fields that are not the graph's inputs and outputs are now stepped over
    by the compiled loop (bench/bench_model_types.py times it), none by the Python walk."""
    tiny = b"\xa0\x06\x00" * 1_000_000  # field 100, a varint 0: one million of them
    x = _value_info("x", 1)
    value = {"model": x, "graph": x, "value": tiny + x}[where]
    graph = _field(11, value) + _field(12, _value_info("y", 7))
    data = tiny + _graph(graph) if where == "model" else _graph(
        (tiny if where == "graph" else b"") + graph)
    path = tmp_path / "model.onnx"
    path.write_bytes(data)

    def no_python_step(*args: object) -> None:
        raise AssertionError("a field stepped over by the Python walk")

    monkeypatch.setattr(model_file._Reader, "header", no_python_step)
    types = read_model_types(path)
    assert [(v.name, types.declared("input", 0).elem_type) for v in types.inputs] == [("x", 1)]
    assert [v.name for v in types.outputs] == ["y"]
    m = ModelProto()
    m.ParseFromString(data)  # protobuf reads the same
    assert [v.name for v in m.graph.input] == ["x"] and [v.name for v in m.graph.output] == ["y"]


def test_more_inputs_than_any_model_has_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(_graph(_field(11, b"") * ((1 << 16) + 1)))
    with pytest.raises(DecodeError, match="graph inputs and outputs, more than any model"):
        read_model_types(path)


def test_a_model_changed_while_its_types_are_read_is_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "model.onnx"
    path.write_bytes(_graph(_field(11, _value_info("x", 1))))
    real = model_file._compiled_types

    def then_rewritten(fd: int, st: os.stat_result, name: str) -> model_file.ModelTypes | None:
        got = real(fd, st, name)
        os.utime(path, ns=(1, 1))  # another process rewrites it meanwhile
        return got if got is not None else model_file._Reader(fd, st.st_size, name).model()

    monkeypatch.setattr(model_file, "_compiled_types", then_rewritten)
    monkeypatch.setattr(model_file, "_read_before", {})
    with pytest.raises(DecodeError, match="changed while reading"):
        read_model_types(path)
