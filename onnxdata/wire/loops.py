"""The one switch between the compiled loops and their Python references.

The compiled loops are Cython (``_walk.pyx``: a message's fields by a schema;
``_layouts.pyx``: a sequence's elements by layout, and the byte table's counts;
``_varints.pyx``: packed varints and runs of strings; ``core/_float_rows.pyx``: show's
text of small float32 arrays), built with the package where a C compiler is at hand.
They are imported here and nowhere else, all four or none, as
protobuf's ``internal/api_implementation.py`` picks its one backend:
``ONNXDATA_PURE_PYTHON=1`` (read once, at import) or a build without them leaves every
module on its Python reference, which gives the same values, problems and errors. Every
other module asks :data:`COMPILED` or takes the loop modules from here.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Final

__all__ = ["COMPILED", "PURE_PYTHON", "float_rows_loop", "layout_loop", "varint_loop",
           "walk_loop", "which"]

#: ``ONNXDATA_PURE_PYTHON`` set to anything but "" or "0": the Python references only.
PURE_PYTHON: Final = os.environ.get("ONNXDATA_PURE_PYTHON", "") not in ("", "0")


def _load() -> tuple[ModuleType, ModuleType, ModuleType, ModuleType] | None:
    """The four compiled modules, or None where one is not built or PURE_PYTHON is set."""
    if PURE_PYTHON:
        return None
    try:
        return tuple(importlib.import_module(name)  # type: ignore[return-value]
                     for name in ("onnxdata.wire._walk", "onnxdata.wire._layouts",
                                  "onnxdata.wire._varints", "onnxdata.core._float_rows"))
    except ImportError:
        return None


_LOOPS: Final = _load()
#: Whether the compiled loops run (else every module takes its Python reference).
COMPILED: Final = _LOOPS is not None
#: ``_walk`` (``walk.scan``'s loop), ``_layouts`` and ``_varints``, or None each.
walk_loop: Final = _LOOPS[0] if _LOOPS is not None else None
layout_loop: Final = _LOOPS[1] if _LOOPS is not None else None
varint_loop: Final = _LOOPS[2] if _LOOPS is not None else None
#: ``_float_rows`` (``cli.array_text``'s float32 rows), or None.
float_rows_loop: Final = _LOOPS[3] if _LOOPS is not None else None


def which() -> str:
    """What runs, for a person: ``compiled``, or the Python references and why."""
    if COMPILED:
        return "compiled"
    return ("python (ONNXDATA_PURE_PYTHON is set)" if PURE_PYTHON
            else "python (the compiled loops are not built)")
