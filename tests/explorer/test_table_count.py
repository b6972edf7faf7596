"""The byte table's count of the fields past its limit: the compiled count
(``compiled.count_fields``, and ``count_prefix`` a window at a time for a message
past COUNT_BYTES) gives the Python count's number, or steps aside where
the Python count raises (bad wire, nesting past 100) or meets a group, so the table and
its error are the same either way: over hypothesis-made and mutated messages of every
kind, and every hostile file the tests hold."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onnxdata.errors import OnnxDataError
from onnxdata.explorer import table
from onnxdata.explorer.readings import byte_table
from onnxdata.explorer.table import elided_count
from onnxdata.wire import compiled, loops

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
from tests.wire.test_wire_differential import message_bytes, mutated  # noqa: E402

KINDS = {"sequence": "SequenceProto", "map": "MapProto", "optional": "OptionalProto",
         "tensor": "TensorProto", "sparse_tensor": "SparseTensorProto"}
HOSTILE = sorted((TESTS / "data" / "hostile").glob("*.pb"))

pytestmark = pytest.mark.skipif(not loops.COMPILED, reason="no compiled count")


def _table(data: bytes, kind: str) -> Any:
    try:
        rows = byte_table(data, kind, limit=1)
    except OnnxDataError as exc:
        return f"{type(exc).__name__}: {exc}"
    return [(row.offset, row.field, elided_count(row)) for row in rows]


def _agree(data: bytes, kind: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The table with the compiled count, whole and (as for a message past COUNT_BYTES) a
    window of a few bytes at a time (``count_prefix``), is the Python count's."""
    whole = _table(data, kind)
    with monkeypatch.context() as m:
        m.setattr(table, "count_fields", lambda *args: None)
        m.setattr(table, "count_prefix", lambda *args: None)
        assert _table(data, kind) == whole
    for window in (1, 7, 40):
        with monkeypatch.context() as m:
            m.setattr(compiled, "COUNT_BYTES", window)
            assert _table(data, kind) == whole, window
    return whole


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(KINDS)).flatmap(
    lambda kind: st.tuples(st.just(kind), message_bytes(KINDS[kind]) |
                           mutated(message_bytes(KINDS[kind])))))
def test_any_message(case: tuple[str, bytes]) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        _agree(case[1], case[0], monkeypatch)


@pytest.mark.parametrize("path", HOSTILE, ids=[p.name for p in HOSTILE])
def test_hostile_files(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = path.read_bytes()
    for kind in KINDS:
        _agree(data, kind, monkeypatch)


def test_counts_past_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """A chain of optionals 90 deep (each an elem_type and an optional_value, the last
    one empty): one row listed, the other 179 fields counted in one row."""
    data = b""
    for _ in range(90):
        data = b"\x10\x05" + (b"\x3a" + bytes([len(data)]) + data if len(data) < 128 else
                              b"\x3a" + bytes([len(data) & 0x7F | 0x80, len(data) >> 7]) + data)
    got = _agree(data, "optional", monkeypatch)
    assert got == [(0, "elem_type", 0), (-1, "…", 2 * 90 - 1)]
