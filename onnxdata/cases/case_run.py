"""One case folder's data sets on a backend, each set one ``SetResult``: what the many-cases
runner, the pytest plugin and the scoreboard share.

A set's status is one of:

* ``pass``: every output is close to its expected file (and to the other
  backend's output with ``against``);
* ``fail``: an output differs (``outputs[k].differences``, ``against`` for the
  other backend's), or a known failure passed (``xpass``: known failures are strict);
* ``xfail``: a known failure failed, as the expectations file says;
* ``skip``: the expectations file says so, or the backend cannot run here or
  cannot take a value (``reason``);
* ``error``: the set could not be read, the model loaded or run; with
  ``--jobs`` also a crash or a hang of the backend (``message``);
* ``unchecked``: no expected outputs and no other backend to compare with.

Everything in a result pickles, so results come back from worker processes.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import time
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onnxdata.cases.backend_errors import BackendCannotTake, BackendUnavailable
from onnxdata.cases.backends import Backend, get_backend
from onnxdata.cases.expectations import Expectation, Expectations
from onnxdata.cases.load import load_checked_set
from onnxdata.convert.compare import Difference, compare
from onnxdata.errors import OnnxDataError

__all__ = ["CaseRunner", "CaseTask", "OutputCheck", "SetResult", "find_cases", "run_case",
           "shard", "warm_backends"]

_SET = re.compile(r"^test_data_set_(\d+)$")
# a differing array pair is kept for the scoreboard's pictures up to this many elements
PICTURE_LIMIT = 1 << 16


@dataclass(frozen=True)
class OutputCheck:
    """One output of one set: its differences from the expected file and from ``against``."""

    index: int
    name: str
    differences: tuple[Difference, ...] = ()
    against: tuple[Difference, ...] = ()
    checked: bool = True
    pictures: tuple[Any, Any] | None = field(default=None, repr=False, compare=False)
    value: Any = field(default=None, repr=False, compare=False)  # with keep_outputs

    @property
    def status(self) -> str:
        """"fail", "unchecked" or "pass", for this output alone."""
        if self.differences or self.against:
            return "fail"
        return "pass" if self.checked else "unchecked"


@dataclass(frozen=True)
class SetResult:
    """One data set of one case after a run."""

    case: str
    folder: str  # the set's folder (the case's for set "*": its sets could not be listed)
    set: str
    status: str
    seconds: float = 0.0
    message: str = ""
    reason: str = ""
    outputs: tuple[OutputCheck, ...] = ()

    @property
    def id(self) -> str:
        """``case[set]``, as the pytest plugin names the item."""
        return f"{self.case}[{self.set}]"

    def lines(self, shown: int = 10) -> list[str]:
        """The differences, one line each (``shown`` per output), for people."""
        out = []
        for o in self.outputs:
            for label, found in (("", o.differences), ("against: ", o.against)):
                for d in found[:shown]:
                    out.append(f"output {o.index} {o.name!r}: {label}{d}")
                if len(found) > shown:
                    out.append(f"output {o.index} {o.name!r}: {label}… {len(found) - shown} "
                               "more")
        return out

    def as_json(self) -> dict[str, Any]:
        """The result as JSON-ready data."""
        return {"id": self.id, "case": self.case, "folder": self.folder, "set": self.set,
                "status": self.status, "seconds": round(self.seconds, 6),
                "message": self.message or None, "reason": self.reason or None,
                "outputs": [{"index": o.index, "name": o.name, "checked": o.checked,
                             "differences": [d.as_json() for d in o.differences],
                             "against": [d.as_json() for d in o.against]}
                            for o in self.outputs]}


@dataclass(frozen=True)
class CaseTask:
    """What a worker needs to run one case: all plain data, so it pickles."""

    folder: str
    backend: str = "ort"
    model: str | None = None  # the model file; None: folder/model.onnx
    providers: tuple[str, ...] = ()
    against: str | None = None
    expectations: Expectations = field(default_factory=Expectations)
    sets: tuple[str, ...] | None = None  # set folder names; None: all of them
    pictures: bool = False
    keep_outputs: bool = False  # the backend's values in OutputCheck.value
    # the next task is more sets of this case: a CaseRunner keeps its session for them
    # (the pytest plugin sends one set a task)
    keep_prepared: bool = False


# ---------------------------------------------------------------- finding cases

def test_data_sets(case: Path) -> list[Path]:
    """The ``test_data_set_N`` folders of a case, by N."""
    found = [(int(m.group(1)), p) for p in case.iterdir()
             if p.is_dir() and (m := _SET.match(p.name)) is not None]
    return [p for _, p in sorted(found)]


test_data_sets.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


def find_cases(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Every case folder (``model.onnx`` beside ``test_data_set_N``) at or under ``paths``,
    sorted and once each. A path that does not exist raises OnnxDataError."""
    found: set[Path] = set()
    for given in paths:
        p = Path(given)
        if not p.exists():
            raise OnnxDataError(f"{p}: no such file or folder")
        if p.is_file():
            p = p.parent
        for root, dirs, files in os.walk(p):
            dirs[:] = sorted(d for d in dirs if not _SET.match(d) and not d.startswith("."))
            if "model.onnx" in files and any(_SET.match(d) for d in os.listdir(root)):
                found.add(Path(root))
    return sorted(found, key=lambda c: (c.name, os.fspath(c)))


