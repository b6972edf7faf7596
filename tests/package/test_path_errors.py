"""A path that cannot be used gives one error family and one wording, whichever public
function takes it: a missing path, a folder where a file is wanted, a file where a folder
is wanted (or in the path), a path the process may not open. Each error is an
OnnxDataError (a DecodeError when the path is read) and the OSError subclass Python
raises for it, with its errno and the path as ``filename``, and says
``cannot read P[ as KIND]: REASON`` (``cannot save to P: REASON``) in one line: the words
of ``errors.path_error``."""

from __future__ import annotations

import errno
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
import onnxdata.cases
import onnxdata.wire.source
from onnxdata.cli.main import main
from onnxdata.errors import PathError, path_error
from tests.conftest import CORPUS, import_onnx

MESSAGE = onnxdata.TensorProto(data_type=1, dims=[1], float_data=[1.0])
#: A good test case: ``G/model.onnx``, ``G/test_data_set_0``.
CASE = CORPUS / "test_abs"

#: (name, call of the path, wants a folder): each public function that reads a path.
READERS: list[tuple[str, Callable[[Path, Path], Any], bool]] = [
    ("load", lambda p, g: onnxdata.load(p), False),
    ("load tensor", lambda p, g: onnxdata.load(p, "tensor"), False),
    ("read", lambda p, g: onnxdata.read(p), False),
    ("read copy", lambda p, g: onnxdata.read(p, "tensor", copy=True), False),
    ("explore", lambda p, g: onnxdata.explore(p), False),
    ("explore model", lambda p, g: onnxdata.explore(
        g / "test_data_set_0" / "input_0.pb", model=p, io="input", index=0), False),
    ("load_test_data_set", lambda p, g: onnxdata.cases.load_test_data_set(p), True),
    ("load_test_data_set model", lambda p, g: onnxdata.cases.load_test_data_set(
        g / "test_data_set_0", model=p), False),
    ("run_test_data_set model", lambda p, g: _run_reference(p, g), False),
    ("make_test_data_sets model", lambda p, g: onnxdata.cases.make_test_data_sets(p, 1),
     False),
]


def _run_reference(model: Path, good: Path) -> Any:
    """``run_test_data_set`` on onnx's reference (skipped where onnx is not installed: the
    backend is asked for before the model's path)."""
    import_onnx()
    return onnxdata.cases.run_test_data_set(model, good / "test_data_set_0",
                                            runtime="reference")


#: ... and each that writes one.
SAVERS: list[tuple[str, Callable[[Path], Any]]] = [
    ("save", lambda p: onnxdata.save(MESSAGE, p)),
    ("write", lambda p: onnxdata.write(np.zeros(2, np.float32), p)),
    ("save_test_data_set", lambda p: onnxdata.cases.save_test_data_set(
        p, [np.zeros(2)], [])),
]


@pytest.fixture
def good(tmp_path: Path) -> Path:
    shutil.copytree(CASE, tmp_path / "good")
    return tmp_path / "good"


def _check(info: pytest.ExceptionInfo[BaseException], cls: type[OSError], code: int,
           path: Path, words: str) -> None:
    error = info.value
    assert isinstance(error, onnxdata.OnnxDataError) and isinstance(error, cls), repr(error)
    assert isinstance(error, PathError)
    assert error.errno == code and error.filename == os.fspath(path)
    said = str(error)
    assert said.startswith(f"cannot read {path}") and said.endswith(words) and "\n" not in said
    assert "Errno" not in said and "onnxdata" not in said


@pytest.mark.parametrize(("name", "call", "folder"), READERS, ids=[r[0] for r in READERS])
def test_a_missing_path_is_one_error_for_every_reader(
    good: Path, tmp_path: Path, name: str, call: Callable[[Path, Path], Any], folder: bool
) -> None:
    path = tmp_path / "missing"
    with pytest.raises(FileNotFoundError) as info:
        call(path, good)
    if name.endswith("model") and name != "load_test_data_set model":
        assert "as ModelProto" in str(info.value)
    _check(info, FileNotFoundError, errno.ENOENT, path,
           "no such folder" if folder else "no such file or folder")


@pytest.mark.parametrize(("name", "call", "folder"),
                         [r for r in READERS if not r[2] and "run_" not in r[0]
                          and "make_" not in r[0]],
                         ids=[r[0] for r in READERS if not r[2] and "run_" not in r[0]
                              and "make_" not in r[0]])
def test_a_folder_where_a_file_is_read_is_one_error(
    good: Path, tmp_path: Path, name: str, call: Callable[[Path, Path], Any], folder: bool
) -> None:
    path = tmp_path / "folder"
    path.mkdir()
    (path / "x").write_bytes(b"")
    with pytest.raises(IsADirectoryError) as info:
        call(path, good)
    _check(info, IsADirectoryError, errno.EISDIR, path, "a folder, not a file")


@pytest.mark.parametrize(("name", "call", "folder"), READERS, ids=[r[0] for r in READERS])
def test_a_file_in_the_path_is_one_error(
    good: Path, tmp_path: Path, name: str, call: Callable[[Path, Path], Any], folder: bool
) -> None:
    (tmp_path / "a.pb").write_bytes(b"")
    path = tmp_path / "a.pb" / "x"
    with pytest.raises(NotADirectoryError) as info:
        call(path, good)
    _check(info, NotADirectoryError, errno.ENOTDIR, path,
           "a part of the path is a file, not a folder")


