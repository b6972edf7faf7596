"""onnx Backends for the many-cases tests, named ``tests.fault_backends:NAME``.

``faulty``: computes each model with ONNX Runtime, except that a model whose
doc_string is "segfault" kills its process with SIGSEGV and one whose doc_string
is "hang" sleeps for an hour. ``shifted``: ONNX Runtime's outputs with 1 added to
the last element of the last output's last tensor: an injected difference. ``nested``:
ONNX Runtime's tensors as nested Python lists (``tolist()``): a type difference.
``exit_at_start`` and ``raise_on``: a worker process's ``warm`` and handler that fail.
"""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import numpy as np


class _Rep:
    def __init__(self, model: Any, shift: bool, nest: bool = False) -> None:
        import onnxruntime as ort

        self.doc = model.doc_string
        self.session = ort.InferenceSession(model.SerializeToString(),
                                            providers=["CPUExecutionProvider"])
        self.shift = shift
        self.nest = nest

    def run(self, inputs: list[Any]) -> list[Any]:
        if self.doc == "segfault":
            os.kill(os.getpid(), signal.SIGSEGV)
        if self.doc == "hang":
            time.sleep(3600)
        feed = {i.name: v for i, v in zip(self.session.get_inputs(), inputs, strict=False)}
        out = self.session.run(None, feed)
        if self.nest:
            return [o.tolist() if isinstance(o, np.ndarray) else o for o in out]
        if self.shift:
            last = out[-1]
            if isinstance(last, list):
                last[-1] = _bump(last[-1])
            else:
                out[-1] = _bump(last)
        return list(out)


def _bump(a: Any) -> Any:
    b = np.array(a, copy=True)
    b.reshape(-1)[-1] += 1
    return b


class _Backend:
    def __init__(self, shift: bool, nest: bool = False) -> None:
        self.shift = shift
        self.nest = nest

    def prepare(self, model: Any, device: str = "CPU") -> _Rep:
        return _Rep(model, self.shift, self.nest)


faulty = _Backend(shift=False)
shifted = _Backend(shift=True)
nested = _Backend(shift=False, nest=True)


def exit_at_start() -> None:
    """A worker's ``warm`` that ends its process before it says it is ready."""
    os._exit(3)


def raise_on(job: Any) -> Any:
    """A worker's handler that raises on the job ``"boom"`` and echoes any other."""
    if job == "boom":
        raise RuntimeError("boom")
    return job
