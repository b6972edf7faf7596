"""``load`` warns when the bytes parse only by setting fields aside as unknown anywhere in the
message tree, not only at the top (issue 39, item 2), and names the first place."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest

import onnxdata
from tests.wire_bytes import ld, vint

TENSOR = vint(1, 2) + vint(2, 1) + ld(9, bytes(8))  # dims [2], FLOAT, raw_data
UNKNOWN = vint(100, 1)  # field 100, which no data message has


def _warnings(source: object, kind: str) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        onnxdata.load(source, kind)  # type: ignore[call-overload]
    return [str(w.message) for w in caught
            if issubclass(w.category, onnxdata.UnknownFieldsWarning)]


def test_a_sequence_loaded_as_a_tensor_warns_of_its_segment(tmp_path: Path) -> None:
    # it gave a TensorProto with dims [115, 101, 113, ...] and a segment, silently
    path = tmp_path / "seq6.pb"
    onnxdata.write([np.arange(4, dtype=np.float32) + i for i in range(6)], path)
    (said,) = _warnings(path, "tensor")
    assert said.startswith(f"{path} parses as TensorProto only by setting fields aside as "
                           "unknown (TensorProto.Segment has no field ")
    assert " in segment at byte " in said and f"onnxdata explore {path}" in said


def test_an_unknown_field_in_an_element_warns_as_one_at_the_top() -> None:
    sequence = vint(2, 1) + ld(3, TENSOR) * 2 + ld(3, TENSOR + UNKNOWN)
    (said,) = _warnings(sequence, "sequence")
    assert "(TensorProto has no field 100 (wire type VARINT) in tensor_values[2] at byte " \
        in said
    (top,) = _warnings(TENSOR + UNKNOWN, "tensor")
    assert f"(TensorProto has no field 100 (wire type VARINT) at byte {len(TENSOR)})" in top


def test_deeper_places_are_named_too() -> None:
    inner = vint(2, 1) + ld(3, TENSOR) + ld(3, TENSOR + UNKNOWN)
    (said,) = _warnings(vint(2, 7) + ld(5, inner), "map")  # a map's values
    assert " in values.tensor_values[1] at byte " in said
    optional = vint(2, 1) + ld(3, TENSOR + ld(3, vint(1, 0) + UNKNOWN))  # in a segment
    (said,) = _warnings(optional, "optional")
    assert " in tensor_value.segment at byte " in said


def test_the_last_of_many_elements_is_found() -> None:
    n = 10_000
    sequence = vint(2, 1) + ld(3, TENSOR) * (n - 1) + ld(3, TENSOR + UNKNOWN)
    (said,) = _warnings(sequence, "sequence")
    assert f" in tensor_values[{n - 1}] at byte " in said


def test_values_without_unknown_fields_load_quietly(tmp_path: Path) -> None:
    path = tmp_path / "seq.pb"
    onnxdata.write([np.zeros(3, np.float32)] * 10_000, path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(onnxdata.load(path, "sequence").tensor_values) == 10_000
        onnxdata.load(onnxdata.serialize(onnxdata.from_numpy({1: np.zeros(2)})), "map")


@pytest.mark.parametrize("kind", ["tensor", "sequence"])
def test_a_copied_message_warns_as_its_bytes_do(kind: str) -> None:
    data = TENSOR + UNKNOWN if kind == "tensor" else vint(2, 1) + ld(3, TENSOR + UNKNOWN)
    message = onnxdata.load(data, kind)  # type: ignore[call-overload]
    assert _warnings(message, kind) == [w.replace("<bytes>", f"<{type(message).__name__}>")
                                        for w in _warnings(data, kind)]
    assert "explore FILE" in _warnings(message, kind)[0]
