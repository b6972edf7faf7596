"""``onnxdata.cli.args``: what every command shares; here its numeric options, each refused
as ``--rtol -1`` is: a usage error naming the option and the value, exit 2, before
anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from onnxdata.cli.main import main

NODE = Path(__file__).parents[1] / "data" / "onnx-node"
ABS = str(NODE / "test_abs")


@pytest.mark.parametrize(("argv", "said"), [
    (["run", ABS, "--rtol", "-1"], "argument --rtol: a tolerance is a number >= 0, not '-1'"),
    (["run", ABS, "--timeout", "-1"],
     "argument --timeout: a number of seconds > 0, not '-1'"),
    (["run", ABS, "--timeout", "0"], "argument --timeout: a number of seconds > 0, not '0'"),
    (["run", ABS, "--timeout", "nan"],
     "argument --timeout: a number of seconds > 0, not 'nan'"),
    (["run", ABS, "--jobs", "-1"], "argument --jobs: a whole number >= 0, not '-1'"),
    (["run", ABS, "--jobs", "1.5"], "argument --jobs: a whole number >= 0, not '1.5'"),
    (["run", ABS, "--set", "-1"], "argument --set: a whole number >= 0, not '-1'"),
    (["locate", ABS, "--timeout", "0"],
     "argument --timeout: a number of seconds > 0, not '0'"),
    (["locate", ABS, "--set", "-2"], "argument --set: a whole number >= 0, not '-2'"),
    (["locate", ABS, "--max-outputs", "0"],
     "argument --max-outputs: a whole number >= 1, not '0'"),
    (["make", ABS, "-n", "0"], "argument -n: a whole number >= 1, not '0'"),
    (["make", ABS, "--seed", "-1"], "argument --seed: a whole number >= 0, not '-1'"),
    (["make", ABS, "--length", "-1"], "argument --length: a whole number >= 0, not '-1'"),
    (["make", ABS, "--budget", "-5"], "argument --budget: a whole number >= 0, not '-5'"),
])
def test_a_numeric_option_out_of_range_is_a_usage_error(
        argv: list[str], said: str, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as info:
        main([*argv, *(["--out", str(tmp_path / "new")] if argv[0] == "make" else [])])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert said in err, err
    assert not (tmp_path / "new").exists()


def test_jobs_0_runs_in_this_process_as_its_help_says(
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
    assert main(["run", ABS, "--jobs", "0"]) == 0
    assert "pass" in capsys.readouterr().out
