"""One data set at a time in a worker process (what the pytest plugin runs on): sets sent
ahead, a crash or a hang losing only its own set, one session per case."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from onnxdata.cases.expectations import Expectation
from onnxdata.cases.save import as_model
from onnxdata.cases.set_worker import SetRunner, SetTask, SetWorker

pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
pytest.importorskip("onnx", reason="the module:attr backends are onnx Backends")
NODE = Path(__file__).parents[1] / "data" / "onnx-node"
FAULTY = "tests.fault_backends:faulty"


def _task(to: Path, name: str, doc: str = "", backend: str = FAULTY) -> SetTask:
    shutil.copytree(NODE / "test_abs", to / name)
    if doc:
        model = as_model(to / name / "model.onnx")
        model.doc_string = doc
        (to / name / "model.onnx").write_bytes(model.SerializeToString())
    return SetTask(str(to / name / "model.onnx"), str(to / name / "test_data_set_0"),
                   Expectation(), backend)


def test_sets_sent_ahead_a_crash_and_a_hang_lose_their_own_set_only(tmp_path: Path) -> None:
    tasks = [_task(tmp_path, "test_segfault", "segfault"), _task(tmp_path, "test_ok_1"),
             _task(tmp_path, "test_hang", "hang"), _task(tmp_path, "test_ok_2")]
    worker = SetWorker((FAULTY,), timeout=10)
    try:
        for t in tasks:  # all four sent before any answer: the two behind a loss go again
            worker.send(t)
        last = worker.run(tasks[3])
        results = [worker.run(t) for t in tasks[:3]]
    finally:
        worker.close()
    assert [r.status for r in results] == ["error", "pass", "error"] and last.status == "pass"
    assert results[0].message == "the backend's process died (exit code -11, signal 11)"
    assert results[2].message == "timed out after 10 s"
    assert results[0].id == "test_segfault[test_data_set_0]"


def test_a_model_it_cannot_load_is_an_error_and_one_session_serves_a_case(
        tmp_path: Path) -> None:
    task = _task(tmp_path, "test_abs", backend="ort")
    runner = SetRunner()
    assert runner(task).status == "pass"
    session = runner._prepared
    assert runner(task).status == "pass" and runner._prepared is session
    model = as_model(tmp_path / "test_abs" / "model.onnx")
    model.graph.node[0].op_type = "NoSuchOp"
    (tmp_path / "bad").mkdir()
    shutil.copytree(tmp_path / "test_abs" / "test_data_set_0", tmp_path / "bad" /
                    "test_data_set_0")
    (tmp_path / "bad" / "model.onnx").write_bytes(model.SerializeToString())
    bad = SetTask(str(tmp_path / "bad" / "model.onnx"),
                  str(tmp_path / "bad" / "test_data_set_0"), Expectation())
    r = runner(bad)
    assert r.status == "error" and "ONNX Runtime cannot load" in r.message
