"""The pure-Python walk is the oracle of the compiled one (issue 18): every public result
must be the same with ``ONNXDATA_PURE_PYTHON=1`` and without.

Many inputs go to ONE fresh process in each mode (tests/walk_digest.py), which writes a
canonical digest of everything the public API says about each: ``readings`` (kind,
well_formed, valid, summary, problems, misfit), ``explore``'s JSON and byte table, the
byte table of every kind, CLI ``validate``'s status and output, and ``read`` and
``to_numpy(load())`` as every kind (values by dtype, shape, read-only flag and a hash of
the bytes; errors by class, text and problems). The two digests must be equal; a
difference names the first file and field. Nothing here looks inside the walk.

The inputs: the bundled corpus, every hostile file under tests/data (bombs, fuzz
regressions, ORT's known cases), small versions of bench/shapes.py's shapes, and
hypothesis-made messages (drawn here, written to files, digested in both modes):
wire-level messages of each kind with plausible values, some coherent (a tensor's
storage matching its dims, containers matching their elem_type), with unknown
fields, repeated and merged fields, and byte mutations; tensors also with dims as
overlong varints or in several packed runs, name, doc_string, segment, metadata_props
and external_data entries (plain and not), and groups in groups (issue 39); and roots
whose field 3 comes in a thousand packed runs and more (a map's keys, a sparse tensor's
dims: scanned in place), clean, cut off or overlong at a run's edge, with empty runs.
``ONNXDATA_WALK_EXAMPLES`` sets how many (default 200).

Until the walk is compiled, ``ONNXDATA_PURE_PYTHON`` only switches the varint decoder,
so this passes on main too; the last test checks that the compiled walk, once it is
built, is what runs without the variable.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import onnxdata
from bench import shapes
from tests.wire_bytes import ld, varint, vint

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
DATA = TESTS / "data"
DIGEST = TESTS / "walk_digest.py"
PURE = os.environ.get("ONNXDATA_PURE_PYTHON", "") not in ("", "0")
EXAMPLES = int(os.environ.get("ONNXDATA_WALK_EXAMPLES", "200"))
SHAPE_SIZE = 600  # bytes: every bench shape, small (tens of elements)
COUNTED = "_varints"  # a compiled module whose calls prove the counting works


# --- the compiled walk, wherever branch walk puts it ------------------------------------

def compiled_walk_modules() -> list[str]:
    """onnxdata's compiled modules other than the varint loop (its ``_*.pyx`` sources or
    built ``_*.so``): the compiled walk, under whatever name it lands."""
    folder = Path(onnxdata.__file__).parent / "wire"
    names = {p.name.split(".")[0] for p in folder.iterdir()
             if p.suffix in (".pyx", ".so", ".pyd") and p.name.startswith("_")}
    return sorted(names - {"_varints"})


# --- wire-level messages ---------------------------------------------------------------------


SMALL = st.integers(0, 5)
DATA_TYPES = st.one_of(st.integers(0, 28), st.sampled_from([1, 1, 6, 7, 8, 11]),
                       st.sampled_from([29, 2**31, -1]))
ELEM_TYPES = st.one_of(st.integers(0, 5), st.sampled_from([6, -1]))
KEY_TYPES = st.sampled_from([2, 3, 4, 5, 6, 7, 8, 12, 13, 1, 0])
INTS = st.one_of(st.integers(-3, 300), st.sampled_from([2**31, 2**63 - 1, -(2**63)]))


def unknown_field() -> st.SearchStrategy[bytes]:
    number = st.integers(17, 40)
    return st.one_of(
        st.builds(vint, number, INTS),
        st.builds(ld, number, st.binary(max_size=5)),
        st.builds(lambda n, b: varint(n << 3 | 5) + b, number, st.binary(min_size=4, max_size=4)),
        st.builds(lambda n, v: varint(n << 3 | 3) + vint(1, v) + varint(n << 3 | 4), number,
                  INTS),  # a group
    )


def overlong(value: int, width: int) -> bytes:
    """``value`` (0 to 127) as a varint of ``width`` bytes (2 to 10): protobuf reads it as
    ``value``."""
    return bytes([value | 0x80] + [0x80] * (width - 2) + [0])


@st.composite
def dims_field(draw: st.DrawFn, dims: list[int]) -> bytes:
    """A tensor's dims as protobuf takes them: packed or one field each (as
    ``packed_or_not``), one field each some as overlong varints, or in several packed
    runs (issue 39: each of these went by the Python walk)."""
    how = draw(st.sampled_from(["either", "either", "overlong", "runs"]))
    if how == "either" or not dims:
        return draw(packed_or_not(1, 0, dims))
    if how == "overlong":
        return b"".join(varint(1 << 3) + (overlong(d, draw(st.integers(2, 10)))
                                          if 0 <= d < 128 and draw(st.booleans())
                                          else varint(d)) for d in dims)
    cuts = sorted(draw(st.lists(st.integers(0, len(dims)), max_size=3)))
    bounds = [0, *cuts, len(dims)]
    return b"".join(ld(1, b"".join(varint(d) for d in dims[a:b]))
                    for a, b in itertools.pairwise(bounds))


@st.composite
def entry(draw: st.DrawFn, keys: st.SearchStrategy[str]) -> bytes:
    """A StringStringEntryProto: a key and a value as protobuf writes them, or a long
    value, a key twice, bytes that are not UTF-8, an unknown field or group inside."""
    key = draw(keys).encode()
    how = draw(st.sampled_from(["plain", "plain", "plain", "long", "twice", "binary",
                                "unknown", "value only"]))
    value = {"long": b"v" * 200, "binary": b"\xff\xfe"}.get(how, b"v")
    parts = [ld(1, key), ld(2, value)]
    if how == "twice":
        parts.append(ld(1, b"other"))
    elif how == "unknown":
        parts.insert(1, draw(unknown_field()))
    elif how == "value only":
        parts = parts[1:]
    return b"".join(parts)


EXTRA_KEYS = st.sampled_from(["location", "offset", "length", "checksum", "k", "x1"])


@st.composite
def tensor_extras(draw: st.DrawFn) -> bytes:
    """A tensor's other fields, some many times over: name, doc_string, metadata_props,
    segment, more external_data entries, unknown fields and (nested) groups."""
    parts = []
    if draw(st.integers(0, 3)) == 0:
        parts.append(ld(8, draw(st.binary(max_size=40))))
    if draw(st.integers(0, 3)) == 0:
        parts.append(ld(12, draw(st.sampled_from([b"doc", b"\xff", b"d" * 300]))))
    for _ in range(draw(st.sampled_from([0, 0, 1, 3, 20, 70]))):
        parts.append(ld(16, draw(entry(st.sampled_from(["a", "b", "key"])))))
    if draw(st.integers(0, 7)) == 0:
        parts.append(ld(3, vint(1, draw(SMALL)) + vint(2, draw(SMALL))))
    for _ in range(draw(st.sampled_from([0, 0, 0, 2, 8, 70]))):
        parts.append(ld(13, draw(entry(EXTRA_KEYS))))
    for _ in range(draw(st.sampled_from([0, 0, 1, 5, 70]))):
        n, m = draw(st.integers(17, 40)), draw(st.integers(1, 40))
        parts.append(draw(st.sampled_from([
            varint(n << 3 | 3) + varint(m << 3 | 3) + vint(1, 7) + varint(m << 3 | 4)
            + ld(2, b"xy") + varint(n << 3 | 4),  # a group in a group
            draw(unknown_field())])))
    return b"".join(parts)


def packed_or_not(number: int, wire: int, values: list[int]) -> st.SearchStrategy[bytes]:
    """The same numbers as one packed field, or one field each (protobuf takes both)."""
    if wire == 5:
        one = [struct.pack("<f", float(v)) for v in values]
    elif wire == 1:
        one = [struct.pack("<d", float(v)) for v in values]
    else:
        one = [varint(v) for v in values]
    return st.sampled_from([ld(number, b"".join(one)) if values else b"",
                            b"".join(varint(number << 3 | wire) + o for o in one)])


# (number, wire type, itemsize in raw_data) of each typed storage, by data_type
STORAGE = {1: (4, 5, 4), 6: (5, 0, 4), 7: (7, 0, 8), 11: (10, 1, 8), 13: (11, 0, 8),
           2: (5, 0, 1), 9: (5, 0, 1), 10: (5, 0, 2)}


@st.composite
def tensor(draw: st.DrawFn) -> bytes:
    """A TensorProto: often coherent (storage matching dims), else any mix of fields."""
    coherent = draw(st.booleans())
    data_type = draw(st.sampled_from([*sorted(STORAGE), 8])) if coherent else draw(DATA_TYPES)
    dims = draw(st.lists(SMALL, max_size=3)) if coherent else draw(st.lists(INTS, max_size=3))
    count = 1
    for d in dims:
        count *= d
    count = count if coherent and 0 <= count <= 40 else draw(st.integers(0, 6))
    parts = [draw(dims_field(dims)), vint(2, data_type)]
    how = draw(st.sampled_from(["typed", "raw", "string", "external", "none", "two"]))
    number, wire, size = STORAGE.get(data_type, (7, 0, 8))
    values = draw(st.lists(st.integers(-2, 3), min_size=count, max_size=count))
    if how in ("typed", "two"):
        parts.append(draw(packed_or_not(number, wire, values)))
    if how in ("raw", "two"):
        parts.append(ld(9, draw(st.binary(min_size=count * size, max_size=count * size))))
    if how == "string" or data_type == 8:
        parts += [ld(6, draw(st.binary(max_size=3))) for _ in range(count)]
    if how == "external":
        entries = {"location": draw(st.sampled_from(["data.bin", "../x", "", "nope"])),
                   "offset": draw(st.sampled_from(["0", "4", "-1", "x"])),
                   "length": draw(st.sampled_from([str(count * size), "1", "99999"]))}
        parts += [ld(13, ld(1, k.encode()) + ld(2, v.encode())) for k, v in entries.items()
                  if draw(st.integers(0, 5))]
        parts.append(vint(14, draw(st.sampled_from([1, 1, 0, 2]))))
    if draw(st.integers(0, 5)) == 0:
        parts.append(ld(8, b"t"))
    if draw(st.integers(0, 7)) == 0:
        parts.append(draw(unknown_field()))
    if draw(st.integers(0, 2)) == 0:
        parts.append(draw(tensor_extras()))
    return b"".join(draw(st.permutations(parts)) if draw(st.integers(0, 3)) == 0 else parts)


@st.composite
def sparse(draw: st.DrawFn) -> bytes:
    n = draw(st.integers(0, 3))
    values = tensor_of(1, [n], [draw(st.integers(-2, 2)) for _ in range(n)])
    rank = draw(st.sampled_from([1, 1, 2]))
    indices = tensor_of(7, [n] if rank == 1 else [n, 2],
                        [draw(st.integers(-1, 5)) for _ in range(n * rank)])
    dims = draw(st.lists(st.integers(0, 6), min_size=rank, max_size=rank))
    parts = [ld(1, values), ld(2, indices), ld(3, b"".join(varint(d) for d in dims))]
    return b"".join(p for p in parts if draw(st.integers(0, 6)))


def tensor_of(data_type: int, dims: list[int], values: list[int]) -> bytes:
    number, wire, _ = STORAGE[data_type]
    one = b"".join(struct.pack("<f", v) if wire == 5 else varint(v) for v in values)
    return ld(1, b"".join(varint(d) for d in dims)) + vint(2, data_type) + ld(number, one)


def element(draw: st.DrawFn, depth: int) -> tuple[int, bytes]:
    """An elem_type and one message of it (deeper containers grow rarer)."""
    kinds = [1, 1, 2] if depth >= 3 else [1, 1, 2, 3, 4, 5]
    elem = draw(st.sampled_from(kinds))
    maker = {1: tensor(), 2: sparse(), 3: sequence(depth + 1), 4: map_(depth + 1),
             5: optional(depth + 1)}[elem]
    return elem, draw(maker)


@st.composite
def sequence(draw: st.DrawFn, depth: int = 0) -> bytes:
    elem, first = element(draw, depth)
    elements = [first] + [draw(st.sampled_from([first, b""]))
                          for _ in range(draw(st.integers(0, 3)))]
    declared = elem if draw(st.integers(0, 4)) else draw(ELEM_TYPES)
    parts = [vint(2, declared)] + [ld(elem + 2, e) for e in elements]
    if draw(st.integers(0, 9)) == 0:
        parts.append(draw(unknown_field()))
    return b"".join(parts)


@st.composite
def optional(draw: st.DrawFn, depth: int = 0) -> bytes:
    if draw(st.integers(0, 3)) == 0:
        return vint(2, draw(ELEM_TYPES))  # empty
    elem, value = element(draw, depth)
    declared = elem if draw(st.integers(0, 4)) else draw(ELEM_TYPES)
    parts = [vint(2, declared), ld(elem + 2, value)]
    if draw(st.integers(0, 5)) == 0:
        parts.append(ld(elem + 2, value))  # a singular message twice: merged
    return b"".join(parts)


@st.composite
def map_(draw: st.DrawFn, depth: int = 0) -> bytes:
    key_type = draw(KEY_TYPES)
    n = draw(st.integers(0, 4))
    if key_type == 8:
        keys = b"".join(ld(4, draw(st.binary(max_size=2))) for _ in range(n))
    else:
        keys = ld(3, b"".join(varint(draw(INTS)) for _ in range(n)))
    values = draw(sequence(depth + 1)) if draw(st.integers(0, 3)) else vint(2, 1) + \
        b"".join(ld(3, tensor_of(1, [], [1])) for _ in range(n))
    return vint(2, key_type) + keys + ld(5, values)


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[bytes]) -> bytes:
    data = bytearray(draw(base))
    for _ in range(draw(st.integers(1, 2))):
        i = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "dup"]))
        if op == "insert" or not data:
            data[i:i] = draw(st.binary(min_size=1, max_size=3))
        elif op == "flip":
            data[min(i, len(data) - 1)] ^= 1 << draw(st.integers(0, 7))
        elif op == "delete":
            del data[i:i + draw(st.integers(1, 3))]
        elif op == "truncate":
            del data[i:]
        else:
            data[i:i] = data[i:]
    return bytes(data)


def packed_runs(seed: int, count: int, cut: int | None = None, long: int | None = None
                ) -> bytes:
    """``count`` packed runs of field 3 (a map's keys, a sparse tensor's dims, an optional's
    tensor), each of a few whole varints of every length, some empty, some zeros padded
    with 0x80 (seeded: cheap to draw); run ``cut`` ends inside a varint, run ``long``
    ends with one of 12 bytes."""
    rng = random.Random(seed)
    out = bytearray()
    for k in range(count):
        body = b"".join(
            bytes([0x80] * rng.randint(0, 9) + [0]) if rng.random() < 0.1 else
            bytes(rng.randrange(0x80, 0x100) for _ in range(rng.randint(0, 9)))
            + bytes([rng.randrange(0x80)]) for _ in range(rng.choice([0, 1, 3, 8, 40])))
        if k == long:
            body += b"\x81" * 11 + b"\x01"
        if k == cut and body:
            body = body[:-1] + bytes([body[-1] | 0x80])
        out += ld(3, body)
    return bytes(out)


@st.composite
def many_runs(draw: st.DrawFn) -> bytes:
    """A root whose field 3 comes in over a thousand packed runs (KEEP_PIECES: the walk
    keeps them as a Compact, which ``field_values.measure`` scans in place), with a
    field 2 of any kind's type, sometimes one run cut off or overlong at its edge."""
    count = draw(st.integers(1000, 1100))
    bad = draw(st.sampled_from([None, None, "cut", "long"]))
    at = draw(st.integers(0, count - 1))
    runs = packed_runs(draw(st.integers(0, 2**32)), count, at if bad == "cut" else None,
                       at if bad == "long" else None)
    return vint(2, draw(KEY_TYPES)) + runs


