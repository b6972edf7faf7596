"""A griffe extension for the docs (mkdocs.yml): ``onnxdata.generated`` is the folder
``generated/`` mapped into the package by setuptools (pyproject's package-dir), which griffe
does not follow, so the message classes re-exported by ``onnxdata`` would be aliases to
nothing. This visits the generated stubs (``*_pb2.pyi``, whose docstrings mypy-protobuf
copies from ONNX's schema comments) as ``onnxdata.generated`` once the package is loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import griffe

ROOT = Path(__file__).resolve().parents[1]


class GeneratedModules(griffe.Extension):
    """Attach ``generated/*_pb2.pyi`` to the loaded ``onnxdata`` package."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader,
                   **kwargs: Any) -> None:
        if pkg.name != "onnxdata" or "generated" in pkg.members:
            return
        folder = ROOT / "generated"
        generated = griffe.Module("generated", filepath=folder / "__init__.py", parent=pkg)
        pkg.set_member("generated", generated)
        for stub in sorted(folder.glob("*_pb2.pyi")):
            module = griffe.visit(stub.stem, filepath=stub, code=stub.read_text("utf-8"),
                                  parent=generated, docstring_parser=loader.docstring_parser,
                                  docstring_options=loader.docstring_options,
                                  lines_collection=loader.lines_collection,
                                  modules_collection=loader.modules_collection)
            generated.set_member(stub.stem, module)
