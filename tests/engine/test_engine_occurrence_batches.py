"""A sequence of more elements than ``walk.scan`` keeps (COMPACT_PIECES, 4,194,304) is
grouped by layout a batch at a time (``fields.occurrence_batches``; engine.sequence's ``batched``),
not walked element by element in Python (16 MB of empty tensors took over 20 s).

Small cases run with the field made "not kept" and batches of a few elements: the
verdict, problems (their indices counted across batches), summaries and values are
those of the one-call grouping. One case has the real count.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
from onnxdata.engine import by_layout
from onnxdata.engine import engine as engine_module
from onnxdata.explorer.readings import reading
from onnxdata.wire import compiled, fields, loops, walk
from tests.engine.test_by_layout import CASES
from tests.wire_bytes import ld, vint

pytestmark = pytest.mark.skipif(not loops.COMPILED,
                                reason="the grouping runs with the compiled walk only")


def _not_kept(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    """Every sequence's element field found again by walking (as past COMPACT_PIECES),
    in batches of ``size``."""
    real_where = walk.Fields.where

    def where(self: walk.Fields, name: str, parent: fields.Occurrences, schema: Any) -> Any:
        got = real_where(self, name, parent, schema)
        if got is not None and got.ranges is not None and schema is walk.SEQUENCE:
            return fields.Occurrences(None, parent, walk.NUMBERS[id(schema)][name])
        return got
    monkeypatch.setattr(walk.Fields, "where", where)
    real_batches = fields.occurrence_batches
    monkeypatch.setattr(engine_module, "occurrence_batches",
                        lambda src, w: real_batches(src, w, size))


def _everything(data: bytes, tmp: Path, cap: int) -> tuple[str, Any]:
    r = reading(data, "sequence", max_problems=cap)
    path = tmp / "value.pb"
    path.write_bytes(data)
    try:
        value: Any = onnxdata.read(path, "sequence")
    except onnxdata.ValidationError as exc:
        value = str(exc)
    return json.dumps(r.as_json(), sort_keys=True), value


def same_values(a: Any, b: Any) -> bool:
    """Values equal as read: lists, dicts and arrays (dtype and contents) all the way down."""
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(same_values, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() \
            and all(same_values(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    return bool(a == b)


@pytest.mark.parametrize("size", [32, 45, 1000])  # 60 elements: 32 + 28 one by one, ...
@pytest.mark.parametrize("cap", [5, 1000])
@pytest.mark.parametrize("name", CASES)
def test_batches_give_what_one_grouping_gives(name: str, size: int, cap: int,
                                              monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    data, _ = CASES[name]
    want = _everything(data, tmp_path, cap)
    grouped: list[int] = []
    real = compiled.element_groups

    def counted(*args: Any) -> Any:
        grouped.append(1)
        return real(*args)
    monkeypatch.setattr(by_layout, "element_groups", counted)
    _not_kept(monkeypatch, size)
    got = _everything(data, tmp_path, cap)
    assert got[0] == want[0]  # verdict, problems with their indices, summaries
    assert same_values(got[1], want[1])  # the values, or the same error
    assert grouped, "no batch was grouped"


def test_millions_of_elements_are_grouped_with_their_indices(tmp_path: Path) -> None:
    """4,194,400 empty optionals without elem_type (8 MB): one problem each, counted;
    the first 1,000 kept, named by their index."""
    n = walk.COMPACT_PIECES + 96
    data = vint(2, 5) + ld(7, b"") * n
    r = reading(data, "sequence")
    *kept, more = r.problems
    assert len(kept) == 1000 and f"and {n - 1000:,} more problems" in str(more)
    assert [p.path for p in kept] == [f"optional_values[{i}].elem_type" for i in range(1000)]


def test_strings_not_kept_are_found_again_as_arrays(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    """A tensor's string_data past COMPACT_PIECES is found again a batch at a time (16 MB
    of empty strings took over 20 s to read, a Python step per string)."""
    strings = [b"x" * (i % 5) + bytes([i % 256]) * (i % 3) for i in range(3000)]
    data = vint(1, len(strings)) + vint(2, 8) + b"".join(ld(6, s) for s in strings)
    path = tmp_path / "strings.pb"
    path.write_bytes(data)
    want = onnxdata.read(path, "tensor")
    real_where = walk.Fields.where

    def where(self: walk.Fields, name: str, parent: fields.Occurrences, schema: Any) -> Any:
        got = real_where(self, name, parent, schema)
        if got is not None and name == "string_data":
            return fields.Occurrences(None, parent, walk.NUMBERS[id(schema)][name])
        return got
    monkeypatch.setattr(walk.Fields, "where", where)
    got = onnxdata.read(path, "tensor")
    assert got.dtype == object and got.tolist() == want.tolist() == strings
