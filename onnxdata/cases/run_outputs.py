"""``onnxdata run --write-outputs``: a backend's outputs written beside the inputs, safely.

Two ways, and neither deletes or replaces a file it did not write:

* in place (``fill_in``): a set that has inputs only gets ``output_K.pb``. The
  files are written, typed by the model, into a fresh hidden sibling folder,
  then each is hard-linked into the set (``link`` fails on any name already
  there, a dangling symlink included) and the sibling removed. Other files in
  the set (notes, folders) stay as they are.
* as a new case (``new_case``): ``DIR`` must not exist or be an empty folder
  (``check_case``); the case is built in a hidden sibling (``staged_folder``):
  ``model.onnx`` created through a temporary file and a link
  (``atomic_writer(replace=False)``), each set renamed in whole
  (``save_test_data_set``), then the sibling renamed to ``DIR``, which refuses a folder
  filled meanwhile; a failure (a full disk) leaves nothing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Any

from onnxdata.cases.save import save_test_data_set
from onnxdata.errors import OnnxDataError
from onnxdata.generated.onnx_ml_pb2 import ModelProto
from onnxdata.io.atomic import atomic_writer, stage_name, sweep_stale

__all__ = ["check_case", "fill_in", "new_case", "start_case"]


def fill_in(folder: Path, outputs: list[Any], model: ModelProto) -> Path:
    """Add ``output_K.pb`` for ``outputs`` to ``folder``; an existing name is refused."""
    sweep_stale(folder.parent, folder.name)
    tmp = folder.parent / stage_name(folder.name, "outputs")
    save_test_data_set(tmp, [], outputs, model=model)
    linked: list[Path] = []
    try:
        for k in range(len(outputs)):
            name = f"output_{k}.pb"
            try:
                os.link(tmp / name, folder / name, follow_symlinks=False)
            except FileExistsError as exc:
                raise OnnxDataError(f"{folder / name} appeared while writing; it is left "
                                    "as it is and no output was written") from exc
            linked.append(folder / name)
    except BaseException:
        for p in linked:  # ours: the links just made
            with contextlib.suppress(OSError):
                os.unlink(p)
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def check_case(case: Path) -> None:
    """``case`` may become a new test case folder: it is not there, or an empty folder
    (not a symlink); else OnnxDataError."""
    if not os.path.lexists(case):
        return
    if case.is_symlink() or not case.is_dir():
        raise OnnxDataError(f"{case} exists and is not a folder; --write-outputs DIR "
                            "makes a new test case folder")
    if any(True for _ in os.scandir(case)):
        raise OnnxDataError(f"{case} exists and is not empty; --write-outputs DIR makes "
                            "a new test case folder, never writing into one")


def start_case(case: Path, data: bytes | None, model: ModelProto) -> None:
    """Make ``case`` a fresh test case folder holding the model (``data``, its bytes as
    read once, or the message): refused when ``case`` has any entry (or is not a folder)."""
    try:
        os.mkdir(case)
    except FileExistsError:
        check_case(case)
    with atomic_writer(case / "model.onnx", replace=False) as f:  # refuses a planted link
        f.write(data if data is not None else model.SerializeToString())


def new_case(case: Path, folder: Path, inputs: list[Any], outputs: list[Any],
             model: ModelProto) -> Path:
    """``case``/the set's name with ``inputs`` and ``outputs`` (``start_case`` first)."""
    return save_test_data_set(case / folder.name, inputs, outputs, model=model)
