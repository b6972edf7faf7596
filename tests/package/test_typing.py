"""The generated stubs type user code: mypy --strict accepts it, and rejects a wrong field type."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
USER_CODE = ROOT / "tests" / "typing" / "user_code.py"
REVEAL = ROOT / "tests" / "typing" / "reveal.py"
REVEAL_EXPECTED = ROOT / "tests" / "typing" / "reveal.expected"


def _mypy(path: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy", reason="mypy is a development tool of the newest-runtime run")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--config-file", str(ROOT / "pyproject.toml"), str(path)],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )


@pytest.mark.slow
@pytest.mark.builds
def test_user_code_passes_mypy_strict() -> None:
    result = _mypy(USER_CODE)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
@pytest.mark.builds
def test_a_wrong_field_type_fails_mypy(tmp_path: Path) -> None:
    bad = tmp_path / "user_code_bad.py"
    text = USER_CODE.read_text()
    assert "tensor.data_type = TensorProto.FLOAT" in text
    bad.write_text(text.replace("tensor.data_type = TensorProto.FLOAT",
                                'tensor.data_type = "float"'))
    shutil.copy(USER_CODE, tmp_path / "user_code_good.py")
    result = _mypy(bad)
    assert result.returncode != 0
    assert "user_code_bad.py:13: error" in result.stdout
    assert 'Incompatible types in assignment (expression has type "str"' in result.stdout


def reveal(python: Path | str, cwd: Path, config: Path, mypy_path: Path | None = None) -> str:
    """mypy --strict's revealed types and errors for tests/typing/reveal.py, as checked in.

    ``config`` is an empty mypy config, so the user's defaults apply, not ours;
    ``mypy_path`` is where a checkout's mypy finds onnxdata.generated.
    """
    config.write_text("[mypy]\n" + (f"mypy_path = {mypy_path}\n" if mypy_path else ""))
    result = subprocess.run(
        [str(python), "-m", "mypy", "--strict", "--no-incremental", "--no-error-summary",
         "--hide-error-context", "--config-file", str(config), str(REVEAL)],
        capture_output=True, text=True, cwd=cwd, timeout=600,
    )
    lines = [line.split("reveal.py", 1)[1] for line in result.stdout.splitlines()
             if "Revealed type" in line or ": error:" in line]
    return "".join(f"reveal.py{line}\n" for line in lines)


@pytest.mark.slow
@pytest.mark.builds
def test_reveal_types_in_the_development_venv(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is a development tool of the newest-runtime run")
    typing_tree = ROOT / "build" / "typing"
    assert typing_tree.is_dir(), "build/typing is absent: make .venv/.ok makes it"
    assert reveal(sys.executable, ROOT, tmp_path / "mypy.ini",
                  typing_tree) == REVEAL_EXPECTED.read_text()
