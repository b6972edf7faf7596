"""``onnxdata.to_numpy`` of an invalid sequence, map or optional raises the error the
engine's walk finds (onnxdata/io/message_values.py), not the reference reader's walk of
protobuf's objects (2 s and more for 500,000 invalid elements): the same ValidationError,
problem for problem, as ``convert.values.to_numpy`` (which raises validate's), also past
the capped list, with elements alike and unlike, nested, and with hypothesis messages
made invalid.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onnxdata
from onnxdata.convert import values as convert
from onnxdata.io import message_values
from onnxdata.strategies import messages
from tests.engine.test_layout_values import f32, ld, tensor, vint


def _error(fn: Any, message: Any) -> str:
    with pytest.raises(onnxdata.ValidationError) as got:
        fn(message)
    return str(got.value)


def _same_error(message: Any) -> str:
    ours = _error(message_values.to_numpy, message)
    assert ours == _error(convert.to_numpy_reference, message)
    return ours


CASES = {
    # 1,500 empty tensors: more problems than the list holds
    "empty-tensors": (vint(2, 1) + ld(3, b"") * 1500, "sequence"),
    "untyped-optionals": (vint(2, 5) + ld(7, b"") * 1200, "sequence"),
    "alike-and-unlike": (vint(2, 1) + (ld(3, tensor(1, [2], ld(9, f32(1))))
                                       + ld(3, tensor(1, [1], ld(9, f32(1))))
                                       + ld(3, tensor(7, [3], ld(9, bytes(16))))) * 300,
                         "sequence"),
    # 200 int64 keys, all 0
    "map-keys-again": (vint(2, 7) + ld(3, bytes(200)) + ld(5, vint(2, 1) + ld(3, tensor(
        1, [], ld(9, f32(1)))) * 200), "map"),
    "nested": (vint(2, 3) + ld(5, vint(2, 1) + ld(3, b"") * 40) * 40, "sequence"),
    "optional-of-bad-map": (vint(2, 4) + ld(6, vint(2, 99) + ld(3, bytes(5))), "optional"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_invalid_messages_give_the_references_error(name: str) -> None:
    data, kind = CASES[name]
    got = _same_error(onnxdata.load(data, kind))
    assert got.startswith("ValidationError") or "problem" in got


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["sequence", "map", "optional"]).flatmap(messages), st.data())
def test_hypothesis_messages_made_invalid(message: Any, data: st.DataObject) -> None:
    """A valid message with a byte of junk field appended (an unknown field at the root),
    or its elem_type / key_type set wrong."""
    name = message.DESCRIPTOR.name
    broken = type(message)()
    broken.CopyFrom(message)
    if name == "MapProto":
        broken.key_type = data.draw(st.sampled_from([0, 1, 9, 16]))
    else:
        broken.elem_type = data.draw(st.sampled_from([0, 6, 99]))
    try:
        onnxdata.validate(broken)
    except onnxdata.ValidationError:
        _same_error(broken)
