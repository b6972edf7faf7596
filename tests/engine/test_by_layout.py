"""A sequence's elements validated a layout at a time (onnxdata/engine/by_layout.py) give
what protobuf's parse + validate gives, and what the walk of every element gives.

Each case is a sequence of many elements of one layout whose contents differ where a
rule reads them (a repeated string key, an int key or int32 entry out of range, sparse
indices, external locations) and where none does (names, raw bytes, string data): the
first must be told apart, the second grouped. Problems keep document order and the
cap's count across groups.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import onnxdata
from onnxdata.engine import by_layout
from onnxdata.errors import DecodeError
from onnxdata.explorer.readings import reading
from onnxdata.rules.validation import problems_reference
from onnxdata.wire import compiled, loops
from onnxdata.wire.format import encode_varint
from tests.wire_bytes import ld, vint

pytestmark = pytest.mark.skipif(not loops.COMPILED,
                                reason="the grouping runs with the compiled walk only")


def tensor(data_type: int, dims: list[int], *fields: bytes) -> bytes:
    return b"".join(vint(1, d) for d in dims) + vint(2, data_type) + b"".join(fields)


def float_tensor(i: int) -> bytes:
    return tensor(1, [2], ld(8, f"t{i}".encode() * (i % 3)), ld(9, bytes([i % 256]) * 8))


def sequence(elem_type: int, number: int, elements: list[bytes]) -> bytes:
    return vint(2, elem_type) + b"".join(ld(number, e) for e in elements)


def string_map(keys: list[bytes]) -> bytes:
    values = sequence(1, 3, [tensor(1, [], ld(9, b"\0\0\x80?")) for _ in keys])
    return vint(2, 8) + b"".join(ld(4, k) for k in keys) + ld(5, values)


def int8_map(*keys: int, packed: bool = False, key_type: int = 3) -> bytes:
    values = sequence(1, 3, [tensor(1, [], ld(9, b"\0\0\x80?")) for _ in keys])
    key_fields = (ld(3, b"".join(encode_varint(k % (1 << 64)) for k in keys)) if packed
                  else b"".join(vint(3, k) for k in keys))
    return vint(2, key_type) + key_fields + ld(5, values)


def int_map(key_type: int, keys: list[int], packed: bool = False) -> bytes:
    return int8_map(*keys, packed=packed, key_type=key_type)


def sparse(index: int) -> bytes:
    values = tensor(1, [1], ld(9, b"\0\0\x80?"))
    indices = tensor(7, [1], ld(9, index.to_bytes(8, "little", signed=True)))
    return ld(1, values) + ld(2, indices) + vint(3, 4)


def external(location: str) -> bytes:
    entry = ld(1, b"location") + ld(2, location.encode())
    return tensor(1, [1], ld(13, entry), vint(14, 1))


N = 60
#: name: (the sequence, how many layouts it has)
CASES: dict[str, tuple[bytes, int]] = {
    "maps-one-key-each": (sequence(4, 6, [string_map([f"k{i}".encode()]) for i in range(N)]), 1),
    "maps-a-repeated-key": (sequence(4, 6, [string_map([b"a", b"b" if i != 17 else b"a"])
                                            for i in range(N)]), 2),
    "int8-keys-one-out-of-range": (sequence(4, 6, [int8_map(300 if i == 9 else i)
                                                   for i in range(N)]), 2),
    "int8-keys-one-repeated": (sequence(4, 6, [int8_map(i, i if i != 8 else 7)
                                               for i in range(N)]), N),
    "int8-entries-one-out-of-range": (sequence(1, 3, [
        tensor(3, [2], ld(5, encode_varint(1) + encode_varint(200 if i == 33 else 2)))
        for i in range(N)]), 2),
    "sparse-index-out-of-range": (sequence(2, 4, [sparse(9 if i == 40 else 1)
                                                  for i in range(N)]), 2),
    "external-locations": (sequence(1, 3, [external("../up" if i == 5 else f"w{i % 2}.bin")
                                           for i in range(N)]), 3),
    "names-and-payloads-differ": (sequence(1, 3, [float_tensor(i) for i in range(N)]), 1),
    "strings-differ": (sequence(1, 3, [tensor(8, [1], ld(6, b"x" * i)) for i in range(N)]), 1),
    "invalid-among-valid": (sequence(1, 3, [tensor(0, [1]) if i % 3 else float_tensor(0)
                                            for i in range(3000)]), 2),
    "sequences-of-maps-nested": (sequence(3, 5, [
        sequence(4, 6, [string_map([b"a", b"b" * (1 + i % 3)])]) for i in range(N)]), 3),
    # many int keys, all distinct and in range: left out of the layout, so one group (a
    # key of 1 or 2 bytes alike); one map with a repeat, or a key out of range, apart,
    # with its problem naming its own key
    "int64-keys-16-distinct": (sequence(4, 6, [int_map(7, [i * 16 + j for j in range(16)])
                                               for i in range(N)]), 1),
    "int8-keys-packed-one-repeated": (sequence(4, 6, [
        int_map(3, [i - 60, i - 59, i - 60 if i == 21 else i - 58], packed=True)
        for i in range(N)]), 2),
    "int32-keys-one-out-of-range": (sequence(4, 6, [
        int_map(6, [i, 2**31 + i if i == 13 else -i - 1]) for i in range(N)]), 2),
    "int16-keys-counts-differ": (sequence(4, 6, [int_map(5, list(range(i, i + 1 + i % 3)))
                                                 for i in range(N)]), 3),
    "uint64-keys-repeats-differ": (sequence(4, 6, [
        int_map(13, [2**64 - 1 - i, 5, 2**64 - 1 - i if i % 4 == 0 else i + 6])
        for i in range(N)]), 1 + N // 4),
}


def _spy(monkeypatch: pytest.MonkeyPatch, module: Any = by_layout) -> list[int]:
    """Count the groups of every grouped field in ``module``'s calls of element_groups
    (so a test sees the grouping ran)."""
    seen: list[int] = []
    real = module.element_groups

    def counted(*args: Any) -> Any:
        got = real(*args)
        if got is not None:
            seen.append(len(got[1]))
        return got
    monkeypatch.setattr(module, "element_groups", counted)
    return seen


def _one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(by_layout, "element_groups", lambda *args: None)


def _outcome(data: bytes, max_problems: int) -> Any:
    r = reading(data, "sequence", max_problems=max_problems)
    return json.dumps(r.as_json(), sort_keys=True)


def _check(data: bytes, max_problems: int, monkeypatch: pytest.MonkeyPatch,
           tmp: Any) -> list[int]:
    seen = _spy(monkeypatch)
    r = reading(data, "sequence", max_problems=max_problems)
    expected = problems_reference(onnxdata.load(data, "sequence"), max_problems=max_problems)
    assert list(r.problems) == expected  # protobuf's parse + validate
    grouped = _outcome(data, max_problems)
    path = tmp / "value.pb"
    path.write_bytes(data)
    try:
        onnxdata.read(path, "sequence")
        read_ok = True
    except onnxdata.OnnxDataError:
        read_ok = False
    assert read_ok == (not expected)
    groups = list(seen)
    _one_by_one(monkeypatch)
    assert _outcome(data, max_problems) == grouped  # summaries, verdict, every field
    return groups


@pytest.mark.skipif(not loops.COMPILED, reason="no compiled layouts")
@pytest.mark.parametrize("width", [1000, 1024, 4000])
def test_elements_of_a_few_kib_are_grouped(width: int, monkeypatch: pytest.MonkeyPatch,
                                           tmp_path: Any) -> None:
    """Tensors of 4 to 16 KB (under GROUP_MEAN) go by group, read and explored, with the
    values and reading of the walk one by one."""
    assert 4 * width + 64 <= compiled.GROUP_MEAN
    values = [np.full(width, i, np.float32) for i in range(50)] + [np.arange(3, dtype=np.float32)]
    path = tmp_path / "seq.pb"
    onnxdata.write(values, path)
    seen = _spy(monkeypatch)
    grouped = onnxdata.read(path, "sequence")
    reading_grouped = _outcome(path.read_bytes(), 100)
    assert seen and seen[0] == 2
    _one_by_one(monkeypatch)
    alone = onnxdata.read(path, "sequence")
    assert _outcome(path.read_bytes(), 100) == reading_grouped
    assert [(v.dtype, v.shape, v.tobytes()) for v in grouped] == \
        [(v.dtype, v.shape, v.tobytes()) for v in alone] == \
        [(v.dtype, v.shape, v.tobytes()) for v in values]


def test_containers_of_tens_of_kib_are_grouped(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Any) -> None:
    """Maps of 16 int64 keys to 1,024 small tensors (bench_nested_types' shape: over
    GROUP_MEAN, under GROUP_MEAN_CONTAINERS) go by group at the root, with protobuf's
    problems and the one-by-one walk's reading."""
    def big_map(i: int) -> bytes:
        values = sequence(3, 5, [sequence(1, 3, [float_tensor(i + j + k) for k in range(64)])
                                 for j in range(16)])
        keys = ld(3, b"".join(encode_varint(i * 16 + j) for j in range(16)))
        return vint(2, 7) + keys + ld(5, values)
    elements = [big_map(i) for i in range(6)]
    mean = sum(map(len, elements)) / len(elements)
    assert compiled.GROUP_MEAN < mean <= compiled.GROUP_MEAN_CONTAINERS
    calls: list[tuple[str, int, int | None]] = []
    real = by_layout.element_groups

    def noted(*args: Any) -> Any:
        got = real(*args)
        calls.append((args[3], int(args[1].size), None if got is None else len(got[1])))
        return got
    monkeypatch.setattr(by_layout, "element_groups", noted)
    path = tmp_path / "maps.pb"
    path.write_bytes(sequence(4, 6, elements))
    onnxdata.read(path, "sequence")
    assert calls[0] == ("map", 6, 1), calls[:3]  # the root's maps: one group
    monkeypatch.undo()
    _check(sequence(4, 6, elements), 1000, monkeypatch, tmp_path)


