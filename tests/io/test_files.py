"""load and save: every corpus file round-trips, bad bytes give DecodeError, saves are atomic."""

from __future__ import annotations

import mmap
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from google.protobuf.message import DecodeError as ProtobufDecodeError

import onnxdata
from onnxdata.io.atomic import atomic_writer
from tests.conftest import CORPUS, corpus_params


@pytest.mark.parametrize("path, kind", corpus_params())
def test_corpus_file_loads_with_its_kind_and_saves_back_identically(
    path: Path, kind: str, tmp_path: Path
) -> None:
    message = onnxdata.load(path, kind)
    assert type(message).DESCRIPTOR.name == {
        "tensor": "TensorProto", "sequence": "SequenceProto", "optional": "OptionalProto",
        "map": "MapProto", "sparse_tensor": "SparseTensorProto"}[kind]
    out = tmp_path / "out.pb"
    onnxdata.save(message, out)
    assert out.read_bytes() == path.read_bytes()


def test_every_corpus_value_file_is_in_the_manifest() -> None:
    listed = {str(p.relative_to(CORPUS)) for p, _ in (x.values for x in corpus_params())}
    on_disk = {str(p.relative_to(CORPUS)) for p in CORPUS.glob("*/test_data_set_*/*.pb")}
    assert listed == on_disk


SAMPLE = CORPUS / "test_sequence_insert_at_back" / "test_data_set_0" / "input_0.pb"
_CLASSES: dict[str, Any] = {"tensor": onnxdata.TensorProto,
                            "sparse_tensor": onnxdata.SparseTensorProto,
                            "sequence": onnxdata.SequenceProto,
                            "optional": onnxdata.OptionalProto, "map": onnxdata.MapProto}


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview], ids=lambda w: w.__name__)
def test_load_accepts_bytes_like(wrap: Any) -> None:
    expected = onnxdata.load(SAMPLE, "sequence")
    assert onnxdata.load(wrap(SAMPLE.read_bytes()), "sequence") == expected


def test_load_accepts_mmap_and_str_paths_and_classes() -> None:
    expected = onnxdata.load(SAMPLE, onnxdata.SequenceProto)
    with open(SAMPLE, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        assert onnxdata.load(m, "sequence") == expected
    assert onnxdata.load(str(SAMPLE), "sequence") == expected


def test_unknown_kind_is_a_value_error_naming_the_choices() -> None:
    with pytest.raises(ValueError, match="expected one of tensor, sparse_tensor"):
        onnxdata.load(SAMPLE, "tensr")


def test_bytes_that_are_not_a_message_raise_decode_error_naming_file_and_kind(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "bad.pb"
    bad.write_bytes(b"\x0a\xff\xff\x01")  # a name claiming far more bytes than exist
    with pytest.raises(onnxdata.DecodeError) as info:
        onnxdata.load(bad, "sequence")
    err = info.value
    assert str(bad) in str(err) and "SequenceProto" in str(err)
    assert err.__cause__ is not None  # protobuf's own error, chained
    assert isinstance(err, onnxdata.OnnxDataError)


@pytest.mark.parametrize("kind", ["tensor", "sparse_tensor", "sequence", "optional", "map"])
def test_truncations_raise_only_our_errors(kind: str) -> None:
    """Each cut of the file loads as the message protobuf itself parses from it, or is a
    DecodeError naming the kind where protobuf refuses those bytes too."""
    data = SAMPLE.read_bytes()
    cls = _CLASSES[kind]
    refused = []
    for cut in range(len(data)):
        try:
            reference = cls.FromString(data[:cut])
        except ProtobufDecodeError:
            with pytest.raises(onnxdata.DecodeError) as info:
                onnxdata.load(data[:cut], kind)
            assert (info.value.source, info.value.kind) == ("<bytes>", cls.DESCRIPTOR.name)
            assert str(info.value).startswith("cannot read <bytes>")
            assert f" as {cls.DESCRIPTOR.name}: " in str(info.value)
            refused.append(cut)
        else:
            assert onnxdata.load(data[:cut], kind) == reference, cut
    assert 0 not in refused and 1 in refused  # no bytes are an empty message; one byte a tag


def _tmp_leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if "onnxdata-tmp" in p.name]


def test_save_replaces_the_file(tmp_path: Path) -> None:
    target = tmp_path / "v.pb"
    target.write_bytes(b"old")
    message = onnxdata.load(SAMPLE, "sequence")
    onnxdata.save(message, target)
    assert target.read_bytes() == SAMPLE.read_bytes()
    assert _tmp_leftovers(tmp_path) == []


def test_the_named_temporary_fallback_is_removed_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where O_TMPFILE is missing (not Linux), a named temporary is used and cleaned up."""
    monkeypatch.delattr(os, "O_TMPFILE", raising=False)
    target = tmp_path / "v.pb"
    target.write_bytes(b"old contents")
    with pytest.raises(RuntimeError), atomic_writer(target) as f:
        f.write(b"new")
        assert len(_tmp_leftovers(tmp_path)) == 1
        raise RuntimeError("boom")
    assert target.read_bytes() == b"old contents"
    assert sorted(os.listdir(tmp_path)) == ["v.pb"]
    with atomic_writer(target) as f:
        f.write(b"new")
    assert target.read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["v.pb"]


def test_a_writer_killed_mid_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "v.pb"
    target.write_bytes(b"old contents")
    child = textwrap.dedent(f"""
        import sys, time
        from onnxdata.io.atomic import atomic_writer
        with atomic_writer({str(target)!r}) as f:
            f.write(b"x" * 1_000_000)
            f.flush()
            print("writing", flush=True)
            time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "writing"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    time.sleep(0.05)
    assert target.read_bytes() == b"old contents"
    assert sorted(os.listdir(tmp_path)) == ["v.pb"]


def test_save_into_a_missing_folder_is_an_os_error_and_leaves_nothing(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        onnxdata.save(onnxdata.SequenceProto(), tmp_path / "missing" / "v.pb")
    assert list(tmp_path.iterdir()) == []


def test_the_unknown_fields_warning_points_at_the_callers_line() -> None:
    import warnings

    tensor = Path(__file__).parents[1] / "data" / "onnx-node" / "test_abs" / "test_data_set_0" / \
        "input_0.pb"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        onnxdata.load(tensor, "sequence")  # a tensor read as a sequence
    (w,) = [w for w in caught if issubclass(w.category, onnxdata.UnknownFieldsWarning)]
    assert w.filename == __file__
