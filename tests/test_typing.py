"""The generated stubs type user code: mypy --strict accepts it, and rejects a wrong field type."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
USER_CODE = ROOT / "tests" / "typing" / "user_code.py"


def _mypy(path: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy", reason="mypy is a development tool of the newest-runtime run")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         "--config-file", str(ROOT / "pyproject.toml"), str(path)],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )


def test_user_code_passes_mypy_strict() -> None:
    result = _mypy(USER_CODE)
    assert result.returncode == 0, result.stdout + result.stderr


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
