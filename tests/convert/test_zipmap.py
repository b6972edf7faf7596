"""The ONNX Runtime recipe of docs/test-loop.md (the README's until the docs site) on an
skl2onnx ZipMap classifier (whose probabilities ONNX Runtime returns as a list of dicts of
Python floats), and ``as_declared`` / ``write`` on such values."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
import onnxdata.cases

RECIPE_PAGE = Path(__file__).parents[2] / "docs" / "test-loop.md"


def _recipe() -> str:
    (block,) = [b for b in re.findall(r"^```python\n(.*?)^```",
                                       RECIPE_PAGE.read_text(encoding="utf-8"), re.S | re.M)
                if "import onnxruntime" in b]
    return block


def _zipmap_case(folder: Path, labels: Any) -> list[dict[Any, float]]:
    """A tiny logistic regression on random data, converted by skl2onnx (ZipMap on, the
    default), with one test data set whose expected values are scikit-learn's own."""
    pytest.importorskip("onnxruntime", reason="the recipe runs on ONNX Runtime")
    linear_model = pytest.importorskip("sklearn.linear_model",
                                       reason="scikit-learn builds the classifier")
    skl2onnx = pytest.importorskip("skl2onnx", reason="skl2onnx converts it")
    from skl2onnx.common.data_types import FloatTensorType

    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 4)).astype(np.float32)
    y = np.asarray(labels)[rng.integers(0, 3, size=30)]
    clf = linear_model.LogisticRegression(max_iter=200).fit(x, y)
    model = skl2onnx.convert_sklearn(clf, initial_types=[("X", FloatTensorType([None, 4]))],
                                     target_opset=17)
    (folder / "model.onnx").write_bytes(model.SerializeToString())
    feed = x[:5]
    probs = [{k.item(): float(p) for k, p in zip(clf.classes_, row, strict=True)}
             for row in clf.predict_proba(feed).astype(np.float32)]
    onnxdata.cases.save_test_data_set(folder / "test_data_set_0", [feed],
                                [clf.predict(feed), probs], model=folder / "model.onnx")
    return probs


@pytest.mark.slow
@pytest.mark.parametrize("labels", [[0, 1, 2], ["cat", "dog", "日本"]],
                         ids=["int64-labels", "string-labels"])
def test_the_readme_recipe_passes_on_a_zipmap_classifier(
        labels: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _zipmap_case(tmp_path, labels)
    monkeypatch.chdir(tmp_path)
    import onnxruntime as ort

    session = ort.InferenceSession("model.onnx")
    key = "int64" if isinstance(labels[0], int) else "string"
    assert session.get_outputs()[1].type == f"seq(map({key},tensor(float)))"
    got = session.run(None, {"X": np.zeros((1, 4), np.float32)})[1]
    assert isinstance(got, list) and all(type(v) is float for v in got[0].values())
    exec(compile(_recipe(), "docs/test-loop.md (ONNX Runtime)", "exec"), {})  # raises if not close


@pytest.mark.slow
def test_without_declared_a_zipmap_output_is_a_dtype_difference(
        tmp_path: Path) -> None:
    """Why the recipe passes declared=: Python floats are float64 to numpy."""
    probs = _zipmap_case(tmp_path, [0, 1, 2])
    _, expected = onnxdata.cases.load_test_data_set(tmp_path / "test_data_set_0")
    plain = [{k: float(v) for k, v in m.items()} for m in probs]
    found = onnxdata.compare(plain, expected[1])
    assert found and "actual dtype float64, expected float32" in str(found[0])
    assert onnxdata.compare(plain, expected[1], declared="seq(map(int64,tensor(float)))") == []


def test_as_declared_makes_runtime_values_the_declared_types() -> None:
    got = onnxdata.as_declared([{"a": 0.25, "b": 0.75}], "seq(map(string, tensor(float)))")
    assert isinstance(got, list) and set(got[0]) == {"a", "b"}
    assert got[0]["a"].dtype == np.float32 and got[0]["a"].shape == ()
    assert onnxdata.as_declared([1, 2], "tensor(int32)").dtype == np.int32
    assert onnxdata.as_declared(None, "optional(tensor(float))") is None
    assert onnxdata.as_declared(0.5, "optional(tensor(float))").dtype == np.float32
    seq = onnxdata.as_declared(([1.0], [2.0, 3.0]), "seq(tensor(double))")
    assert [a.dtype for a in seq] == [np.float64, np.float64] and isinstance(seq, list)
    # numpy values are left as they are: a real mismatch is still reported
    wrong = np.zeros(2, np.int32)
    assert onnxdata.as_declared(wrong, "tensor(float)") is wrong
    assert onnxdata.compare(np.float32(0.25), np.float32(0.25), declared="tensor(float)") == []
    assert onnxdata.compare(0.25, np.float32(0.25), declared="tensor(float)") == []
    with pytest.raises(onnxdata.OnnxDataError, match=r"value\[0\]: declared map"):
        onnxdata.as_declared([[1.0]], "seq(map(string, tensor(float)))")
    with pytest.raises(AssertionError, match="float64"):  # without declared, float64 it is
        onnxdata.assert_close(0.25, np.float32(0.25))
    onnxdata.assert_close(0.25, np.float32(0.25), declared="tensor(float)")


def test_write_of_a_zipmap_output_says_which_declared_to_pass(tmp_path: Path) -> None:
    zipmap = [{"a": 0.25, "b": 0.75}]
    with pytest.raises(onnxdata.OnnxDataError,
                       match=re.escape('pass declared="seq(map(string, tensor(float)))"')):
        onnxdata.write(zipmap, tmp_path / "p.pb")
    with pytest.raises(onnxdata.OnnxDataError,
                       match=re.escape('pass declared="seq(map(int64, tensor(float)))"')):
        onnxdata.from_numpy([{0: 0.25}])
    onnxdata.write(zipmap, tmp_path / "p.pb", declared="seq(map(string, tensor(float)))")
    back = onnxdata.read(tmp_path / "p.pb", "sequence")  # one element: also an optional
    assert back[0][b"a"].dtype == np.float32
