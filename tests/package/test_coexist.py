"""onnxdata lives in one process with the onnx package, in either import order.

Import order is per process, so each order runs in a fresh interpreter.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest

from tests.conftest import CORPUS

SCRIPT = textwrap.dedent("""
    import sys
    first, second = sys.argv[1:3]
    a = __import__(first)
    b = __import__(second)
    import onnx, onnxdata
    from onnx import numpy_helper
    import numpy as np

    # Both sets of classes work, and are distinct types with distinct descriptors.
    assert onnx.SequenceProto is not onnxdata.SequenceProto
    assert onnx.TensorProto.DESCRIPTOR.full_name == "onnx.TensorProto"
    assert onnxdata.TensorProto.DESCRIPTOR.full_name == "onnxdata.TensorProto"

    # Wire bytes are the same: what one side writes, the other reads.
    theirs = numpy_helper.from_list([np.arange(6, dtype=np.float32).reshape(2, 3)], name="s")
    ours = onnxdata.SequenceProto.FromString(theirs.SerializeToString())
    assert ours.name == "s" and ours.tensor_values[0].dims == [2, 3]
    back = onnx.SequenceProto.FromString(ours.SerializeToString())
    assert back == theirs

    # onnx's own machinery still works: build, check and serialize a model.
    from onnx import helper, TensorProto
    node = helper.make_node("Identity", ["x"], ["y"])
    graph = helper.make_graph([node], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    onnx.checker.check_model(helper.make_model(graph))
    print("ok", onnx.__version__)
""")


@pytest.mark.parametrize("order", [("onnx", "onnxdata"), ("onnxdata", "onnx")],
                         ids=["onnx-first", "onnxdata-first"])
def test_both_import_orders_work(onnx: Any, order: tuple[str, str]) -> None:
    result = subprocess.run([sys.executable, "-c", SCRIPT, *order],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok")


def test_both_schemas_sit_in_the_default_pool_under_distinct_names(onnx: Any) -> None:
    """Why the rename exists: a verbatim compile would register onnx's file name again."""
    from google.protobuf import descriptor_pool

    import onnxdata

    pool = descriptor_pool.Default()
    theirs = onnx.TensorProto.DESCRIPTOR
    ours = onnxdata.TensorProto.DESCRIPTOR
    assert theirs.file.name != ours.file.name
    assert theirs.full_name != ours.full_name
    assert pool.FindMessageTypeByName(ours.full_name) is ours
    assert pool.FindFileByName(ours.file.name) is ours.file


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*/test_data_set_0/*.pb"))[:40],
                         ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_corpus_bytes_read_the_same_on_both_sides(onnx: Any, path: Any) -> None:
    import onnxdata

    data = path.read_bytes()
    for ours_cls, theirs_cls in [(onnxdata.TensorProto, onnx.TensorProto),
                                 (onnxdata.SequenceProto, onnx.SequenceProto),
                                 (onnxdata.OptionalProto, onnx.OptionalProto)]:
        try:
            theirs = theirs_cls.FromString(data)
        except Exception:
            continue
        ours = ours_cls.FromString(data)
        assert ours.SerializeToString() == theirs.SerializeToString()
