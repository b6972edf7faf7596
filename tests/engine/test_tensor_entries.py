"""A tensor's StringStringEntryProto fields by the thousand (issue 39): metadata_props
walked at once by the compiled walk as one merged message, its entries read one by one
only to say which one is wrong; external_data entries written as protobuf writes them
checked at once and decoded only where a problem is worded (``key_values.plain_entries``).
Either way the verdict, problems and values are those of the entries read one by one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import onnxdata
from onnxdata import TensorProto
from onnxdata.engine import key_values
from onnxdata.engine import tensor as engine_tensor
from onnxdata.explorer.readings import reading
from tests.walk_digest import outcome
from tests.wire_bytes import ld, vint

HEAD = ld(1, b"\x02") + vint(2, TensorProto.FLOAT) + ld(9, b"\x00" * 8)


def entry(key: bytes, value: bytes) -> bytes:
    return ld(1, key) + ld(2, value)


def everything(data: bytes, folder: Path) -> dict[str, Any]:
    (folder / "t.pb").write_bytes(data)
    r = reading(data, "tensor", base_dir=folder)
    return {"reading": (r.well_formed, r.valid, r.summary, [str(p) for p in r.problems]),
            "read": outcome(lambda: onnxdata.read(folder / "t.pb", "tensor"))}


def test_clean_metadata_props_are_not_read_entry_by_entry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = HEAD + b"".join(ld(16, entry(b"k%d" % i, b"v" * (i % 300))) for i in range(3000))

    def no(*args: Any) -> Any:
        raise AssertionError("metadata_props read entry by entry")

    monkeypatch.setattr(engine_tensor.TensorWalk, "entry_list", no)
    assert reading(data, "tensor").valid
    assert onnxdata.read(_write(tmp_path, data), "tensor").shape == (2,)


@pytest.mark.parametrize("wrong", [entry(b"k", b"v") + vint(3, 1),  # an unknown field
                                   ld(1, b"k") + vint(2, 5),  # a value of the wrong type
                                   b"\x0a\x05k"])  # cut short: not well-formed
def test_a_wrong_metadata_entry_is_named_as_one_by_one(wrong: bytes, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch
                                                       ) -> None:
    entries = [entry(b"k%d" % i, b"v") for i in range(200)]
    entries[137] = wrong
    data = HEAD + b"".join(ld(16, e) for e in entries)
    fast = everything(data, tmp_path)
    monkeypatch.setattr(engine_tensor.TensorWalk, "entries_clean", lambda *args: False)
    assert fast == everything(data, tmp_path)
    if fast["reading"][0]:  # well-formed: the entry is named
        assert any("metadata_props[137]" in p for p in fast["reading"][3])


KEYS = st.sampled_from([b"location", b"offset", b"length", b"checksum", b"k", b"", b"\xff"])
VALUES = st.sampled_from([b"data.bin", b"0", b"8", b"x", b"../up", b""])


@settings(max_examples=60, deadline=None)
@given(pairs=st.lists(st.tuples(KEYS, VALUES), min_size=key_values.MANY, max_size=1200),
       location=st.sampled_from([0, 1, 2]), cap=st.sampled_from([None, 3, 1000]))
def test_many_external_entries_say_what_the_list_of_them_says(
        pairs: list[tuple[bytes, bytes]], location: int, cap: int | None,
        tmp_path_factory: pytest.TempPathFactory) -> None:
    folder = tmp_path_factory.mktemp("entries")
    (folder / "data.bin").write_bytes(b"\x00" * 8)
    data = HEAD[:-10] + b"".join(ld(13, entry(k, v)) for k, v in pairs) + vint(14, location)
    kwargs = {} if cap is None else {"max_problems": cap}

    def said() -> Any:
        r = onnxdata.readings(data, base_dir=folder, **kwargs)  # type: ignore[arg-type]
        return [(x.kind_name, x.valid, [str(p) for p in x.problems]) for x in r]

    fast = (said(), everything(data, folder))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(engine_tensor, "plain_entries", lambda *args: None)
        assert fast == (said(), everything(data, folder))


def _write(folder: Path, data: bytes) -> Path:
    (folder / "t.pb").write_bytes(data)
    return folder / "t.pb"
