"""Many cases at once: in this process, in worker processes (``--jobs N``), or on a Dask
cluster (``--executor dask --scheduler ADDRESS``).

Worker processes are started with ``spawn`` (a fork after ONNX Runtime has started
threads is not safe) and each runs one case at a time, one session per case. A
worker that dies (a segfault in the backend) or takes longer than ``timeout``
seconds on a case is killed: that case's sets are errors saying so, a new worker
takes its place, and the other cases run on.

On Dask each case is one task submitted through ``Client.get_executor()`` (a
``concurrent.futures.Executor``); a task whose worker dies is retried by Dask and
reported as an error when Dask gives up. There ``timeout`` is the longest wait with
no case finishing: then the cases still out are cancelled and reported as errors
(Dask cannot stop a running task; its worker finishes it).
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import os
import time
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

from onnxdata.cases.case_run import CaseTask, SetResult, run_case, test_data_sets

__all__ = ["run_cases"]

Progress = Callable[[list[SetResult]], None]


def run_cases(tasks: Sequence[CaseTask], *, jobs: int = 0, timeout: float | None = None,
              executor: str = "processes", scheduler: str | None = None,
              progress: Progress | None = None) -> list[SetResult]:
    """Run every task; ``progress`` gets each case's results as they come in.

    ``jobs`` 0 runs the cases one by one in this process (no isolation, no timeout);
    ``jobs`` >= 1 in that many worker processes. ``executor="dask"`` submits to the
    scheduler at ``scheduler`` instead.
    """
    done: list[SetResult] = []

    def got(results: list[SetResult]) -> None:
        done.extend(results)
        if progress is not None:
            progress(results)

    if executor == "dask":
        for results in _dask(tasks, scheduler, timeout):
            got(results)
    elif jobs <= 0:
        for t in tasks:
            got(run_case(t))
    else:
        for results in _processes(tasks, jobs, timeout):
            got(results)
    return done


def _lost(task: CaseTask, why: str, seconds: float) -> list[SetResult]:
    case = Path(task.folder)
    try:
        sets = [s.name for s in test_data_sets(case)]
    except OSError:
        sets = ["*"]
    if task.sets is not None:
        sets = [s for s in sets if s in task.sets]
    out = []
    for s in sets or ["*"]:
        r = SetResult(case.name, task.folder if s == "*" else os.fspath(case / s), s, "error",
                      seconds, message=why)
        xfail = task.expectations.lookup(case.name, s).xfail
        if xfail:
            r = SetResult(r.case, r.folder, r.set, "xfail", seconds, why, xfail)
        out.append(r)
    return out


# ---------------------------------------------------------------- worker processes

def _worker(conn: Connection, warm: tuple[str, ...]) -> None:
    from onnxdata.cases.backends import get_backend

    for name in warm:  # the backends imported before the first case's clock starts
        with contextlib.suppress(Exception):
            get_backend(name)
    conn.send("ready")
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        conn.send(run_case(task))


class _Slot:
    def __init__(self, ctx: Any, warm: tuple[str, ...]) -> None:
        self.parent, child = ctx.Pipe()
        self.process = ctx.Process(target=_worker, args=(child, warm), daemon=True)
        self.process.start()
        child.close()
        self.ready = False
        self.task: CaseTask | None = None
        self.started = 0.0

    def give(self, task: CaseTask) -> None:
        self.task = task
        self.started = time.monotonic()
        self.parent.send(task)

    def kill(self) -> None:
        self.process.kill()
        self.process.join()
        self.parent.close()

    def stop(self) -> None:
        with contextlib.suppress(OSError):
            self.parent.send(None)
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.parent.close()


# a worker that has not said "ready" after this long (imports on a loaded machine) is lost
_START = 300.0


def _processes(tasks: Sequence[CaseTask], jobs: int, timeout: float | None
               ) -> Iterator[list[SetResult]]:
    ctx = multiprocessing.get_context("spawn")
    warm = tuple(sorted({t.backend for t in tasks} | {t.against for t in tasks if t.against}))
    queue = list(reversed(tasks))
    slots = [_Slot(ctx, warm) for _ in range(min(jobs, len(tasks)))]
    born = time.monotonic()
    try:
        while queue or any(s.task is not None for s in slots):
            live = [s for s in slots if s.task is not None or not s.ready]
            if not live:  # every worker idle and ready, cases left: give them out
                for s in slots:
                    if queue and s.task is None:
                        s.give(queue.pop())
                continue
            limits = [s.started + timeout for s in live if s.task is not None
                      and timeout is not None] + [born + _START for s in live if not s.ready]
            wait_for = max(0.0, min(limits) - time.monotonic()) if limits else None
            ready = wait([x for s in live for x in (s.parent, s.process.sentinel)], wait_for)
            for i, s in enumerate(slots):
                if s.task is None and s.ready:
                    continue
                if s.parent in ready:
                    try:
                        message = s.parent.recv()
                    except (EOFError, OSError):
                        message = None
                    if message == "ready":
                        s.ready = True
                        if queue:
                            s.give(queue.pop())
                        continue
                    if message is not None:
                        s.task = None
                        yield message
                        if queue:
                            s.give(queue.pop())
                        continue
                spent = time.monotonic() - s.started
                if s.process.sentinel in ready or not s.process.is_alive() or \
                        s.parent in ready:  # its pipe closed: it died
                    s.process.join(5)
                    code = s.process.exitcode
                    why = f"the backend's process died (exit code {code}" + (
                        f", signal {-code})" if code is not None and code < 0 else ")")
                elif s.task is not None and timeout is not None and spent >= timeout:
                    why = f"timed out after {timeout:g} s"
                elif not s.ready and time.monotonic() - born >= _START:
                    why = f"a worker process did not start in {_START:g} s"
                else:
                    continue
                task = s.task
                s.kill()
                if task is None:  # died before its first case: that is no case's fault
                    raise OSError(f"onnxdata run: {why} before running a case")
                yield _lost(task, why, spent)
                slots[i] = _Slot(ctx, warm)
                born = time.monotonic()
    finally:
        for s in slots:
            if s.task is None and s.ready:
                s.stop()
            else:
                s.kill()


# ---------------------------------------------------------------- Dask

def _dask(tasks: Sequence[CaseTask], scheduler: str | None, timeout: float | None
          ) -> Iterator[list[SetResult]]:
    import concurrent.futures as cf

    try:
        client_class: Any = importlib.import_module("distributed").Client  # untyped
    except ImportError as exc:
        raise ImportError("--executor dask needs distributed: pip install "
                          "'onnxdata[dask]'") from exc
    if not scheduler:
        raise ValueError("--executor dask needs --scheduler ADDRESS (tcp://host:8786)")
    with client_class(scheduler) as client:
        pool = client.get_executor(pure=False)
        started = time.monotonic()
        futures = {pool.submit(run_case, t): t for t in tasks}
        pending = set(futures)
        while pending:
            left = None if timeout is None else max(0.0, started + timeout - time.monotonic())
            finished, pending = cf.wait(pending, left, return_when=cf.FIRST_COMPLETED)
            if not finished and timeout is not None:
                # every task left was started by now: each has had its timeout
                for f in pending:
                    f.cancel()
                    yield _lost(futures[f], f"timed out after {timeout:g} s", timeout)
                return
            for f in finished:
                try:
                    yield f.result()
                except Exception as exc:  # KilledWorker and the like: that case only
                    yield _lost(futures[f], f"the Dask task failed: {type(exc).__name__}: "
                                f"{exc}", time.monotonic() - started)
            if timeout is not None:
                started = time.monotonic()
