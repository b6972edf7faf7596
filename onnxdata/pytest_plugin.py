"""ONNX test cases as pytest items: ``pytest --onnx-cases DIR`` (the ``pytest11`` entry
point ``onnxdata``, installed with the package; ``pip install 'onnxdata[pytest]'``).

Every case folder (``model.onnx`` beside ``test_data_set_N``) at or under each DIR
is collected, one item per data set, named ``test_abs[test_data_set_0]``. So ``-k``,
``--lf``, ``-n auto`` (pytest-xdist), ``--junitxml`` and markers work as for any item.
A failure shows onnxdata's nested differences (path, index, both values). The options:

* ``--onnx-cases DIR``: once per folder (``--onnx-cases a --onnx-cases b``);
* ``--onnx-backend NAME``: ``ort`` (default), ``reference``, ``module:attr``;
* ``--onnx-providers LIST``: ort's execution providers, comma-separated; a missing
  one skips each item with the reason;
* ``--onnx-against NAME``: also compare with a second backend's outputs;
* ``--onnx-expectations FILE``: tolerances, known failures (strict xfail) and skips,
  the file ``onnxdata run --expectations`` reads;
* ``--onnx-timeout S``: the longest one data set may take (its case's model load
  included); then its process is killed and the item is an error.

Each set runs in a worker process of the pytest process (``cases.worker``, the one
``onnxdata run --jobs`` runs its cases on, with the same ``CaseRunner``: one session per
case), so a backend that segfaults or hangs fails that item only, with or without
pytest-xdist. A set whose outputs differ is a
failure; one the backend cannot load or run (or that dies or times out) is an error,
raised in the item's setup, so JUnit counts it in ``errors``. A case folder that cannot
be read (``model.onnx`` a FIFO, a device, unreadable) is a collection error naming it;
a DIR with no case folder at all is a usage error.

Without ``--onnx-cases`` the plugin does nothing. The cases are collected beside what
pytest collects anyway (the paths given, else ``testpaths`` or the current folder):
the user's own tests are never dropped.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import functools
import gc
import os
import re
import stat
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from onnxdata.cases.case_folder import no_case_folder
from onnxdata.cases.expectations import Expectations, read_expectations
from onnxdata.cases.worker import Lost, Worker
from onnxdata.errors import OnnxDataError

if TYPE_CHECKING:
    from onnxdata.cases.case_run import CaseTask, SetResult

__all__ = ["CaseDir", "CaseFile", "SetItem"]

_SET = re.compile(r"test_data_set_\d+")


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("onnxdata", "ONNX test cases (onnxdata)")
    # one folder per option: with nargs="+" the test paths after it were taken as folders
    group.addoption("--onnx-cases", action="append", default=[], metavar="DIR",
                    help="collect every ONNX test case folder at or under DIR, one item "
                         "per test_data_set_N (once per folder)")
    group.addoption("--onnx-backend", default="ort", metavar="NAME",
                    help="ort (default), reference or module:attr")
    group.addoption("--onnx-providers", default="", metavar="LIST",
                    help="ort's execution providers in order, comma-separated")
    group.addoption("--onnx-against", default=None, metavar="NAME",
                    help="a second backend to compare the outputs with")
    group.addoption("--onnx-expectations", default=None, metavar="FILE",
                    help="tolerances, known failures and skips (TOML or JSON)")
    group.addoption("--onnx-timeout", type=float, default=None, metavar="S",
                    help="the longest one data set may take; then its process is killed "
                         "and the item is an error")


def pytest_configure(config: pytest.Config) -> None:
    roots = [Path(p).resolve() for p in config.getoption("onnx_cases")]
    if not roots:
        return
    for r in roots:
        if not r.is_dir():
            raise pytest.UsageError(f"--onnx-cases: no such folder: {r}")
        if not _has_case(r):
            raise pytest.UsageError(f"--onnx-cases: {no_case_folder([_safe(os.fspath(r))])}")
    timeout = config.getoption("onnx_timeout")
    if timeout is not None and not timeout > 0:
        raise pytest.UsageError(f"--onnx-timeout takes seconds > 0, not {timeout:g}")
    # the cases beside what pytest collects anyway (pytest drops a path given twice)
    given = {Path(a.split("::")[0]).resolve() for a in config.args}
    config.args = [*config.args, *(os.fspath(r) for r in roots if r not in given)]
    path = config.getoption("onnx_expectations")
    try:
        expectations = read_expectations(path) if path else Expectations()
    except (OnnxDataError, OSError, ValueError, RecursionError, OverflowError) as exc:
        raise pytest.UsageError(f"--onnx-expectations: {exc}") from exc
    config.stash[_STATE] = _State(config, roots, expectations)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """The worker process starts now, importing the backends while pytest collects (not
    in pytest-xdist's controller, which runs no item, nor with --collect-only)."""
    config = session.config
    state = config.stash.get(_STATE, None)
    controller = getattr(config.option, "dist", "no") != "no" and \
        not hasattr(config, "workerinput")
    if state is not None and hasattr(config, "workerinput") and gc.isenabled():
        gc.disable()  # (until collected: pytest_collection)
        state.paused = True
    if state is not None and not controller and not config.option.collectonly:
        state.start_worker()


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """Ends the garbage collector's pause that ``pytest_sessionstart`` began in a
    pytest-xdist worker, and freezes what is left (``gc.freeze``: no later collection walks
    it again; the worker ends after its session, see ``pytest_unconfigure``). Importing
    the run path and collecting the 1,884 node cases made some 200 collections there, each
    walking all the objects made so far: 0.24-0.38 s of a worker's 1.6 s CPU. Not in a
    process that may go on (``-n 0``, in-process runs): there a pause without the freeze
    only moved the work to the first collections after it."""
    try:
        return (yield)
    finally:
        state = session.config.stash.get(_STATE, None)
        if state is not None and state.paused:
            state.paused = False
            gc.enable()
            if hasattr(session.config, "workerinput"):
                gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Stops the worker process; in a pytest-xdist worker, then freezes the objects the
    garbage collector tracks.

    Last, after pytest's own final ``gc.collect()`` (unraisableexception's, which runs
    what garbage finalizers are left): the interpreter's collections at exit then have
    nothing to walk. Walking the collection tree took 0.1-0.3 s at each xdist worker's
    exit, and xdist's controller waits for its workers to exit. Not in a process that
    may go on (``pytest.main()`` called in-process, pytester's inline runs): what it
    froze would never be collected there."""
    state = config.stash.get(_STATE, None)
    if state is not None:
        if state.paused:  # (a session that ended before collecting)
            state.paused = False
            gc.enable()
        if state.worker is not None:
            state.worker.close()
        if hasattr(config, "workerinput"):  # an xdist worker: the process ends next
            gc.freeze()


def _has_case(root: Path) -> bool:
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not _SET.fullmatch(d) and not d.startswith(".")]
        if ("model.onnx" in files or "model.onnx" in dirs) and \
                any(_SET.fullmatch(n) for n in _names(Path(folder))):
            return True
    return False


def _names(folder: Path) -> list[str]:
    """A folder's names, or none when it cannot be listed (pytest says why then)."""
    try:
        return os.listdir(folder)
    except OSError:
        return []


class _State:
    """The options, the expectations and the worker process (one per pytest process)."""

    def __init__(self, config: pytest.Config, roots: list[Path],
                 expectations: Expectations) -> None:
        self.roots = roots
        self.prefixes = [os.fspath(r) for r in roots]
        self.backend = str(config.getoption("onnx_backend"))
        self.providers = tuple(p.strip() for p in str(config.getoption("onnx_providers"))
                               .split(",") if p.strip())
        self.against = config.getoption("onnx_against")
        self.timeout: float | None = config.getoption("onnx_timeout")
        self.expectations = expectations
        # a known failure is pytest's strict xfail marker (added at collection), not ours
        self.judged = dataclasses.replace(expectations, xfails=())
        # norecursedirs as one pattern, once read (None: one has a path separator)
        self.norecurse: tuple[re.Pattern[str] | None] | None = None
        self.listed: tuple[Path, list[os.DirEntry[str]]] | None = None
        self.plugins: set[object] = set()  # the plugins last looked at for collect_ignore
        self.root: str | None = None  # the rootdir and a separator (relative)
        self.ignoring = False
        self.worker: Worker | None = None  # (none in xdist's controller: it runs no item)
        self.paused = False  # the garbage collector, from session start to collected

    def start_worker(self) -> Worker:
        """The worker process, started: it imports the backends while pytest collects.
        The run path (numpy, the backends) is imported here, not when pytest loads the
        plugin: pytest loads it in every run, and xdist's controller never runs a set."""
        from onnxdata.cases.case_run import CaseRunner, warm_backends

        names = (self.backend, *((self.against,) if self.against else ()))
        self.worker = Worker(CaseRunner(), warm=functools.partial(warm_backends, names),
                             timeout=self.timeout)
        self.worker.start()
        return self.worker

    def task(self, item: SetItem) -> CaseTask:
        """The item's set as ``onnxdata run`` gives a case to a worker; the session stays
        for the next set of the same case. Made once an item: the worker knows a task sent
        ahead (as the next item's) by identity."""
        if item.task is None:
            from onnxdata.cases.case_run import CaseTask

            item.task = CaseTask(os.fspath(item.path.parent), self.backend,
                                 os.fspath(item.path), self.providers, self.against,
                                 self.judged, (item.folder.name,), keep_prepared=not item.last)
        return item.task

    def kept(self, path: Path, config: pytest.Config) -> bool:
        """Whether pytest's own ``pytest_ignore_collect`` would surely keep ``path``, a
        folder under a root, so it need not be asked: no --ignore or --ignore-glob, no
        conftest ``collect_ignore``, no other plugin's hook (hypothesis's ignores only
        .hypothesis), a name no ``norecursedirs`` pattern matches and no venv inside.
        The folder's listing is kept for ``pytest_collect_directory``, asked next."""
        if not self.under(path) or path.name in ("__pycache__", ".hypothesis"):
            return False
        if config.getoption("ignore") or config.getoption("ignore_glob"):
            return False
        this = sys.modules[__name__]
        for impl in config.hook.pytest_ignore_collect.get_hookimpls():
            name = getattr(impl.plugin, "__name__", None)
            if impl.plugin is not this and name not in ("_pytest.main",
                                                         "_hypothesis_pytestplugin"):
                return False
        plugins = config.pluginmanager.get_plugins()  # conftests join as folders are
        if plugins != self.plugins:  # collected
            self.plugins = plugins
            self.ignoring = any(hasattr(p, "collect_ignore") or
                                hasattr(p, "collect_ignore_glob") for p in plugins)
        if self.ignoring:
            return False
        if self.norecurse is None:
            self.norecurse = (_one_pattern([str(p) for p in config.getini("norecursedirs")]),)
        pattern = self.norecurse[0]
        if pattern is None or pattern.match(os.path.normcase(path.name)):
            return False
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except OSError:  # a file, or a folder it cannot list: pytest decides
            return False
        if any(e.name in ("pyvenv.cfg", "conda-meta") for e in entries):
            return False
        self.listed = (path, entries)
        return True

    def listing(self, path: Path) -> list[os.DirEntry[str]] | None:
        """The entries ``kept`` listed for ``path``, once."""
        listed, self.listed = self.listed, None
        return listed[1] if listed is not None and listed[0] == path else None

    def relative(self, path: Path, config: pytest.Config) -> str | None:
        """``path`` from the rootdir, '/'-separated, as pytest names a node under the
        rootdir (None when it is not under it): sliced from the strings, where pytest
        built Paths twice a node (its name from its parent's path, its id from the
        rootdir's), a tenth of collecting the node cases."""
        if self.root is None:
            root = os.fspath(config.rootpath)
            self.root = root if root.endswith(os.sep) else root + os.sep
        text = os.fspath(path)
        if not text.startswith(self.root) or len(text) == len(self.root):
            return None
        rel = text[len(self.root):]
        return rel if os.sep == "/" else rel.replace(os.sep, "/")

    def under(self, path: Path) -> bool:
        text = os.fspath(path)  # a prefix first: resolving every folder costs in collection
        if any(text == r or text.startswith(r + os.sep) for r in self.prefixes):
            return True
        resolved = path.resolve()
        return any(resolved.is_relative_to(r) for r in self.roots)


_STATE = pytest.StashKey[_State]()
_NEXT = pytest.StashKey[pytest.Item | None]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if isinstance(item, SetItem):  # its setup gives the next item's set to the worker too
        item.stash[_NEXT] = nextitem


def _safe(text: str) -> str:
    """``text`` printable: a byte that is not UTF-8 as \\xNN, a newline as \\n (for
    node ids, the terminal and JUnit XML)."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    if text.isprintable():  # nearly always: no character by character
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in text)


def _one_pattern(patterns: list[str]) -> re.Pattern[str] | None:
    """The ``norecursedirs`` patterns as one regular expression on a folder's name, as
    pytest's ``fnmatch_ex`` matches a pattern without a path separator; None when one
    has a separator (matched on the whole path)."""
    if any(os.sep in p or "/" in p for p in patterns):
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(os.path.normcase(p))})"
                               for p in patterns) or "(?!)")


@pytest.hookimpl(tryfirst=True)
def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A folder under an --onnx-cases root is kept (False) without pytest's own check
    when that check surely keeps it (``_State.kept``); else None, and pytest decides.
    pytest's check matched each case folder against every ``norecursedirs`` pattern
    with Paths and looked for a venv in it: a third of collecting the node cases."""
    state = config.stash.get(_STATE, None)
    if state is not None and state.kept(collection_path, config):
        return False
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collect_directory(path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = parent.config.stash.get(_STATE, None)
    if state is None or not state.under(path):
        return None
    sets = _case_sets(path, state.listing(path))
    if sets is None:
        return None
    safe = _safe(path.name)
    name = nodeid = rel = None
    if safe != path.name:
        nodeid = f"{parent.nodeid}/{safe}" if parent.nodeid else safe
    elif os.fspath(parent.path) == os.path.dirname(os.fspath(path)):
        rel = state.relative(path, parent.config)
        name, nodeid = (path.name, rel) if rel is not None else (None, None)
    case_dir: CaseDir = CaseDir.from_parent(parent, path=path, name=name, nodeid=nodeid)
    case_dir.sets = sets
    case_dir.sliced = rel is not None
    return case_dir


def _case_sets(folder: Path, entries: list[os.DirEntry[str]] | None = None
               ) -> list[Path] | None:
    """The ``test_data_set_N`` folders of a case folder by N, from one listing (collection
    lists each case once: ``entries``, when given), or None when ``folder`` is no case
    folder (or cannot be listed: pytest says why then)."""
    try:
        if entries is None:
            with os.scandir(folder) as it:
                entries = list(it)
        found = [(int(e.name.rsplit("_", 1)[1]), Path(e.path), e.is_dir())
                 for e in entries if _SET.fullmatch(e.name)]
    except OSError:
        return None
    if not found or not any(e.name == "model.onnx" for e in entries):
        return None
    return [p for _, p, is_dir in sorted(found) if is_dir]


class CaseDir(pytest.File):
    """A case folder: its one child is its ``model.onnx`` (pytest does not walk the sets).

    A ``pytest.File`` (a node with a path), not a ``pytest.Directory``: pytest looks for
    the ``conftest.py`` files of every Directory it collects (a stat a folder up to the
    root, a fifth of the collection of the 1,884 node cases), and a case folder has none
    of its own."""

    sets: list[Path] | None = None  # its test_data_set_N folders, listed at collection
    sliced = False  # its name and node id were sliced from its path (_State.relative)

    def collect(self) -> Iterator[CaseFile]:
        model = self.path / "model.onnx"
        name = nodeid = None
        if self.sliced or _safe(self.path.name) != self.path.name:
            name, nodeid = "model.onnx", f"{self.nodeid}/model.onnx"
        yield CaseFile.from_parent(self, path=model, name=name, nodeid=nodeid)


def _unreadable(model: Path) -> str | None:
    """Why ``model`` cannot be read as a model file, or None."""
    try:
        fd = os.open(model, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return f"cannot open it: {exc.strerror or exc}"
    try:
        mode = os.fstat(fd).st_mode
    finally:
        os.close(fd)
    if stat.S_ISREG(mode):
        return None
    kind = "a FIFO" if stat.S_ISFIFO(mode) else "a folder" if stat.S_ISDIR(mode) else \
        "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket" \
        if stat.S_ISSOCK(mode) else "not a file"
    target = f" ({os.path.realpath(model)})" if model.is_symlink() else ""
    return f"it is {kind}{target}, not a regular file"


class CaseFile(pytest.File):
    """A case's ``model.onnx``: its data sets are the items."""

    def collect(self) -> Iterator[SetItem]:
        state = self.config.stash[_STATE]
        case = self.path.parent
        why = _unreadable(self.path)
        try:
            parent = self.parent
            sets = parent.sets if isinstance(parent, CaseDir) and parent.sets is not None \
                else _test_data_sets(case)
        except OSError as exc:
            why = why or f"cannot list {case}: {exc.strerror or exc}"
            sets = []
        if why is None and not sets:
            why = "no test_data_set_N folder beside it"
        if why is not None:
            raise self.CollectError(f"{_safe(os.fspath(self.path))}: {why}")
        for k, folder in enumerate(sets):
            name = f"{_safe(case.name)}[{_safe(folder.name)}]"
            # the nodeid given whole, so pytest parses "[...]" as parameters, as it does
            # the ids in its --lf cache (pytest 9 builds a child's id otherwise)
            item: SetItem = SetItem.from_parent(self, name=name, nodeid=f"{self.nodeid}::{name}",
                                                folder=folder, last=k == len(sets) - 1)
            expect = state.expectations.lookup(case.name, folder.name)
            if expect.skip:
                item.add_marker(pytest.mark.skip(reason=_safe(expect.skip)))
            if expect.xfail:
                item.add_marker(pytest.mark.xfail(reason=_safe(expect.xfail), strict=True))
            yield item


class SetFailed(Exception):
    """A data set whose outputs differ, or that could not be read or run."""

    def __init__(self, result: SetResult) -> None:
        super().__init__(result.message or result.status)
        self.result = result


class SetItem(pytest.Item):
    """One data set of one case."""

    def __init__(self, *, folder: Path, last: bool = True, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.folder = folder
        self.last = last  # the case's last set
        self.task: CaseTask | None = None  # made at its setup, or the item before's
        self.result: SetResult | None = None

    def setup(self) -> None:
        """Runs the set in the worker process (the next item's set is given to it too, to
        run while pytest reports this one): an error (the backend cannot load or run it,
        it died or timed out) is raised here, so pytest reports an error, not a failure."""
        state = self.config.stash[_STATE]
        task = state.task(self)
        nextitem = self.stash.get(_NEXT, None)
        try:
            worker = state.worker or state.start_worker()
            worker.send_once(task)
            if isinstance(nextitem, SetItem) and nextitem.get_closest_marker("skip") is None:
                worker.send_once(state.task(nextitem))
            answer = worker.run(task)
        except OnnxDataError as exc:
            pytest.fail(_safe(f"{self.name}: error: {exc}"), pytrace=False)
        self.result = result = _own(answer, self)
        if result.status == "skip":
            pytest.skip(_safe(result.reason))
        if result.status == "error":
            pytest.fail(_report(result), pytrace=False)

    def runtest(self) -> None:
        result = self.result
        assert result is not None  # setup ran
        if result.status == "fail":
            raise SetFailed(result)
        if result.status == "unchecked":
            raise SetFailed(dataclasses.replace(
                result, message="no expected outputs (output_K.pb) to compare with"))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, SetFailed):
            return _report(excinfo.value.result)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        # a line is needed for skip reports; the path printable, as the node id is
        return _safe(os.fspath(self.path)), 0, self.name

    @functools.cached_property
    def location(self) -> tuple[str, int | None, str]:
        """pytest's location (the path from the rootdir), by slicing a path under the
        rootdir: pytest's own way builds and compares Paths, once per path, and each item
        has a path of its own (a tenth of a millisecond an item)."""
        path, line, name = self.reportinfo()
        root = os.fspath(self.config.rootpath)
        if path.startswith(root + os.sep):
            return path[len(root) + 1:], line, name
        return super().location


def _test_data_sets(case: Path) -> list[Path]:
    from onnxdata.cases.case_run import test_data_sets

    return test_data_sets(case)


def _own(answer: list[SetResult] | Lost, item: SetItem) -> SetResult:
    """The item's result in a worker's answer (a lost one an error saying why)."""
    from onnxdata.cases.case_run import SetResult

    if isinstance(answer, Lost):
        return SetResult(item.path.parent.name, os.fspath(item.folder), item.folder.name,
                         "error", answer.seconds, message=answer.why)
    found = [r for r in answer if r.set == item.folder.name]
    return found[0] if found else SetResult(
        item.path.parent.name, os.fspath(item.folder), item.folder.name, "error",
        message=f"no {item.folder.name} folder in {item.path.parent} any more")


def _report(r: SetResult) -> str:
    head = f"{_safe(r.id)}: {r.status}" + (f": {r.message}" if r.message else "")
    return "\n".join(_safe(line) for line in "\n".join([head, *r.lines(10)]).split("\n"))
