"""One backend run after run, in this process or in a worker process of its own, as
``onnxdata run --jobs`` isolates a case: a crash or a hang of the backend costs that run,
not the caller.

``IsolatedBackend(name).run(model_bytes, inputs)`` prepares the model (a serialized
ModelProto) on the backend called ``name`` and runs it. With ``isolate=True`` the
backend lives in a ``spawn``-ed worker process (a fork after ONNX Runtime has started
threads is not safe): a worker that dies raises ``BackendLost`` saying how (its exit
code or signal), one that takes longer than ``timeout`` seconds is killed and raises
``BackendLost`` saying so; the next run starts a new worker.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from onnxdata.cases.backend_errors import BackendCannotTake, BackendUnavailable
from onnxdata.errors import OnnxDataError
from onnxdata.generated.onnx_ml_pb2 import ModelProto

__all__ = ["BackendLost", "IsolatedBackend"]

# a worker that has not said "ready" after this long (imports on a loaded machine) is lost
_START = 300.0


class BackendLost(OnnxDataError):
    """The backend's worker process died or timed out during a run."""


def _prepared_run(name: str, providers: Sequence[str], model: bytes,
                  inputs: Sequence[Any]) -> list[Any]:
    from onnxdata.cases.backends import get_backend

    proto = ModelProto()
    proto.ParseFromString(model)
    return get_backend(name, list(providers) or None).prepare(proto).run(inputs)


def _worker(conn: Connection, name: str, providers: tuple[str, ...]) -> None:
    from onnxdata.cases.backends import get_backend

    with contextlib.suppress(Exception):  # imported before the first run's clock starts
        get_backend(name, list(providers) or None)
    conn.send("ready")
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        model, inputs = job
        try:
            conn.send(("ok", _prepared_run(name, providers, model, inputs)))
        except Exception as exc:  # sent back and raised there as the same kind
            kind = type(exc).__name__ if isinstance(exc, (BackendCannotTake,
                                                         BackendUnavailable)) else "error"
            conn.send((kind, str(exc) if isinstance(exc, OnnxDataError)
                       else f"{type(exc).__name__}: {exc}"))


class IsolatedBackend:
    """The backend called ``name`` (``get_backend``'s names), run in a worker process when
    ``isolate`` (the default), each run at most ``timeout`` seconds there."""

    def __init__(self, name: str, providers: Sequence[str] = (), *, isolate: bool = True,
                 timeout: float | None = None) -> None:
        self.name = name
        self.providers = tuple(providers)
        self.isolate = isolate or timeout is not None
        self.timeout = timeout
        self._conn: Connection | None = None
        self._process: Any = None
        if not self.isolate:  # an unknown or unavailable backend says so now
            from onnxdata.cases.backends import get_backend

            get_backend(name, list(providers) or None)

    def run(self, model: bytes, inputs: Sequence[Any]) -> list[Any]:
        """The model's outputs for ``inputs``; OnnxDataError when the backend cannot run
        it, ``BackendLost`` when its process died or timed out."""
        if not self.isolate:
            return _prepared_run(self.name, self.providers, model, inputs)
        conn = self._start()
        conn.send((model, list(inputs)))
        started = time.monotonic()
        while True:
            left = None if self.timeout is None else \
                max(0.0, started + self.timeout - time.monotonic())
            ready = wait([conn, self._process.sentinel], left)
            if conn in ready:
                try:
                    kind, value = conn.recv()
                except (EOFError, OSError):
                    raise self._lost() from None
                if kind == "ok":
                    return list(value)
                if kind == "BackendCannotTake":
                    raise BackendCannotTake(value)
                if kind == "BackendUnavailable":
                    raise BackendUnavailable(value)
                raise OnnxDataError(value)
            if self._process.sentinel in ready:
                raise self._lost()
            if self.timeout is not None and time.monotonic() - started >= self.timeout:
                self._kill()
                raise BackendLost(f"backend {self.name} timed out after {self.timeout:g} s")

    def _start(self) -> Connection:
        if self._conn is not None and self._process.is_alive():
            return self._conn
        self._kill()
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        self._process = ctx.Process(target=_worker, args=(child, self.name, self.providers),
                                    daemon=True)
        self._process.start()
        child.close()
        self._conn = parent
        if not parent.poll(_START):
            self._kill()
            raise BackendLost(f"backend {self.name}'s worker process did not start in "
                              f"{_START:g} s")
        try:
            parent.recv()
        except (EOFError, OSError):
            raise self._lost() from None
        return parent

    def _lost(self) -> BackendLost:
        self._process.join(5)
        code = self._process.exitcode
        self._kill()
        return BackendLost(f"backend {self.name}'s process died (exit code {code}"
                           + (f", signal {-code})" if code is not None and code < 0 else ")"))

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.join()
        if self._conn is not None:
            self._conn.close()
        self._process = None
        self._conn = None

    def close(self) -> None:
        """Stop the worker process, if any."""
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.send(None)
            self._process.join(5)
        self._kill()

    def __enter__(self) -> IsolatedBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
