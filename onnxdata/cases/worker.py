"""Worker processes, the one way the test loop isolates a backend: start one, send it jobs,
time a job out, kill it, and report a crash or a hang as that job's ``Lost`` answer, so a
backend that segfaults or hangs costs its own job only. ``onnxdata run --jobs``
(``case_pool``), the pytest plugin and ``locate`` (``isolated``) all run on it.

A worker is started with ``spawn`` (a fork after ONNX Runtime has started threads is not
safe). It calls ``warm()`` first (the backends imported before the first job's clock
starts), says it is ready, then calls ``handler(job)`` on each job in the order sent and
sends back what it returns. ``handler`` and ``warm`` must pickle: a module-level function,
a ``functools.partial`` of one, or an instance of a module-level class (which may keep
state from job to job, as ``case_run.CaseRunner`` keeps a case's session).

A job's clock starts when the worker takes it (the answer before it came back). A worker
that dies, or passes ``timeout`` seconds on a job, is killed: that job's answer is
``Lost`` saying why, and the jobs sent after it go to a new worker. A handler that raises
answers ``Lost`` too. A worker that dies or does not say it is ready within
``START_LIMIT`` seconds is no job's fault: ``WorkerError``.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any

from onnxdata.errors import OnnxDataError

__all__ = ["START_LIMIT", "Lost", "Worker", "WorkerError", "run_pool"]

# a worker that has not said "ready" after this long (imports on a loaded machine) is lost
START_LIMIT = 300.0
_READY = "ready"


@dataclass(frozen=True)
class Lost:
    """The answer of a job the worker did not finish: its process died, it timed out, or
    the handler raised. ``why`` says which, for the job's error message."""

    why: str
    seconds: float = 0.0


class WorkerError(OnnxDataError):
    """A worker process died or did not start before it was ready (no job's fault)."""


def _serve(conn: Connection, handler: Callable[[Any], Any],
           warm: Callable[[], object] | None) -> None:
    if warm is not None:
        with contextlib.suppress(Exception):  # a backend that cannot load says so per job
            warm()
    conn.send(_READY)
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        started = time.perf_counter()
        try:
            answer = handler(job)
        except Exception as exc:  # e.g. a module:attr backend's own exception
            answer = Lost(f"{type(exc).__name__}: {exc}", time.perf_counter() - started)
        conn.send(answer)


def _died(process: Any) -> str:
    process.join(5)
    code = process.exitcode
    return f"died (exit code {code}" + (
        f", signal {-code})" if code is not None and code < 0 else ")")


