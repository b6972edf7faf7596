"""``read`` of a sequence's elements a layout at a time (onnxdata/engine/layout_values.py) gives
what reading every element gives: the same values, dtypes, shapes, read-only flags, key
types and order, and the same errors.

Each case is a sequence of many elements of one layout (or a few) whose values differ in
the contents a layout leaves out: raw_data, float_data, double_data and string_data
bytes, a map's only string key or its int keys (distinct, in range), names. Those
``layout_values`` builds must be built by it (a spy sees it); those it does not build
(sparse tensors, merged optionals) must be read one by one, and still right.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import onnxdata
from onnxdata.engine import by_layout, layout_values
from onnxdata.wire import loops
from onnxdata.wire.format import encode_varint
from tests.walk_digest import value as digest
from tests.wire_bytes import ld, vint

pytestmark = pytest.mark.skipif(not loops.COMPILED,
                                reason="values are built a layout at a time with the compiled "
                                       "walk only")


def tensor(data_type: int, dims: list[int], *fields: bytes) -> bytes:
    return b"".join(vint(1, d) for d in dims) + vint(2, data_type) + b"".join(fields)


def sequence(elem_type: int, number: int, elements: list[bytes]) -> bytes:
    return vint(2, elem_type) + b"".join(ld(number, e) for e in elements)


def f32(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def scalar(i: int) -> bytes:
    return tensor(1, [], ld(9, f32(i / 7)))


def one_key_map(key_type: int, key: int | bytes, value: bytes) -> bytes:
    key_field = ld(4, key) if isinstance(key, bytes) else vint(3, key)
    return vint(2, key_type) + key_field + ld(5, sequence(1, 3, [value]))


def optional(elem_type: int, number: int, value: bytes | None) -> bytes:
    return vint(2, elem_type) + (ld(number, value) if value is not None else b"")


N = 50
INT_KEYS = {3: (-128, 127), 2: (0, 255), 5: (-32768, 32767), 4: (0, 65535),
            6: (-2**31, 2**31 - 1), 12: (0, 2**32 - 1), 7: (-2**63, 2**63 - 1),
            13: (0, 2**64 - 1)}

#: name: the sequence's bytes (all built by layout_values)
BUILT: dict[str, bytes] = {
    "zipmap-string-keys": sequence(4, 6, [one_key_map(8, f"label{i}".encode(), scalar(i))
                                          for i in range(N)]),
    "string-keys-float-data-packed": sequence(4, 6, [
        one_key_map(8, b"k" * i, tensor(1, [2], ld(4, f32(i, -i)))) for i in range(N)]),
    "string-keys-float-data-unpacked": sequence(4, 6, [
        one_key_map(8, b"%d" % i, tensor(1, [2], b"\x25" + f32(i) + b"\x25" +
                                         f32(i + 0.5))) for i in range(N)]),
    "double-data": sequence(1, 3, [tensor(11, [1, 2], ld(10, struct.pack("<2d", i, 1 / (i + 1))))
                                   for i in range(N)]),
    "complex64-float-data": sequence(1, 3, [tensor(14, [1], ld(4, f32(i, 2 * i)))
                                            for i in range(N)]),
    **{f"int-keys-{code}": sequence(4, 6, [
        one_key_map(code, [lo, hi, 0, 1, lo + 1][i % 5], scalar(i)) for i in range(N)])
       for code, (lo, hi) in INT_KEYS.items()},
    "int-key-packed-single": sequence(4, 6, [
        vint(2, 7) + ld(3, encode_varint(i * 1000)) + ld(5, sequence(1, 3, [scalar(i)]))
        for i in range(N)]),
    "two-keys-kept": sequence(4, 6, [
        vint(2, 8) + ld(4, b"a") + ld(4, b"b") + ld(5, sequence(1, 3, [scalar(i), scalar(-i)]))
        for i in range(N)]),
    "empty-maps": sequence(4, 6, [vint(2, 7) + ld(5, vint(2, 1)) for _ in range(N)]),
    "named-raw-tensors": sequence(1, 3, [tensor(7, [3], ld(8, b"n" * (i % 4)),
                                                ld(9, struct.pack("<3q", i, -i, 2**40 + i)))
                                         for i in range(N)]),
    "int4-raw": sequence(1, 3, [tensor(22, [3], ld(8, b"x%d" % i), ld(9, bytes([i % 256, 7])))
                                for i in range(N)]),
    "bool-raw": sequence(1, 3, [tensor(9, [2], ld(8, b"%d" % i), ld(9, bytes([i % 2, 1])))
                                for i in range(N)]),
    "int32-data-same": sequence(1, 3, [tensor(6, [2], ld(8, b"%d" % i),
                                              ld(5, encode_varint(3) + encode_varint(4)))
                                       for i in range(N)]),
    "float16-int32-data": sequence(1, 3, [tensor(10, [1], ld(8, b"t%d" % i),
                                                 ld(5, encode_varint(15360)))
                                          for i in range(N)]),
    "strings-differ": sequence(1, 3, [tensor(8, [2], ld(6, b"x" * i), ld(6, b"")) for i in
                                      range(N)]),
    "string-scalars": sequence(1, 3, [tensor(8, [], ld(6, b"%d" % i)) for i in range(N)]),
    "optionals-of-tensors": sequence(5, 7, [optional(1, 3, scalar(i)) for i in range(N)]),
    "optionals-empty": sequence(5, 7, [optional(1, 3, None) for _ in range(N)]),
    "seq-seq-opt-map": sequence(3, 5, [sequence(5, 7, [
        optional(4, 6, one_key_map(8, b"k%d" % i, scalar(i))),
        optional(4, 6, one_key_map(8, b"j" * i, scalar(-i)))]) for i in range(N)]),
    "two-layouts-interleaved": sequence(4, 6, [
        one_key_map(8, b"%d" % i, scalar(i) if i % 2 else tensor(1, [1], ld(9, f32(i))))
        for i in range(N)]),
}


def sparse(i: int, index: int = 2) -> bytes:
    return (ld(1, tensor(1, [1], ld(9, f32(i)))) +
            ld(2, tensor(7, [1], ld(9, struct.pack("<q", index)))) + vint(3, 4))


BUILT |= {
    "sparse-tensors": sequence(2, 4, [sparse(i) for i in range(N)]),
    "sparse-two-layouts": sequence(2, 4, [sparse(i, i % 2) for i in range(N)]),
    "sparse-coordinates": sequence(2, 4, [
        ld(1, tensor(1, [2], ld(9, f32(i, -i)))) +
        ld(2, tensor(7, [2, 2], ld(9, struct.pack("<4q", 0, 1, 1, 0)))) + vint(3, 2) + vint(3, 2)
        for i in range(N)]),
}

def few_nested(i: int, dims: list[int]) -> bytes:
    """seq(seq(tensor(float))) of 4 x 4 raw tensors of ``dims``, their values from ``i``."""
    n = int(np.prod(dims))
    return sequence(3, 5, [sequence(1, 3, [tensor(1, dims, ld(9, f32(*range(i + j, i + j + n))))
                                           for j in range(4)]) for _ in range(4)])


# Fewer containers than the tensors' MIN_GROUPED, grouped too (issue 39: a map's 16 values
# of seq(seq(seq(tensor))) were walked one by one, 21 messages each).
BUILT |= {
    "few-nested-sequences": sequence(3, 5, [few_nested(i, [2, 3]) for i in range(5)]),
    "few-nested-scalars": sequence(3, 5, [few_nested(i, []) for i in range(6)]),
    "maps-of-few-nested-values": sequence(4, 6, [
        vint(2, 7) + ld(3, b"".join(encode_varint(k) for k in range(i, i + 5))) +
        ld(5, sequence(3, 5, [few_nested(i + k, [2]) for k in range(5)])) for i in range(7)]),
}


def int_key_map(key_type: int, keys: list[int], values: list[bytes], packed: bool) -> bytes:
    key_fields = ld(3, b"".join(encode_varint(k % 2**64) for k in keys)) if packed else \
        b"".join(vint(3, k % 2**64) for k in keys)
    return vint(2, key_type) + key_fields + ld(5, sequence(1, 3, values))


def distinct_keys(code: int, i: int) -> list[int]:
    """Five distinct keys of ``code``'s range (for ``i`` < 51), its ends among them."""
    lo, hi = INT_KEYS[code]
    return [lo + i, lo + 51 + i, hi - i, lo + 102 + i, lo + 153 + i]


