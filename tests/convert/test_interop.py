"""Other libraries' objects where onnxdata takes a value: onnx's messages in ``load``, and
anything with ``__array__`` (an onnx_ir tensor) in ``write``/``from_numpy``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata


def test_load_takes_an_onnx_message(onnx: Any) -> None:
    theirs = onnx.numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(2, 3), "t")
    ours = onnxdata.load(theirs)
    assert isinstance(ours, onnxdata.TensorProto) and ours.name == "t"
    np.testing.assert_array_equal(onnxdata.to_numpy(ours), np.arange(6).reshape(2, 3))
    again = onnxdata.load(theirs, onnx.TensorProto)  # onnx's class: onnx's message
    assert isinstance(again, onnx.TensorProto) and again == theirs
    seq = onnx.SequenceProto(elem_type=onnx.SequenceProto.TENSOR, tensor_values=[theirs])
    assert isinstance(onnxdata.load(seq), onnxdata.SequenceProto)


def test_load_says_what_it_takes(onnx: Any) -> None:
    with pytest.raises(onnxdata.OnnxDataError, match="not a ModelProto"):
        onnxdata.load(onnx.ModelProto())
    with pytest.raises(TypeError, match="load takes a path, bytes-like data or a data message"):
        onnxdata.load(42)  # type: ignore[call-overload]


class _HasArray:
    """What a tensor library hands over: no ndarray, but ``__array__``."""

    def __init__(self, array: np.ndarray[Any, Any]) -> None:
        self._array = array

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray[Any, Any]:
        return self._array if dtype is None else self._array.astype(dtype)


def _foreign(array: np.ndarray[Any, Any]) -> Any:
    """A real onnx_ir tensor when onnx-ir is installed, else an object with __array__."""
    try:
        import onnx_ir
    except ImportError:
        return _HasArray(array)
    return onnx_ir.tensor(array)


def test_write_and_from_numpy_take_objects_with_array(tmp_path: Path) -> None:
    a = np.arange(4, dtype=np.int16)
    t = _foreign(a)
    assert not isinstance(t, np.ndarray) and hasattr(t, "__array__")
    message = onnxdata.from_numpy(t)
    assert isinstance(message, onnxdata.TensorProto)
    np.testing.assert_array_equal(onnxdata.to_numpy(message), a)
    onnxdata.write([t, _foreign(a + 1)], tmp_path / "s.pb")
    back = onnxdata.read(tmp_path / "s.pb")
    assert [x.dtype for x in back] == [np.int16, np.int16]
    np.testing.assert_array_equal(back[1], a + 1)
    onnxdata.write({1: t}, tmp_path / "m.pb")
    np.testing.assert_array_equal(onnxdata.read(tmp_path / "m.pb", "map")[1], a)


def test_onnx_ir_is_really_there_when_installed() -> None:
    onnx_ir = pytest.importorskip("onnx_ir", reason="onnx-ir is a dev extra")
    t = onnx_ir.tensor(np.ones(3, np.float32))
    np.testing.assert_array_equal(onnxdata.to_numpy(onnxdata.from_numpy(t)), np.ones(3))
