"""onnxdata's version, here so that the layers below the package's ``__init__`` can say it
(``onnxdata --version``, the record ``onnxdata make`` writes); pyproject.toml holds the same."""

VERSION = "0.1.0"