# Maps of many int keys, all distinct and in range: their keys are left out of the layout
# (one group), so each map's keys are decoded from its own bytes, packed or not.
BUILT |= {
    f"many-int-keys-{code}-{'packed' if packed else 'unpacked'}": sequence(4, 6, [
        int_key_map(code, distinct_keys(code, i), [scalar(i + k) for k in range(5)], packed)
        for i in range(N)])
    for code in INT_KEYS for packed in (False, True)}
BUILT |= {
    "int-key-counts-differ": sequence(4, 6, [
        int_key_map(7, [i * 1000 + k for k in range(1 + i % 3)],
                    [scalar(k) for k in range(1 + i % 3)], i % 2 == 0) for i in range(N)]),
    "int-keys-in-runs": sequence(4, 6, [
        vint(2, 12) + ld(3, encode_varint(i) + encode_varint(2**32 - 1 - i)) + vint(3, 300 + i)
        + ld(3, b"") + ld(5, sequence(1, 3, [scalar(k) for k in range(3)])) for i in range(N)]),
    "int-keys-alike-in-every-map": sequence(4, 6, [  # (ZipMap's: the first's keys shared)
        int_key_map(7, [5, -3, 2**40], [scalar(i + k) for k in range(3)], i % 2 == 0)
        for i in range(N)]),
    "int-keys-empty-run": sequence(4, 6, [vint(2, 7) + ld(3, b"") + ld(5, vint(2, 1))
                                          for _ in range(N)]),
    "int64-keys-16-nested": sequence(4, 6, [  # the bench's shape (bench_nested_types)
        vint(2, 7) + ld(3, b"".join(encode_varint(i * 16 + k) for k in range(16))) +
        ld(5, sequence(3, 5, [few_nested(i + k, [2]) for k in range(16)])) for i in range(8)]),
}
#: name: the sequence's bytes, whose read fails: the same error grouped and one by one
INVALID: dict[str, bytes] = {
    "int-keys-one-repeated": sequence(4, 6, [
        int_key_map(3, [i, i + 1, i if i == 30 else i + 2], [scalar(k) for k in range(3)], True)
        for i in range(N)]),
    "int-keys-one-out-of-range": sequence(4, 6, [
        int_key_map(2, [i, 256 + i if i == 12 else 255 - i], [scalar(0), scalar(1)], False)
        for i in range(N)]),
    "int-keys-fewer-than-values": sequence(4, 6, [
        int_key_map(4, [i, i + 1], [scalar(k) for k in range(2 + (i == 44))], False)
        for i in range(N)]),
}


