"""Many cases at once: in this process, in worker processes (``--jobs N``), or on a Dask
cluster (``--executor dask --scheduler ADDRESS``).

Worker processes (``cases.worker``, as the pytest plugin's and ``locate``'s) each run one
case at a time, one session per case. A worker that dies (a segfault in the backend) or
takes longer than ``timeout`` seconds on a case is killed: that case's sets are errors
saying so, a new worker takes its place, and the other cases run on.

On Dask each case is one task submitted through ``Client.get_executor()`` (a
``concurrent.futures.Executor``); a task whose worker dies is retried by Dask and
reported as an error when Dask gives up. There ``timeout`` is the longest wait with
no case finishing: then the cases still out are cancelled and reported as errors
(Dask cannot stop a running task; its worker finishes it).
"""

from __future__ import annotations

import functools
import importlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from onnxdata.cases.case_run import (
    CaseRunner,
    CaseTask,
    SetResult,
    run_case,
    test_data_sets,
    warm_backends,
)
from onnxdata.cases.worker import Lost, WorkerError, run_pool

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

def _processes(tasks: Sequence[CaseTask], jobs: int, timeout: float | None
               ) -> Iterator[list[SetResult]]:
    names = sorted({t.backend for t in tasks} | {t.against for t in tasks if t.against})
    try:
        for task, answer in run_pool(tasks, jobs, CaseRunner(), timeout=timeout,
                                     warm=functools.partial(warm_backends, tuple(names))):
            yield _lost(task, answer.why, answer.seconds) if isinstance(answer, Lost) \
                else answer
    except WorkerError as exc:  # no case's fault: the command stops saying so
        raise OSError(f"onnxdata run: {exc}") from exc


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
