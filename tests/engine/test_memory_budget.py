"""One densify budget per call, and no MemoryError from any entry point (issue 10, P8)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
from onnxdata import SequenceProto, SparseParts, SparseTensorProto


def _string_bomb() -> SparseTensorProto:
    """19 bytes: a sparse STRING tensor with no values claiming 2**27 elements, which
    densify as 1 GiB of object pointers (exactly the default limit)."""
    sp = SparseTensorProto(dims=[2**27])
    sp.values.data_type = 8
    sp.values.dims.append(0)
    sp.indices.data_type = 7
    sp.indices.dims.extend([0, 1])
    return sp


def _six_bombs() -> SequenceProto:
    seq = SequenceProto(elem_type=SequenceProto.SPARSE_TENSOR)
    for _ in range(6):
        seq.sparse_tensor_values.append(_string_bomb())
    return seq


def test_the_bomb_is_as_small_as_the_issue_says() -> None:
    assert len(_string_bomb().SerializeToString()) == 19
    assert len(_six_bombs().SerializeToString()) == 128
    onnxdata.validate(_six_bombs())  # valid: only densifying it costs


def test_the_128_byte_six_sparse_bomb_is_refused_small_under_rlimit_as(
    tmp_path: Path,
) -> None:
    """6 GiB of claims (1 GiB each, each alone within the limit): ValidationError naming
    the second sparse tensor and the 6 GiB, having grown by under 50 MiB, with the address
    space capped at 4 GiB, in a child process. (How fast: bench/bench_refusals.py.)"""
    bomb = tmp_path / "bomb.pb"
    bomb.write_bytes(_six_bombs().SerializeToString())
    child = textwrap.dedent(f"""
        import resource
        import onnxdata
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        data = open({str(bomb)!r}, "rb").read()
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            onnxdata.to_numpy(onnxdata.load(data, "sequence"))
        except onnxdata.ValidationError as exc:
            message = str(exc)
        else:
            raise SystemExit("to_numpy accepted 6 GiB of densifying")
        grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        print(grown_kib, repr(message))
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    grown_kib, message = done.stdout.split(maxsplit=1)
    assert int(grown_kib) < 50 * 1024, done.stdout
    assert "sparse_tensor_values[1]" in message and "6442450944 bytes" in message


