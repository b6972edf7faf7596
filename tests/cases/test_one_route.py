"""``load_test_data_set`` and ``read`` take one route from bytes to a value (the engine, via
``io.read.read_source``): the same values on every bundled file, the same refusals with the
same problems, and ``read`` without a kind walks the file's bytes once."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
from onnxdata.cases import load_test_data_set
from onnxdata.engine import engine as engine_module
from onnxdata.errors import ValidationError
from onnxdata.wire import walk

NODE = Path(__file__).resolve().parents[1] / "data" / "onnx-node"
SETS = sorted(p for p in NODE.glob("*/test_data_set_*") if p.is_dir())


def same(a: Any, b: Any, path: str = "") -> None:
    """``a`` and ``b`` are the same value: kinds, dtypes, shapes and every element (NaN
    equal to NaN), so an identical value, not a close one."""
    assert type(a) is type(b), (path, type(a), type(b))
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, (path, a.dtype, b.dtype)
        if a.dtype.kind in "fc":
            assert np.array_equal(a, b, equal_nan=True), path
        else:
            assert a.tobytes() == b.tobytes() if a.dtype != object else a.tolist() == b.tolist()
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{path}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), path
        for k in a:
            same(a[k], b[k], f"{path}[{k!r}]")
    else:
        assert a == b, path


def test_the_corpus_is_here() -> None:
    assert len(SETS) > 100


@pytest.mark.parametrize("folder", SETS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_load_test_data_set_gives_what_read_gives(folder: Path) -> None:
    inputs, outputs = load_test_data_set(folder)
    read_in = [onnxdata.read(folder / f"input_{i}.pb") for i in range(len(inputs))]
    read_out = [onnxdata.read(folder / f"output_{i}.pb") for i in range(len(outputs))]
    same(inputs, read_in)
    same(outputs, read_out)


def _bad_set(tmp_path: Path) -> Path:
    """test_abs's set with an input whose raw_data is one byte short of its dims: well-formed
    bytes of the declared kind that the engine refuses with a problem."""
    case = tmp_path / "test_abs"
    shutil.copytree(NODE / "test_abs", case)
    good = onnxdata.load(case / "test_data_set_0" / "input_0.pb", "tensor")
    good.raw_data = good.raw_data[:-1]
    (case / "test_data_set_0" / "input_0.pb").write_bytes(good.SerializeToString())
    return case / "test_data_set_0"


def test_a_file_the_engine_refuses_is_refused_by_both_with_the_same_problems(
        tmp_path: Path) -> None:
    folder = _bad_set(tmp_path)
    with pytest.raises(ValidationError) as by_read:
        onnxdata.read(folder / "input_0.pb", "tensor")
    with pytest.raises(ValidationError) as by_load:
        load_test_data_set(folder)
    got = [(p.path, p.message) for p in by_load.value.problems]
    assert got == [(p.path, p.message) for p in by_read.value.problems]
    assert got and "raw_data" in got[0][0]


def _spy_root_walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every walk of a file's bytes from its first byte to its last (``walk.scan`` of the
    whole source), by whichever module calls it; and every engine run and field tree."""
    seen: list[str] = []
    real_scan = walk.scan

    def scan(src: Any, where: Any, schema: Any, *args: Any, **kwargs: Any) -> Any:
        if where.ranges is not None and list(where.ranges)[:1] == [(0, src.size)] \
                and len(where.ranges) == 1:
            seen.append("scan")
        return real_scan(src, where, schema, *args, **kwargs)

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("onnxdata.") and \
                getattr(module, "scan", None) is real_scan:
            monkeypatch.setattr(module, "scan", scan)
    real_run = engine_module.Engine.run

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append("engine")
        return real_run(self, *args, **kwargs)

    monkeypatch.setattr(engine_module.Engine, "run", run)
    real_twin = engine_module._plain_container
    if real_twin is not None:  # the engine's compiled walk of a small container: one walk

        def twin(*args: Any) -> Any:
            seen.append("scan")
            return real_twin(*args)

        monkeypatch.setattr(engine_module, "_plain_container", twin)
    from onnxdata.explorer import readings

    real_readings = readings.readings

    def counted_readings(*args: Any, **kwargs: Any) -> Any:
        seen.append("readings")
        return real_readings(*args, **kwargs)

    monkeypatch.setattr(readings, "readings", counted_readings)
    return seen


def test_read_without_a_kind_walks_a_sequence_file_once(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    path = NODE / "test_sequence_insert_at_back" / "test_data_set_0" / "input_0.pb"
    expected = onnxdata.read(path, "sequence")
    seen = _spy_root_walks(monkeypatch)
    value = onnxdata.read(path)
    assert seen == ["engine", "scan"]
    same(value, expected)


def test_the_walk_spy_sees_walks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The spy counts: explore walks the same file once per reading."""
    path = NODE / "test_sequence_insert_at_back" / "test_data_set_0" / "input_0.pb"
    seen = _spy_root_walks(monkeypatch)
    onnxdata.readings(path.read_bytes())
    assert seen.count("scan") >= 2
