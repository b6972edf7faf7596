"""README.md runs as written: the tour's commands and every Python snippet, in a copy of
the bundled case each one names, so a path or a name the text uses cannot go stale."""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
from pathlib import Path

import pytest

from onnxdata.cli.main import main
from tests.conftest import CORPUS

README = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
HAS_ORT = importlib.util.find_spec("onnxruntime") is not None


def _blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", README, re.S | re.M)


def _copy_case(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    case = tmp_path / "case"
    shutil.copytree(CORPUS / name, case)
    monkeypatch.chdir(case)
    return case


def _tour() -> tuple[str, list[list[str]]]:
    """The tour's case folder and its onnxdata commands, comments dropped."""
    (tour,) = [b for b in _blocks("sh") if "onnxdata explore" in b]
    (folder,) = re.findall(r"^cd (\S+)", tour, re.M)
    commands = [shlex.split(line.split("#")[0])[1:] for line in tour.splitlines()
                if line.startswith("onnxdata ")]
    return Path(folder).name, commands


def test_the_tour_runs_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    folder, commands = _tour()
    assert folder == "test_loop16_seq_none" and len(commands) >= 8
    case = _copy_case(folder, tmp_path, monkeypatch)
    for argv in commands:
        argv = [x for arg in argv for x in (sorted(str(p.relative_to(case))
                for p in case.glob(arg)) if "*" in arg else [arg])]
        argv = [str(tmp_path / "x.html") if a == "/tmp/x.html" else a for a in argv]
        if argv[0] == "run" and not HAS_ORT:
            continue
        if argv == ["--version"]:
            with pytest.raises(SystemExit) as e:
                main(argv)
            assert e.value.code == 0
            continue
        assert main(argv) == 0, (argv, capsys.readouterr())
    assert (tmp_path / "x.html").stat().st_size > 0


def test_the_python_snippets_run_as_written(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The tour's Python; the guide's examples (the ONNX Runtime recipe among them) run in
    tests/package/test_docs_examples.py."""
    (snippet,) = _blocks("python")
    (folder,) = re.findall(r"cp -r\s+tests/data/onnx-node/(\S+) /tmp/case", README)
    _copy_case(folder, tmp_path, monkeypatch)
    exec(compile(snippet, "README.md (the tour)", "exec"), {})
    assert Path("test_data_set_1/output_0.pb").read_bytes() == \
        Path("test_data_set_0/output_0.pb").read_bytes()
    assert os.path.exists("probs.pb") and os.path.exists("out.pb")


def test_the_readme_is_a_front_page() -> None:
    """At most 150 lines, pointing to the documentation site for the rest (issue 41)."""
    assert len(README.splitlines()) <= 150
    assert "make docs" in README and "site/index.html" in README