def shard(cases: Sequence[Path], spec: str) -> list[Path]:
    """The cases of shard ``I/N`` (1 <= I <= N): by a hash of the case's name, so a case
    stays in its shard when others are added or removed."""
    m = re.fullmatch(r"(\d+)/(\d+)", spec)
    if m is None or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ValueError(f"--shard takes I/N with 1 <= I <= N, not {spec!r}")
    i, n = int(m.group(1)), int(m.group(2))
    return [c for c in cases if zlib.crc32(c.name.encode("utf-8", "surrogateescape")) % n
            == i - 1]


# ---------------------------------------------------------------- running one case

def run_case(task: CaseTask, runner: CaseRunner | None = None) -> list[SetResult]:
    """Run every set of one case (``task.sets`` only, when given); never raises for what
    the case or the backend does. ``runner`` keeps the prepared backends between tasks."""
    case = Path(task.folder)
    name = case.name
    try:
        if task.sets is not None and len(task.sets) == 1:  # no listing for one set
            sets = [case / s for s in task.sets if _SET.match(s) and (case / s).is_dir()]
        else:
            sets = test_data_sets(case)
            if task.sets is not None:
                sets = [s for s in sets if s.name in task.sets]
    except OSError as exc:
        return [SetResult(name, task.folder, "*", "error", message=f"cannot list {case}: {exc}")]
    todo = []
    results: list[SetResult] = []
    for s in sets:
        skip = task.expectations.lookup(name, s.name).skip
        if skip:
            results.append(SetResult(name, os.fspath(s), s.name, "skip", reason=skip))
        else:
            todo.append(s)
    if not todo:
        return results
    started = time.perf_counter()
    model = Path(task.model) if task.model is not None else case / "model.onnx"
    try:
        prepared = (runner or CaseRunner()).prepared(task, model)
    except (BackendUnavailable, BackendCannotTake) as exc:
        return results + [SetResult(name, os.fspath(s), s.name, "skip", reason=str(exc))
                          for s in todo]
    except OnnxDataError as exc:
        spent = time.perf_counter() - started
        return results + [_expected(SetResult(name, os.fspath(s), s.name, "error", spent,
                                              message=str(exc)),
                                    task.expectations.lookup(name, s.name)) for s in todo]
    for s in todo:
        results.append(run_set(prepared, model, s, task.expectations.lookup(name, s.name),
                               pictures=task.pictures, keep=task.keep_outputs))
    return sorted(results, key=lambda r: _set_number(r.set))


class CaseRunner:
    """``run_case`` task after task (what a worker process runs), keeping the last case's
    prepared backends while ``task.keep_prepared`` says more of its sets follow: one
    session per case when the pytest plugin sends a set at a time. Otherwise the session
    goes when its case is done (an idle ORT session's threads spin)."""

    def __init__(self) -> None:
        self._key: tuple[Any, ...] | None = None
        self._prepared: list[Any] | OnnxDataError = []

    def __call__(self, task: CaseTask) -> list[SetResult]:
        try:
            return run_case(task, self)
        finally:
            if not task.keep_prepared:
                self._key, self._prepared = None, []

    def prepared(self, task: CaseTask, model: Path) -> list[Any]:
        """The task's backends with ``model`` prepared (the kept ones for the same case);
        raises as ``prepare`` does."""
        key = (os.fspath(model), task.backend, task.providers, task.against)
        if key != self._key:
            self._key, self._prepared = key, []  # the last session goes before the next
            try:
                prepared = [_prepare(task.backend, task.providers, model)]
                if task.against is not None:
                    prepared.append(_prepare(task.against, (), model))
                self._prepared = prepared
            except OnnxDataError as exc:
                self._prepared = exc
        if isinstance(self._prepared, OnnxDataError):
            raise self._prepared
        return self._prepared


