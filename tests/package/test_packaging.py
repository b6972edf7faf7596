"""The wheel: only our top-level name, the generated modules and stubs inside, and it imports;
installed alone in a clean venv, it types user code and runs the CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLEAN_VENV = os.environ.get("ONNXDATA_INSTALL_TESTS") == "1"
CLEAN_VENV_SKIP = ("builds a clean venv from the wheel (about a minute): "
                   "make test runs it (ONNXDATA_INSTALL_TESTS=1)")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        capture_output=True, text=True, timeout=600,
    )
    if result.returncode != 0:
        pytest.fail(f"pip wheel failed:\n{result.stdout}\n{result.stderr}")
    (found,) = out.glob("onnxdata-*.whl")
    return found


@pytest.mark.slow
@pytest.mark.builds
def test_wheel_has_only_our_top_level_name(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"onnxdata"}
    assert "onnx" not in tops and "generated" not in tops


@pytest.mark.slow
@pytest.mark.builds
def test_wheel_carries_generated_modules_stubs_and_py_typed(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("onnx_ml_pb2.py", "onnx_ml_pb2.pyi", "onnx_data_pb2.py", "onnx_data_pb2.pyi",
                 "__init__.py"):
        assert f"onnxdata/generated/{name}" in names
    assert "onnxdata/py.typed" in names
    assert "onnxdata/page/page.html" in names  # the template of explore --html
    assert not any(n.startswith("onnxdata/generated/") and n.endswith(".proto") for n in names)


@pytest.mark.slow
@pytest.mark.builds
def test_wheel_carries_the_compiled_varint_loop_and_its_stub(wheel: Path) -> None:
    """setup.py's optional extension (onnxdata/wire/_varints.pyx): built wherever a C compiler
    is at hand, as here, and typed for mypy by its stub."""
    if os.environ.get("ONNXDATA_PURE_PYTHON", "") not in ("", "0"):
        pytest.skip("ONNXDATA_PURE_PYTHON is set: the wheel is built pure (setup.py)")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "onnxdata/wire/_varints.pyi" in names
    assert [n for n in names if n.startswith("onnxdata/wire/_varints.") and
            n.endswith((".so", ".pyd"))], sorted(names)
    assert "onnxdata/wire/_varints.c" not in names  # Cython's output: a build product
    for name in ("_walk", "_layouts"):  # and the compiled walk (onnxdata/wire/_walk.pyx, ...)
        assert f"onnxdata/wire/{name}.pyi" in names
        assert [n for n in names if n.startswith(f"onnxdata/wire/{name}.") and
                n.endswith((".so", ".pyd"))], sorted(names)
        assert f"onnxdata/wire/{name}.c" not in names
    # nothing is left at the flat places the modules moved from
    assert not [n for n in names if n.count("/") == 1 and n.startswith("onnxdata/_")
                and not n.startswith("onnxdata/__")], \
        sorted(names)


@pytest.mark.slow
@pytest.mark.builds
def test_wheel_declares_console_script_and_runtime_dependencies(wheel: Path) -> None:
    zf = zipfile.ZipFile(wheel)
    meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
    text = zf.read(meta).decode()
    requires = [line.split(":", 1)[1].strip() for line in text.splitlines()
                if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert sorted(r.split(">")[0].split("<")[0].split("=")[0] for r in requires) == sorted(
        ["protobuf", "numpy", "ml_dtypes", "rich", "types-protobuf"]
    )
    entry = next(n for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt"))
    assert "onnxdata = onnxdata.cli.main:main" in zf.read(entry).decode()


@pytest.mark.slow
@pytest.mark.builds
def test_installed_wheel_imports_with_generated_modules(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--target", str(target), str(wheel)], check=True, timeout=300)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import onnxdata;"
        "assert onnxdata.__file__.startswith(sys.argv[1]), onnxdata.__file__;"
        "print(onnxdata.SequenceProto.DESCRIPTOR.full_name)"
    )
    out = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True,
                         text=True, check=True, env={**os.environ, "PYTHONPATH": ""})
    assert out.stdout.strip() == "onnxdata.SequenceProto"


def test_python_dash_m_runs_the_cli() -> None:
    out = subprocess.run([sys.executable, "-m", "onnxdata", "--help"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "usage: onnxdata" in out.stdout


def _pin(name: str) -> str:
    """The version tools/requirements-dev.txt pins for ``name`` (the same mypy as lint)."""
    for line in (ROOT / "tools" / "requirements-dev.txt").read_text().splitlines():
        if line.startswith(f"{name}=="):
            return line.strip()
    raise AssertionError(f"{name} is not pinned in tools/requirements-dev.txt")


@pytest.fixture(scope="module")
def clean_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding the wheel, what it depends on, and mypy: nothing else."""
    if not CLEAN_VENV:
        pytest.skip(CLEAN_VENV_SKIP)
    venv = tmp_path_factory.mktemp("clean") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    result = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                             str(wheel), _pin("mypy")],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    return venv


