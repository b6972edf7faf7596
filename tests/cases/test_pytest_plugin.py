"""The pytest plugin, in real pytest runs (``pytester``): ids, failures with paths, known
failures and skips from the expectations file, -k, --lf, JUnit XML and pytest-xdist."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime", reason="onnxruntime is the optional extra [ort]")
pytest_plugins = ["pytester"]
DATA = Path(__file__).parents[1] / "data"
PASSING = ["test_abs", "test_sequence_insert_at_back", "test_string_concat",
           "test_cast_FLOAT_to_FLOAT8E4M3FN"]
EXPECT = """
[[xfail]]
case = "test_dft_axis"
reason = "ORT's DFT leaves 1e-5 in the imaginary part"

[[skip]]
case = "test_string_concat"
reason = "not this time"
"""


@pytest.fixture
def cases(pytester: pytest.Pytester) -> Path:
    root = pytester.path / "cases"
    for name in PASSING:
        shutil.copytree(DATA / "onnx-node" / name, root / "node" / name)
    for name in ("test_dft", "test_dft_axis"):
        shutil.copytree(DATA / "ort-known" / name, root / "known" / name)
    (pytester.path / "expect.toml").write_text(EXPECT)
    return root


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("--onnx-cases", "cases", "--onnx-expectations", "expect.toml",
                              "-p", "no:randomly", *args)


def test_one_item_per_set_failures_with_paths_and_junit_xml(pytester: pytest.Pytester,
                                                            cases: Path) -> None:
    result = _run(pytester, "--junitxml", "out.xml", "-rs")
    result.assert_outcomes(passed=3, failed=1, xfailed=1, skipped=1)
    out = result.stdout.str()
    assert "test_dft[test_data_set_0]: fail" in out
    assert "output 0 'y': (top): 20 of 200 values differ" in out and "[0, 0, 0, 1]" in out
    assert "Traceback" not in out and "assert_allclose" not in out
    assert "not this time" in out  # the skip's reason
    suite = ET.parse(pytester.path / "out.xml").getroot()
    names = sorted(tc.get("name", "") for tc in suite.iter("testcase"))
    assert names == sorted(f"{n}[test_data_set_0]" for n in
                           [*PASSING, "test_dft", "test_dft_axis"])
    failed = [tc.get("name") for tc in suite.iter("testcase") if tc.find("failure") is not None]
    assert failed == ["test_dft[test_data_set_0]"]


def test_a_known_failure_that_passes_fails_strictly(pytester: pytest.Pytester,
                                                   cases: Path) -> None:
    (pytester.path / "expect.toml").write_text(
        '[[xfail]]\ncase = "test_abs"\nreason = "thought broken"\n')
    result = _run(pytester, "-k", "test_abs")
    result.assert_outcomes(failed=1)
    assert "XPASS(strict)" in result.stdout.str()


def test_k_and_lf_select_as_for_any_item(pytester: pytest.Pytester, cases: Path) -> None:
    _run(pytester, "-k", "sequence or dft and not axis").assert_outcomes(passed=1, failed=1)
    result = _run(pytester, "--lf")
    result.assert_outcomes(failed=1)
    assert "test_dft[test_data_set_0]" in result.stdout.str()


@pytest.mark.slow
def test_xdist_runs_the_items_on_two_workers(pytester: pytest.Pytester, cases: Path) -> None:
    pytest.importorskip("xdist")
    result = pytester.runpytest_subprocess("--onnx-cases", "cases", "--onnx-expectations",
                                           "expect.toml", "-n", "2")
    result.assert_outcomes(passed=3, failed=1, xfailed=1, skipped=1)
    assert "2 workers" in result.stdout.str()


def test_a_missing_provider_skips_with_the_reason(pytester: pytest.Pytester,
                                                  cases: Path) -> None:
    result = pytester.runpytest("--onnx-cases", "cases/node", "--onnx-providers",
                                "NoSuchExecutionProvider", "-rs")
    result.assert_outcomes(skipped=len(PASSING))
    assert "NoSuchExecutionProvider is not available" in result.stdout.str()


def test_the_reference_backend_and_against(pytester: pytest.Pytester, cases: Path) -> None:
    pytest.importorskip("onnx.reference")
    result = pytester.runpytest("--onnx-cases", "cases/node", "--onnx-backend", "reference",
                                "--onnx-against", "ort")
    result.assert_outcomes(passed=len(PASSING))


def test_without_the_option_the_plugin_collects_nothing(pytester: pytest.Pytester,
                                                        cases: Path) -> None:
    result = pytester.runpytest("cases")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
