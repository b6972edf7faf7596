"""One data set at a time in a worker process: what the pytest plugin runs each item on, so
a backend that segfaults or hangs fails that item only, with or without pytest-xdist.

The worker is started with ``spawn``, as ``case_pool``'s are (a fork after ONNX Runtime
has started threads is not safe), imports the backends before its first set, and keeps
the last case's prepared model: the sets of one case, run one after another, share one
session, as ``run_case`` does. A worker that dies or takes longer than ``timeout``
seconds on a set is killed; that set is an error saying so, and the next set starts a
new worker.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import time
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from onnxdata.cases.backend_errors import BackendCannotTake, BackendUnavailable
from onnxdata.cases.backends import get_backend
from onnxdata.cases.case_run import SetResult, run_set
from onnxdata.cases.expectations import Expectation
from onnxdata.errors import OnnxDataError

__all__ = ["SetRunner", "SetTask", "SetWorker"]

# a worker that has not said "ready" after this long (imports on a loaded machine) is lost
_START = 300.0


@dataclass(frozen=True)
class SetTask:
    """One data set to run: plain data, so it pickles."""

    model: str  # the model file; its folder names the case
    folder: str  # the test_data_set_N folder
    expect: Expectation
    backend: str = "ort"
    providers: tuple[str, ...] = ()
    against: str | None = None


class SetRunner:
    """Runs tasks in this process, keeping the last case's prepared backends (one session
    per case while its sets come one after another). Never raises for what the case or
    the backend does."""

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None
        self._prepared: list[Any] | OnnxDataError | ValueError = []

    def __call__(self, task: SetTask) -> SetResult:
        model, folder = Path(task.model), Path(task.folder)
        base = (model.parent.name, task.folder, folder.name)
        key = (task.model, task.backend, task.providers, task.against)
        if key != self._key:
            self._prepared = []  # the last case's session goes before the next is made
            self._key = key
            try:
                prepared = [get_backend(task.backend, list(task.providers) or None)
                            .prepare(model)]
                if task.against is not None:
                    prepared.append(get_backend(task.against).prepare(model))
                self._prepared = prepared
            except (OnnxDataError, ValueError) as exc:
                self._prepared = exc
        found = self._prepared
        if isinstance(found, (BackendUnavailable, BackendCannotTake)):
            return SetResult(*base, "skip", reason=str(found))
        if isinstance(found, (OnnxDataError, ValueError)):
            return SetResult(*base, "error", message=str(found))
        return run_set(found, model, folder, task.expect)


def _serve(conn: Connection, warm: tuple[str, ...]) -> None:
    for name in warm:  # the backends imported before the first set's clock starts
        with contextlib.suppress(Exception):
            get_backend(name)
    conn.send("ready")
    runner = SetRunner()
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        try:
            result = runner(task)
        except Exception as exc:  # a module:attr backend's own exception: this set's error
            folder = Path(task.folder)
            result = SetResult(Path(task.model).parent.name, task.folder, folder.name,
                               "error", message=f"{type(exc).__name__}: {exc}")
        conn.send(result)


class SetWorker:
    """A worker process, started at the first task, restarted after one it lost.

    ``send(task)`` gives a task ahead (the plugin gives the next item's set while pytest
    reports the last one), ``run(task)`` waits for its result; the worker takes them in
    the order sent, so the clock of ``timeout`` starts for each when the one before it
    is answered.
    """

    def __init__(self, warm: Sequence[str] = (), timeout: float | None = None) -> None:
        self.warm = tuple(warm)
        self.timeout = timeout
        self._process: Any = None
        self._conn: Connection | None = None
        self._queue: list[SetTask] = []  # sent, not answered, in order
        self._done: list[tuple[SetTask, SetResult]] = []  # answered, not yet asked for
        self._head_started = 0.0

    def _start(self) -> tuple[Any, Connection]:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        process = ctx.Process(target=_serve, args=(child, self.warm), daemon=True)
        process.start()
        child.close()
        self._process, self._conn = process, parent
        message = None
        if wait([parent, process.sentinel], _START) and parent.poll():
            with contextlib.suppress(EOFError, OSError):
                message = parent.recv()
        if message != "ready":
            why = _died(process) if not process.is_alive() else \
                f"did not start in {_START:g} s"
            self._kill()
            raise OnnxDataError(f"the backend's worker process {why}")
        return process, parent

    def send(self, task: SetTask) -> None:
        """Gives ``task`` to the worker, after those sent before (once: a task sent or
        answered already is not sent again)."""
        if task in self._queue or any(t == task for t, _ in self._done):
            return
        if self._process is None or self._conn is None:
            self._start()
        assert self._conn is not None
        if not self._queue:
            self._head_started = time.monotonic()
        self._queue.append(task)
        with contextlib.suppress(OSError):  # a worker that died: run() says so
            self._conn.send(task)

    def run(self, task: SetTask) -> SetResult:
        """``task``'s result (sent now if it was not); a set whose worker dies or passes
        ``timeout`` seconds is an error saying so, and the sets sent after it are sent
        again to a new worker when asked for."""
        while True:
            for i, (t, r) in enumerate(self._done):
                if t == task:
                    del self._done[i]
                    return r
            self.send(task)  # again to a new worker, when the one it went to was lost
            process, conn, head = self._process, self._conn, self._queue[0]
            assert conn is not None
            left = None if self.timeout is None else \
                max(0.0, self._head_started + self.timeout - time.monotonic())
            ready = wait([conn, process.sentinel], left)
            if conn in ready:
                try:
                    result: SetResult = conn.recv()
                except (EOFError, OSError):
                    ready = [process.sentinel]
                else:
                    self._queue.pop(0)
                    self._done.append((head, result))
                    self._head_started = time.monotonic()
                    continue
            spent = time.monotonic() - self._head_started
            why = f"the backend's process {_died(process)}" if ready else \
                f"timed out after {self.timeout:g} s"
            self._kill()
            self._done.append((head, SetResult(Path(head.model).parent.name, head.folder,
                                               Path(head.folder).name, "error", spent,
                                               message=why)))

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.join()
        if self._conn is not None:
            self._conn.close()
        self._process = self._conn = None
        self._queue = []

    def close(self) -> None:
        """Stops the worker (asked first, then killed after 5 s)."""
        if self._process is None or self._conn is None:
            return
        with contextlib.suppress(OSError):
            self._conn.send(None)
        self._process.join(5)
        self._kill()


def _died(process: Any) -> str:
    process.join(5)
    code = process.exitcode
    return f"died (exit code {code}" + (
        f", signal {-code})" if code is not None and code < 0 else ")")