ANY_KIND = st.one_of(sequence(), optional(), map_(), tensor(), sparse())
MESSAGES = st.one_of(ANY_KIND, ANY_KIND, mutated(ANY_KIND), many_runs())


def drawn_messages(count: int) -> list[bytes]:
    """``count`` messages drawn by hypothesis (generation only: nothing fails to shrink)."""
    out: list[bytes] = []

    @settings(max_examples=count, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(MESSAGES)
    def collect(data: bytes) -> None:
        out.append(data)

    collect()
    return out


# --- the inputs and the two runs -------------------------------------------------------------

def long_runs() -> dict[str, bytes]:
    """Field 3 in over 64 KiB of packed runs (a sparse reading's dims past _LONG_INTS: a
    WireInts; a map's keys remembered by the Source): optional-merged-2000 at 120 kB,
    and 1,500 runs of every kind of varint, whole, one cut off at its last byte, one
    ending with a varint over 10 bytes, at the start, middle and end."""
    out = {"optional-merged-2000-120k.pb": shapes.by_name("optional-merged-2000")[0](
        120_000).data}
    for seed in (1, 2):
        head = vint(2, {1: 7, 2: 1}[seed])  # int64 keys decoded; float: keys only counted
        out[f"runs-{seed}.pb"] = head + packed_runs(seed, 1500)
        for at in (0, 700, 1499):
            out[f"runs-{seed}-cut-{at}.pb"] = head + packed_runs(seed, 1500, cut=at)
            out[f"runs-{seed}-long-{at}.pb"] = head + packed_runs(seed, 1500, long=at)
    return out


def int_key_maps() -> dict[str, bytes]:
    """Sequences of 6 to 40 maps (grouped: at least MIN_GROUPED_CONTAINERS) of many int keys
    each, packed and not, of each int key type: all distinct and in range (their keys left
    out of the layout), or one map with a key again or out of range, or maps whose key
    counts differ, or fewer keys than values."""
    ranges = {3: (-128, 127), 2: (0, 255), 5: (-32768, 32767), 4: (0, 65535),
              6: (-(2**31), 2**31 - 1), 12: (0, 2**32 - 1), 7: (-(2**63), 2**63 - 1),
              13: (-(2**63), 2**63 - 1)}

    def one(key_type: int, keys: list[int], packed: bool, values: int | None = None) -> bytes:
        fields = ld(3, b"".join(varint(k) for k in keys)) if packed else \
            b"".join(vint(3, k) for k in keys)
        n = len(keys) if values is None else values
        return vint(2, key_type) + fields + ld(5, vint(2, 1) + b"".join(
            ld(3, tensor_of(1, [], [k])) for k in range(n)))

    def seq(maps: list[bytes]) -> bytes:
        return vint(2, 4) + b"".join(ld(6, m) for m in maps)

    out = {}
    for code, (lo, hi) in ranges.items():
        for packed in (False, True):
            name = f"int-keys-{code}-{'packed' if packed else 'unpacked'}"

            def keys(i: int, n: int = 6, lo: int = lo, hi: int = hi) -> list[int]:
                return [lo + i, hi - i, *(lo + 40 + 30 * k + i for k in range(n - 2))]
            out[f"{name}.pb"] = seq([one(code, keys(i), packed) for i in range(20)])
            again = [[*keys(i)[:3], lo + i if i == 7 else lo + 20 + i] for i in range(20)]
            out[f"{name}-repeated.pb"] = seq([one(code, k, packed) for k in again])
            outside = [[lo + i, hi + 1 if i == 3 else hi - i] for i in range(12)]
            out[f"{name}-out-of-range.pb"] = seq([one(code, k, packed) for k in outside])
            out[f"{name}-counts-differ.pb"] = seq([one(code, keys(i, 2 + i % 4), packed)
                                                   for i in range(24)])
            out[f"{name}-fewer-keys.pb"] = seq([one(code, keys(i, 3), packed, 3 + (i == 5))
                                                for i in range(8)])
    return out


def write_inputs(folder: Path) -> list[str]:
    paths = sorted(str(p) for p in DATA.rglob("*.pb"))  # the corpus and every hostile file
    for shape in shapes.SHAPES:
        built = shape(SHAPE_SIZE)
        where = folder / "shapes" / shape.name
        where.mkdir(parents=True)
        (where / "value.pb").write_bytes(built.data)
        for name, data in built.extras.items():
            (where / name).write_bytes(data)
        paths.append(str(where / "value.pb"))
    for name, data in (long_runs() | int_key_maps()).items():
        (folder / "shapes" / name).write_bytes(data)
        paths.append(str(folder / "shapes" / name))
    elem, field_number, body = shapes.chain(shapes.CHAIN_LEVELS + 1)  # one past the limit
    over = folder / "shapes" / "chain-past-depth-limit.pb"
    over.write_bytes(shapes.vint(shapes.S_ELEM, elem) + shapes.ld(field_number, body))
    paths.append(str(over))
    drawn = folder / "drawn"
    drawn.mkdir()
    (drawn / "data.bin").write_bytes(bytes(range(256)) * 4)  # for the external references
    for i, data in enumerate(drawn_messages(EXAMPLES)):
        (drawn / f"{i:04d}.pb").write_bytes(data)
        paths.append(str(drawn / f"{i:04d}.pb"))
    return paths


def digests(paths: list[str], folder: Path, counted: list[str]) -> dict[str, Any]:
    """The digest of ``paths`` with ONNXDATA_PURE_PYTHON=1 and without (both at once)."""
    listing = folder / "paths.txt"
    listing.write_text("\n".join(paths))
    env = {k: v for k, v in os.environ.items() if k != "ONNXDATA_PURE_PYTHON"}
    procs = {}
    for mode in ("pure", "compiled"):
        procs[mode] = subprocess.Popen(
            [sys.executable, str(DIGEST), str(listing), str(folder / f"{mode}.json"),
             "--count-calls", *counted],
            env={**env, "ONNXDATA_PURE_PYTHON": "1"} if mode == "pure" else env,
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = {}
    for mode, proc in procs.items():
        log, _ = proc.communicate(timeout=900)
        assert proc.returncode == 0, f"the {mode} digest failed:\n{log[-3000:]}"
        out[mode] = json.loads((folder / f"{mode}.json").read_text())
    return out


def first_difference(a: Any, b: Any, where: str = "") -> str | None:
    """The path of the first place ``a`` and ``b`` differ, with both values there."""
    if type(a) is not type(b):
        return f"{where}: {a!r:.300} != {b!r:.300}"
    if isinstance(a, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                return f"{where}.{k}: only in the {'pure' if k in a else 'compiled'} run"
            found = first_difference(a[k], b[k], f"{where}.{k}")
            if found:
                return found
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            found = first_difference(x, y, f"{where}[{i}]")
            if found:
                return found
        return None if len(a) == len(b) else f"{where}: {len(a)} items != {len(b)}"
    return None if a == b else f"{where}: {a!r:.300} != {b!r:.300}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], dict[str, Any]]:
    if PURE:
        pytest.skip("the children run both modes whatever this process's is, so the pure "
                    "suite would run again what the main suite runs (make test-new)")
    folder = tmp_path_factory.mktemp("walk-differential")
    paths = write_inputs(folder)
    return paths, digests(paths, folder, [COUNTED, *compiled_walk_modules()])


def test_every_public_result_is_the_same_pure_and_compiled(
        runs: tuple[list[str], dict[str, Any]]) -> None:
    paths, out = runs
    pure, compiled = out["pure"]["files"], out["compiled"]["files"]
    assert sorted(pure) == sorted(compiled) == sorted(paths)
    for path in paths:
        found = first_difference(pure[path], compiled[path])
        assert found is None, f"{path}: pure and compiled differ at {found}"


def test_a_difference_is_named_by_its_place() -> None:
    pure = {"a.pb": {"readings": {"value": [{"valid": True, "problems": []}]}}}
    compiled = {"a.pb": {"readings": {"value": [{"valid": True, "problems": ["x"]}]}}}
    assert first_difference(pure, pure) is None
    assert first_difference(pure, compiled) == ".a.pb.readings.value[0].problems: 0 items != 1"
    assert first_difference({"k": 1}, {"k": 2.0}) == ".k: 1 != 2.0"
    assert first_difference({"k": 1}, {}) == ".k: only in the pure run"


def test_the_inputs_cover_every_verdict(runs: tuple[list[str], dict[str, Any]]) -> None:
    """A real check: valid, invalid and not well-formed readings, values and errors alike."""
    paths, out = runs
    verdicts, reads = set(), set()
    for path in paths:
        d = out["pure"]["files"][path]
        for r in d["readings"]["value"]:
            verdicts.add("valid" if r["valid"] else "invalid" if r["well_formed"] else "broken")
        for kind in ("sequence", "optional", "map", "tensor", "sparse_tensor"):
            reads.add(d[f"read[{kind}]"].get("error", "value"))
    assert len(paths) >= 500
    assert verdicts == {"valid", "invalid", "broken"}
    assert {"value", "ValidationError", "DecodeError"} <= reads


def test_the_mode_is_what_runs(runs: tuple[list[str], dict[str, Any]]) -> None:
    """The variable switches the varint loop off, and the counting that checks the walk
    below sees the loop's calls in the compiled run only."""
    _, out = runs
    assert out["pure"]["varints_compiled"] is False
    assert out["pure"]["calls"][COUNTED]["count"] == 0
    if out["compiled"]["calls"][COUNTED]["file"] is not None:
        assert out["compiled"]["varints_compiled"] is True
        assert out["compiled"]["calls"][COUNTED]["count"] > 0


def test_the_compiled_walk_is_what_runs_without_the_variable(
        runs: tuple[list[str], dict[str, Any]]) -> None:
    names = compiled_walk_modules()
    if not names:
        pytest.skip("no compiled walk: onnxdata/wire has no _*.pyx or _*.so besides "
                    "_varints")
    _, out = runs
    for name in names:
        compiled, pure = out["compiled"]["calls"][name], out["pure"]["calls"][name]
        assert pure["count"] == 0, f"onnxdata.wire.{name} ran with ONNXDATA_PURE_PYTHON=1"
        assert compiled["file"] is not None, f"onnxdata.wire.{name} is not built"
        assert "error" not in compiled, f"onnxdata.wire.{name} did not load: {compiled['error']}"
        assert compiled["in_sys_modules"], f"onnxdata.wire.{name} was never imported"
        assert not compiled["wrapped"] or compiled["count"] > 0, (
            f"onnxdata.wire.{name} is built but none of {compiled['wrapped']} was called")
