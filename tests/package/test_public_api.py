"""The public surface: __all__ is exactly what we mean to offer, and each name is documented."""

from __future__ import annotations

import inspect
import types

import onnxdata

EXPECTED = {
    # messages
    "MapProto", "OptionalProto", "SequenceProto", "SparseTensorProto", "TensorProto",
    # numpy conversion
    "SparseParts", "from_numpy", "get_densify_limit", "set_densify_limit", "sparse_parts",
    "to_numpy",
    # file I/O
    "load", "save", "serialize", "read", "write",
    # validation
    "problems", "validate",
    # exploring files
    "ByteRow", "Exploration", "Reading", "byte_table", "explore", "load_test_data_set",
    "readings", "save_test_data_set", "make_test_data_sets",
    # comparing values
    "Difference", "Mismatch", "as_declared", "assert_close", "compare",
    # running test data sets
    "OutputResult", "run_test_data_set",
    # errors
    "DecodeError", "OnnxDataError", "Problem", "UnknownFieldsWarning", "ValidationError",
}


def test_all_is_exactly_the_public_surface() -> None:
    assert set(onnxdata.__all__) == EXPECTED
    assert len(onnxdata.__all__) == len(set(onnxdata.__all__)), "a name is listed twice"


def test_every_name_in_all_exists_and_is_documented() -> None:
    for name in onnxdata.__all__:
        obj = getattr(onnxdata, name)
        assert inspect.getdoc(obj), f"onnxdata.{name} has no docstring"
        assert getattr(obj, "__module__", "").startswith("onnxdata"), name


def test_nothing_else_public_leaks() -> None:
    public = {n for n in dir(onnxdata) if not n.startswith("_")}
    modules = {n for n in public if isinstance(getattr(onnxdata, n), types.ModuleType)}
    assert public - modules - set(onnxdata.__all__) == set()


def test_the_error_family() -> None:
    assert issubclass(onnxdata.DecodeError, onnxdata.OnnxDataError)
    assert issubclass(onnxdata.ValidationError, onnxdata.OnnxDataError)
    assert issubclass(onnxdata.ValidationError, ValueError)
    err = onnxdata.ValidationError([onnxdata.Problem("a.b[0]", "is wrong")])
    assert [(p.path, p.message) for p in err.problems] == [("a.b[0]", "is wrong")]
    assert "a.b[0]: is wrong" in str(err)


def test_message_classes_carry_their_nested_enums() -> None:
    assert onnxdata.SequenceProto.TENSOR == 1
    assert onnxdata.OptionalProto.OPTIONAL == 5
    assert onnxdata.TensorProto.FLOAT == 1
    assert onnxdata.TensorProto.FLOAT6E3M2 == 28
    assert onnxdata.TensorProto.EXTERNAL == 1
