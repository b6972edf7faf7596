"""``onnxdata.to_numpy`` of a sequence, map or optional (onnxdata/io/message_values.py: the
engine's walk of the message's bytes) gives what ``convert.to_numpy_reference`` (the reference,
through protobuf's objects) gives: the same values, dtypes, shapes, read-only flags, key
types and order, or the same error, message for message.

Over every .pb file the tests hold (the ONNX node cases, hostile files, fuzz
regressions), read as each container kind, with and without base_dir; over the cases of
test_group_values; and over hypothesis-made messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import onnxdata
from onnxdata.convert import values as convert
from onnxdata.io import message_values
from onnxdata.strategies import messages
from onnxdata.wire import loops
from tests.engine.test_layout_values import BUILT, DECLINED, f32, ld, tensor, vint
from tests.engine.test_layout_values import _spy as spy_group_values
from tests.walk_digest import value as digest

DATA = Path(__file__).parents[1] / "data"
FILES = sorted(p for p in DATA.rglob("*.pb") if p.stat().st_size < 1 << 20)
KINDS = ("sequence", "map", "optional")


def every_file_as_every_container() -> Iterator[tuple[Path, Any]]:
    """(file, message) for each file of FILES read as each of KINDS that parses."""
    for path in FILES:
        data = path.read_bytes()
        for kind in KINDS:
            try:
                yield path, onnxdata.load(data, kind)
            except onnxdata.OnnxDataError:
                continue


def _outcome(fn: Any, message: Any, **kwargs: Any) -> str:
    try:
        return json.dumps(digest(fn(message, **kwargs)))
    except onnxdata.OnnxDataError as exc:
        return f"{type(exc).__name__}: {exc}"


def _agree(message: Any, **kwargs: Any) -> str:
    ours = _outcome(message_values.to_numpy, message, **kwargs)
    assert ours == _outcome(convert.to_numpy_reference, message, **kwargs)
    return ours


@pytest.mark.slow
def test_every_test_file_as_every_container_kind() -> None:
    assert len(FILES) > 300
    read = 0
    for path, message in every_file_as_every_container():
        read += 1
        for base_dir in (None, path.parent):
            _agree(message, base_dir=base_dir)
    assert read > 300


@pytest.mark.parametrize("name", sorted(BUILT | DECLINED))
def test_grouped_cases(name: str) -> None:
    message = onnxdata.load((BUILT | DECLINED)[name], "sequence")
    for strings in ("bytes", "str"):
        assert not _agree(message, strings=strings).startswith("ValidationError")


def test_external_data_needs_base_dir(tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(f32(1.5, 2.5))
    element = tensor(1, [2], ld(13, ld(1, b"location") + ld(2, b"w.bin")), vint(14, 1))
    message = onnxdata.load(vint(2, 1) + ld(3, element) * 40, "sequence")
    assert "pass base_dir" in _agree(message)
    got = json.loads(_agree(message, base_dir=tmp_path))
    assert len(got["list"]) == 40 and all(a["readonly"] for a in got["list"])


def test_over_the_densify_budget_is_the_references_error() -> None:
    sparse = (ld(1, tensor(1, [1], ld(9, f32(1)))) + ld(2, tensor(7, [1], ld(9, bytes(8)))) +
              vint(3, 1000))
    message = onnxdata.load(vint(2, 2) + ld(4, sparse) * 40, "sequence")
    before = onnxdata.get_densify_limit()
    onnxdata.set_densify_limit(4000 * 30)
    try:
        got = _agree(message)
    finally:
        onnxdata.set_densify_limit(before)
    assert got.startswith("ValidationError") and "densify together" in got


def test_an_invalid_message_gives_validates_error() -> None:
    message = onnxdata.load(vint(2, 1) + ld(3, tensor(1, [2], ld(9, f32(1)))) * 40, "sequence")
    got = _agree(message)
    assert got.startswith("ValidationError") and "tensor_values[0].raw_data" in got


def test_decoded_arrays_are_writable_and_views_are_not() -> None:
    raw = onnxdata.to_numpy(onnxdata.load(BUILT["named-raw-tensors"], "sequence"))
    decoded = onnxdata.to_numpy(onnxdata.load(BUILT["int32-data-same"], "sequence"))
    assert not any(a.flags.writeable for a in raw)
    assert all(a.flags.writeable for a in decoded)
    decoded[0][0] = 9
    assert decoded[1].tolist() == [3, 4]  # no array is shared


def _flags(value: Any) -> list[bool]:
    """Each array's writeable flag in ``value``, depth first."""
    if isinstance(value, np.ndarray):
        return [bool(value.flags.writeable)]
    if isinstance(value, dict):
        value = list(value.values())
    return [f for v in value for f in _flags(v)] if isinstance(value, list) else []


