"""Tensors with external data read fast and alike (issue 18's ``external-tensors``).

- ``rules.tensor.external_data_report`` words only the problems a capped list keeps and
  counts the rest: its problems are the first ``room`` of the full list, its count exact,
  and the full list is what the rule said before (the oracle below is its former code);
  an optional read from 6,000 merged tensors (18,000 entries) words about as many
  problems as the list keeps and still counts every one.
- ``TensorWalk.plain`` takes external tensors too (``_external``): for any bytes it gives
  what the full scan gives (problems, summaries, values, errors), and it is what runs for
  the common valid tensor.
- ``layout_values`` builds the values of a sequence's external tensors a layout at a time:
  the same values, flags and errors as reading them one by one, each element's bytes
  taken from the call's budget.
"""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onnxdata
from onnxdata.convert import values as reference
from onnxdata.engine import by_layout
from onnxdata.engine import tensor as engine_tensor
from onnxdata.engine.key_values import plain_entry
from onnxdata.errors import Problem
from onnxdata.explorer.readings import reading
from onnxdata.rules import tensor as rules_tensor
from onnxdata.rules.tensor import external_data_problems, external_data_report
from onnxdata.rules.validation import problems_reference
from onnxdata.wire import loops
from tests.engine.test_layout_values import _spy as spy_group_values
from tests.walk_digest import value as digest
from tests.wire_bytes import ld, varint, vint

SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])
DATA = struct.pack("<8f", *range(8))  # w.bin: 32 bytes


# --- the rule's former code: the oracle of the full list --------------------------------

def _former(path: str, entries: Sequence[tuple[Any, Any]], base_dir: Any = None, *,
            nbytes: int | None = None) -> list[Problem]:
    keys = rules_tensor.EXTERNAL_KEYS
    join = rules_tensor.join_path
    out: list[Problem] = []
    seen: dict[str, int] = {}
    values: dict[str, str] = {}
    text = [(rules_tensor._as_text(k), rules_tensor._as_text(v)) for k, v in entries]
    for i, (key, value) in enumerate(text):
        here = join(path, f"external_data[{i}]")
        if key not in keys:
            out.append(Problem(here, f"unknown key {key!r}; expected one of {', '.join(keys)}"))
            continue
        if key in seen:
            out.append(Problem(here, f"key {key!r} appears again (first at "
                                     f"external_data[{seen[key]}])"))
            continue
        seen[key] = i
        values[key] = value
        if key == "location":
            out += rules_tensor.location_problems(here, value)
        elif key in ("offset", "length") and not (value.isascii() and value.isdigit()):
            out.append(Problem(here, f"{key} {value!r} is not an integer >= 0 written in "
                                     "decimal digits"))
    location = values.get("location")
    if location is None:
        out.append(Problem(join(path, "external_data"),
                           "no location: external data needs a 'location' entry"))
    if out:
        return out
    offset = int(values.get("offset", "0"))
    length = int(values["length"]) if "length" in values else None
    if length is not None and nbytes is not None and length != nbytes:
        out.append(Problem(join(path, f"external_data[{seen['length']}]"),
                           f"length {length} but the tensor needs {nbytes} bytes"))
    if base_dir is None or location is None:
        return out
    here = join(path, f"external_data[{seen['location']}]")
    base = os.path.realpath(os.fspath(base_dir))
    target = os.path.realpath(os.path.join(base, location))
    size = os.path.getsize(target) if os.path.isfile(target) else None
    if os.path.commonpath([base, target]) != base:
        out.append(Problem(here, f"location {location!r} resolves to {target}, outside "
                                 f"base_dir {base} (through a symlink)"))
        return out
    if size is None:
        out.append(Problem(here, f"location {location!r} is not a file in {base}"))
        return out
    need = length if length is not None else nbytes
    if need is not None and offset + need > size:
        out.append(Problem(here, f"file {location!r} has {size} bytes but offset {offset} + "
                                 f"{need} bytes runs past its end"))
    elif offset > size:
        out.append(Problem(here, f"offset {offset} lies past the end of {location!r} "
                                 f"({size} bytes)"))
    return out