@pytest.mark.slow
@pytest.mark.builds
def test_clean_venv_types_user_code_as_expected(clean_venv: Path, tmp_path: Path) -> None:
    from tests.package.test_typing import REVEAL_EXPECTED, reveal

    python = clean_venv / "bin" / "python"
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"],
                            capture_output=True, text=True, check=True).stdout.lower()
    assert "onnx==" not in listed  # nothing from the development venv leaks in
    # Run from an empty folder, so the checkout's onnxdata/ is not what mypy reads.
    assert reveal(python, tmp_path, tmp_path / "mypy.ini") == REVEAL_EXPECTED.read_text()


@pytest.mark.slow
@pytest.mark.builds
def test_clean_venv_runs_the_cli(clean_venv: Path, tmp_path: Path) -> None:
    exe = clean_venv / "bin" / "onnxdata"
    sample = ROOT / "tests/data/onnx-node/test_abs/test_data_set_0/input_0.pb"
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True,
                             cwd=tmp_path, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("onnxdata ")
    out = subprocess.run([str(exe), "validate", str(sample)], capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith(f"{sample}: valid TensorProto"), out
    assert len(out.stdout.splitlines()) == 1  # piped: one record per line


@pytest.mark.slow
@pytest.mark.builds
def test_a_checkout_without_symlinks_builds_a_wheel(tmp_path: Path) -> None:
    """core.symlinks=false (Windows' default) checks symlinks out as files; nothing we
    build from may be one (generated/ is mapped by package-dir)."""
    if not CLEAN_VENV:
        pytest.skip(CLEAN_VENV_SKIP)
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "-c", "core.symlinks=false", str(ROOT), str(clone)],
                   check=True, timeout=300)
    # Pure (no extension compiled): what is checked is the generated package, not the loops.
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                             str(tmp_path / "out"), str(clone)],
                            capture_output=True, text=True, timeout=600,
                            env={**os.environ, "ONNXDATA_PURE_PYTHON": "1"})
    assert result.returncode == 0, result.stdout + result.stderr
    (built,) = (tmp_path / "out").glob("onnxdata-*.whl")
    assert "onnxdata/generated/onnx_data_pb2.pyi" in zipfile.ZipFile(built).namelist()


@pytest.mark.slow
@pytest.mark.builds
def test_the_sdist_builds_the_wheel_and_carries_no_tests(tmp_path: Path) -> None:
    if not CLEAN_VENV:
        pytest.skip(CLEAN_VENV_SKIP)
    pytest.importorskip("build", reason="the build package is a development tool")
    # From tmp_path: in ROOT, the build/ folder would shadow the build package.
    result = subprocess.run([sys.executable, "-m", "build", "--outdir", str(tmp_path / "dist"),
                             str(ROOT)], capture_output=True, text=True, timeout=900,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    (sdist,) = (tmp_path / "dist").glob("onnxdata-*.tar.gz")  # and the wheel built from it
    assert len(list((tmp_path / "dist").glob("onnxdata-*.whl"))) == 1
    with tarfile.open(sdist) as tf:
        names = [n.split("/", 1)[1] for n in tf.getnames() if "/" in n]
    assert "LICENSE" in names and "generated/onnx_data_pb2.pyi" in names
    assert "onnxdata/wire/_varints.pyx" in names and "setup.py" in names
    assert "onnxdata/wire/_walk.pyx" in names and "onnxdata/wire/_layouts.pyx" in names
    assert "onnxdata/wire/_wire.pxd" in names  # (both cimport it)
    assert "onnxdata/wire/_seen.pxd" in names  # (_layouts cimports it)
    assert "onnxdata/wire/_plain.pxd" in names  # (_walk cimports it)
    assert "onnxdata/wire/_varints.c" not in names
    assert not [n for n in names if n.startswith("tests/")]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_wheel_is_rebuilt_when_any_cython_file_changes() -> None:
    """make's wheel rule lists every .pyx and .pxd: a changed declaration file (a new inline
    helper in a .pxd, say) rebuilds the venvs' compiled loops, not only a changed .pyx."""
    database = subprocess.run(["make", "-pnq", "build"], cwd=ROOT, capture_output=True,
                              text=True, check=False).stdout
    rule = next(line for line in database.splitlines() if line.startswith("build/wheel/.ok:"))
    prerequisites = set(rule.split(":", 1)[1].split("|")[0].split())
    cython = {str(p.relative_to(ROOT)) for p in ROOT.glob("onnxdata/**/*.p[yx][xd]")}
    assert {"onnxdata/wire/_seen.pxd", "onnxdata/wire/_walk.pyx"} <= cython
    assert cython <= prerequisites
