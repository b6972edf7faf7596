"""Whole test sets (issue 23, findings 2, 8 and 15): a load under concurrent saves reads one
version or fails, concurrent saves leave nothing behind, a full disk's error names the
user's folder, and a FIFO found in a folder is refused instead of blocking forever.

``ONNXDATA_SET_RACE_LOADS`` sets the number of loads in the race (default 1,500).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from onnxdata.cases import load_test_data_set, save_test_data_set
from onnxdata.errors import DecodeError, OnnxDataError
from onnxdata.generated.onnx_ml_pb2 import ModelProto

LOADS = int(os.environ.get("ONNXDATA_SET_RACE_LOADS", "1500"))


def _model(path: Path, inputs: int = 3, outputs: int = 3) -> Path:
    model = ModelProto()
    for io, n in ((model.graph.input, inputs), (model.graph.output, outputs)):
        for i in range(n):
            vi = io.add()
            vi.name = f"v{i}"
            vi.type.tensor_type.elem_type = 7  # int64
    path.write_bytes(model.SerializeToString())
    return path


SAVER = textwrap.dedent("""
    import sys
    import numpy as np
    from onnxdata.cases import save_test_data_set
    folder, model, first, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    for v in range(first, first + count):
        vals = [np.full(256, v, np.int64)] * 3
        save_test_data_set(folder, vals, vals, model=model, overwrite=True)