@pytest.mark.parametrize("count", [2, 40])  # one by one, and a layout at a time (compiled)
def test_which_arrays_are_writable(count: int, tmp_path: Path) -> None:
    """The contract itself, not only agreement with the reference: decoded arrays (typed
    fields, sub-byte raw_data, densified sparse tensors, strings) are writable, each its
    own; raw_data views and external data read-only; and ``read`` of the same bytes gives
    every array read-only (the engine leaves arrays writable for to_numpy alone)."""
    (tmp_path / "w.bin").write_bytes(f32(1.5, 2.5))
    writable = {
        "int32-data": tensor(6, [2], ld(5, bytes([3, 4]))),
        "float-data": tensor(1, [2], ld(4, f32(1, 2))),
        "int4-raw": tensor(22, [3], ld(9, bytes([0x21, 7]))),
        "strings": tensor(8, [1], ld(6, b"s")),
    }
    read_only = {
        "raw": tensor(1, [2], ld(9, f32(1, 2))),
        "external": tensor(1, [2], ld(13, ld(1, b"location") + ld(2, b"w.bin")), vint(14, 1)),
    }
    for name, element in {**writable, **read_only}.items():
        data = vint(2, 1) + b"".join(ld(3, element) for _ in range(count))
        value = onnxdata.to_numpy(onnxdata.load(data, "sequence"), base_dir=tmp_path)
        assert _flags(value) == [name in writable] * count, name
        if name in writable and name != "strings":
            value[0][...] = 0
            assert value[1].any(), name  # no two elements share an array
        path = tmp_path / "s.pb"
        path.write_bytes(data)
        assert _flags(onnxdata.read(path, "sequence")) == [False] * count, name
    sparse = (ld(1, tensor(1, [1], ld(9, f32(1)))) + ld(2, tensor(7, [1], ld(9, bytes(8)))) +
              vint(3, 3))
    in_sequence = vint(2, 2) + ld(4, sparse)  # (read one by one: layout_values declines)
    for data in (vint(2, 2) + ld(4, sparse) * count, vint(2, 3) + ld(5, in_sequence) * count):
        value = onnxdata.to_numpy(onnxdata.load(data, "sequence"))
        assert _flags(value) == [True] * count


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(messages("sequence", max_depth=3))
def test_hypothesis_sequences(message: Any) -> None:
    _agree(message)


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(messages("map", max_depth=3))
def test_hypothesis_maps(message: Any) -> None:
    _agree(message)


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(messages("optional", max_depth=3))
def test_hypothesis_optionals(message: Any) -> None:
    _agree(message)


SPARSE_FLOATS = vint(2, 2) + b"".join(ld(4, ld(1, tensor(1, [1], ld(4, f32(i)))) + ld(
    2, tensor(7, [1], ld(9, bytes(8)))) + vint(3, 3)) for i in range(40))


@pytest.mark.skipif(not loops.COMPILED,
                    reason="values are built a layout at a time with the compiled walk only")
@pytest.mark.parametrize("name", ["string-keys-float-data-packed", "complex64-float-data",
                                  "double-data", "string-keys-float-data-unpacked",
                                  "sparse-float-data"])
def test_float_data_is_built_a_layout_at_a_time(name: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """to_numpy's float_data arrays are writable copies (as the reference makes them), and
    still built a group at a time: layout_values builds them, it does not decline."""
    built = spy_group_values(monkeypatch)
    data = SPARSE_FLOATS if name == "sparse-float-data" else BUILT[name]
    got = json.loads(_agree(onnxdata.load(data, "sequence")))
    assert built == [True]
    assert got["list"] and not json.dumps(got).count('"readonly": true')
