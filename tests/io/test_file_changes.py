"""Reads never crash: a file truncated or rewritten by another process during ``read``,
``explore`` or ``validate`` gives ``DecodeError`` (or a value that was written), never a
signal. Each case runs in a child process, so SIGBUS shows as a death, not a pytest crash.

The race with a rewriting process runs a fixed number of tries (``ONNXDATA_RACE_TRIES``,
default 200), each of which must end in one of the allowed outcomes.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
from onnxdata.wire.source import SMALL

RACE_TRIES = int(os.environ.get("ONNXDATA_RACE_TRIES", "200"))


def write_value(value: Any, path: Path) -> None:
    """onnxdata.write, in one place (its argument order is changing)."""
    onnxdata.write(value, path)


def _value() -> list[np.ndarray[Any, Any]]:
    # 400 KB each: past a window; 2.4 MB in all: past source.WHOLE, so read a window at a time
    big = [np.full(100_000, i, np.float32) for i in range(6)]
    return big


#: The child: patch one point of the walk to truncate the file there, run one entry point,
#: print what happened. A signal kills it before it prints.
CHILD = textwrap.dedent("""
    import json, os, sys
    import onnxdata, onnxdata.wire.source as source
    path, entry, point = sys.argv[1], sys.argv[2], sys.argv[3]
    calls = {"n": 0}
    def cut():
        os.truncate(path, 100)
    if point.startswith("pread"):
        at = int(point[5:])
        real = source.Source._pread
        def pread(self, start, n):
            calls["n"] += 1
            if calls["n"] == at:
                cut()
            return real(self, start, n)
        source.Source._pread = pread
    elif point == "open":
        real_open = source.Source.of_file.__func__
        def of_file(cls, p, mode="pread"):
            src = real_open(cls, p, mode)
            cut()
            return src
        source.Source.of_file = classmethod(of_file)
    elif point == "finish":
        real_finish = source.Source.finish
        def finish(self):
            cut()
            return real_finish(self)
        source.Source.finish = finish
    try:
        if entry == "read":
            onnxdata.read(path, "sequence")
        elif entry == "read-copy":
            onnxdata.read(path, "sequence", copy=True)
        elif entry == "explore":
            onnxdata.explore(path)
        else:
            from onnxdata.cli.main import main
            code = main(["validate", path])
            print(json.dumps("exit %d" % code))
            sys.exit(0)
        print(json.dumps("ok"))
    except onnxdata.DecodeError:
        print(json.dumps("DecodeError"))
""")


def _child(*args: str, timeout: float = 60) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True,
                          text=True, timeout=timeout)
    lines = proc.stdout.strip().splitlines()
    return proc.returncode, json.loads(lines[-1]) if lines else proc.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("point", ["open", "pread3", "finish"])
@pytest.mark.parametrize("entry", ["read", "read-copy", "explore", "validate"])
def test_truncation_during_the_call_is_an_error_never_a_signal(tmp_path: Path, entry: str,
                                                               point: str) -> None:
    path = tmp_path / "seq.pb"
    write_value(_value(), path)
    code, outcome = _child(str(path), entry, point)
    assert code == 0, f"the child died (signal {-code}): {outcome}"
    if entry == "validate":  # the CLI says "cannot read" (exit 2)
        assert outcome == "exit 2", outcome
    elif entry == "read-copy":
        # the copy is the file at one instant, taken inside of_file: a cut after it (at
        # "open", at a later pread, or before finish) changes nothing the value holds
        assert outcome == "ok"
    else:
        assert outcome == "DecodeError", outcome


def _small() -> list[np.ndarray[Any, Any]]:
    """240 KB in all: under source.WHOLE, so the walk reads it whole past its first window."""
    return [np.full(10_000, i, np.float32) for i in range(6)]


def _preads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    from onnxdata.wire import source

    calls: list[tuple[int, int]] = []
    real = source.Source._pread

    def pread(self: source.Source, start: int, n: int) -> bytes:
        calls.append((start, n))
        return real(self, start, n)

    monkeypatch.setattr(source.Source, "_pread", pread)
    return calls


def test_a_small_file_is_read_by_a_window_then_whole(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The first window, then the file in one pread; every element comes from it."""
    from onnxdata.wire import source

    path = tmp_path / "seq.pb"
    write_value(_small(), path)
    calls = _preads(monkeypatch)
    value = onnxdata.read(path, "sequence")
    assert calls == [(0, source.WINDOW), (0, path.stat().st_size)]
    assert [float(v[0]) for v in value] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_a_small_file_of_one_big_tensor_is_not_read_whole(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """1.6 MB of one tensor: its head is in the first window, and the payload is read alone
    (or mapped): the file is never read whole, so no byte is read twice for it."""
    from onnxdata.wire import source

    path = tmp_path / "one.pb"
    write_value([np.arange(400_000, dtype=np.float32)], path)
    size = path.stat().st_size
    assert source.WINDOW < size <= source.WHOLE
    calls = _preads(monkeypatch)
    assert onnxdata.explore(path).readings
    assert calls[0] == (0, source.WINDOW) and (0, size) not in calls
    calls.clear()
    value = onnxdata.read(path, "sequence")  # (mapped: the payload is not read at all)
    assert calls[0] == (0, source.WINDOW) and (0, size) not in calls
    assert sum(n for _, n in calls) <= source.WINDOW + 400_000 * 4
    assert np.array_equal(value[0], np.arange(400_000, dtype=np.float32))


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["read", "explore", "validate"])
def test_a_small_file_cut_at_its_first_read_is_an_error(tmp_path: Path, entry: str) -> None:
    path = tmp_path / "seq.pb"
    write_value(_small(), path)
    code, outcome = _child(str(path), entry, "pread1")
    assert code == 0, f"the child died (signal {-code}): {outcome}"
    assert outcome == ("exit 2" if entry == "validate" else "DecodeError"), outcome