KEYS = st.sampled_from(["location", "offset", "length", "checksum", "bogus", b"\x80"])
VALUES = st.sampled_from(["w.bin", "../x", "/abs", "a\0b", "", "nope", "link", "0", "4",
                          "28", "32", "33", "-1", "x", "٣", b"\x80"])
ENTRIES = st.lists(st.tuples(KEYS, VALUES), max_size=9)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "w.bin").write_bytes(DATA)
    (tmp_path.parent / f"{tmp_path.name}-outside.bin").write_bytes(DATA)
    os.symlink(tmp_path.parent / f"{tmp_path.name}-outside.bin", tmp_path / "link")
    return tmp_path


@SETTINGS
@given(ENTRIES, st.sampled_from([None, 4, 8, 32]), st.integers(0, 12), st.booleans())
def test_report_words_the_first_room_and_counts_the_rest(
        folder: Path, entries: list[tuple[Any, Any]], nbytes: int | None, room: int,
        with_base: bool) -> None:
    base = folder if with_base else None
    full = _former("t", entries, base, nbytes=nbytes)
    assert external_data_problems("t", entries, base, nbytes=nbytes, facts={}) == full
    worded, more = external_data_report("t", entries, base, nbytes=nbytes, facts={},
                                        room=room)
    assert worded == full[:room]
    assert more == len(full) - len(worded)


@SETTINGS
@given(st.lists(ENTRIES, min_size=1, max_size=4), st.sampled_from([None, 0, 4, 8, 32]),
       st.booleans())
def test_the_clean_check_says_what_the_rule_says(
        folder: Path, tensors: list[list[tuple[Any, Any]]], nbytes: int | None,
        with_base: bool) -> None:
    """external_data_clean, which keeps the largest offset per location and length in one
    walk's facts, is ``not external_data_problems`` for every tensor of that walk."""
    base = folder if with_base else None
    facts: dict[tuple[str, str], Any] = {}
    for entries in tensors:
        for offset in ("0", "4", "24", "28", "32", "33", "x"):
            tried = [*entries, ("offset", offset)] if len(entries) % 2 else \
                [(k, offset if k == "offset" else v) for k, v in entries]
            assert rules_tensor.external_data_clean(tried, base, nbytes=nbytes,
                                                    facts=facts) == \
                (not _former("t", tried, base, nbytes=nbytes))


def test_the_clean_check_takes_offsets_up_to_the_files_end(folder: Path) -> None:
    facts: dict[tuple[str, str], Any] = {}
    for base, length, largest in ((folder, "8", 24), (folder, None, 24), (None, "8", 10**30),
                                  (folder, "4", -1), (folder, "x", -1)):
        for offset in (0, 8, 24, 25, 32, 10**30):
            entries = [("location", "w.bin"), ("offset", str(offset))]
            entries += [("length", length)] if length is not None else []
            clean = rules_tensor.external_data_clean(entries, base, nbytes=8, facts=facts)
            assert clean == (offset <= largest) == (not _former("t", entries, base, nbytes=8))


def test_merged_entries_are_counted_not_worded() -> None:
    entries = [("location", "w.bin"), ("offset", "8"), ("length", "8")] * 15_000
    full = _former("t", entries, nbytes=8)
    assert len(full) == 44_997
    for room in (0, 1, 999, 44_996, 44_997, 10**6):
        worded, more = external_data_report("t", entries, nbytes=8, room=room)
        assert worded == full[:room] and more == len(full) - len(worded)
    late = [("bogus", "x")] * 5 + [("location", "../up"), ("offset", "z")]  # firsts, counted
    assert external_data_report("t", late, room=2) == (_former("t", late)[:2], 5)


# --- an optional of merged tensors: every problem counted, few worded ------------------

