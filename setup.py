"""The compiled varint decoder (onnxdata._varints), built from its Cython source.

pyproject.toml holds everything else; setuptools reads extensions only from here.
``optional=True``: where no C compiler is at hand the build goes on without it and
onnxdata uses the pure-numpy decoder (decode.py), which gives the same results.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("onnxdata._varints", ["onnxdata/_varints.pyx"], optional=True)])
