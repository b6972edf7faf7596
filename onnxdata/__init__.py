"""onnxdata: ONNX's data messages (SequenceProto, OptionalProto, MapProto) and tensors.

Typed message classes generated from ONNX's own schema under a package name of
our own (so they live beside the ``onnx`` package), with loading, saving,
validation, numpy conversion and an explorer built on them.
"""

from onnxdata.convert.declared import as_declared
from onnxdata.convert.values import (
    SparseParts,
    from_numpy,
    get_densify_limit,
    set_densify_limit,
    sparse_parts,
)
from onnxdata.core import version as _version
from onnxdata.core.messages import (
    MapProto,
    OptionalProto,
    SequenceProto,
    SparseTensorProto,
    TensorProto,
)
from onnxdata.errors import (
    DecodeError,
    OnnxDataError,
    Problem,
    UnknownFieldsWarning,
    ValidationError,
)
from onnxdata.explorer.readings import ByteRow, Exploration, Reading, byte_table, explore, readings
from onnxdata.io.load_save import load, save
from onnxdata.io.message_checks import problems, validate
from onnxdata.io.message_values import to_numpy
from onnxdata.io.read import read
from onnxdata.io.serialize import serialize
from onnxdata.io.write import write
from onnxdata.cases.compare import Difference, Mismatch, assert_close, compare
from onnxdata.cases.load import load_test_data_set
from onnxdata.cases.make import make_test_data_sets
from onnxdata.cases.runner import OutputResult, run_test_data_set
from onnxdata.cases.save import save_test_data_set

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
    "load_test_data_set",
    "readings",
    "save_test_data_set",
    "make_test_data_sets",
    # comparing values
    "Difference",
    "as_declared",
    "Mismatch",
    "assert_close",
    "compare",
    # running test data sets
    "OutputResult",
    "run_test_data_set",
    # errors
    "DecodeError",
    "OnnxDataError",
    "Problem",
    "UnknownFieldsWarning",
    "ValidationError",
]