#: name: the sequence's bytes (read one by one: layout_values builds none)
DECLINED: dict[str, bytes] = {
    "sparse-inside-sequences": sequence(3, 5, [sequence(2, 4, [sparse(i)]) for i in range(N)]),
    # (a sequence's own external tensors are built: tests/engine/test_external_tensors.py)
    "external-data-inside-sequences": sequence(3, 5, [sequence(1, 3, [
        tensor(1, [1], ld(8, b"e%d" % i), ld(13, ld(1, b"location") + ld(2, b"w.bin")),
               vint(14, 1))]) for i in range(N)]),
    "optional-merged": sequence(5, 7, [optional(1, 3, scalar(i)) + ld(3, tensor(1, []))
                                       for i in range(N)]),
}


def _read(path: Path) -> str:
    try:
        return json.dumps(digest(onnxdata.read(path, "sequence")))
    except onnxdata.OnnxDataError as exc:
        return f"{type(exc).__name__}: {exc}"


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each call of layout_values built the values (None: it declined)."""
    built: list[bool] = []
    real = layout_values.layout_values

    def spied(*args: Any) -> Any:
        got = real(*args)
        built.append(got is not None)
        return got
    monkeypatch.setattr(by_layout, "layout_values", spied)
    return built


def _both(data: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str,
                                                                               list[bool]]:
    path = tmp_path / "value.pb"
    path.write_bytes(data)
    (tmp_path / "w.bin").write_bytes(f32(2.5))
    built = _spy(monkeypatch)
    grouped = _read(path)
    monkeypatch.setattr(by_layout, "element_groups", lambda *args: None)
    return grouped, _read(path), built


@pytest.mark.parametrize("name", sorted(BUILT))
def test_built_by_group_equals_one_by_one(name: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    grouped, one_by_one, built = _both(BUILT[name], tmp_path, monkeypatch)
    assert built and all(built)
    assert not grouped.startswith(("ValidationError", "DecodeError"))
    assert grouped == one_by_one


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_maps_give_the_errors_of_one_by_one(name: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A map whose keys repeat, or one out of range, or fewer than its values, among maps of
    distinct keys: its own layout, its problem naming its own key and index."""
    grouped, one_by_one, _ = _both(INVALID[name], tmp_path, monkeypatch)
    assert grouped.startswith("ValidationError")
    assert grouped == one_by_one


