"""What a test case folder is (``model.onnx`` beside ``test_data_set_N``), and the one
wording of a path where none is, for ``onnxdata run``, ``onnxdata make`` and the pytest
plugin alike. Imports nothing: the plugin's process reads it at start-up."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["CASE_FOLDER", "no_case_folder"]

#: A test case folder, as every message that looks for one says it.
CASE_FOLDER = "model.onnx beside test_data_set_N"


def no_case_folder(paths: Sequence[str], *, under: bool = True) -> str:
    """Why ``paths`` (already printable) give no case to work on: none ``at or under``
    them for what searches the folders below (run, the plugin); with ``under=False``, for
    what takes the folder itself and makes its sets (make), no model.onnx in it."""
    where = ", ".join(paths)
    if under:
        return f"no case folder ({CASE_FOLDER}) at or under {where}"
    return f"no model.onnx in {where}, so no case folder ({CASE_FOLDER}) to make sets for"
