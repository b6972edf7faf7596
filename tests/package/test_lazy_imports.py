"""``import onnxdata`` and the pytest plugin (which pytest imports in every run where
onnxdata is installed) import no numpy, protobuf or backend; each public name is
imported from its module on first use, and is that module's object."""

from __future__ import annotations

import importlib
import subprocess
import sys
import types
from pathlib import Path

import pytest

import onnxdata
import onnxdata.cases

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "google.protobuf", "onnx", "onnxruntime", "rich", "ml_dtypes")


@pytest.mark.parametrize("statement", ["import onnxdata",
                                       "import onnxdata.pytest_plugin",
                                       "import onnxdata.cases",
                                       "from onnxdata import DecodeError, OnnxDataError"])
def test_importing_the_package_or_the_plugin_imports_nothing_heavy(statement: str) -> None:
    code = f"import sys\n{statement}\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_a_name_used_imports_its_module() -> None:
    code = ("import sys\nimport onnxdata\nonnxdata.read\n"
            "print('numpy' in sys.modules, 'onnxdata.io.read' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert done.stdout.split() == ["True", "True"]


@pytest.mark.parametrize("package", [onnxdata, onnxdata.cases])
def test_every_public_name_is_its_modules_object(package: types.ModuleType) -> None:
    where: dict[str, str] = package._WHERE
    names: list[str] = package.__all__
    for name in names:
        module = where.get(name, "onnxdata.errors")
        assert getattr(package, name) is getattr(importlib.import_module(module), name), name
    assert set(where) <= set(names)
    assert set(names) <= set(dir(package))


def test_a_sub_package_is_an_attribute_after_import_onnxdata() -> None:
    code = "import onnxdata\nprint(onnxdata.explorer.__name__, onnxdata.cases.locate.__name__)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True)
    assert done.stdout.split() == ["onnxdata.explorer", "locate"]


def test_an_unknown_name_is_an_attribute_error() -> None:
    for package in (onnxdata, onnxdata.cases):
        with pytest.raises(AttributeError, match="no_such_name"):
            getattr(package, "no_such" + "_name")  # (a name no module has)


@pytest.mark.parametrize("package", [onnxdata, onnxdata.cases])
def test_no_lazy_name_is_also_a_module_of_its_package(package: types.ModuleType) -> None:
    """Importing a module ``pkg/x.py`` sets ``pkg.x`` to that module; a lazy name ``x``
    would then be the module, not the function, for whoever imported it first."""
    folder = Path(str(package.__file__)).parent
    clashes = [n for n in package._WHERE
               if (folder / f"{n}.py").exists() or (folder / n).is_dir()]
    assert clashes == []