def warm_backends(names: Sequence[str]) -> None:
    """Imports the backends called ``names`` (before a worker's first case's clock)."""
    for name in names:
        with contextlib.suppress(Exception):  # one that cannot load says so per case
            get_backend(name)


def _set_number(name: str) -> int:
    m = _SET.match(name)
    return int(m.group(1)) if m else -1


def _prepare(backend: str | Backend, providers: Sequence[str], model: Path) -> Any:
    b = get_backend(backend, list(providers) or None) if isinstance(backend, str) else backend
    return b.prepare(model)


def run_set(prepared: Sequence[Any], model: Path, folder: Path, expect: Expectation, *,
            pictures: bool = False, keep: bool = False) -> SetResult:
    """One set on ``prepared[0]`` (and ``prepared[1]`` as ``against``), judged by ``expect``;
    ``model`` is the model's path (its folder names the case)."""
    started = time.perf_counter()
    base = (model.parent.name, os.fspath(folder), folder.name)
    try:
        inputs, expected = load_checked_set(folder, model=model)
    except (OnnxDataError, OSError, IndexError, ValueError) as exc:
        return _expected(SetResult(*base, "error", time.perf_counter() - started,
                                   message=f"cannot read the set: {exc}"), expect)
    try:
        runs = [p.run(inputs) for p in prepared]
    except BackendCannotTake as exc:
        return SetResult(*base, "skip", time.perf_counter() - started, reason=str(exc))
    except OnnxDataError as exc:
        return _expected(SetResult(*base, "error", time.perf_counter() - started,
                                   message=str(exc)), expect)
    spent = time.perf_counter() - started
    names = [v.name for v in prepared[0].model.proto.graph.output] \
        if hasattr(prepared[0], "model") else [str(k) for k in range(len(runs[0]))]
    checks = []
    for k, actual in enumerate(runs[0]):
        name = names[k] if k < len(names) else str(k)
        rtol, atol = expect.tolerance(name)
        found = tuple(compare(actual, expected[k], rtol=rtol, atol=atol)) \
            if k < len(expected) else ()
        other = tuple(compare(actual, runs[1][k], rtol=rtol, atol=atol)) \
            if len(runs) > 1 else ()
        pair = None
        if pictures and (found or other):
            pair = _picture_pair(actual, expected[k] if found else runs[1][k])
        checks.append(OutputCheck(k, name, found, other, k < len(expected) or len(runs) > 1,
                                  pair, actual if keep else None))
    if any(c.differences or c.against for c in checks):
        status = "fail"
    elif not all(c.checked for c in checks):
        status = "unchecked"
    else:
        status = "pass"
    return _expected(SetResult(*base, status, spent, outputs=tuple(checks)), expect)


def _picture_pair(actual: Any, expected: Any) -> tuple[Any, Any] | None:
    import numpy as np

    if isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray) and \
            actual.size <= PICTURE_LIMIT and expected.size <= PICTURE_LIMIT:
        return actual, expected
    return None


def _expected(r: SetResult, expect: Expectation | None) -> SetResult:
    """``r`` judged by a known failure: fail/error -> xfail, pass -> fail (xpass)."""
    if expect is None or expect.xfail is None:
        return r
    if r.status in ("fail", "error"):
        return SetResult(r.case, r.folder, r.set, "xfail", r.seconds, r.message,
                         expect.xfail, r.outputs)
    if r.status == "pass":
        return SetResult(r.case, r.folder, r.set, "fail", r.seconds,
                         "known failure passed (xpass, strict): " + expect.xfail,
                         expect.xfail, r.outputs)
    return r


def matches(result: SetResult, pattern: str) -> bool:
    """Whether ``pattern`` (a glob) names the result's case or id."""
    return fnmatch.fnmatchcase(result.case, pattern) or fnmatch.fnmatchcase(result.id, pattern)