def _external_tensor(offset: int, *, name: bytes = b"", dims: bytes | None = None,
                     length: int = 8) -> bytes:
    entries = (ld(13, ld(1, b"location") + ld(2, b"w.bin")) +
               ld(13, ld(1, b"offset") + ld(2, str(offset).encode())) +
               ld(13, ld(1, b"length") + ld(2, str(length).encode())))
    dims = ld(1, varint(2)) if dims is None else dims
    return dims + vint(2, 1) + (ld(8, name) if name else b"") + entries + vint(14, 1)


def test_an_optional_of_merged_tensors_counts_every_problem_but_words_few(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = b"".join(ld(3, _external_tensor(8 * (i % 4))) for i in range(6000))
    everything = reading(data, "optional", base_dir=folder, max_problems=10**6).problems
    # each entry again, the optional's two and the tensor's 6,000 dims (numpy's limit)
    assert len(everything) == 3 * 6000 - 3 + 3
    worded = []
    real = rules_tensor.Problem

    def counted(*args: Any) -> Problem:
        worded.append(args)
        return real(*args)
    monkeypatch.setattr(rules_tensor, "Problem", counted)
    capped = reading(data, "optional", base_dir=folder, max_problems=100).problems
    assert list(capped[:100]) == list(everything[:100])
    assert capped[100].message == f"…and {len(everything) - 100:,} more problems"
    assert len(worded) <= 100


# --- the plain path of external tensors ----------------------------------------------------

@st.composite
def external_tensors(draw: st.DrawFn) -> bytes:
    """External tensors, most plain (a key and a value per entry, one-byte tags), some
    not: other encodings of the entries, raw_data, other data_location values, dims
    negative or packed, unknown fields."""
    dims = draw(st.lists(st.sampled_from([0, 1, 2, 3, -1, 2**40]), max_size=3))
    parts = [ld(1, b"".join(varint(d) for d in dims)) if draw(st.booleans())
             else b"".join(vint(1, d) for d in dims)]
    parts.append(vint(2, draw(st.sampled_from([1, 1, 6, 7, 8, 22, 0, 99, 2**32 + 1]))))
    for key, value in draw(ENTRIES):
        k = key if isinstance(key, bytes) else key.encode()
        v = value if isinstance(value, bytes) else value.encode()
        how = draw(st.sampled_from(["plain", "plain", "plain", "value-first", "key-only",
                                    "unknown"]))
        entry = {"plain": ld(1, k) + ld(2, v), "value-first": ld(2, v) + ld(1, k),
                 "key-only": ld(1, k), "unknown": ld(1, k) + ld(2, v) + vint(3, 1)}[how]
        parts.append(ld(13, entry))
    location = draw(st.sampled_from([1, 1, 1, 0, 2, 2**32 + 1, None]))
    if location is not None:
        parts.append(vint(14, location))
    if draw(st.integers(0, 5)) == 0:
        parts.append(ld(9, bytes(draw(st.integers(0, 8)))))
    if draw(st.integers(0, 5)) == 0:
        parts.append(ld(8, b"name"))
    if draw(st.integers(0, 9)) == 0:
        parts.append(vint(30, 1))
    return b"".join(draw(st.permutations(parts)) if draw(st.booleans()) else parts)


def _outcome(fn: Any) -> str:
    try:
        return json.dumps(digest(fn()))
    except onnxdata.OnnxDataError as exc:
        return f"{type(exc).__name__}: {exc}"


def _everything(data: bytes, folder: Path) -> dict[str, Any]:
    """What the public API says of ``data`` as a tensor, with and without base_dir."""
    path = folder / "value.pb"
    path.write_bytes(data)
    out: dict[str, Any] = {}
    for base in (folder, None):
        r = reading(data, "tensor", base_dir=base)
        out[f"reading {base}"] = (r.well_formed, r.valid, r.summary,
                                  [str(p) for p in r.problems])
    out["read"] = _outcome(lambda: onnxdata.read(path, "tensor"))
    out["sequence"] = _outcome(lambda: onnxdata.read(path.with_suffix(".seq"), "sequence"))
    return out


@SETTINGS
@given(external_tensors())
def test_the_plain_path_says_what_the_scan_says(folder: Path, data: bytes) -> None:
    (folder / "value.seq").write_bytes(ld(3, data) * 3 + vint(2, 1))
    fast = _everything(data, folder)
    real = engine_tensor.TensorWalk._external
    try:
        engine_tensor.TensorWalk._external = lambda *args: None  # type: ignore[method-assign]
        slow = _everything(data, folder)
    finally:
        engine_tensor.TensorWalk._external = real  # type: ignore[method-assign]
    assert fast == slow
    try:
        message = onnxdata.load(data, "tensor")
    except onnxdata.DecodeError:
        return
    theirs = [str(p) for p in problems_reference(message, base_dir=folder)]
    assert fast[f"reading {folder}"][3] == theirs


def spy_scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths of the tensors ``TensorWalk.scan_tensor`` reads from now on (none when
    the plain path reads them all)."""
    scanned: list[str] = []
    real = engine_tensor.TensorWalk.scan_tensor

    def spied(self: Any, where: Any, path: str, *args: Any) -> Any:
        scanned.append(path)
        return real(self, where, path, *args)
    monkeypatch.setattr(engine_tensor.TensorWalk, "scan_tensor", spied)
    return scanned


def test_the_plain_path_is_what_reads_a_valid_external_tensor(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scanned = spy_scans(monkeypatch)
    for dims in (ld(1, varint(2)), vint(1, 2), vint(1, 1) + ld(1, varint(2))):
        data = _external_tensor(8, dims=dims)
        (folder / "t.pb").write_bytes(data)
        got = onnxdata.read(folder / "t.pb", "tensor")
        assert got.ravel().tolist() == [2.0, 3.0]
        r = reading(data, "tensor", base_dir=folder)
        assert r.valid and "(external data)" in r.summary
    assert scanned == []


# --- a sequence's external tensors, a layout at a time -----------------------------------

needs_compiled = pytest.mark.skipif(not loops.COMPILED,
                                    reason="values are built a layout at a time with the "
                                           "compiled walk only")


def _sequence(tensors: list[bytes]) -> bytes:
    return vint(2, 1) + b"".join(ld(3, t) for t in tensors)


def _int4(offset: int) -> bytes:
    entries = (ld(13, ld(1, b"location") + ld(2, b"w.bin")) +
               ld(13, ld(1, b"offset") + ld(2, str(offset).encode())))
    return vint(1, 3) + vint(2, 22) + entries + vint(14, 1)


SEQUENCES = {
    "one-layout": _sequence([_external_tensor(8, name=b"n%d" % i) for i in range(50)]),
    "four-layouts": _sequence([_external_tensor(8 * (i % 4)) for i in range(200)]),
    "int4-unpacked": _sequence([_int4(i % 3) for i in range(40)]),
    "scalars": _sequence([_external_tensor(4 * (i % 5), dims=b"", length=4)
                          for i in range(40)]),
    "empty": _sequence([_external_tensor(32, dims=vint(1, 0), length=0) for i in range(40)]),
    "late-layout": _sequence([_external_tensor(8 if i != 10 else 16) for i in range(40)]),
    "location-as-int64": _sequence([  # data_location 2**32 + 1: EXTERNAL as an int32
        _external_tensor(8)[:-2] + vint(14, 2**32 + 1) for _ in range(40)]),
    "one-invalid": _sequence([_external_tensor(8 * (i % 4) if i != 33 else 40)
                              for i in range(60)]),
}


def _read_both(data: bytes, folder: Path, monkeypatch: pytest.MonkeyPatch
               ) -> tuple[str, str, list[bool]]:
    path = folder / "s.pb"
    path.write_bytes(data)
    with monkeypatch.context() as m:
        built = spy_group_values(m)
        grouped = _outcome(lambda: onnxdata.read(path, "sequence"))
        m.setattr(by_layout, "element_groups", lambda *args: None)
        one_by_one = _outcome(lambda: onnxdata.read(path, "sequence"))
    return grouped, one_by_one, built


@needs_compiled
@pytest.mark.parametrize("name", sorted(SEQUENCES))
def test_external_elements_are_built_by_layout_as_one_by_one(
        name: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    grouped, one_by_one, built = _read_both(SEQUENCES[name], folder, monkeypatch)
    assert grouped == one_by_one
    if name == "one-invalid":
        assert grouped.startswith("ValidationError") and "tensor_values[33]" in grouped
    else:
        assert built == [True] and not grouped.startswith(("ValidationError", "OnnxData"))
    message = onnxdata.load(SEQUENCES[name], "sequence")
    assert _outcome(lambda: onnxdata.to_numpy(message, base_dir=folder)) == \
        _outcome(lambda: reference.to_numpy_reference(message, base_dir=folder))


@needs_compiled
def test_each_element_is_its_own_read_only_array(folder: Path) -> None:
    path = folder / "s.pb"
    path.write_bytes(SEQUENCES["four-layouts"])
    got = onnxdata.read(path, "sequence")
    assert len({id(a) for a in got}) == len(got) == 200
    assert [a.tolist() for a in got[:5]] == [[0, 1], [2, 3], [4, 5], [6, 7], [0, 1]]
    for a in got:
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a.flags.writeable = True  # as the engine's own: views of read-only bytes


@needs_compiled
@pytest.mark.parametrize("limit", [8 * 39 + 4, 8 * 2 + 4, 8 * 3])
def test_the_budget_names_the_element_one_by_one_names(
        limit: int, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each element's 8 bytes are taken from the call's budget: the element over it is
    the one the one-by-one walk names (four layouts: their firsts are elements 0 to 3)."""
    before = onnxdata.set_densify_limit(limit)
    try:
        grouped, one_by_one, _ = _read_both(SEQUENCES["four-layouts"], folder, monkeypatch)
    finally:
        onnxdata.set_densify_limit(before)
    over = re.search(r"tensor_values\[(\d+)\]", grouped)
    assert over is not None and int(over.group(1)) == limit // 8
    assert grouped == one_by_one


@needs_compiled
def test_the_budget_names_the_element_before_a_later_layouts_first(
        folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Element 1 is over the budget, in the first layout; element 10, the first of the
    second, is read before it when the groups' firsts are walked: the error must still
    name element 1, with what the one-by-one walk says is left."""
    before = onnxdata.set_densify_limit(12)
    try:
        grouped, one_by_one, _ = _read_both(SEQUENCES["late-layout"], folder, monkeypatch)
    finally:
        onnxdata.set_densify_limit(before)
    assert "tensor_values[1]" in grouped and "leaving 4" in grouped
    assert grouped == one_by_one


@pytest.mark.parametrize(("data", "said"), [
    (ld(1, b"location") + ld(2, b"w.bin"), ("location", "w.bin")),
    (ld(1, b"") + ld(2, b""), ("", "")),
    (ld(1, b"\x80") + ld(2, b"x"), ("\udc80", "x")),  # as the scan reads it: surrogateescape
    (ld(2, b"w.bin") + ld(1, b"location"), None),  # value first: the scan reads it
    (ld(1, b"location"), None),
    (ld(1, b"k") + ld(2, b"v") + vint(3, 1), None),
    (ld(1, b"k" * 200) + ld(2, b"v"), None),  # a two-byte length
    (ld(1, b"k") + ld(2, b"v")[:-1], None),
])
def test_plain_entries_are_exactly_a_short_key_then_value(data: bytes,
                                                         said: tuple[str, str] | None) -> None:
    assert plain_entry(data) == said
    assert plain_entry(data) == said  # (remembered)
