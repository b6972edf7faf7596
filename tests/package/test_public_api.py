"""The public surface: __all__ is exactly what we mean to offer, and each name is documented."""

from __future__ import annotations

import inspect
import types

import pytest

import onnxdata
import onnxdata.cases

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
    "ByteRow", "Exploration", "Reading", "byte_table", "explore", "readings",
    # comparing values
    "Difference", "Mismatch", "as_declared", "assert_close", "compare",
    # errors
    "DecodeError", "OnnxDataError", "PathError", "Problem", "UnknownFieldsWarning",
    "ValidationError",
}


#: The test loop, one level down.
CASES = {"load_test_data_set", "save_test_data_set", "make_test_data_sets", "Backend",
         "OutputResult", "get_backend", "run_test_data_set", "locate"}


def test_all_is_exactly_the_public_surface() -> None:
    assert set(onnxdata.__all__) == EXPECTED
    assert len(onnxdata.__all__) == len(set(onnxdata.__all__)), "a name is listed twice"


def test_the_test_loop_is_in_cases() -> None:
    assert set(onnxdata.cases.__all__) == CASES
    assert len(onnxdata.cases.__all__) == len(CASES), "a name is listed twice"
    assert not CASES & set(onnxdata.__all__)


@pytest.mark.parametrize("package", [onnxdata, onnxdata.cases], ids=lambda p: p.__name__)
def test_every_name_in_all_exists_and_is_documented(package: types.ModuleType) -> None:
    for name in package.__all__:
        obj = getattr(package, name)
        assert inspect.getdoc(obj), f"{package.__name__}.{name} has no docstring"
        assert getattr(obj, "__module__", "").startswith("onnxdata"), name


@pytest.mark.parametrize("name", ["load_test_data_set", "save_test_data_set",
                                  "make_test_data_sets", "run_test_data_set", "OutputResult"])
def test_the_old_top_level_names_warn_and_still_work(name: str) -> None:
    with pytest.warns(DeprecationWarning, match=f"onnxdata.cases.{name}"):
        old = getattr(onnxdata, name)
    assert old is getattr(onnxdata.cases, name)
    assert not hasattr(onnxdata, "no_such_name")


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