def test_keys_come_in_wire_order_with_their_types(tmp_path: Path) -> None:
    """Each map's keys as its own, in wire order, of its key type's Python int (uint64
    past 2**63 too), not the group's first's."""
    path = tmp_path / "keys.pb"
    path.write_bytes(BUILT["many-int-keys-13-packed"])
    got = onnxdata.read(path, "sequence")
    assert [list(m) for m in got[:2]] == [distinct_keys(13, 0), distinct_keys(13, 1)]
    assert all(type(k) is int for m in got for k in m)
    path.write_bytes(BUILT["int-key-counts-differ"])
    got = onnxdata.read(path, "sequence")
    assert [list(m) for m in got[3:6]] == [[3000], [4000, 4001], [5000, 5001, 5002]]


@pytest.mark.parametrize("steps", [[8, 8, 8], [8, 12, 12, 8, 8, 20], [16, 9], [4],
                                   [8] * 6 + [12] * 6 + [9] * 6 + [8], [5] * 20 + [7]])
def test_mapped_arrays_of_uneven_strides_are_views_of_their_own_bytes(
        steps: list[int]) -> None:
    """Raw arrays at offsets whose strides change (maps of 1- and 2-byte keys between them)
    are read-only views of the mapping, run by run (or a slice each, where runs are
    short), each of its own bytes."""
    whole = np.arange(512, dtype=np.uint16).view(np.uint8)
    at = np.cumsum([3, *steps]).astype(np.int64)
    for shape in [(), (2,), (1, 2)]:
        dtype = np.dtype(np.uint16) if shape == () else np.dtype(np.uint8)
        got = layout_values._mapped(dtype, shape, whole, at)
        width = dtype.itemsize * int(np.prod(shape))
        assert [(a.shape, a.tobytes()) for a in got] == [
            (shape, whole[o:o + width].tobytes()) for o in at.tolist()]
        assert all(not a.flags.writeable and a.base is not None for a in got)