#: The reader: RACE_TRIES tries, each reading the file in copy mode, in mmap mode and
#: exploring it. Each outcome must be an allowed one (a version that was written, our
#: DecodeError, or a ValidationError for a file caught between open("wb") and write);
#: any other ends the child with the outcome. Prints the count of each outcome.
RACE_CHILD = textwrap.dedent("""
    import json, sys
    import numpy as np
    import onnxdata
    path, tries, versions = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
    seen = {}
    def one(mode):
        try:
            if mode == "explore":
                found = onnxdata.explore(path)
                assert len(found.readings) == 5, found
                return "explored"
            value = onnxdata.read(path, "sequence", copy=mode == "copy")
            assert isinstance(value, list), type(value)
            if mode == "mmap":  # the mapping's values may change under it: its shape only
                return "mapped"
            got = [float(a[0]) for a in value] + [len(value)]
            if got not in versions:
                sys.exit(json.dumps({"never written": got}))
            return "copied"
        except onnxdata.DecodeError:
            return "DecodeError"
        except onnxdata.ValidationError:  # a file caught between open("wb") and write
            return "ValidationError"
    for _ in range(tries):
        for mode in ("copy", "mmap", "explore"):
            outcome = mode + " " + one(mode)
            seen[outcome] = seen.get(outcome, 0) + 1
    print(json.dumps(seen))
""")

#: The rewriter: rewrites the file with each payload in turn until killed, as the audit's
#: rewriter did (open("wb") truncates, then one write); "ready" after the first rewrite.
REWRITER = textwrap.dedent("""
    import sys, time
    path, payloads = sys.argv[1], [open(p, "rb").read() for p in sys.argv[2:]]
    i = 0
    while True:
        with open(path, "wb") as f:
            f.write(payloads[i % len(payloads)])
        if i == 0:
            print("ready", flush=True)
        i += 1
        time.sleep(0.0005)
""")

_ALLOWED = {f"{mode} {outcome}" for mode, outcomes in (
    ("copy", ("copied", "DecodeError", "ValidationError")),
    ("mmap", ("mapped", "DecodeError", "ValidationError")),
    ("explore", ("explored", "DecodeError", "ValidationError"))) for outcome in outcomes}


@pytest.mark.slow
def test_a_rewriting_process_never_kills_a_reader(tmp_path: Path) -> None:
    path = tmp_path / "seq.pb"
    versions = []
    payloads = []
    for v, n in ((1.0, 3), (2.0, 5)):
        value = [np.full(20_000, v, np.float32) for _ in range(n)]
        versions.append([v] * n + [n])
        payload = tmp_path / f"v{n}.pb"
        write_value(value, payload)
        payloads.append(str(payload))
    path.write_bytes(Path(payloads[0]).read_bytes())
    rewriter = subprocess.Popen([sys.executable, "-c", REWRITER, str(path), *payloads],
                                stdout=subprocess.PIPE, text=True)
    try:
        assert rewriter.stdout is not None and rewriter.stdout.readline().strip() == "ready"
        # the timeout only guards against a hang: the tries take seconds
        reader = subprocess.run([sys.executable, "-c", RACE_CHILD, str(path), str(RACE_TRIES),
                                 json.dumps(versions)], capture_output=True, text=True,
                                timeout=600)
        assert rewriter.poll() is None, "the rewriter stopped before the reader was done"
    finally:
        rewriter.kill()
        rewriter.wait()
        if rewriter.stdout:
            rewriter.stdout.close()
    assert reader.returncode == 0, (f"the reader died (signal {-reader.returncode})"
                                    if reader.returncode < 0 else reader.stdout + reader.stderr)
    seen = json.loads(reader.stdout.strip().splitlines()[-1])
    assert set(seen) <= _ALLOWED, seen
    assert sum(seen.values()) == 3 * RACE_TRIES, seen


