"""A file of at most ``source.WHOLE`` bytes is walked from its first window and then one pread
of it all (one of at most ``source.SMALL`` is read as one copy, not mapped); the same
file mapped and walked a window at a time (``WHOLE`` and ``SMALL`` set to 0: 64 KiB windows
and 4 KiB hops, as every bigger file is) gives the same digest: readings, explore, byte
tables, validate, read and load as every kind, errors and warnings included."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import onnxdata
from onnxdata.wire import source
from tests.conftest import CORPUS, DATA, MANIFEST
from tests.walk_digest import digest


def _built(folder: Path) -> list[Path]:
    """Files past one 64 KiB window: many small elements, a map, a merged optional."""
    out = []
    values = {"seq-20k": [np.arange(i % 7, dtype=np.int64) for i in range(20_000)],
              "map-30k": {i: np.float32(i) for i in range(30_000)}}
    for name, value in values.items():
        out.append(folder / f"{name}.pb")
        onnxdata.write(value, out[-1])
    one = folder / "one.pb"
    onnxdata.write(np.float32(2.5), one, kind="optional")
    out.append(folder / "optional-merged.pb")
    out[-1].write_bytes(one.read_bytes() * 10_000)  # merged: the last occurrence counts
    return out


FILES = [*sorted((DATA / "hostile").glob("*.pb")),
         *(CORPUS / e["path"] for e in MANIFEST[::10])]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_whole_and_windows_agree(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert path.stat().st_size <= source.WHOLE
    whole = digest(str(path))
    monkeypatch.setattr(source, "WHOLE", 0)
    monkeypatch.setattr(source, "SMALL", 0)
    assert digest(str(path)) == whole


def test_whole_and_windows_agree_past_a_window(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _built(tmp_path)
    assert all(source.WINDOW < p.stat().st_size <= source.WHOLE for p in paths)
    whole = {p.name: digest(str(p)) for p in paths}
    assert whole["optional-merged.pb"]["read[optional]"]["value"] is not None
    monkeypatch.setattr(source, "WHOLE", 0)
    monkeypatch.setattr(source, "SMALL", 0)
    assert {p.name: digest(str(p)) for p in paths} == whole


def test_payloads_of_a_file_read_whole_are_decoded_from_the_read_not_the_mapping(
        tmp_path: Path) -> None:
    path = tmp_path / "seq.pb"
    onnxdata.write([np.arange(i % 7, dtype=np.int64) for i in range(20_000)], path)
    size = path.stat().st_size
    assert source.SMALL < size <= source.WHOLE
    with source.Source.of_file(str(path), "mmap") as src:
        assert src.buffer() is not None  # mapped
        src.window(0, 16)
        held, at = src.window(size - 16, size)  # past the first window: the whole file
        assert (at, len(held)) == (0, size)
        got = src.u8(size - 100, size - 10)
        assert got.base.obj is held  # a view of the read: no page of the mapping touched
        assert got.tobytes() == path.read_bytes()[size - 100:size - 10]
