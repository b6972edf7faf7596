"""onnxdata: ONNX's data messages (SequenceProto, OptionalProto, MapProto) and tensors.

Typed message classes generated from ONNX's own schema under a package name of
our own (so they live beside the ``onnx`` package), with loading, saving,
validation, numpy conversion, comparison and an explorer built on them. The test
loop (test data sets: load, save, make, run on backends) is ``onnxdata.cases``.
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from onnxdata.core import version as _version
from onnxdata.errors import (
    DecodeError,
    OnnxDataError,
    PathError,
    Problem,
    UnknownFieldsWarning,
    ValidationError,
)

if _TYPE_CHECKING:  # (imported on first use: ``_WHERE``)
    from onnxdata.convert.common import SparseParts
    from onnxdata.convert.compare import Difference, Mismatch, assert_close, compare
    from onnxdata.convert.declared import as_declared
    from onnxdata.convert.values import from_numpy, sparse_parts
    from onnxdata.core.budget import get_densify_limit, set_densify_limit
    from onnxdata.core.messages import (
        MapProto,
        OptionalProto,
        SequenceProto,
        SparseTensorProto,
        TensorProto,
    )
    from onnxdata.explorer.readings import Exploration, Reading, byte_table, explore, readings
    from onnxdata.explorer.table import ByteRow
    from onnxdata.io.load_save import load, save
    from onnxdata.io.message_checks import problems, validate
    from onnxdata.io.message_values import to_numpy
    from onnxdata.io.read import read
    from onnxdata.io.serialize import serialize
    from onnxdata.io.write import write

__version__ = _version.VERSION

__all__ = [
    # messages
    "MapProto",
    "OptionalProto",
    "SequenceProto",
    "SparseTensorProto",
    "TensorProto",
    # numpy conversion
    "SparseParts",
    "from_numpy",
    "get_densify_limit",
    "set_densify_limit",
    "sparse_parts",
    "to_numpy",
    # file I/O
    "load",
    "save",
    "serialize",
    "read",
    "write",
    # validation
    "problems",
    "validate",
    # exploring files
    "ByteRow",
    "Exploration",
    "Reading",
    "byte_table",
    "explore",
    "readings",
    # comparing values
    "Difference",
    "as_declared",
    "Mismatch",
    "assert_close",
    "compare",
    # errors
    "DecodeError",
    "OnnxDataError",
    "PathError",
    "Problem",
    "UnknownFieldsWarning",
    "ValidationError",
]

#: Where each public name not imported above lives: imported on first use (PEP 562), so
#: ``import onnxdata`` (and the pytest plugin, which pytest imports in every run of every
#: project where onnxdata is installed) costs no numpy or protobuf import until a name
#: needs it.
_WHERE = {
    "SparseParts": "onnxdata.convert.common",
    **dict.fromkeys(("Difference", "Mismatch", "assert_close", "compare"),
                    "onnxdata.convert.compare"),
    "as_declared": "onnxdata.convert.declared",
    **dict.fromkeys(("from_numpy", "sparse_parts"), "onnxdata.convert.values"),
    **dict.fromkeys(("get_densify_limit", "set_densify_limit"), "onnxdata.core.budget"),
    **dict.fromkeys(("MapProto", "OptionalProto", "SequenceProto", "SparseTensorProto",
                     "TensorProto"), "onnxdata.core.messages"),
    **dict.fromkeys(("Exploration", "Reading", "byte_table", "explore", "readings"),
                    "onnxdata.explorer.readings"),
    "ByteRow": "onnxdata.explorer.table",
    **dict.fromkeys(("load", "save"), "onnxdata.io.load_save"),
    **dict.fromkeys(("problems", "validate"), "onnxdata.io.message_checks"),
    "to_numpy": "onnxdata.io.message_values",
    "read": "onnxdata.io.read",
    "serialize": "onnxdata.io.serialize",
    "write": "onnxdata.io.write",
}
#: The sub-packages, imported on first use as attributes too (``onnxdata.cases.get_backend``
#: after ``import onnxdata``).
_SUBPACKAGES = frozenset({"cases", "cli", "convert", "core", "engine", "explorer", "io",
                          "model", "page", "rules", "wire"})
#: The test loop's names, here until 0.x+1: each now lives in ``onnxdata.cases``.
_MOVED_TO_CASES = frozenset({"load_test_data_set", "save_test_data_set", "make_test_data_sets",
                             "run_test_data_set", "OutputResult"})


def __getattr__(name: str) -> _Any:
    """A public name, imported from its module on first use; a sub-package; or one of the
    test loop's old top-level names, with a DeprecationWarning naming the new place."""
    where = _WHERE.get(name)
    if where is not None:
        value = getattr(_import_module(where), name)
        globals()[name] = value  # (the next use is a plain attribute)
        return value
    if name in _SUBPACKAGES:
        return _import_module(f"onnxdata.{name}")
    if name in _MOVED_TO_CASES:
        import warnings

        from onnxdata import cases

        warnings.warn(f"onnxdata.{name} moved to onnxdata.cases.{name}; the old name goes in "
                      "the next release", DeprecationWarning, stacklevel=2)
        return getattr(cases, name)
    raise AttributeError(f"module 'onnxdata' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_WHERE})
