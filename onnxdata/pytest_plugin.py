"""ONNX test cases as pytest items: ``pytest --onnx-cases DIR...`` (the ``pytest11`` entry
point ``onnxdata``, installed with the package; ``pip install 'onnxdata[pytest]'``).

Every case folder (``model.onnx`` beside ``test_data_set_N``) at or under each DIR
is collected from its ``model.onnx``, one item per data set, named
``test_abs[test_data_set_0]``. So ``-k``, ``--lf``, ``-n auto`` (pytest-xdist),
``--junitxml`` and markers work as for any item. A failure shows onnxdata's nested
differences (path, index, both values). The options:

* ``--onnx-backend NAME``: ``ort`` (default), ``reference``, ``module:attr``;
* ``--onnx-providers LIST``: ort's execution providers, comma-separated; a missing
  one skips each item with the reason;
* ``--onnx-against NAME``: also compare with a second backend's outputs;
* ``--onnx-expectations FILE``: tolerances, known failures (strict xfail) and skips,
  the file ``onnxdata run --expectations`` reads.

Without ``--onnx-cases`` the plugin does nothing. Given only ``--onnx-cases``, only
the cases are collected; with test paths too, both are.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from onnxdata.cases.backend_errors import BackendCannotTake, BackendUnavailable
from onnxdata.cases.backends import get_backend
from onnxdata.cases.case_run import SetResult, run_set, test_data_sets
from onnxdata.cases.expectations import Expectations, read_expectations
from onnxdata.errors import OnnxDataError

__all__ = ["CaseFile", "SetItem"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("onnxdata", "ONNX test cases (onnxdata)")
    group.addoption("--onnx-cases", action="extend", nargs="+", default=[], metavar="DIR",
                    help="collect every ONNX test case folder at or under DIR, one item "
                         "per test_data_set_N")
    group.addoption("--onnx-backend", default="ort", metavar="NAME",
                    help="ort (default), reference or module:attr")
    group.addoption("--onnx-providers", default="", metavar="LIST",
                    help="ort's execution providers in order, comma-separated")
    group.addoption("--onnx-against", default=None, metavar="NAME",
                    help="a second backend to compare the outputs with")
    group.addoption("--onnx-expectations", default=None, metavar="FILE",
                    help="tolerances, known failures and skips (TOML or JSON)")


def _roots(config: pytest.Config) -> list[Path]:
    return [Path(p).resolve() for p in config.getoption("onnx_cases")]


def pytest_configure(config: pytest.Config) -> None:
    roots = _roots(config)
    if not roots:
        return
    for r in roots:
        if not r.exists():
            raise pytest.UsageError(f"--onnx-cases: no such folder: {r}")
    given = {Path(a.split("::")[0]).resolve() for a in config.args}
    explicit = config.args_source == pytest.Config.ArgsSource.ARGS
    extra = [os.fspath(r) for r in roots if r not in given]
    config.args = [*config.args, *extra] if explicit else \
        [*(a for a in config.args if Path(a.split("::")[0]).resolve() in roots), *extra]
    path = config.getoption("onnx_expectations")
    try:
        expectations = read_expectations(path) if path else Expectations()
    except OnnxDataError as exc:
        raise pytest.UsageError(str(exc)) from exc
    config.stash[_STATE] = _State(config, expectations)


class _State:
    """The options, the expectations and the one case prepared at a time (per process)."""

    def __init__(self, config: pytest.Config, expectations: Expectations) -> None:
        self.backend = str(config.getoption("onnx_backend"))
        self.providers = [p.strip() for p in str(config.getoption("onnx_providers")).split(",")
                          if p.strip()]
        self.against = config.getoption("onnx_against")
        self.expectations = expectations
        self.case: Path | None = None
        self.prepared: list[Any] | BaseException = []

    def prepare(self, model: Path) -> list[Any]:
        if self.case != model:
            self.case = model
            try:
                ours = get_backend(self.backend, self.providers or None).prepare(model)
                self.prepared = [ours]
                if self.against:
                    self.prepared.append(get_backend(self.against).prepare(model))
            except (OnnxDataError, ValueError) as exc:
                self.prepared = exc
        if isinstance(self.prepared, BaseException):
            raise self.prepared
        return self.prepared


_STATE = pytest.StashKey[_State]()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name != "model.onnx" or _STATE not in parent.config.stash:
        return None
    resolved = file_path.resolve()
    if not any(resolved.is_relative_to(r) for r in _roots(parent.config)):
        return None
    if not test_data_sets(file_path.parent):
        return None
    case_file: CaseFile = CaseFile.from_parent(parent, path=file_path)
    return case_file


class CaseFile(pytest.File):
    """A case's ``model.onnx``: its data sets are the items."""

    def collect(self) -> Iterator[SetItem]:
        state = self.config.stash[_STATE]
        case = self.path.parent
        for folder in test_data_sets(case):
            name = f"{case.name}[{folder.name}]"
            # the nodeid given whole, so pytest parses "[...]" as parameters, as it does
            # the ids in its --lf cache (pytest 9 builds a child's id otherwise)
            item: SetItem = SetItem.from_parent(self, name=name, nodeid=f"{self.nodeid}::{name}",
                                                folder=folder)
            expect = state.expectations.lookup(case.name, folder.name)
            if expect.skip:
                item.add_marker(pytest.mark.skip(reason=expect.skip))
            if expect.xfail:
                item.add_marker(pytest.mark.xfail(reason=expect.xfail, strict=True))
            yield item


class SetFailed(Exception):
    """A data set whose outputs differ, or that could not be read or run."""

    def __init__(self, result: SetResult) -> None:
        super().__init__(result.message or result.status)
        self.result = result


class SetItem(pytest.Item):
    """One data set of one case."""

    def __init__(self, *, folder: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.folder = folder

    def runtest(self) -> None:
        state = self.config.stash[_STATE]
        model = self.path
        try:
            prepared = state.prepare(model)
        except (BackendUnavailable, BackendCannotTake) as exc:
            pytest.skip(str(exc))
        except OnnxDataError as exc:
            raise SetFailed(SetResult(model.parent.name, os.fspath(self.folder),
                                      self.folder.name, "error", message=str(exc))) from exc
        expect = state.expectations.lookup(model.parent.name, self.folder.name)
        # a known failure is pytest's strict xfail marker (added at collection), not ours
        result = run_set(prepared, model, self.folder, dataclasses.replace(expect, xfail=None))
        if result.status == "skip":
            pytest.skip(result.reason)
        if result.status in ("fail", "error"):
            raise SetFailed(result)
        if result.status == "unchecked":
            raise SetFailed(dataclasses.replace(
                result, message="no expected outputs (output_K.pb) to compare with"))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, SetFailed):
            r = excinfo.value.result
            head = f"{r.id}: {r.status}" + (f": {r.message}" if r.message else "")
            return "\n".join([head, *r.lines(10)])
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, self.name  # a line is needed for skip reports
