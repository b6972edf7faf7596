"""The compiled varint decoder (onnxdata._varints), built from its Cython source.

pyproject.toml holds everything else; setuptools reads extensions only from here.
``optional=True``: where no C compiler is at hand the build goes on without it and
onnxdata uses the pure-numpy decoder (decode.py), which gives the same results.
``ONNXDATA_PURE_PYTHON=1`` builds no extension at all: a pure wheel (py3-none-any),
as the Makefile's dependency wheel is, so venvs of every Python install from it.
"""

import os

from setuptools import Extension, setup

PURE = os.environ.get("ONNXDATA_PURE_PYTHON", "") not in ("", "0")

setup(ext_modules=[] if PURE else [
    Extension("onnxdata._varints", ["onnxdata/_varints.pyx"], optional=True),
])
