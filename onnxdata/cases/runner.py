"""Run a model's test data sets on a backend and compare with the expected outputs.

``run_test_data_set(model, folder)`` reads ``folder``'s inputs and expected
outputs with the model's declared types (``load_test_data_set``), runs them on
a backend (ONNX Runtime by default; ``onnxdata.cases.backends`` does the conversions
each backend needs, and gives the outputs back as the model declares them) and
compares each output with ``compare``. ``onnxdata run --write-outputs``
adds the outputs to the sets that have no expected outputs (inputs only, as a user
writes them before the first run); ``--write-outputs DIR`` writes every set with
the backend's outputs as a new test case in DIR.

ONNX Runtime is an optional dependency: ``pip install 'onnxdata[ort]'``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from onnxdata.cases.backend_errors import BackendUnavailable
from onnxdata.cases.backends import Backend, get_backend
from onnxdata.cases.case_run import run_set
from onnxdata.cases.expectations import Expectation
from onnxdata.cases.save import ModelArg, as_model
from onnxdata.convert.compare import Difference

__all__ = ["OutputResult", "run_test_data_set"]

Status = Literal["pass", "fail", "error", "unchecked"]
ORT_MISSING = ("onnxdata run needs ONNX Runtime, an optional extra: "
               "pip install 'onnxdata[ort]' (or pip install onnxruntime)")


@dataclass(frozen=True)
class OutputResult:
    """One output of one test data set after a run.

    ``status`` is "pass", "fail" (``differences`` says where), "unchecked" (no
    expected file for it) or "error" (the set could not be read or run:
    ``error`` says why, and ``index`` is -1). ``actual`` is the runtime's value.
    """

    folder: str
    index: int
    name: str
    status: Status
    differences: tuple[Difference, ...] = ()
    error: str = ""
    actual: Any = field(default=None, repr=False, compare=False)

    def as_json(self) -> dict[str, Any]:
        """The result as JSON-ready data (without the runtime's value)."""
        return {"set": Path(self.folder).name, "folder": self.folder, "output": self.index,
                "name": self.name, "status": self.status, "error": self.error or None,
                "differences": [d.as_json() for d in self.differences]}

    def __str__(self) -> str:
        where = Path(self.folder).name
        if self.index < 0:
            return f"{where}: error: {self.error}"
        head = f"{where} output {self.index} {self.name!r}: {self.status}"
        if self.differences:
            n = len(self.differences)
            head += f", {n} difference{'s' if n != 1 else ''}"
        return head


def run_test_data_set(model: ModelArg, folder: str | os.PathLike[str],
                      runtime: str | Backend = "onnxruntime", *, rtol: float = 1e-3,
                      atol: float = 1e-7) -> list[OutputResult]:
    """Run ``model`` (a path or ModelProto) on the inputs in ``folder`` and compare each
    output with ``folder``'s ``output_K.pb``; one ``OutputResult`` per output.

    ``runtime`` is a backend name (``"onnxruntime"``/``"ort"``, ``"reference"``,
    ``"module:attr"``: see ``onnxdata.cases.backends``) or a backend. ONNX Runtime
    missing raises ImportError saying how to install it; a model the backend
    cannot load raises OnnxDataError with its message. A set that cannot be read
    or run gives one result with status "error". The set runs on the one path every
    runner shares (``case_run.run_set``: ``onnxdata run``, the pytest plugin, Dask).
    """
    backend = _backend(runtime)
    prepared = backend.prepare(model)
    with _model_path(model) as path:
        result = run_set([prepared], path, Path(folder), Expectation(rtol, atol), keep=True)
    where = result.folder
    if result.status in ("error", "skip") and not result.outputs:
        return [OutputResult(where, -1, "", "error", error=result.message or result.reason)]
    return [OutputResult(where, o.index, o.name, o.status,  # type: ignore[arg-type]
                         o.differences, actual=o.value) for o in result.outputs]


def _backend(runtime: str | Backend) -> Backend:
    if not isinstance(runtime, str):
        return runtime
    try:
        return get_backend("ort" if runtime == "onnxruntime" else runtime)
    except BackendUnavailable as exc:
        if runtime in ("ort", "onnxruntime"):
            raise ImportError(ORT_MISSING) from exc
        raise


@contextlib.contextmanager
def _model_path(model: ModelArg) -> Iterator[Path]:
    """The model's file (a case folder's model.onnx), or a ModelProto written to a
    temporary one for the set's declared types."""
    if isinstance(model, (str, os.PathLike)):
        path = Path(model)
        yield path / "model.onnx" if path.is_dir() else path
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        path.write_bytes(as_model(model).SerializeToString())
        yield path