class Worker:
    """One worker process running ``handler`` on the jobs sent to it, in order; started at
    the first job (or ``start()``), started again after one it lost.

    ``send(job)`` queues a job (several may wait: the plugin sends the next item's set
    ahead); ``poll(ready)`` takes what ``multiprocessing.connection.wait`` found ready on
    ``handles()`` and returns the jobs answered, as ``(job, answer)``; ``deadline()`` is when
    the job at the head times out. ``run(job)`` does all three for one job and waits.
    """

    def __init__(self, handler: Callable[[Any], Any], *,
                 warm: Callable[[], object] | None = None,
                 timeout: float | None = None) -> None:
        self.handler = handler
        self.warm = warm
        self.timeout = timeout
        self._process: Any = None
        self._conn: Connection | None = None
        self._ready = False
        self._born = 0.0
        self._queue: list[Any] = []  # sent (or waiting for the worker to be ready), in order
        self._done: list[tuple[Any, Any]] = []  # answered, not yet asked for (run)
        self._head_started = 0.0

    @property
    def pending(self) -> int:
        """How many jobs were sent and not answered."""
        return len(self._queue)

    def start(self) -> None:
        """Starts the process, if none runs; it takes the queued jobs once it is ready."""
        if self._process is not None:
            return
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        process = ctx.Process(target=_serve, args=(child, self.handler, self.warm),
                              daemon=True)
        try:
            process.start()  # (a __main__ that cannot be imported again fails here)
        except BaseException:
            parent.close()
            child.close()
            raise
        self._process = process  # (only a started process: _kill kills and joins it)
        child.close()
        self._conn, self._ready, self._born = parent, False, time.monotonic()

    def send(self, job: Any) -> None:
        """Queues ``job`` after those sent before it."""
        self.start()
        if self._ready and not self._queue:
            self._head_started = time.monotonic()
        self._queue.append(job)
        if self._ready:
            self._put(job)

    def send_once(self, job: Any) -> None:
        """``send(job)`` unless an equal job waits or was answered and not yet asked for."""
        if not any(job is j or job == j for j in self._queue) and \
                not any(job is j or job == j for j, _ in self._done):
            self.send(job)

    def _put(self, job: Any) -> None:
        assert self._conn is not None
        with contextlib.suppress(OSError):  # a worker that died: poll() says so
            self._conn.send(job)

    def handles(self) -> list[Any]:
        """What to ``wait`` on: the pipe and the process's sentinel (none when stopped)."""
        if self._process is None or self._conn is None:
            return []
        return [self._conn, self._process.sentinel]

    def deadline(self) -> float | None:
        """The ``time.monotonic()`` at which the worker or its head job is lost, if any."""
        if self._process is None:
            return None
        if not self._ready:
            return self._born + START_LIMIT
        if self._queue and self.timeout is not None:
            return self._head_started + self.timeout
        return None

    def poll(self, ready: Sequence[Any] = ()) -> list[tuple[Any, Any]]:
        """The jobs answered since the last call (a lost one's answer is ``Lost``); raises
        WorkerError when the process died or hung before it was ready."""
        if self._process is None or self._conn is None:
            return []
        out: list[tuple[Any, Any]] = []
        conn, process = self._conn, self._process
        gone = False
        if conn in ready or process.sentinel in ready:
            while True:  # every answer sent before it died, then its end
                try:
                    if not conn.poll():
                        break
                    message = conn.recv()
                except (EOFError, OSError):
                    gone = True
                    break
                if not self._ready and isinstance(message, str) and message == _READY:
                    self._ready = True
                    self._head_started = time.monotonic()
                    for job in self._queue:
                        self._put(job)
                    continue
                out.append((self._queue.pop(0), message))
                self._head_started = time.monotonic()
            gone = gone or process.sentinel in ready or not process.is_alive()
        now = time.monotonic()
        if not self._ready:
            if not gone and now < self._born + START_LIMIT:
                return out
            what = _died(process) if gone else f"did not start in {START_LIMIT:g} s"
            self._kill()
            self._queue = []
            raise WorkerError(f"the backend's worker process {what} before it was ready")
        if gone:
            why = f"the backend's process {_died(process)}"
        elif self._queue and self.timeout is not None and \
                now >= self._head_started + self.timeout:
            why = f"timed out after {self.timeout:g} s"
        else:
            return out
        self._kill()
        if self._queue:
            out.append((self._queue.pop(0), Lost(why, now - self._head_started)))
        if self._queue:  # the jobs sent after it were lost with it: a new worker takes them
            self.start()
        return out

    def run(self, job: Any) -> Any:
        """``job``'s answer (sent now unless it was sent already), waiting for it."""
        self.send_once(job)
        while True:
            for i, (j, answer) in enumerate(self._done):
                if j is job or j == job:
                    del self._done[i]
                    return answer
            limit = self.deadline()
            left = None if limit is None else max(0.0, limit - time.monotonic())
            self._done.extend(self.poll(wait(self.handles(), left)))

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.join()
        if self._conn is not None:
            self._conn.close()
        self._process = self._conn = None
        self._ready = False

    def close(self) -> None:
        """Stops the worker: asked first when idle (killed after 5 s), killed when busy."""
        if self._process is not None and self._conn is not None and not self._queue:
            with contextlib.suppress(OSError):
                self._conn.send(None)
            self._process.join(5)
        self._kill()
        self._queue = []


def run_pool(jobs: Sequence[Any], workers: int, handler: Callable[[Any], Any], *,
             warm: Callable[[], object] | None = None, timeout: float | None = None
             ) -> Iterator[tuple[Any, Any]]:
    """Every job on ``workers`` processes (all started at once), one job at a time each;
    ``(job, answer)`` as they finish, a lost job's answer ``Lost``."""
    todo = list(reversed(jobs))
    pool = [Worker(handler, warm=warm, timeout=timeout)
            for _ in range(min(workers, len(jobs)))]
    try:
        for w in pool:
            w.start()
        while todo or any(w.pending for w in pool):
            for w in pool:
                if todo and not w.pending:
                    w.send(todo.pop())
            limits = [d for w in pool if (d := w.deadline()) is not None]
            left = max(0.0, min(limits) - time.monotonic()) if limits else None
            ready = wait([h for w in pool for h in w.handles()], left)
            for w in pool:
                yield from w.poll(ready)
    finally:
        for w in pool:
            w.close()
