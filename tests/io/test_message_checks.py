"""``onnxdata.problems`` / ``onnxdata.validate`` of a sequence, map or optional
(onnxdata/io/message_checks.py: the engine's walk of the message's bytes) give what
``validation.problems_reference`` (the reference, through protobuf's objects) gives: the same
problems, paths and order, message for message.

Over every .pb file the tests hold, read as each container kind, with and without
base_dir and with a small cap; over the cases of test_group_values; over messages the
engine must leave to the reference; and over hypothesis-made messages.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onnxdata
from onnxdata.engine.engine import Engine
from onnxdata.io import message_checks
from onnxdata.rules import validation
from onnxdata.strategies import messages
from tests.engine.test_layout_values import BUILT, DECLINED, f32, ld, tensor, vint
from tests.io.test_message_values import KINDS, every_file_as_every_container


def _agree(message: Any, **kwargs: Any) -> list[Any]:
    ours = message_checks.problems(message, **kwargs)
    assert ours == validation.problems_reference(message, **kwargs)
    return ours


@pytest.fixture
def walked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kinds the engine walked for ``message_checks`` (not left to the reference)."""
    calls: list[str] = []
    real = Engine.run

    def spy(self: Engine, kind: str) -> Any:
        calls.append(kind)
        return real(self, kind)

    monkeypatch.setattr(Engine, "run", spy)
    return calls


@pytest.mark.slow
def test_every_test_file_as_every_container_kind() -> None:
    checked = invalid = 0
    for path, message in every_file_as_every_container():
        checked += 1
        for base_dir in (None, path.parent):
            invalid += bool(_agree(message, base_dir=base_dir))
        _agree(message, max_problems=2)
        _agree(message, max_depth=3)
    assert checked > 300 and invalid > 50


@pytest.mark.parametrize("name", sorted(BUILT | DECLINED))
def test_grouped_cases(name: str, walked: list[str]) -> None:
    assert _agree(onnxdata.load((BUILT | DECLINED)[name], "sequence")) == []
    assert walked == ["sequence"]


def test_problems_are_found_by_the_engine_and_named(walked: list[str]) -> None:
    message = onnxdata.load(vint(2, 1) + ld(3, tensor(1, [2], ld(9, f32(1)))) * 40,
                            "sequence")
    found = _agree(message)
    assert walked == ["sequence"]
    assert len(found) == 40 and found[0].path == "tensor_values[0].raw_data"
    with pytest.raises(onnxdata.ValidationError) as info:
        onnxdata.validate(message)
    assert info.value.problems == found
    capped = _agree(message, max_problems=3)
    assert len(capped) == 4 and capped[-1].message == "…and 37 more problems"


def test_big_tensors_and_tensors_are_left_to_the_reference(walked: list[str]) -> None:
    big = onnxdata.from_numpy([np.zeros(2048, np.float32)] * 3, "sequence")
    assert _agree(big) == []
    assert _agree(onnxdata.load(tensor(1, [1], ld(9, f32(1))), "tensor")) == []
    assert walked == []


def test_not_a_message_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="not an ONNX data message"):
        onnxdata.problems(b"bytes")  # type: ignore[arg-type]


@pytest.mark.slow
@settings(max_examples=350, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(KINDS).flatmap(lambda kind: messages(kind, max_depth=3)))
def test_hypothesis_containers(message: Any) -> None:
    """Sequences, maps and optionals drawn in turn (test_message_values draws the same
    messages for to_numpy, a test per kind)."""
    _agree(message)


def test_checks_of_a_file_folder(tmp_path: Path) -> None:
    """External data is checked against ``base_dir`` as the reference checks it."""
    (tmp_path / "w.bin").write_bytes(f32(1.5, 2.5))
    good = tensor(1, [2], ld(13, ld(1, b"location") + ld(2, b"w.bin")), vint(14, 1))
    bad = tensor(1, [2], ld(13, ld(1, b"location") + ld(2, b"gone.bin")), vint(14, 1))
    message = onnxdata.load(vint(2, 1) + ld(3, good) * 39 + ld(3, bad), "sequence")
    assert _agree(message) == []
    found = _agree(message, base_dir=tmp_path)
    assert [p.path for p in found] == ["tensor_values[39].external_data[0]"]
