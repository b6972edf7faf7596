"""ONNX's bfloat16/float8/int4/int2/e8m0 node cases on ONNX Runtime: onnxdata's verdict is the
hand-written OrtValue loop's, and every case ORT runs right passes (issue 22)."""

from __future__ import annotations

from pathlib import Path

import pytest

from onnxdata import OnnxDataError
from onnxdata.cases import run_test_data_set
from onnxdata.cases.case_run import test_data_sets
from onnxdata.cli.main import main
from tests.ortvalue_loop import ortvalue_loop

ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
pytest.importorskip("onnx", reason="the hand-written loop reads values with onnx")
ort.set_default_logger_severity(4)

CASES = sorted(p for p in (Path(__file__).parents[1] / "data" / "onnx-dtypes").iterdir()
               if p.is_dir())
# ORT's own wrong answers (the hand-written loop gets the same): none. Range of bfloat16
# gave shape [2, 1] for [2] only because both loops fed its 0-d inputs as [1]
# (np.ascontiguousarray makes a 0-d array 1-d).
ORT_WRONG: set[str] = set()


def _verdict(case: Path) -> dict[str, str]:
    try:
        got = {}
        for folder in test_data_sets(case):
            results = run_test_data_set(case / "model.onnx", folder)
            statuses = {r.status for r in results}
            got[folder.name] = "error" if "error" in statuses else \
                "fail" if "fail" in statuses else "pass"
        return got
    except OnnxDataError:
        return {"*": "cannot load"}


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_onnxdata_agrees_with_a_hand_written_ortvalue_loop(case: Path) -> None:
    hand = {k: v.split(":")[0] for k, v in ortvalue_loop(case).items()}
    ours = _verdict(case)
    assert ours == hand
    if hand == {"*": "cannot load"}:
        pytest.skip(f"ONNX Runtime {ort.__version__} cannot load {case.name}")
    assert "error" not in ours.values()  # no dtype-bridge error
    want = "fail" if case.name in ORT_WRONG else "pass"
    assert set(ours.values()) == {want}


def test_most_dtype_cases_load_on_this_ort() -> None:
    loaded = [c for c in CASES if "*" not in ortvalue_loop(c)]
    assert len(loaded) >= 50, len(loaded)  # 54 on ORT 1.32.0


@pytest.mark.parametrize("name", ["test_cast_FLOAT_to_BFLOAT16",
                                  "test_cast_FLOAT_to_FLOAT8E4M3FN",
                                  "test_cast_FLOAT8E5M2_to_FLOAT"])
def test_the_reproducers_pass(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    case = Path(__file__).parents[1] / "data" / "onnx-dtypes" / name
    assert main(["run", str(case)]) == 0
    assert capsys.readouterr().out.strip() == "test_data_set_0 output 0 'output': pass"
