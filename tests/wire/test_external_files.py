"""External files opened once per walk (external.OpenFiles): a file of many tensors in one
weights file is one checked open, every descriptor is closed when the walk returns, and
what is read is the file that was checked, whatever the name points to later."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest

import onnxdata
from onnxdata.wire import external
from tests.wire_bytes import ld, vint


def entry(key: str, value: str) -> bytes:
    return ld(1, key.encode()) + ld(2, value.encode())


def tensor_at(offset: int, location: str = "w.bin") -> bytes:
    entries = ld(13, entry("location", location)) + ld(13, entry("offset", str(offset))) + \
        ld(13, entry("length", "4"))
    return vint(1, 1) + vint(2, 1) + entries + vint(14, 1)


def sequence(n: int, location: str = "w.bin") -> bytes:
    return vint(2, 1) + b"".join(ld(3, tensor_at(4 * i, location)) for i in range(n))


def _weights_open(folder: Path) -> list[str]:
    """This process's descriptors open on a weights file in ``folder``."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(folder)) and target.endswith(".bin"):
            out.append(target)
    return out


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    real = external.os.open

    def counted(path: str, flags: int, *args: int) -> int:
        if str(path).endswith(".bin"):  # (os.open is every module's: the weights only)
            seen.append(path)
        return real(path, flags, *args)
    monkeypatch.setattr(external.os, "open", counted)
    return seen


def test_one_open_per_file_and_all_closed(tmp_path: Path, opens: list[str]) -> None:
    (tmp_path / "w.bin").write_bytes(struct.pack("<200f", *range(200)))
    path = tmp_path / "seq.pb"
    path.write_bytes(sequence(200))
    got = onnxdata.read(path, "sequence")
    assert [float(a[0]) for a in got] == [float(i) for i in range(200)]
    assert [Path(p).name for p in opens] == ["w.bin"]
    assert _weights_open(tmp_path) == []
    values = onnxdata.to_numpy(onnxdata.load(path, "sequence"), base_dir=tmp_path)
    assert all(np.array_equal(a, b) for a, b in zip(got, values, strict=True))
    assert _weights_open(tmp_path) == []


def test_a_name_swapped_after_the_open_is_not_followed(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """After the first tensor's read the name becomes a symlink to a file outside the
    folder: the rest are still read from the checked file, never from outside."""
    inside = tmp_path / "data"
    inside.mkdir()
    (inside / "w.bin").write_bytes(struct.pack("<40f", *range(40)))
    outside = tmp_path / "secret.bin"
    outside.write_bytes(struct.pack("<40f", *([-1.0] * 40)))
    path = inside / "seq.pb"
    path.write_bytes(sequence(40))
    real = external._pread_all
    swapped: list[bool] = []

    def then_swap(*args: object) -> memoryview:
        got = real(*args)  # type: ignore[arg-type]
        if not swapped:
            (inside / "w.bin").rename(inside / "old.bin")
            (inside / "w.bin").symlink_to(outside)
            swapped.append(True)
        return got
    monkeypatch.setattr(external, "_pread_all", then_swap)
    got = onnxdata.read(path, "sequence")
    assert swapped and [float(a[0]) for a in got] == [float(i) for i in range(40)]


def test_a_tensor_past_the_end_is_named(tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(struct.pack("<3f", 1, 2, 3))
    path = tmp_path / "seq.pb"
    path.write_bytes(sequence(5))
    with pytest.raises(onnxdata.ValidationError) as caught:
        onnxdata.read(path, "sequence")
    assert [p.path for p in caught.value.problems] == [
        "tensor_values[3].external_data[0]", "tensor_values[4].external_data[0]"]


def test_the_kept_descriptors_are_bounded(tmp_path: Path, opens: list[str]) -> None:
    for i in range(70):
        (tmp_path / f"w{i}.bin").write_bytes(struct.pack("<f", i))
    # the second 70 with packed dims: 140 layouts, so each is read, grouped or not (a
    # layout's other elements would be built from its first: layout_values)
    data = vint(2, 1) + b"".join(ld(3, tensor_at(0, f"w{i}.bin")) for i in range(70)) + \
        b"".join(ld(3, tensor_at(0, f"w{i}.bin").replace(vint(1, 1), ld(1, b"\x01"), 1))
                 for i in range(70))
    path = tmp_path / "seq.pb"
    path.write_bytes(data)
    got = onnxdata.read(path, "sequence")
    assert [float(a[0]) for a in got] == [float(i) for i in range(70)] * 2
    assert len(opens) == 64 + 2 * 6  # 64 kept; the other 6 opened for each read
    assert _weights_open(tmp_path) == []


@pytest.mark.parametrize("length", [8, external._SMALL + 8])
def test_small_and_large_reads_give_the_same_read_only_bytes(tmp_path: Path,
                                                            length: int) -> None:
    """A small read is one pread into bytes, a large one the holes-aware read: the same
    bytes, read-only, and a refusal of a file that ends before them (truncated after its
    size was checked: the read itself is called)."""
    data = bytes(range(256)) * ((length + 300) // 256 + 1)
    (tmp_path / "w.bin").write_bytes(data)
    got = external.read_external(tmp_path, "w.bin", 3, length, where="t.external_data")
    assert got.readonly and bytes(got) == data[3:3 + length]
    fd = os.open(tmp_path / "w.bin", os.O_RDONLY)
    try:
        os.truncate(tmp_path / "w.bin", length // 2)
        with pytest.raises(onnxdata.ValidationError,
                           match=r"(ended after|shrank below) .* while it was being read"):
            external._pread_all(fd, 3, length, "t.external_data", "w.bin")
    finally:
        os.close(fd)