def test_copy_mode_values_do_not_change_when_the_file_is_rewritten(tmp_path: Path) -> None:
    path = tmp_path / "t.pb"
    n = SMALL // 4 + 1000  # past SMALL: mapped
    write_value(np.arange(n, dtype=np.float32), path)
    copied = onnxdata.read(path, "tensor", copy=True)
    mapped = onnxdata.read(path, "tensor")
    with open(path, "r+b") as f:  # in place, same size
        f.seek(len(path.read_bytes()) - 4 * n)
        f.write(np.zeros(n, np.float32).tobytes())
    assert copied.tolist() == list(range(n))
    assert mapped.tolist() == [0.0] * n  # the documented contract of the mapping


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to count fds")
def test_live_results_hold_at_most_one_descriptor_each(tmp_path: Path) -> None:
    path = tmp_path / "t.pb"
    write_value(np.arange(100, dtype=np.float32), path)
    gc.collect()  # descriptors of earlier tests' sources, closed now rather than meanwhile
    before = _open_fds()
    copies = [onnxdata.read(path, "tensor", copy=True) for _ in range(300)]
    gc.collect()
    assert _open_fds() <= before
    maps = [onnxdata.read(path, "tensor") for _ in range(300)]
    gc.collect()
    held = _open_fds() - before
    # Python >= 3.13 maps with trackfd=False: none; older mmap keeps one duplicate each
    assert held == 0 if sys.version_info >= (3, 13) else held <= 300
    assert len(copies) == len(maps)


@pytest.mark.parametrize("first", [False, True])
def test_a_file_cut_below_a_window_says_no_byte_is_there(tmp_path: Path, first: bool) -> None:
    """The window asked starts past the new end: the message counts 0 bytes there, not a
    negative number (a small file read whole, or a window at a time)."""
    from onnxdata.wire.source import Source

    path = tmp_path / "cut.pb"
    path.write_bytes(bytes(300_000))
    with Source.of_file(str(path)) as src:
        if not first:
            src.window(0, 10)  # the next miss reads the file whole
        os.truncate(path, 1_000)
        with pytest.raises(onnxdata.DecodeError) as caught:
            src.window(200_000, 200_010)
    message = str(caught.value)
    assert "10 bytes at 200000 asked, 0 there" in message, message


@pytest.mark.parametrize("entry", ["read", "explore"])
def test_a_small_file_rewritten_before_its_whole_read_says_it_changed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, entry: str) -> None:
    """Overwritten with zeros between the first window and the whole read: the walk meets
    bytes that are not a message, and the error says the file changed, not that its bytes
    are bad (read checks the file before it blames them)."""
    from onnxdata.wire import source

    path = tmp_path / "seq.pb"
    write_value(_small(), path)
    size = path.stat().st_size
    calls = _preads(monkeypatch)
    real = source.Source._pread

    def pread(self: source.Source, start: int, n: int) -> bytes:
        if len(calls) == 1:  # the second pread: the whole file
            with open(path, "r+b") as f:
                f.write(bytes(size))
            os.utime(path, ns=(0, 0))  # (a new mtime even on a coarse clock)
        return real(self, start, n)

    monkeypatch.setattr(source.Source, "_pread", pread)
    with pytest.raises(onnxdata.DecodeError) as caught:
        if entry == "read":
            onnxdata.read(path, "sequence")
        else:
            onnxdata.explore(path)
    assert "the file changed while reading" in str(caught.value), str(caught.value)


def test_an_unmapped_small_file_reads_each_payload_once(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the file cannot be mapped, a big payload the whole-file read holds comes from
    it (a view, or bytes copied from it), not from a second pread of its bytes."""
    import mmap

    from onnxdata.wire import source

    def no_mapping(*args: Any, **kwargs: Any) -> Any:
        raise OSError("no mmap here")

    monkeypatch.setattr(mmap, "mmap", no_mapping)
    value = [np.arange(100, dtype=np.float32), np.arange(300_000, dtype=np.float32),
             np.arange(100, dtype=np.float32)]
    path = tmp_path / "seq.pb"
    write_value(value, path)
    size = path.stat().st_size
    assert source.WINDOW < size <= source.WHOLE
    calls = _preads(monkeypatch)
    got = onnxdata.read(path, "sequence")
    assert calls == [(0, source.WINDOW), (0, size)]
    assert all(np.array_equal(a, b) for a, b in zip(got, value, strict=True))
