"""The compiled loops (onnxdata.wire._varints, the varint decoder; onnxdata.wire._walk, the fields
of a message by its schema; onnxdata.wire._layouts, a sequence's elements by layout;
onnxdata.core._float_rows, show's text of small float32 arrays), built
from their Cython sources (which share onnxdata/wire/_wire.pxd; _layouts also cimports
_seen.pxd, and _walk _plain.pxd).

pyproject.toml holds everything else; setuptools reads extensions only from here.
``optional=True``: where no C compiler is at hand the build goes on without it and
onnxdata uses the pure-numpy decoder (wire/decode.py) and the Python walk (wire/walk.py), which
give the same results.
``ONNXDATA_PURE_PYTHON=1`` builds no extension at all: a pure wheel (py3-none-any),
as the Makefile's dependency wheel is, so venvs of every Python install from it.
"""

import os

from setuptools import Extension, setup

PURE = os.environ.get("ONNXDATA_PURE_PYTHON", "") not in ("", "0")

# The four extensions are compiled side by side (build_ext's parallel option): an editable
# install compiles them in place once per Python, under make's lock, so their time adds up.
setup(options={"build_ext": {"parallel": os.cpu_count() or 1}}, ext_modules=[] if PURE else [
    Extension("onnxdata.wire._varints", ["onnxdata/wire/_varints.pyx"], optional=True),
    Extension("onnxdata.wire._walk", ["onnxdata/wire/_walk.pyx"], optional=True),
    Extension("onnxdata.wire._layouts", ["onnxdata/wire/_layouts.pyx"], optional=True),
    Extension("onnxdata.core._float_rows", ["onnxdata/core/_float_rows.pyx"], optional=True),
])
