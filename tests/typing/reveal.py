"""What mypy --strict says about user code (test_packaging.py compares with reveal.expected).

Checked in a clean venv holding only the installed wheel and mypy, so the types
must come from onnxdata's own dependencies. Lines marked "error" must fail.
"""

from __future__ import annotations

import numpy as np

import onnxdata
from onnxdata import MapProto, SequenceProto, TensorProto

seq = onnxdata.load("input_0.pb", "sequence")
reveal_type(seq)
reveal_type(onnxdata.to_numpy(seq))
reveal_type(onnxdata.load("input_0.pb", SequenceProto).tensor_values[0].dims)
reveal_type(onnxdata.to_numpy(onnxdata.load("input_0.pb", MapProto)).keys())
reveal_type(onnxdata.to_numpy(onnxdata.load("input_0.pb", "TensorProto")))
reveal_type(onnxdata.load("input_0.pb"))
reveal_type(onnxdata.read("input_0.pb"))
reveal_type(onnxdata.from_numpy([np.zeros(3, np.float32)]))
reveal_type(seq.elem_type)
reveal_type(SequenceProto.DataType.Name(SequenceProto.TENSOR))
reveal_type(TensorProto.FLOAT)

message = onnxdata.load("input_0.pb")
if isinstance(message, SequenceProto):
    reveal_type(message.tensor_values)
message.dims  # error: not every message has dims
onnxdata.load("input_0.pb", "tensr")  # error: not a kind
onnxdata.write([np.zeros(3)], "out.pb", "sequense")  # error: not a kind
onnxdata.write("out.pb", [np.zeros(3)])  # error: the value comes first
