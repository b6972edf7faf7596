"""The worker processes every isolated run goes through (``run --jobs``, the pytest plugin,
``locate``): jobs sent ahead, a crash or a hang losing only its own job, a handler's
exception as that job's answer, a worker that dies at start-up an error of its own, and
``CaseRunner``'s one session per case."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

from onnxdata.cases.case_run import CaseRunner, CaseTask
from onnxdata.cases.save import as_model
from onnxdata.cases.worker import Lost, Worker, WorkerError, run_pool
from tests.fault_backends import exit_at_start, raise_on

pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
pytest.importorskip("onnx", reason="the module:attr backends are onnx Backends")
NODE = Path(__file__).parents[1] / "data" / "onnx-node"
FAULTY = "tests.fault_backends:faulty"


def _task(to: Path, name: str, doc: str = "", backend: str = FAULTY) -> CaseTask:
    shutil.copytree(NODE / "test_abs", to / name)
    if doc:
        model = as_model(to / name / "model.onnx")
        model.doc_string = doc
        (to / name / "model.onnx").write_bytes(model.SerializeToString())
    return CaseTask(str(to / name), backend, sets=("test_data_set_0",))


def test_jobs_sent_ahead_a_crash_and_a_hang_lose_their_own_job_only(tmp_path: Path) -> None:
    tasks = [_task(tmp_path, "test_segfault", "segfault"), _task(tmp_path, "test_ok_1"),
             _task(tmp_path, "test_hang", "hang"), _task(tmp_path, "test_ok_2")]
    worker = Worker(CaseRunner(), timeout=10)
    try:
        for t in tasks:  # all four sent before any answer: the two behind a loss go again
            worker.send(t)
        last = worker.run(tasks[3])
        answers = [worker.run(t) for t in tasks[:3]]
    finally:
        worker.close()
    assert isinstance(answers[0], Lost) and isinstance(answers[2], Lost)
    assert answers[0].why == "the backend's process died (exit code -11, signal 11)"
    assert answers[2].why == "timed out after 10 s" and answers[2].seconds >= 10
    assert [r.status for r in answers[1] + last] == ["pass", "pass"]


def test_a_pool_answers_every_job_a_raising_handler_losing_its_own() -> None:
    answers = dict(run_pool(["a", "boom", "b", "c"], 2, raise_on))
    assert answers["a"] == "a" and answers["b"] == "b" and answers["c"] == "c"
    assert answers["boom"] == Lost("RuntimeError: boom", answers["boom"].seconds)


def test_a_worker_that_dies_before_it_is_ready_is_no_jobs_fault() -> None:
    worker = Worker(raise_on, warm=exit_at_start)
    with pytest.raises(WorkerError, match=r"^the backend's worker process died \(exit code 3\) "
                       "before it was ready$"):
        worker.run("a")
    worker.close()


def _local_handler(job: str) -> str:
    return job


def test_a_worker_whose_process_cannot_start_says_why_and_closes() -> None:
    """A handler spawn cannot pickle: the start's own error, and ``close`` after it is
    quiet (it tried to kill a process that never started: AttributeError)."""
    worker = Worker(lambda job: _local_handler(job))
    with pytest.raises((pickle.PicklingError, AttributeError), match="pickle"):
        worker.run("a")
    worker.close()
    worker.close()


def test_one_session_per_case_while_its_sets_follow_and_a_model_it_cannot_load(
        tmp_path: Path) -> None:
    task = _task(tmp_path, "test_abs", backend="ort")
    keep = CaseTask(task.folder, "ort", sets=task.sets, keep_prepared=True)
    runner = CaseRunner()
    assert runner(keep)[0].status == "pass"
    session = runner._prepared
    assert runner(keep)[0].status == "pass" and runner._prepared is session
    assert runner(task)[0].status == "pass" and runner._prepared == []  # then it goes
    model = as_model(tmp_path / "test_abs" / "model.onnx")
    model.graph.node[0].op_type = "NoSuchOp"
    shutil.copytree(tmp_path / "test_abs", tmp_path / "bad")
    (tmp_path / "bad" / "model.onnx").write_bytes(model.SerializeToString())
    (r,) = runner(CaseTask(str(tmp_path / "bad"), "ort", sets=("test_data_set_0",)))
    assert r.status == "error" and "ONNX Runtime cannot load" in r.message