""")


def _load_try(folder: Path) -> str:
    """One load while the savers replace the set: "whole" (every input and output holds
    the one version) or "failed" (our error, or a value file gone because the folder was
    replaced between listing it and opening the file). A mixed set fails the test."""
    try:
        ins, outs = load_test_data_set(folder)
    except OnnxDataError as exc:
        assert str(folder) in str(exc), exc
        return "failed"  # never a FileNotFoundError (147 in 24,000 loads did, issue 43)
    assert len(ins) == len(outs) == 3, (len(ins), len(outs))
    seen = {int(a[0]) for a in ins + outs} | {int(a[-1]) for a in ins + outs}
    assert len(seen) == 1, f"a mixed set: versions {sorted(seen)}"
    return "whole"


@pytest.mark.slow
def test_loads_under_concurrent_saves_are_never_mixed_and_saves_leave_nothing(
        tmp_path: Path) -> None:
    model = _model(tmp_path / "model.onnx")
    folder = tmp_path / "test_data_set_0"
    vals = [np.full(256, 0, np.int64)] * 3
    save_test_data_set(folder, vals, vals, model=model)
    savers = [subprocess.Popen([sys.executable, "-c", SAVER, str(folder), str(model),
                                str(1 + 100_000 * k), "100000"]) for k in range(2)]
    outcomes = []
    try:
        for _ in range(LOADS):
            outcomes.append(_load_try(folder))
    finally:
        for p in savers:
            p.terminate()
        for p in savers:
            p.wait()
    whole = outcomes.count("whole")
    # the savers replace the folder a few times per hundred loads: most loads see one whole
    assert whole > LOADS // 2, f"only {whole} whole sets in {LOADS} loads"
    # savers stopped by a signal may leave their own temporary folder; run two to the end
    for entry in tmp_path.iterdir():
        if entry.name.startswith(".test_data_set_0.onnxdata-tmp-"):
            subprocess.run(["rm", "-rf", str(entry)], check=True)
    finishing = [subprocess.Popen([sys.executable, "-c", SAVER, str(folder), str(model),
                                   str(10 ** 7 + 1000 * k), "150"]) for k in range(2)]
    assert [p.wait() for p in finishing] == [0, 0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx", "test_data_set_0"]


def _swap_under_the_reader(folder: Path, monkeypatch: pytest.MonkeyPatch, times: int) -> None:
    """The first ``times`` file reads of a load meet a save that has just swapped a new
    version of ``folder`` in and is removing the old one file by file: the file read is
    gone from the version the load opened, whose folder still exists."""
    import shutil

    from onnxdata.cases import load

    real = load._read_in
    left = [times]

    def read_in(dfd: int, path: Path) -> object:
        if left[0] > 0:
            left[0] -= 1
            aside = folder.with_name(f"{folder.name}.old{left[0]}")
            os.rename(folder, aside)  # the load holds this version open ...
            shutil.copytree(aside, folder)  # ... a save swaps a new one in ...
            os.unlink(aside / path.name)  # ... and removes the old one's files
        return real(dfd, path)

    monkeypatch.setattr(load, "_read_in", read_in)


def test_a_load_that_meets_a_resave_reads_again_then_names_the_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _model(tmp_path / "model.onnx")
    folder = tmp_path / "test_data_set_0"
    vals = [np.full(4, 7, np.int64)] * 3
    save_test_data_set(folder, vals, vals, model=model)
    _swap_under_the_reader(folder, monkeypatch, 2)
    ins, outs = load_test_data_set(folder)  # was FileNotFoundError: input_0.pb
    assert [int(a[0]) for a in ins + outs] == [7] * 6
    _swap_under_the_reader(folder, monkeypatch, 100)  # a save every time: our error
    with pytest.raises(DecodeError, match=r"the folder changed while it was read \(8 reads"
                       ) as info:
        load_test_data_set(folder)
    assert str(folder) in str(info.value)


def test_a_load_that_lists_a_version_a_save_has_emptied_reads_the_new_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    model = _model(tmp_path / "model.onnx")
    folder = tmp_path / "test_data_set_0"
    vals = [np.full(4, 7, np.int64)] * 3
    save_test_data_set(folder, vals, vals, model=model)
    real, done = os.listdir, []

    def listdir(where: object) -> list[str]:
        if isinstance(where, int) and not done:  # the load's descriptor of the folder
            done.append(1)
            aside = folder.with_name("old")
            os.rename(folder, aside)
            shutil.copytree(aside, folder)
            for f in aside.iterdir():  # the save is removing the version swapped out
                f.unlink()
        return real(where)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "listdir", listdir)
    ins, _ = load_test_data_set(folder)  # was "no input_K.pb or output_K.pb files in it"
    assert done and [int(a[0]) for a in ins] == [7] * 3


def test_a_full_disk_names_the_users_folder(tmp_path: Path) -> None:
    model = _model(tmp_path / "model.onnx", 1, 0)
    child = textwrap.dedent("""
        import resource, signal, sys
        import numpy as np
        from onnxdata.cases import save_test_data_set
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            save_test_data_set(sys.argv[1], [np.zeros(100_000, np.int64)], [], model=sys.argv[2])
        except Exception as exc:
            print(type(exc).__name__, exc)
    """)
    folder = tmp_path / "set"
    out = subprocess.run([sys.executable, "-c", child, str(folder), str(model)],
                         capture_output=True, text=True, check=True).stdout
    assert str(folder / "input_0.pb") in out, out
    assert "onnxdata-tmp" not in out, out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.onnx"]


def _fifo_load(folder: Path) -> str:
    """load_test_data_set in a child, so a hang is a timeout here, not a stuck run."""
    child = "import sys; from onnxdata import load_test_data_set as l\n" \
            "try: l(sys.argv[1])\nexcept Exception as e: print(type(e).__name__, e)"
    return subprocess.run([sys.executable, "-c", child, str(folder)], capture_output=True,
                          text=True, timeout=60, check=True).stdout


def test_a_fifo_as_a_data_file_is_refused_with_its_path(tmp_path: Path) -> None:
    _model(tmp_path / "model.onnx", 1, 0)
    folder = tmp_path / "test_data_set_0"
    folder.mkdir()
    os.mkfifo(folder / "input_0.pb")
    out = _fifo_load(folder)
    assert out.startswith("DecodeError") and "not a regular file" in out, out
    assert str(folder / "input_0.pb") in out


def test_a_fifo_as_the_model_is_refused_with_its_path(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "model.onnx")
    folder = tmp_path / "test_data_set_0"
    save_test_data_set(folder, [np.zeros(2, np.int64)], [])
    out = _fifo_load(folder)
    assert out.startswith("DecodeError") and "not a regular file" in out, out
    assert str(tmp_path / "model.onnx") in out


def test_the_model_is_read_once_for_many_files_beside_it(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    from onnxdata.model import file as model_file

    model = _model(tmp_path / "model.onnx", 3, 3)
    vals = [np.zeros(2, np.int64)] * 3
    folder = save_test_data_set(tmp_path / "test_data_set_0", vals, vals, model=model)
    walks: list[str] = []
    real = model_file._Reader.model
    compiled = model_file._compiled_types

    def counting(self: model_file._Reader) -> model_file.ModelTypes:
        walks.append(self.name)
        return real(self)

    def counting_compiled(fd: int, st: os.stat_result, name: str
                          ) -> model_file.ModelTypes | None:
        walks.append(name)
        got = compiled(fd, st, name)
        if got is None:
            walks.pop()  # the Python walk reads it, and counts
        return got

    monkeypatch.setattr(model_file._Reader, "model", counting)
    monkeypatch.setattr(model_file, "_compiled_types", counting_compiled)
    monkeypatch.setattr(model_file, "_read_before", {})
    load_test_data_set(folder)
    for i in range(3):
        model_file.declared_for(folder / f"input_{i}.pb")
    assert walks == [str(model)]
    os.utime(model, ns=(1, 1))  # changed since: read again
    load_test_data_set(folder)
    assert len(walks) == 2
    with pytest.raises(DecodeError):
        model_file.read_model_types(tmp_path)  # a folder is not a model