def test_a_file_where_a_test_data_set_folder_is_wanted(tmp_path: Path) -> None:
    path = tmp_path / "a.pb"
    onnxdata.save(MESSAGE, path)
    with pytest.raises(NotADirectoryError) as info:
        onnxdata.cases.load_test_data_set(path)
    _check(info, NotADirectoryError, errno.ENOTDIR, path, "a file, not a folder")
    assert str(info.value) == f"cannot read {path} as a test data set: a file, not a folder"


@pytest.fixture
def denied(monkeypatch: pytest.MonkeyPatch) -> Callable[[Path], None]:
    """Make opening one path fail as it does for a file of mode 000 (the suite may run as
    root, which opens anything)."""
    real_open = os.open
    monkeypatch.setattr(onnxdata.wire.source, "_SMALL_FILE", None)  # (opens in C)

    def deny(path: Path) -> None:
        def opener(name: Any, *args: Any, **kwargs: Any) -> int:
            if os.fspath(name) == os.fspath(path) or (
                    kwargs.get("dir_fd") is not None and os.fspath(name) == path.name):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), name)
            return real_open(name, *args, **kwargs)
        monkeypatch.setattr(os, "open", opener)
    return deny


@pytest.mark.parametrize(("name", "call", "folder"),
                         [r for r in READERS if not r[2] and "run_" not in r[0]
                          and "make_" not in r[0]],
                         ids=[r[0] for r in READERS if not r[2] and "run_" not in r[0]
                              and "make_" not in r[0]])
def test_a_file_that_may_not_be_read_is_one_error(
    good: Path, tmp_path: Path, denied: Callable[[Path], None], name: str,
    call: Callable[[Path, Path], Any], folder: bool
) -> None:
    path = good / "model.onnx" if "model" in name else good / "test_data_set_0" / "input_0.pb"
    denied(path)
    with pytest.raises(PermissionError) as info:
        call(path, good)
    _check(info, PermissionError, errno.EACCES, path, "permission denied")


def test_a_test_data_set_that_may_not_be_read_is_one_error(
    good: Path, denied: Callable[[Path], None]
) -> None:
    folder = good / "test_data_set_0"
    denied(folder)
    with pytest.raises(PermissionError) as info:
        onnxdata.cases.load_test_data_set(folder)
    _check(info, PermissionError, errno.EACCES, folder, "permission denied")
    denied(folder / "input_0.pb")
    with pytest.raises(PermissionError) as info:
        onnxdata.cases.load_test_data_set(folder)
    _check(info, PermissionError, errno.EACCES, folder / "input_0.pb", "permission denied")


@pytest.mark.parametrize(("name", "call"), SAVERS, ids=[s[0] for s in SAVERS])
def test_saving_where_no_folder_or_a_file_is_one_error(
    tmp_path: Path, name: str, call: Callable[[Path], Any]
) -> None:
    (tmp_path / "a.pb").write_bytes(b"")
    for path, cls, code, words in (
            (tmp_path / "a.pb" / "x", NotADirectoryError, errno.ENOTDIR,
             "a part of the path is a file, not a folder"),
            *([] if name == "save_test_data_set" else [  # (it makes the folders it needs)
                (tmp_path / "nodir" / "x", FileNotFoundError, errno.ENOENT,
                 f"no such folder ({tmp_path / 'nodir'})")])):
        with pytest.raises(cls) as info:
            call(path)
        error = info.value
        assert isinstance(error, PathError) and not isinstance(error, onnxdata.DecodeError)
        assert error.errno == code and error.filename == os.fspath(path)
        assert str(error) == f"cannot save to {path}: {words}"


def test_saving_over_a_folder_is_one_error(tmp_path: Path) -> None:
    for _, call in SAVERS[:2]:
        with pytest.raises(IsADirectoryError) as info:
            call(tmp_path)
        assert isinstance(info.value, onnxdata.OnnxDataError)
        assert str(info.value) == (f"cannot save to {tmp_path}: a folder, not a file; it was "
                                   "left as it is")


def test_a_path_error_survives_a_pickle() -> None:
    """A worker process's error comes back as it was: class, words, errno, path, kind."""
    error = path_error(FileNotFoundError(errno.ENOENT, "No such file or directory"), "m.onnx",
                       kind="ModelProto")
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is type(error) and str(again) == str(error)
    assert isinstance(again, FileNotFoundError) and isinstance(again, onnxdata.DecodeError)
    assert (again.errno, again.filename, again.kind, again.source) == (
        errno.ENOENT, "m.onnx", "ModelProto", "m.onnx")
    assert str(error) == "cannot read m.onnx as ModelProto: no such file or folder"


def test_the_cli_says_a_denied_file_in_one_line(
    good: Path, denied: Callable[[Path], None], capsys: pytest.CaptureFixture[str]
) -> None:
    path = good / "test_data_set_0" / "input_0.pb"
    denied(path)
    for command in ("show", "validate", "explore"):
        assert main([command, str(path)]) == 2
        err = capsys.readouterr().err
        assert err == f"onnxdata: cannot read {path}: permission denied\n", (command, err)


def test_the_cli_says_a_file_in_the_path_in_the_librarys_words(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.pb").write_bytes(b"")
    path = tmp_path / "a.pb" / "x.pb"
    for command in ("show", "validate", "explore"):
        assert main([command, str(path)]) == 2
        err = capsys.readouterr().err
        assert err == f"onnxdata: {path}: a part of the path is a file, not a folder\n", \
            (command, err)
