"""Past COMPACT_PIECES a walk keeps no occurrences and no pieces; they are found again,
a batch of arrays at a time (``fields.occurrence_batches``): a merged message's occurrences for the
compiled loop (``compiled.compiled_scan``) and a number field's pieces as ``Compact``
batches (``occurrences.Rewalked``), not a Python step each (16 MB of empty tensors took over
20 s in the optional, map, tensor and sparse readings).

The small cases here are read with every field made "not kept" and batches of 3: the
readings and values must be those of the kept walk. One case has the real count.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import onnxdata
from bench import shapes
from onnxdata.explorer.readings import reading
from onnxdata.wire import fields, loops, occurrences, walk
from onnxdata.wire.format import LEN, VARINT
from onnxdata.wire.source import Source
from tests.engine.test_engine_occurrence_batches import same_values
from tests.wire_bytes import key, ld, vint

KINDS = ("sequence", "optional", "map", "tensor", "sparse_tensor")
#: Small files of the bench's shapes whose fields repeat (merged occurrences, many pieces).
SHAPES = ("empty-tensors", "optionals-no-elem-type", "optional-merged-tiny",
          "tensor-merged-packed", "tensor-merged-unpacked", "maps-int64",
          "sparse-tiny", "invalid-counts", "plain-int64-2", "float32-vectors",
          "alternating-in-one-tensor", "unknown-fields-groups", "zipmap-int64",
          "strings-empty", "strings-short", "zipmap-string", "maps-string")

#: Shapes whose only number field is their tensors' float_data packed once, which the plain
#: tensor path reads as it reads raw_data (no pieces).
NO_PIECES = ("zipmap-string", "maps-string")


class _AllOver:
    """``Fields.over`` as every field with pieces: each one found again when asked for."""

    def __get__(self, obj: Any, cls: Any) -> Any:
        return self if obj is None else set(obj.pieces)

    def __set__(self, obj: Any, value: Any) -> None:
        pass


def _not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    real_where = walk.Fields.where

    def where(self: walk.Fields, name: str, parent: fields.Occurrences, schema: Any) -> Any:
        got = real_where(self, name, parent, schema)
        if got is not None and got.ranges is not None:
            return fields.Occurrences(None, parent, walk.NUMBERS[id(schema)][name])
        return got
    monkeypatch.setattr(walk.Fields, "where", where)
    monkeypatch.setattr(walk.Fields, "over", _AllOver(), raising=False)
    monkeypatch.setattr(fields, "BATCH", 3)


def _everything(data: bytes, kind: str, tmp: Path) -> tuple[str, Any]:
    readings = {k: reading(data, k).as_json() for k in KINDS}
    path = tmp / "value.pb"
    path.write_bytes(data)
    try:
        value: Any = onnxdata.read(path, kind)
    except onnxdata.ValidationError as exc:
        value = str(exc)
    return json.dumps(readings, sort_keys=True, default=str), value


@pytest.mark.parametrize("name", SHAPES)
def test_found_again_in_batches_reads_as_kept(name: str, monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    shape = shapes.by_name(name)[0]
    data = shape(3000).data
    want = _everything(data, shape.kind, tmp_path)
    found: list[str] = []
    real_pieces, real_occurrences = fields.piece_batches, fields.occurrence_batches

    def pieces(*args: Any, **kw: Any) -> Iterator[Any]:
        found.append("pieces")
        return real_pieces(*args, **kw)

    def occurrences(*args: Any, **kw: Any) -> Iterator[Any]:
        found.append("occurrences")
        return real_occurrences(*args, **kw)
    monkeypatch.setattr(walk, "piece_batches", pieces)  # as walk calls them
    monkeypatch.setattr(walk, "occurrence_batches", occurrences)
    _not_kept(monkeypatch)
    got = _everything(data, shape.kind, tmp_path)
    assert got[0] == want[0]  # every reading: verdicts, problems, summaries
    assert same_values(got[1], want[1])  # the value, or the same error
    assert "pieces" in found or name in NO_PIECES
    if loops.COMPILED:
        assert "occurrences" in found


def _one_by_one(src: Source, parent: fields.Occurrences, number: int, want: int
                ) -> list[tuple[int, int, int]]:
    """The reference: the pieces as the walk finds them, a field at a time."""
    out = []
    for n, wt, _at, a, b in fields.fields_in(src, fields.occurrences(src, parent)):
        if n == number and wt == VARINT == want:
            out.append((VARINT, a, 0))
        elif n == number and wt in (want, LEN):
            out.append((wt, a, b))
    return out


@pytest.mark.parametrize("size", [1, 2, 5, 1000])
def test_piece_batches_are_the_pieces_in_order(size: int) -> None:
    """Packed runs (split by numpy), single varints, fixed values, another field's and
    another wire type's between them: the pieces one by one, in batches of ``size``."""
    body = b"".join([
        ld(1, bytes([3, 4])) * 7, vint(1, 9), vint(1, (1 << 64) - 1), vint(2, 5),
        ld(1, b""), key(1, 5) + b"\0\0\0\0", ld(1, bytes([0x80, 1])) * 3, vint(1, 0),
    ])
    src = Source.of_buffer(body)
    parent = fields.whole(0, len(body))
    for want in (VARINT, 5):
        got = []
        count = 0
        for batch in fields.piece_batches(src, parent, 1, want, size):
            count += 1
            got += [(int(w), int(a), int(b)) for w, a, b in
                    zip(batch.wts, batch.starts, batch.ends, strict=True)]
        assert got == _one_by_one(src, parent, 1, want)
        assert count > 1 if size < 1000 else count == 1


def test_millions_of_pieces_and_occurrences_are_read_whole(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """4,794,304 tensors ``dims: [1]`` (19 MB): as a sequence, each without a data type
    (the runs past what a walk keeps only counted, as many as there are); as a map,
    9,588,608 keys (each element's two bytes); as a sparse tensor, as many dims; as an
    optional, one tensor merged from 4,794,304 occurrences, with as many dims. Each field
    is past what a walk keeps."""
    n = walk.COMPACT_PIECES + 600_000  # past it by more than a window (RUN_BYTES)
    data = vint(2, 1) + ld(3, vint(1, 1)) * n
    counted: list[int] = []
    real_count = fields.count_strings

    def count(*args: Any) -> Any:
        got = real_count(*args)
        counted.append(got[0])
        return got
    monkeypatch.setattr(fields, "count_strings", count)
    as_sequence = reading(data, "sequence").as_json()  # each element without a data type
    assert as_sequence["problem_count"] == n, as_sequence["problems"][-1]
    assert counted, "the runs past what the walk keeps were not only counted"
    as_map = reading(data, "map").as_json()
    assert f"{2 * n} " in as_map["summary"].replace(",", ""), as_map["summary"]
    keys = walk.scan(Source.of_buffer(data), fields.whole(0, len(data)), walk.MAP)
    held = keys.pieces["keys"]  # past the limit: counted, its 68 MB of pieces let go
    assert "keys" in keys.over and isinstance(held, occurrences.Compact)
    assert len(held) == walk.COMPACT_PIECES  # (what it held: the walk counts no further)
    assert not (len(held.wts) or len(held.starts) or held.waiting)
    as_sparse = reading(data, "sparse_tensor").as_json()
    assert as_sparse["summary"].endswith(f"[8, 1, 8, 1, … ({2 * n} dims)]")
    as_optional = reading(data, "optional").as_json()
    assert as_optional["merged"] == [{"occurrences": n, "path": "tensor_value"}]
    assert as_optional["summary"].endswith(f"[1, 1, 1, 1, … ({n} dims)]"), as_optional["summary"]