@pytest.mark.parametrize("name", CASES)
def test_grouped_elements_give_protobufs_problems_and_the_walks_summary(
        name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    data, layouts = CASES[name]
    groups = _check(data, 1000, monkeypatch, tmp_path)
    assert groups and groups[0] == layouts, f"{name}: {groups}"


@pytest.mark.parametrize("cap", [0, 1, 7, 1000])
def test_the_cap_counts_problems_across_groups(cap: int, monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Any) -> None:
    data, _ = CASES["invalid-among-valid"]
    _check(data, cap, monkeypatch, tmp_path)
    r = reading(data, "sequence", max_problems=cap)
    assert len(r.problems) == min(cap, 2000) + (cap < 2000)  # the last says how many more


@pytest.mark.parametrize("cap", [1, 3, 1000])
def test_problems_far_into_the_elements_are_found(cap: int, monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Any) -> None:
    """Invalid elements only after 9,000 valid ones (past the first stretches the grouping
    looks through for elements with problems), and one valid in between."""
    elements = [float_tensor(0)] * 9000 + [tensor(0, [1])] * 2 + [float_tensor(0)] \
        + [tensor(0, [1])] * 3
    data = sequence(1, 3, elements)
    _check(data, cap, monkeypatch, tmp_path)
    paths = [p.path for p in reading(data, "sequence", max_problems=cap).problems]
    want = ["tensor_values[9000]", "tensor_values[9001]",
            "tensor_values[9003]"]
    assert paths[:min(cap, 3)] == want[:min(cap, 3)]


def test_a_bad_element_stops_the_grouping_and_the_walk_says_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    good = [float_tensor(i) for i in range(N)]
    data = sequence(1, 3, [*good, b"\x08"])  # the last: a tag with no value
    seen = _spy(monkeypatch)
    assert not reading(data, "sequence").well_formed
    with pytest.raises(DecodeError):
        onnxdata.load(data, "sequence")
    assert seen == []


def _deep(levels: int) -> bytes:
    inner = tensor(1, [], ld(9, b"\0\0\x80?"))
    for _ in range(levels):
        inner = sequence(1, 3, [inner])
    return inner


@pytest.mark.parametrize("levels", [97, 98, 99])
def test_nesting_at_the_limit_is_grouped_or_refused_as_protobuf_does(
        levels: int, monkeypatch: pytest.MonkeyPatch) -> None:
    data = sequence(3, 5, [_deep(levels)] * N)
    seen = _spy(monkeypatch)
    r = reading(data, "sequence")
    try:
        expected: Any = problems_reference(onnxdata.load(data, "sequence"))
    except DecodeError:
        expected = None
    assert (list(r.problems) if r.well_formed else None) == expected
    assert bool(seen) == (expected is not None)


def _groups(data: bytes, number: int, kind: str) -> list[int] | None:
    """The group of each element of field ``number`` of the sequence ``data``."""
    from onnxdata.wire.fields import fields
    from onnxdata.wire.source import Source

    src = Source.of_buffer(data)
    ranges = [(a, b) for n, _, _, a, b in fields(src, 0, len(data)) if n == number]
    starts = np.array([a for a, _ in ranges], np.uint64)
    ends = np.array([b for _, b in ranges], np.uint64)
    got = compiled.element_groups(src, starts, ends, kind, 1)
    return None if got is None else got[0].tolist()


LEFT_OUT: dict[str, tuple[int, int, Callable[[int], bytes]]] = {
    # kind: (elem_type, field, element i), the elements differing only where no rule reads
    "tensor": (1, 3, float_tensor),
    "tensor-strings": (1, 3, lambda i: tensor(8, [2], ld(6, b"s" * i), ld(6, b""),
                                              ld(12, b"doc" * i))),
    "tensor-floats": (1, 3, lambda i: tensor(1, [2], ld(4, bytes([i]) * 8))),
    "tensor-float-unpacked": (1, 3, lambda i: tensor(1, [1], b"\x25" + bytes([i]) * 4)),
    "map": (4, 6, lambda i: string_map([f"{i}".encode() * (1 + i % 4)])),
    "map-int-key": (4, 6, lambda i: int8_map(i - 30)),
    "map-packed-int-key": (4, 6, lambda i: int8_map(i - 30, packed=True)),
    "two-int-keys": (4, 6, lambda i: int8_map(0, i + 1)),
    "two-packed-int-keys": (4, 6, lambda i: int8_map(0, i + 1, packed=True)),
    "int-keys-in-runs": (4, 6, lambda i: int8_map(i, packed=True) + ld(3, encode_varint(
        i + 1)) + vint(3, i + 2) + ld(3, b"")),
    "uint64-keys": (4, 6, lambda i: int_map(13, [2**64 - 1 - i, i, 2**63 + i], packed=True)),
    "int32-keys-negative": (4, 6, lambda i: int_map(6, [-(2**31) + i, -1 - i, 2**31 - 1 - i])),
    "int64-keys-100": (4, 6, lambda i: int_map(7, [(k * 7919 + i) * (-1) ** k
                                                   for k in range(100)], packed=True)),
    "optional": (5, 7, lambda i: vint(2, 1) + ld(3, float_tensor(i))),
    "sparse_tensor": (2, 4, lambda i: ld(1, float_tensor(i)) + ld(2, tensor(7, [0])) +
                      vint(3, 2)),
}
KEPT: dict[str, tuple[int, int, Callable[[int], bytes]]] = {
    # ... and differing where a rule reads: every element its own layout
    "dims": (1, 3, lambda i: tensor(1, [i], ld(9, b""))),
    "raw-length": (1, 3, lambda i: tensor(1, [2], ld(9, b"x" * i))),
    "int64-entries": (1, 3, lambda i: tensor(7, [1], ld(7, encode_varint(i)))),
    "two-string-keys": (4, 6, lambda i: string_map([b"a", bytes([i])])),
    "int-keys-out-of-range": (4, 6, lambda i: int8_map(128 + i)),
    "int-keys-negative-out-of-range": (4, 6, lambda i: int8_map(-129 - i)),
    "two-int-keys-repeated": (4, 6, lambda i: int8_map(i, i)),
    "two-packed-int-keys-repeated": (4, 6, lambda i: int8_map(i, i, packed=True)),
    "int-keys-one-out-of-range": (4, 6, lambda i: int8_map(0, 128 + i)),
    "int64-keys-100-one-repeated": (4, 6, lambda i: int_map(7, [*range(99), i], packed=True)),
    "int-key-counts": (4, 6, lambda i: int8_map(*range(i + 1), packed=True)),
    "int-keys-past-64-bits": (4, 6, lambda i: vint(2, 7) + ld(3, b"\xff" * 9 + bytes([2 + i]))
                              + ld(5, sequence(1, 3, [tensor(1, [], ld(9, b"\0\0\x80?"))]))),
    "sparse-indices": (2, 4, lambda i: sparse(i)),
    "external": (1, 3, lambda i: external(f"w{i}.bin")),
    "unknown-field": (1, 3, lambda i: float_tensor(0) + ld(99, bytes([i]))),
}
KIND = {1: "tensor", 2: "sparse_tensor", 4: "map", 5: "optional"}


@pytest.mark.parametrize("name", LEFT_OUT)
def test_a_layout_leaves_out_only_contents_no_rule_reads(name: str) -> None:
    code, number, element = LEFT_OUT[name]
    data = sequence(code, number, [element(i) for i in range(N)])
    assert _groups(data, number, KIND[code]) == [0] * N


@pytest.mark.parametrize("name", KEPT)
def test_a_layout_keeps_what_a_rule_reads(name: str) -> None:
    code, number, element = KEPT[name]
    data = sequence(code, number, [element(i) for i in range(N)])
    assert _groups(data, number, KIND[code]) == list(range(N))


@pytest.mark.parametrize("name", ["dims", "two-int-keys-repeated", "sparse-indices"])
def test_elements_written_again_join_the_group_of_the_one_before(name: str) -> None:
    """Runs of byte-identical elements (each taken by a compare, not laid out again)
    between others: the groups are those of their layouts."""
    code, number, element = KEPT[name]
    data = sequence(code, number, [element(i // 3 % 4) for i in range(N)])
    assert _groups(data, number, KIND[code]) == [i // 3 % 4 for i in range(N)]
    again = sequence(1, 3, [float_tensor(0)] * 3 + [b"\x0b"] * 3)  # a bad one, again
    assert _groups(again, 3, "tensor") is None


@pytest.mark.parametrize("chunk", [1, 40, 1 << 24])
def test_layouts_taking_turns_keep_their_groups_from_call_to_call(
        chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Layouts in turn (found in the call's table of layouts met): the same groups when
    each call of the compiled loop takes one element, a few, or all (the table made again
    from the layouts of the calls before)."""
    monkeypatch.setattr(compiled, "_GROUP_CHUNK", chunk)
    code, number, element = KEPT["two-int-keys-repeated"]
    data = sequence(code, number, [element(i % 7) for i in range(N)])
    assert _groups(data, number, KIND[code]) == [i % 7 for i in range(N)]


def test_an_element_seen_before_between_two_of_one_layout() -> None:
    """Elements taken by their own bytes (met before in the call) between elements of one
    layout and different bytes: each keeps its own group."""
    other = KEPT["dims"][2](7)
    elements = [e for i in range(N // 2) for e in (other, float_tensor(i))]
    assert _groups(sequence(1, 3, elements), 3, "tensor") == [0, 1] * (N // 2)


@pytest.mark.parametrize("distinct", [4096, 4097])
def test_past_4096_layouts_the_elements_are_walked_one_by_one(distinct: int) -> None:
    code, number, element = KEPT["dims"]
    data = sequence(code, number, [element(i) for i in range(distinct)] + [element(5)])
    want = [*range(distinct), 5] if distinct <= 4096 else None
    assert _groups(data, number, KIND[code]) == want


def test_bytes_that_are_no_message_have_no_layout() -> None:
    for bad in (b"\x08", b"\x0b\x14", b"\x0b", b"\x12\x05ab", b"\x00\x00", b"\xff" * 11,
                b"\x0b" * 101 + b"\x0c" * 101):  # (a group closed by another; 101 deep)
        data = sequence(1, 3, [float_tensor(0)] * N + [bad])
        assert _groups(data, 3, "tensor") is None, bad


def test_a_group_is_kept_whole() -> None:
    """A group is an unknown field: its bytes are in the layout, each one its own."""
    groups = [b"\x0b\x08\x01\x0c", b"\x0b\x08\x02\x0c", b"\x0b\x0c", b"\x0b" * 99 + b"\x0c" * 99]
    data = sequence(1, 3, [float_tensor(0) + groups[i % 4] for i in range(N)])
    assert _groups(data, 3, "tensor") == [i % 4 for i in range(N)]


@pytest.mark.parametrize("name", CASES)
def test_the_byte_table_counts_grouped_elements_as_it_lists_them(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from onnxdata.explorer.readings import byte_table
    from onnxdata.explorer.table import elided_count

    data, _ = CASES[name]
    listed = len(byte_table(data, "sequence", limit=None))
    from onnxdata.explorer import table

    for compiled_count in (True, False):  # (the Python count: where the loop is not built)
        if not compiled_count:
            monkeypatch.setattr(table, "count_fields", lambda *args: None)
            monkeypatch.setattr(table, "count_prefix", lambda *args: None)
        seen = _spy(monkeypatch, table)
        for limit in (0, 5):
            capped = byte_table(data, "sequence", limit=limit)
            assert min(limit, listed) + sum(elided_count(row) for row in capped) == listed
        assert bool(seen) == (not compiled_count), \
            "the table's count did not group the elements"

