"""Hostile input and failing disks: bombs under a memory cap, depth caps, declared sizes,
safe external-data paths, crash-safe writes, and every fuzz crash ever found replayed.

The bombs live in tests/data/hostile/ (made by its build.py); the fuzz crashes in
tests/data/fuzz-regressions/ (see tests/fuzz/run.py). Bugs found and reported but
not yet fixed in their modules are ``xfail(strict=True)`` here, so the fix turns
them into failures that ask for the marker to go.
"""

from __future__ import annotations

import errno
import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
from onnxdata import DecodeError, OnnxDataError, ValidationError
from onnxdata.core.messages import KIND_NAMES, SequenceProto, TensorProto

TESTS = Path(__file__).resolve().parents[1]
HOSTILE = TESTS / "data" / "hostile"
REGRESSIONS = TESTS / "data" / "fuzz-regressions"
BOMBS = sorted(HOSTILE.glob("*.pb"))
MIB = 1 << 20

sys.path.insert(0, str(TESTS / "fuzz"))
import targets as fuzz_targets  # noqa: E402


def _load_builder() -> Any:
    """tests/data/hostile/build.py, by path (``build`` is also a PyPA package's name)."""
    spec = importlib.util.spec_from_file_location("hostile_build", HOSTILE / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hostile_build = _load_builder()

# --------------------------------------------------------------------------- the corpus

def test_hostile_corpus_is_what_build_py_makes() -> None:
    made = hostile_build.bombs()
    assert sorted(made) == [p.name for p in BOMBS]
    for p in BOMBS:
        assert p.read_bytes() == made[p.name], f"{p.name} is stale: run {HOSTILE}/build.py"


# --------------------------------------------------------------------------- bombs

_CHILD = textwrap.dedent("""
    import json, resource, sys, tracemalloc
    from pathlib import Path
    import numpy as np
    import onnxdata
    from onnxdata import OnnxDataError

    KINDS = ("tensor", "sparse_tensor", "sequence", "optional", "map")

    def every_entry_point(path):
        data = path.read_bytes()
        out = {}
        for kind in KINDS:
            try:
                m = onnxdata.load(data, kind)
                onnxdata.problems(m)
                out[f"to_numpy {kind}"] = type(onnxdata.to_numpy(m)).__name__
            except OnnxDataError as exc:
                out[f"to_numpy {kind}"] = type(exc).__name__
            try:
                out[f"read {kind}"] = type(onnxdata.read(path, kind)).__name__
            except OnnxDataError as exc:
                out[f"read {kind}"] = type(exc).__name__
        for r in onnxdata.readings(data):
            if r.well_formed:
                onnxdata.byte_table(data, r)
        out["readings"] = "ok"
        return out

    warm = Path(sys.argv[2])
    warm.write_bytes(onnxdata.from_numpy([np.zeros(3, np.float32)]).SerializeToString())
    every_entry_point(warm)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    result = every_entry_point(Path(sys.argv[1]))
    traced = tracemalloc.get_traced_memory()[1]
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"rss_delta": (after - before) * 1024, "traced_peak": traced,
                      "result": result}))
""")


@pytest.mark.slow
@pytest.mark.parametrize("bomb", BOMBS, ids=[p.name for p in BOMBS])
def test_bomb_is_refused_under_50_mib(bomb: Path, tmp_path: Path) -> None:
    """Every entry point, every kind: only our errors, and < 50 MiB more peak memory.

    Measured in a fresh process twice over: the growth of the peak resident set
    (ru_maxrss, which sees protobuf's C allocations too) and tracemalloc's peak
    (Python objects and numpy buffers).
    """
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(bomb), str(tmp_path / "warm.pb")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["rss_delta"] < 50 * MIB, report
    assert report["traced_peak"] < 50 * MIB, report


def test_claimed_sizes_are_refused_before_allocating() -> None:
    """A length prefix or count far beyond the bytes present allocates nothing like it."""
    cases = {
        "raw-data-length-2pow40-8-present.pb": "tensor",
        "string-length-1e9-3-present.pb": "tensor",
        "varint-never-ends.pb": "tensor",
        "sequence-element-claim-1e9.pb": "sequence",
        "map-keys-claim-2pow40.pb": "map",
    }
    for name, kind in cases.items():
        path = HOSTILE / name
        data = path.read_bytes()
        tracemalloc.start()
        try:
            with pytest.raises(DecodeError):
                onnxdata.load(data, kind)
            with pytest.raises(DecodeError):
                onnxdata.read(path, kind)
            for r in onnxdata.readings(data):
                assert not r.valid
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 4 * MIB, (name, peak)


def test_counts_beyond_the_entries_present_are_problems_not_allocations(tmp_path: Path) -> None:
    for name, where in [("dims-2pow40-raw-8-bytes.pb", "raw_data"),
                        ("dims-2pow40-float-data-8-bytes.pb", "float_data"),
                        ("string-1e9-entries-2-present.pb", "string_data")]:
        path = HOSTILE / name
        message = onnxdata.load(path, "tensor")
        assert any(where in p.path or where in p.message for p in onnxdata.problems(message))
        with pytest.raises(ValidationError):
            onnxdata.to_numpy(message)
        with pytest.raises(ValidationError):
            onnxdata.read(path, "tensor")


def test_sparse_densify_cap_and_parts_without_densifying() -> None:
    path = HOSTILE / "sparse-dims-2pow62-one-value.pb"
    message = onnxdata.load(path, "sparse_tensor")
    assert onnxdata.problems(message) == []
    with pytest.raises(OnnxDataError, match="limit"):
        onnxdata.to_numpy(message)
    with pytest.raises(OnnxDataError, match="limit"):
        onnxdata.read(path, "sparse_tensor")
    parts = onnxdata.sparse_parts(message)
    assert parts.shape == (1 << 31, 1 << 31) and parts.values.tolist() == [1.0]
    previous = onnxdata.set_densify_limit(16)
    try:
        small = onnxdata.from_numpy(onnxdata.SparseParts(
            np.array([1.0], np.float32), np.array([0], np.int64), (5,)))
        with pytest.raises(OnnxDataError, match="limit of 16"):
            onnxdata.to_numpy(small)
    finally:
        onnxdata.set_densify_limit(previous)


# --------------------------------------------------------------------------- depth

def nested(depth: int) -> bytes:
    return hostile_build.nested_sequences(depth)


def test_depth_100_is_read_by_everyone_and_101_refused_like_protobuf(tmp_path: Path) -> None:
    ok, deep = tmp_path / "ok.pb", tmp_path / "deep.pb"
    ok.write_bytes(nested(100))
    deep.write_bytes(nested(101))
    message = onnxdata.load(ok, "sequence")
    onnxdata.validate(message)
    assert onnxdata.read(ok, "sequence") == onnxdata.to_numpy(message)
    assert next(r for r in onnxdata.readings(ok.read_bytes()) if r.kind == "SequenceProto").valid
    with pytest.raises(DecodeError):
        onnxdata.load(deep, "sequence")  # protobuf's own limit
    with pytest.raises(DecodeError, match="deeper than 100"):
        onnxdata.read(deep, "sequence")
    seq = next(r for r in onnxdata.readings(deep.read_bytes()) if r.kind == "SequenceProto")
    assert not seq.well_formed and "deeper than 100" in str(seq.misfit)


def test_depth_cap_is_settable_in_validate_readings_and_read(tmp_path: Path) -> None:
    path = tmp_path / "nested.pb"
    path.write_bytes(nested(10))
    assert onnxdata.read(path, "sequence", max_depth=10) == onnxdata.read(path, "sequence")
    # under protobuf's own limit a lower cap is a problem, as validate(max_depth=9) says
    with pytest.raises(ValidationError, match="nested deeper than 9"):
        onnxdata.read(path, "sequence", max_depth=9)
    message = onnxdata.load(nested(10), "sequence")
    onnxdata.validate(message, max_depth=10)
    with pytest.raises(ValidationError, match="nested deeper than 9"):
        onnxdata.validate(message, max_depth=9)
    seq = next(r for r in onnxdata.readings(nested(10), max_depth=5)
               if r.kind == "SequenceProto")
    assert seq.well_formed and "nested deeper than 5" in seq.problems[0].message
    assert list(seq.problems) == onnxdata.problems(message, max_depth=5)
    assert next(r for r in onnxdata.readings(nested(10), max_depth=11)
                if r.kind == "SequenceProto").valid


def test_validate_deep_onnx_free_message_without_recursion_error() -> None:
    """A message built in memory deeper than protobuf would parse: one problem, no crash."""
    root = SequenceProto(elem_type=3)
    node = root
    for _ in range(3000):
        node = node.sequence_values.add(elem_type=3)
    node.elem_type = 1
    found = onnxdata.problems(root)
    assert len(found) == 1 and "deeper than 100" in found[0].message


def test_groups_nested_deep_are_refused_by_wire_and_protobuf() -> None:
    data = (HOSTILE / "groups-nested-10000.pb").read_bytes()
    from onnxdata.wire.format import WireError, iter_fields
    with pytest.raises(WireError):
        list(iter_fields(data))
    for kind in KIND_NAMES:
        with pytest.raises(DecodeError):
            onnxdata.load(data, kind)


# --------------------------------------------------------------------------- external data

def _external_tensor(location: str) -> TensorProto:
    t = TensorProto(dims=[2], data_type=1, data_location=TensorProto.EXTERNAL)
    t.external_data.add(key="location", value=location)
    return t


@pytest.fixture
def folders(tmp_path: Path) -> Path:
    """base/ with data (8 bytes), sub/, an inside link, links out; and out/secret."""
    base, out = tmp_path / "base", tmp_path / "out"
    (base / "sub").mkdir(parents=True)
    out.mkdir()
    (base / "data").write_bytes(np.array([1, 2], np.float32).tobytes())
    (base / "sub" / "data").write_bytes(np.array([3, 4], np.float32).tobytes())
    (out / "secret").write_bytes(np.array([6, 6], np.float32).tobytes())
    os.symlink(out / "secret", base / "file-link-out")
    os.symlink(out, base / "dir-link-out")
    os.symlink("../out/secret", base / "sub-relative-link-out")
    return base


REFUSED = {
    "absolute": None,  # filled with the absolute path of out/secret
    "dotdot": "../out/secret",
    "dotdot-inside": "sub/../../out/secret",
    "backslash-dotdot": "..\\out\\secret",
    "file-symlink-out": "file-link-out",
    "dir-symlink-out": "dir-link-out/secret",
    "relative-symlink-out": "sub-relative-link-out",
    "nul": "data\0../../out/secret",
    "empty": "",
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_external_location_is_refused(case: str, folders: Path) -> None:
    """CVE-2024-27318/27319: absolute, '..', and symlinks out are refused by every reader."""
    location = REFUSED[case] or str(folders.parent / "out" / "secret")
    t = _external_tensor(location)
    assert onnxdata.problems(t, base_dir=folders), case
    with pytest.raises(OnnxDataError):
        onnxdata.to_numpy(t, base_dir=folders)
    path = folders / "t.pb"
    path.write_bytes(t.SerializeToString())
    with pytest.raises(OnnxDataError):
        onnxdata.read(path, "tensor")
    seq = SequenceProto(elem_type=1)
    seq.tensor_values.append(t)
    path.write_bytes(seq.SerializeToString())
    with pytest.raises(OnnxDataError):
        onnxdata.read(path, "sequence")


@pytest.mark.parametrize("location,expected", [("data", [1, 2]), ("sub/data", [3, 4]),
                                               ("./data", [1, 2])])
def test_external_location_inside_is_read(location: str, expected: list[float],
                                          folders: Path) -> None:
    t = _external_tensor(location)
    assert onnxdata.problems(t, base_dir=folders) == []
    assert onnxdata.to_numpy(t, base_dir=folders).tolist() == expected
    path = folders / "t.pb"
    path.write_bytes(t.SerializeToString())
    assert onnxdata.read(path, "tensor").tolist() == expected


def test_external_rules_against_onnx(folders: Path, onnx: Any) -> None:
    """onnx's own C++ check (1.23) refuses every location we refuse, where it has a rule.

    Where we differ, we are stricter or equal: onnx refuses a symlink even when it
    stays inside (we follow it and check where it lands), refuses 'a..b' as text
    (we refuse only a '..' part), and reads 'data\\0...' as 'data' (we refuse NUL).
    """
    from onnx.onnx_cpp2py_export import checker as c_checker

    def onnx_refuses(location: str) -> bool:
        try:
            os.close(c_checker._open_external_data(str(folders), location, "t", True))
        except Exception:
            return True
        return False

    for case, location in REFUSED.items():
        location = location or str(folders.parent / "out" / "secret")
        ours = bool(onnxdata.problems(_external_tensor(location), base_dir=folders))
        assert ours, case
        if case != "nul" and case != "backslash-dotdot":
            assert onnx_refuses(location), case
    assert not onnx_refuses("data") and not onnx_refuses("sub/data")


# --------------------------------------------------------------------------- crash-safe writes

OLD = np.arange(10, dtype=np.float32)
NEW = np.arange(1 << 18, dtype=np.float32)  # 1 MiB: streamed by write


def _old_file(tmp_path: Path) -> tuple[Path, bytes]:
    target = tmp_path / "value.pb"
    onnxdata.save(onnxdata.from_numpy(OLD), target)
    return target, target.read_bytes()


def _assert_untouched(target: Path, old: bytes) -> None:
    assert target.read_bytes() == old
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]


class _FailingFile:
    """Writes half of what it is given, then fails as ``error`` says."""

    def __init__(self, real: Any, error: BaseException) -> None:
        self.real, self.error = real, error

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        self.real.write(view[: max(1, len(view) // 2)])
        raise self.error

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def __enter__(self) -> _FailingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.real.close()


def _fail_writes(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    real_fdopen = os.fdopen

    def fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
        return _FailingFile(real_fdopen(fd, *args, **kwargs), error)

    monkeypatch.setattr(os, "fdopen", fdopen)


ERRORS = {
    "enospc": OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)),
    "exception": RuntimeError("failure part-way through"),
    "interrupt": KeyboardInterrupt(),
}


@pytest.mark.parametrize("named_temp", [False, True], ids=["O_TMPFILE", "named-temp"])
@pytest.mark.parametrize("error", sorted(ERRORS))
@pytest.mark.parametrize("how", ["save", "write"])
def test_failed_write_keeps_the_old_file(how: str, error: str, named_temp: bool,
                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target, old = _old_file(tmp_path)
    if named_temp:
        monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    _fail_writes(monkeypatch, ERRORS[error])
    with pytest.raises(type(ERRORS[error])):
        if how == "save":
            onnxdata.save(onnxdata.from_numpy(NEW), target)
        else:
            onnxdata.write(NEW, target)
    monkeypatch.undo()
    _assert_untouched(target, old)


@pytest.mark.parametrize("how", ["save", "write"])
def test_failing_fsync_keeps_the_old_file(how: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    target, old = _old_file(tmp_path)

    def fsync(fd: int) -> None:
        raise OSError(errno.EIO, "simulated I/O error")

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError):
        if how == "save":
            onnxdata.save(onnxdata.from_numpy(NEW), target)
        else:
            onnxdata.write([NEW, NEW], target)
    monkeypatch.undo()
    _assert_untouched(target, old)


def test_failure_while_streaming_a_later_element_keeps_the_old_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import onnxdata.io.write as fast_write

    target, old = _old_file(tmp_path)
    real = fast_write._write_payload
    calls = []

    def second_fails(f: Any, p: Any) -> None:
        calls.append(p)
        if len(calls) == 2:
            raise MemoryError("simulated, in the second payload")
        real(f, p)

    monkeypatch.setattr(fast_write, "_write_payload", second_fails)
    with pytest.raises(onnxdata.OnnxDataError, match="out of memory") as info:  # issue 10
        onnxdata.write([NEW, NEW, NEW], target)
    assert isinstance(info.value.__cause__, MemoryError)
    monkeypatch.undo()
    _assert_untouched(target, old)


_KILLED_CHILD = textwrap.dedent("""
    import os, sys, time
    import numpy as np
    import onnxdata
    import onnxdata.io.write as fast_write

    how, target = sys.argv[1], sys.argv[2]
    real_payload, real_fsync = fast_write._write_payload, os.fsync

    def stall():
        print("READY", flush=True)
        time.sleep(120)

    if how == "write-mid-payload":
        def payload(f, p):
            f.write(b"partial " * 4096)
            f.flush()
            stall()
        fast_write._write_payload = payload
    else:
        def fsync(fd):  # everything written, nothing renamed yet
            real_fsync(fd)
            stall()
        os.fsync = fsync
    value = np.arange(1 << 18, dtype=np.float32)
    if how == "save-before-rename":
        onnxdata.save(onnxdata.from_numpy(value), target)
    else:
        onnxdata.write([value, value], target)
""")


@pytest.mark.parametrize("how", ["save-before-rename", "write-before-rename",
                                 "write-mid-payload"])
def test_sigkill_mid_write_keeps_the_old_file_and_leaves_no_temp(how: str,
                                                                 tmp_path: Path) -> None:
    target, old = _old_file(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_CHILD, how, str(target)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "READY", proc.stderr.read() if proc.stderr else ""
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    _assert_untouched(target, old)


# --------------------------------------------------------------------------- fuzz crashes

REGRESSION_FILES = sorted(p for p in REGRESSIONS.iterdir() if p.is_file()
                          and p.suffix != ".md")


@pytest.mark.parametrize("path", REGRESSION_FILES, ids=[p.name for p in REGRESSION_FILES])
@pytest.mark.parametrize("harness", sorted(fuzz_targets.TARGETS))
def test_fuzz_regression(path: Path, harness: str) -> None:
    """Every input that ever crashed a harness, through every harness: only our errors,
    and no disagreement between readers (a Mismatch, an AssertionError, raised by the
    harness), and no hit on a reported bug (targets.KNOWN_BUGS: the fuzzers count those
    apart; the replay demands the fix, an xfail here says the bug is open)."""
    data = path.read_bytes()
    assert data, f"{path.name} is empty"
    from tests import wire_model

    if "refused-by-upb" in path.name and not wire_model.UPB:
        pytest.skip("this protobuf's parser takes what upb 7 refuses: upb 7 is the reference")
    assert fuzz_targets.run_one(harness, data) is None, f"{path.name} hits a known bug"


# --------------------------------------------------------------------------- bugs found

@pytest.mark.parametrize(("dims", "words"), [
    ([0, 1 << 62, 1 << 62], "are too large for a numpy array, even an empty one"),
    ([0] * 70, "70 dimensions; numpy arrays hold at most"),
    ([1] * 70, "70 dimensions; numpy arrays hold at most"),
], ids=["zero-beside-2pow124", "rank-70-zeros", "rank-70-ones"])
def test_unrepresentable_shape_raises_our_error(dims: list[int], words: str,
                                                tmp_path: Path) -> None:
    """Found by load_tensor and read: numpy's ValueError leaked from reshape. Now the
    shape is a problem of dims, which validate, to_numpy and read all report."""
    t = TensorProto(dims=dims, data_type=1)
    if 0 not in dims:
        t.raw_data = b"\0\0\0\0"
    found = onnxdata.problems(t)
    assert [p.path for p in found] == ["dims"] and words in found[0].message, found
    with pytest.raises(ValidationError) as by_message:
        onnxdata.to_numpy(t)
    assert by_message.value.problems == found
    path = tmp_path / "t.pb"
    path.write_bytes(t.SerializeToString())
    with pytest.raises(ValidationError) as by_read:
        onnxdata.read(path, "tensor")
    assert by_read.value.problems == found


OVERLONG = b"\x08" + b"\xff" * 9 + b"\x02"  # dims: a 10-byte varint, 10th byte 2


def test_protobuf_accepts_a_10_byte_varint_keeping_the_low_64_bits() -> None:
    t = onnxdata.load(OVERLONG + b"\x10\x01", "tensor")
    assert list(t.dims) == [(1 << 63) - 1]


def test_wire_reads_a_10_byte_varint_like_protobuf(tmp_path: Path) -> None:
    """Found by the wire harness: wire.read_varint refused a 10th byte over 1."""
    from onnxdata.wire.format import read_varint

    assert read_varint(OVERLONG, 1, len(OVERLONG)) == ((1 << 63) - 1, 11)
    from onnxdata.wire.field_tree import field_tree

    assert field_tree(OVERLONG + b"\x10\x01", "tensor").ok
    path = tmp_path / "t.pb"
    path.write_bytes(OVERLONG + b"\x10\x01")
    fuzz_targets.read_compare(path, "tensor")


# --------------------------------------------------------------------------- the harnesses run

@pytest.mark.slow
@pytest.mark.parametrize("harness", sorted(fuzz_targets.TARGETS))
def test_fuzz_harness_runs(harness: str, tmp_path: Path) -> None:
    """A few hundred atheris executions of each harness: it starts, is seeded, and finds
    nothing unexpected (``make fuzz`` runs them for as long as asked)."""
    pytest.importorskip("atheris", reason="atheris is installed only in .venv "
                        "(tools/requirements-dev.txt); the fuzz harnesses run there")
    env = {**os.environ, "ONNXDATA_FUZZ_WORK": str(tmp_path)}
    proc = subprocess.run([sys.executable, str(TESTS / "fuzz" / f"fuzz_{harness}.py"),
                           "--runs", "300"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert f"harness {harness}: " in proc.stdout
    assert ", 0 unexpected exceptions" in proc.stdout


def test_bug_superseded_out_of_range_data_location(tmp_path: Path) -> None:
    """Found by test_wire_differential: b'p\\x02p\\x00\\x10\\x01\\x08\\x00' (data_location 2,
    then 0; FLOAT; dims [0]). Both paths now refuse it: proto2 enums are closed, so the 2
    stays in the message as an unknown field, and read keeps it aside the same way."""
    data = b"p\x02p\x00\x10\x01\x08\x00"
    path = tmp_path / "t.pb"
    path.write_bytes(data)
    fuzz_targets.read_compare(path, "tensor")  # raises Mismatch if the two paths disagree
    want = [onnxdata.Problem("data_location", "2 is not DEFAULT (0) or EXTERNAL (1)")]
    assert onnxdata.problems(onnxdata.load(data, "tensor")) == want
    with pytest.raises(ValidationError) as info:
        onnxdata.read(path, "tensor")
    assert info.value.problems == want
