"""``read`` and ``to_numpy`` pause the cyclic garbage collector while they build a value
(onnxdata/io/gc_pause.py) and leave it as they found it: enabled after a value or an
error, still disabled for a caller that disabled it, enabled once the last of several
threads' calls is done. ``read`` of a file of at most ``source.SMALL`` bytes builds its
few objects without the pause."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import onnxdata
from onnxdata.engine.engine import Engine
from onnxdata.io.gc_pause import gc_paused
from tests.wire_bytes import ld, vint

# over source.SMALL: read pauses the collector for it
SEQUENCE = vint(2, 1) + ld(3, vint(2, 7) + ld(9, bytes(8))) * 5000  # INT64 scalars
BAD = vint(2, 1) + ld(3, vint(1, 2) + vint(2, 7) + ld(9, bytes(8))) * 5000  # 8 bytes for 2
SMALL_SEQUENCE = vint(2, 1) + ld(3, vint(2, 7) + ld(9, bytes(8))) * 3


@pytest.fixture(autouse=True)
def _gc_enabled_after() -> Iterator[None]:
    yield
    gc.enable()


def _entry_points(tmp_path: Path, data: bytes) -> list[object]:
    path = tmp_path / "s.pb"
    path.write_bytes(data)
    seen = []
    for call in (lambda: onnxdata.read(path, "sequence"),
                 lambda: onnxdata.to_numpy(onnxdata.load(data, "sequence"))):
        try:
            seen.append(call())
        except onnxdata.ValidationError as exc:
            seen.append(exc)
    return seen


@pytest.fixture
def inside(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether the collector was enabled at each ``Engine.run``, in order."""
    seen: list[bool] = []
    real = Engine.run

    def spy(self: Engine, kind: str) -> Any:
        seen.append(gc.isenabled())
        return real(self, kind)

    monkeypatch.setattr(Engine, "run", spy)
    return seen


@pytest.mark.parametrize("data", [SEQUENCE, BAD], ids=["value", "error"])
def test_paused_inside_and_resumed_after(data: bytes, tmp_path: Path,
                                         inside: list[bool]) -> None:
    seen = _entry_points(tmp_path, data)
    assert [isinstance(v, onnxdata.ValidationError) for v in seen] == [data is BAD] * 2
    assert inside and not any(inside) and gc.isenabled()


def test_left_disabled_for_a_caller_that_disabled_it(tmp_path: Path) -> None:
    gc.disable()
    _entry_points(tmp_path, SEQUENCE)
    assert not gc.isenabled()


def test_threads_share_one_pause() -> None:
    first_in, second_done = threading.Event(), threading.Event()
    seen = []

    def first() -> None:
        with gc_paused():
            first_in.set()
            second_done.wait(10)
            seen.append(gc.isenabled())  # the second's end did not resume it

    t = threading.Thread(target=first)
    t.start()
    first_in.wait(10)
    with gc_paused():
        seen.append(gc.isenabled())
    second_done.set()
    t.join(10)
    assert seen == [False, False] and gc.isenabled()


def test_a_small_files_value_is_built_without_the_pause(tmp_path: Path,
                                                        inside: list[bool]) -> None:
    """Pausing and resuming cost more than a few objects' collections (``source.SMALL``)."""
    from onnxdata.wire.source import SMALL

    path = tmp_path / "s.pb"
    for data in (SMALL_SEQUENCE, SEQUENCE):
        path.write_bytes(data)
        assert len(onnxdata.read(path, "sequence")) in (3, 5000)
    assert len(SMALL_SEQUENCE) <= SMALL < len(SEQUENCE)
    assert inside == [True, False] and gc.isenabled()
