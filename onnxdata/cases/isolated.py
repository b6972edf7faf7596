"""One backend run after run, in this process or in a worker process of its own
(``cases.worker``, as ``onnxdata run --jobs`` isolates a case): a crash or a hang of the
backend costs that run, not the caller.

``IsolatedBackend(name).run(model_bytes, inputs)`` prepares the model (a serialized
ModelProto) on the backend called ``name`` and runs it. With ``isolate=True`` the
backend lives in a worker process: a worker that dies raises ``BackendLost`` saying how
(its exit code or signal), one that takes longer than ``timeout`` seconds is killed and
raises ``BackendLost`` saying so; the next run starts a new worker.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from onnxdata.cases.backend_errors import BackendCannotTake, BackendUnavailable
from onnxdata.cases.backends import get_backend
from onnxdata.cases.case_run import warm_backends
from onnxdata.cases.worker import Lost, Worker, WorkerError
from onnxdata.errors import OnnxDataError
from onnxdata.generated.onnx_ml_pb2 import ModelProto

__all__ = ["BackendLost", "IsolatedBackend"]


class BackendLost(OnnxDataError):
    """The backend's worker process died or timed out during a run."""


class _PreparedRun:
    """A worker's job handler: ``(model bytes, inputs)`` prepared and run on the backend,
    answered ``("ok", outputs)`` or ``(kind, message)``, raised again as that kind."""

    def __init__(self, name: str, providers: tuple[str, ...]) -> None:
        self.name = name
        self.providers = providers

    def __call__(self, job: tuple[bytes, Sequence[Any]]) -> tuple[str, Any]:
        try:
            return "ok", self.run(*job)
        except Exception as exc:  # sent back and raised there as the same kind
            kind = type(exc).__name__ if isinstance(exc, (BackendCannotTake,
                                                         BackendUnavailable)) else "error"
            return kind, (str(exc) if isinstance(exc, OnnxDataError)
                          else f"{type(exc).__name__}: {exc}")

    def run(self, model: bytes, inputs: Sequence[Any]) -> list[Any]:
        proto = ModelProto()
        proto.ParseFromString(model)
        return list(get_backend(self.name, list(self.providers) or None).prepare(proto)
                    .run(inputs))


class IsolatedBackend:
    """The backend called ``name`` (``get_backend``'s names), run in a worker process when
    ``isolate`` (the default), each run at most ``timeout`` seconds there."""

    def __init__(self, name: str, providers: Sequence[str] = (), *, isolate: bool = True,
                 timeout: float | None = None) -> None:
        self.name = name
        self.providers = tuple(providers)
        self.isolate = isolate or timeout is not None
        self.timeout = timeout
        self._run = _PreparedRun(name, self.providers)
        self._worker: Worker | None = None
        if not self.isolate:  # an unknown or unavailable backend says so now
            get_backend(name, list(providers) or None)

    def run(self, model: bytes, inputs: Sequence[Any]) -> list[Any]:
        """The model's outputs for ``inputs``; OnnxDataError when the backend cannot run
        it, ``BackendLost`` when its process died or timed out."""
        if not self.isolate:
            return self._run.run(model, inputs)
        if self._worker is None:
            self._worker = Worker(self._run, timeout=self.timeout,
                                  warm=functools.partial(warm_backends, (self.name,)))
        try:
            answer = self._worker.run((model, list(inputs)))
        except WorkerError as exc:
            raise BackendLost(f"backend {self.name}: {exc}") from None
        if isinstance(answer, Lost):
            raise BackendLost(f"backend {self.name}: {answer.why}")
        kind, value = answer
        if kind == "ok":
            return list(value)
        if kind == "BackendCannotTake":
            raise BackendCannotTake(value)
        if kind == "BackendUnavailable":
            raise BackendUnavailable(value)
        raise OnnxDataError(value)

    def close(self) -> None:
        """Stop the worker process, if any."""
        if self._worker is not None:
            self._worker.close()

    def __enter__(self) -> IsolatedBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