def test_the_bomb_through_read_and_the_cli_is_our_error_under_rlimit_as(tmp_path: Path) -> None:
    """read budgets every sparse tensor as it walks and densifies them only at the end, so
    the second tensor is refused having grown by under 50 MiB with nothing densified, and
    onnxdata show exits 1 with the problem, never a MemoryError traceback."""
    bomb = tmp_path / "bomb.pb"
    bomb.write_bytes(_six_bombs().SerializeToString())
    child = textwrap.dedent(f"""
        import resource, sys
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
        import onnxdata
        from onnxdata.cli.main import main
        try:
            before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            onnxdata.read({str(bomb)!r}, "sequence")
        except onnxdata.ValidationError as exc:
            assert "sparse_tensor_values[1]" in str(exc), exc
            assert "took 1073741824" in str(exc), exc
            # every sparse tensor is budgeted before any is densified: nothing was made
            grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
            assert grown_kib < 50 * 1024, grown_kib
        else:
            raise AssertionError("read accepted 6 GiB of densifying")
        sys.exit(main(["show", {str(bomb)!r}]))
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr
    assert "sparse_tensor_values[1]" in done.stdout + done.stderr


def _small_sparse(n: int) -> SparseTensorProto:
    """A float32 sparse tensor of ``n`` elements (4 n bytes dense) with one value."""
    return onnxdata.from_numpy(SparseParts(np.ones(1, np.float32), np.zeros(1, np.int64), (n,)))


@pytest.fixture
def limit_100() -> Any:
    previous = onnxdata.set_densify_limit(100)
    yield
    onnxdata.set_densify_limit(previous)


def test_the_limit_is_shared_by_every_sparse_tensor_of_a_call(tmp_path: Path,
                                                              limit_100: None) -> None:
    one = SequenceProto(elem_type=SequenceProto.SPARSE_TENSOR)
    one.sparse_tensor_values.append(_small_sparse(15))  # 60 bytes: within 100
    assert onnxdata.to_numpy(one)[0].shape == (15,)
    two = SequenceProto(elem_type=SequenceProto.SPARSE_TENSOR)
    two.sparse_tensor_values.extend([_small_sparse(15), _small_sparse(15)])  # 120 together
    with pytest.raises(onnxdata.ValidationError, match=r"sparse_tensor_values\[1\].*120 bytes"):
        onnxdata.to_numpy(two)
    onnxdata.save(two, tmp_path / "two.pb")
    with pytest.raises(onnxdata.ValidationError,
                       match=r"sparse_tensor_values\[1\].*needs 60 bytes.*took 60"):
        onnxdata.read(tmp_path / "two.pb", "sequence")
    # each call has its own budget: the first call's spending is not carried over
    onnxdata.save(one, tmp_path / "one.pb")
    for _ in range(3):
        assert onnxdata.read(tmp_path / "one.pb", "sequence")[0].shape == (15,)


def test_like_sparse_tensors_read_a_layout_at_a_time_share_the_limit(
        tmp_path: Path, limit_100: None) -> None:
    """Many sparse tensors of one layout (densified a group at a time, their bytes taken at
    once where all fit): the same limit, the same element named where one goes over."""
    seq = SequenceProto(elem_type=SequenceProto.SPARSE_TENSOR)
    seq.sparse_tensor_values.extend([_small_sparse(1)] * 25)  # 4 bytes each: 100 in all
    onnxdata.save(seq, tmp_path / "fits.pb")
    assert len(onnxdata.read(tmp_path / "fits.pb", "sequence")) == 25
    seq.sparse_tensor_values.extend([_small_sparse(1)] * 5)  # the 26th takes 104
    onnxdata.save(seq, tmp_path / "over.pb")
    with pytest.raises(onnxdata.ValidationError,
                       match=r"sparse_tensor_values\[25\].*needs 4 bytes.*took 100"):
        onnxdata.read(tmp_path / "over.pb", "sequence")


def test_nested_sparse_tensors_count_too(limit_100: None) -> None:
    inner = SequenceProto(elem_type=SequenceProto.SPARSE_TENSOR)
    inner.sparse_tensor_values.append(_small_sparse(15))
    outer = SequenceProto(elem_type=SequenceProto.SEQUENCE)
    outer.sequence_values.extend([inner, inner])
    with pytest.raises(onnxdata.ValidationError, match=r"sequence_values\[1\]"):
        onnxdata.to_numpy(outer)
    as_map = onnxdata.from_numpy({1: _small_sparse(15), 2: _small_sparse(15)}, "map")
    with pytest.raises(onnxdata.ValidationError, match="120 bytes"):
        onnxdata.to_numpy(as_map)


def test_memory_error_becomes_our_error_naming_the_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import onnxdata.convert.containers as convert_containers
    import onnxdata.io.read as fast_read
    from onnxdata.convert import values as convert
    from onnxdata.io import message_values

    def out_of_memory(*args: Any) -> Any:
        raise MemoryError

    value = onnxdata.from_numpy([np.zeros(3, np.float32)], "sequence")
    path = tmp_path / "s.pb"
    onnxdata.save(value, path)
    monkeypatch.setitem(convert_containers.READERS, "sequence", out_of_memory)
    monkeypatch.setattr(message_values.Engine, "run", out_of_memory)  # the engine's walk
    for to_numpy in (onnxdata.to_numpy, convert.to_numpy_reference):  # (and the reference reader)
        with pytest.raises(onnxdata.OnnxDataError, match="<SequenceProto>: out of memory in "
                                                         "to_numpy") as info:
            to_numpy(value)
        assert isinstance(info.value.__cause__, MemoryError)
    monkeypatch.setattr(fast_read, "_mapped", out_of_memory)
    with pytest.raises(onnxdata.OnnxDataError, match=f"{path}: out of memory in read"):
        onnxdata.read(path, "sequence")


def test_a_real_memory_error_is_our_error_with_the_path_under_rlimit_as() -> None:
    """With the limit raised past what the process may map, numpy's MemoryError becomes
    OnnxDataError naming the sparse tensor's path, and the CLI never shows MemoryError."""
    child = textwrap.dedent("""
        import resource
        import numpy as np
        import onnxdata
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
        onnxdata.set_densify_limit(1 << 40)
        big = onnxdata.from_numpy(onnxdata.SparseParts(
            np.ones(1), np.zeros(1, np.int64), (1 << 32,)))  # 32 GiB of float64 dense
        seq = onnxdata.SequenceProto(elem_type=onnxdata.SequenceProto.SPARSE_TENSOR)
        seq.sparse_tensor_values.append(big)
        try:
            onnxdata.to_numpy(seq)
        except MemoryError:
            raise SystemExit("a bare MemoryError escaped")
        except onnxdata.OnnxDataError as exc:
            print(exc)
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("sparse_tensor_values[0]: out of memory densifying"), done.stdout
