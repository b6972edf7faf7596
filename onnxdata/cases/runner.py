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

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from onnxdata.cases.backends import Backend, BackendUnavailable, get_backend
from onnxdata.cases.case_run import test_data_sets
from onnxdata.cases.load import load_test_data_set
from onnxdata.cases.save import ModelArg, as_model
from onnxdata.convert.compare import Difference, compare
from onnxdata.errors import OnnxDataError
from onnxdata.generated.onnx_ml_pb2 import ModelProto

__all__ = ["OutputResult", "run_test_data_set", "test_data_sets"]

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


class _Session:
    """A model prepared on a backend, with its path and declared types."""

    def __init__(self, model: ModelArg, runtime: str | Backend = "ort") -> None:
        try:
            backend = get_backend("ort" if runtime == "onnxruntime" else runtime) \
                if isinstance(runtime, str) else runtime
        except BackendUnavailable as exc:
            if runtime in ("ort", "onnxruntime"):
                raise ImportError(ORT_MISSING) from exc
            raise
        self.backend = backend
        self.prepared = backend.prepare(model)
        self.path = Path(model) if isinstance(model, (str, os.PathLike)) else None
        if self.path is not None and self.path.is_dir():
            self.path = self.path / "model.onnx"
        held = getattr(self.prepared, "model", None)  # the model the backend was given
        self.model = held.proto if held is not None and hasattr(held, "proto") else \
            as_model(self.path if self.path is not None else model)


def run_test_data_set(model: ModelArg, folder: str | os.PathLike[str],
                      runtime: str | Backend = "onnxruntime", *, rtol: float = 1e-3,
                      atol: float = 1e-7) -> list[OutputResult]:
    """Run ``model`` (a path or ModelProto) on the inputs in ``folder`` and compare each
    output with ``folder``'s ``output_K.pb``; one ``OutputResult`` per output.

    ``runtime`` is a backend name (``"onnxruntime"``/``"ort"``, ``"reference"``,
    ``"module:attr"``: see ``onnxdata.cases.backends``) or a backend. ONNX Runtime
    missing raises ImportError saying how to install it; a model the backend
    cannot load raises OnnxDataError with its message. A set that cannot be read
    or run gives one result with status "error".
    """
    return _run(_Session(model, runtime), Path(folder), rtol, atol)


def _run(s: _Session, folder: Path, rtol: float, atol: float) -> list[OutputResult]:
    where = os.fspath(folder)
    try:
        inputs, expected = load_test_data_set(folder, model=s.path) if s.path is not None \
            else _load_with(s.model, folder)
    except (OnnxDataError, OSError, IndexError, ValueError) as exc:
        return [OutputResult(where, -1, "", "error", error=f"cannot read the set: {exc}")]
    try:
        raw = s.prepared.run(inputs)
    except OnnxDataError as exc:
        return [OutputResult(where, -1, "", "error", error=str(exc))]
    out: list[OutputResult] = []
    names = [v.name for v in s.model.graph.output]
    for k, (name, actual) in enumerate(zip(names, raw, strict=True)):
        if k >= len(expected):
            out.append(OutputResult(where, k, name, "unchecked", actual=actual))
            continue
        found = compare(actual, expected[k], rtol=rtol, atol=atol)
        out.append(OutputResult(where, k, name, "fail" if found else "pass", tuple(found),
                                actual=actual))
    return out


def _load_with(model: ModelProto, folder: Path) -> tuple[list[Any], list[Any]]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        path.write_bytes(model.SerializeToString())
        return load_test_data_set(folder, model=path)