@pytest.mark.parametrize("name", sorted(DECLINED))
def test_declined_reads_one_by_one(name: str, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    grouped, one_by_one, built = _both(DECLINED[name], tmp_path, monkeypatch)
    assert not any(built)
    assert grouped == one_by_one


def test_values_equal_protobufs_reading(tmp_path: Path) -> None:
    """The values also equal to_numpy of protobuf's parse (onnxdata's other reader)."""
    for name, data in sorted(BUILT.items()):
        path = tmp_path / f"{name}.pb"
        path.write_bytes(data)
        ours = onnxdata.read(path, "sequence", strings="bytes")
        theirs = onnxdata.to_numpy(onnxdata.load(data, "sequence"))
        assert _plain(ours) == _plain(theirs), name


def _plain(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return (v.dtype.str, v.shape, v.tolist() if v.dtype == object else v.tobytes())
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return [(type(k).__name__, k, _plain(x)) for k, x in v.items()]
    return v


def test_values_do_not_share_arrays(tmp_path: Path) -> None:
    """Elements whose arrays are equal (kept contents) are still distinct arrays."""
    path = tmp_path / "same.pb"
    path.write_bytes(BUILT["int32-data-same"])
    got = onnxdata.read(path, "sequence")
    assert len({id(a) for a in got}) == N
    assert all(not a.flags.writeable for a in got)
    assert [a.tolist() for a in got] == [[3, 4]] * N


def test_raw_views_stay_zero_copy(tmp_path: Path) -> None:
    """raw_data payloads at one stride are views of the mapping, as one by one."""
    path = tmp_path / "zip.pb"
    path.write_bytes(BUILT["zipmap-string-keys"])
    got = onnxdata.read(path, "sequence")
    assert [list(m) for m in got[:3]] == [[b"label0"], [b"label1"], [b"label2"]]
    first = got[1][b"label1"]
    assert first.shape == () and first.dtype == np.float32 and not first.flags.writeable
    assert first.base is not None and float(first) == np.float32(1 / 7)


def test_an_invalid_element_is_named(tmp_path: Path) -> None:
    """An element of another layout with a problem is reported at its own index."""
    elements = [one_key_map(8, b"%d" % i, scalar(i)) for i in range(N)]
    elements[37] = one_key_map(8, b"bad", tensor(1, [2], ld(9, f32(1))))
    path = tmp_path / "bad.pb"
    path.write_bytes(sequence(4, 6, elements))
    with pytest.raises(onnxdata.ValidationError) as caught:
        onnxdata.read(path, "sequence")
    assert [p.path for p in caught.value.problems] == [
        "map_values[37].values.tensor_values[0].raw_data"]


def test_an_invalid_element_of_few_nested_ones_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tensor of another layout deep in one of a few grouped containers is reported at
    its own path, as the one-by-one walk reports it."""
    good = sequence(1, 3, [tensor(1, [2], ld(9, f32(j, -j))) for j in range(4)])
    bad = sequence(1, 3, [tensor(1, [2], ld(9, f32(0, 1, 2 if j == 1 else 0)[:8 + 4 * (j == 1)]))
                          for j in range(4)])
    elements = [few_nested(i, [2]) for i in range(5)]
    elements[3] = sequence(3, 5, [good, good, bad, good])
    grouped, one_by_one, _ = _both(sequence(3, 5, elements), tmp_path, monkeypatch)
    assert grouped.startswith("ValidationError")
    assert "sequence_values[3].sequence_values[2].tensor_values[1].raw_data" in grouped
    assert grouped == one_by_one


def test_sparse_budget_names_the_same_element(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Densifying takes each element's bytes from the call's budget in document order:
    the element over it is the one the one-by-one walk names."""
    path = tmp_path / "sparse.pb"
    path.write_bytes(BUILT["sparse-two-layouts"])
    before = onnxdata.get_densify_limit()
    onnxdata.set_densify_limit(16 * 40 + 8)  # 16 bytes each: the 41st is over
    try:
        grouped, one_by_one, built = _both(BUILT["sparse-two-layouts"], tmp_path, monkeypatch)
    finally:
        onnxdata.set_densify_limit(before)
    assert built == [True]
    assert "sparse_tensor_values[40]" in grouped
    assert grouped == one_by_one


def test_a_declined_group_gives_back_its_budget(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """When a group's values are not built after its first was read, what reading the first
    took from the budget is given back: the one-by-one walk that follows names the same
    element over it, not one earlier."""
    data = BUILT["sparse-two-layouts"]
    before = onnxdata.get_densify_limit()
    onnxdata.set_densify_limit(16 * 40 + 8)
    declined: list[bool] = []

    def decline(*args: Any) -> None:
        declined.append(True)
    try:
        monkeypatch.setattr(by_layout, "layout_values", decline)
        grouped = _read_bytes(data, tmp_path / "a.pb")
        monkeypatch.setattr(by_layout, "element_groups", lambda *args: None)
        one_by_one = _read_bytes(data, tmp_path / "b.pb")
    finally:
        onnxdata.set_densify_limit(before)
    assert declined == [True]
    assert "sparse_tensor_values[40]" in grouped
    assert grouped == one_by_one.replace("b.pb", "a.pb")


def _read_bytes(data: bytes, path: Path) -> str:
    path.write_bytes(data)
    return _read(path)


def _base(arr: Any) -> Any:
    """What ``arr``'s memory belongs to, through views and memoryviews."""
    while True:
        below = arr.obj if isinstance(arr, memoryview) else getattr(arr, "base", None)
        if below is None:
            return arr
        arr = below


@pytest.mark.parametrize("mapped", [True, False])
def test_empty_tensors_of_a_group_hold_no_file_buffer(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      mapped: bool) -> None:
    """500 empty float tensors and a big one: each empty one read is an array of its own,
    not an empty view that keeps the whole file's read (or its mapping) alive."""
    import mmap

    if not mapped:
        def no_mapping(*args: Any, **kwargs: Any) -> Any:
            raise OSError("no mmap here")

        monkeypatch.setattr(mmap, "mmap", no_mapping)
    path = tmp_path / "seq.pb"
    onnxdata.write([np.zeros(0, np.float32)] * 500 + [np.ones(100_000, np.float32)], path)
    got = onnxdata.read(path, "sequence")
    assert [a.size for a in got] == [0] * 500 + [100_000]
    held = [a for a in got[:500] if not isinstance(_base(a), np.ndarray) or
            _base(a).nbytes > 64]
    assert len(held) <= 1, [type(_base(a)) for a in held[:3]]  # (the group's first, the
    # engine's own reading of it, may view the file)
