"""Files of many tiny elements of every kind, valid and invalid, at any size (issue 18).

Each ``Shape`` builds the bytes of one ``.pb`` file of about ``size`` bytes (and any
file it refers to, such as external data) by writing the wire format by hand, so the
same bytes come out whatever the engine of the day is. ``bench/bench_shapes.py``
times every entry point on them; ``tests/wire/test_walk_differential.py`` builds small
ones and checks that the pure-Python walk and the compiled one agree on them, and the
tests write their hand-made bytes with its encoder (``tests/wire_bytes.py``).

The shapes are those of issue 18's table (the ZipMap output, empty strings,
sequences of sequences of optionals of maps, external data, empty optionals and
tensors by the hundred thousand, sequences 96 deep, one optional written 2,000
times) and more: maps with distinct keys of each key type, sequence/optional/map
chains at the depth limit, merged occurrences, unknown fields and groups,
alternating storage fields, tiny sparse tensors, invalid elements by the hundred
thousand, and the shapes the bulk paths were made for (many ``[2]`` int64
tensors, big float32 tensors) so that a regression there shows too.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

# --- the wire format, by hand ---------------------------------------------------------------

VARINT, I64, LEN, SGROUP, EGROUP, I32 = 0, 1, 2, 3, 4, 5


def varint(n: int) -> bytes:
    """``n`` as a varint; a negative ``n`` as its 64-bit two's complement, as protobuf does."""
    n &= (1 << 64) - 1
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def key(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def ld(number: int, payload: bytes) -> bytes:
    """A length-delimited field: a message, a string or a packed run."""
    return key(number, LEN) + varint(len(payload)) + payload


def vint(number: int, value: int) -> bytes:
    """A varint field."""
    return key(number, VARINT) + varint(value)


def packed(number: int, values: list[int]) -> bytes:
    return ld(number, b"".join(varint(v) for v in values))


# Field numbers (onnx-ml.proto and onnx-data.proto).
T_DIMS, T_TYPE, T_FLOAT, T_INT32, T_STRING, T_INT64 = 1, 2, 4, 5, 6, 7
T_NAME, T_RAW, T_DOUBLE, T_UINT64, T_DOC, T_EXTERNAL, T_LOCATION = 8, 9, 10, 11, 12, 13, 14
SP_VALUES, SP_INDICES, SP_DIMS = 1, 2, 3
S_ELEM, S_TENSOR, S_SPARSE, S_SEQ, S_MAP, S_OPT = 2, 3, 4, 5, 6, 7
M_KEY_TYPE, M_KEYS, M_STRING_KEYS, M_VALUES = 2, 3, 4, 5
O_ELEM, O_TENSOR, O_SPARSE, O_SEQ, O_MAP, O_OPT = 2, 3, 4, 5, 6, 7
# elem_type of SequenceProto and OptionalProto
TENSOR, SPARSE_TENSOR, SEQUENCE, MAP, OPTIONAL = 1, 2, 3, 4, 5
# TensorProto.DataType
FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, STRING = 1, 2, 3, 4, 5, 6, 7, 8
DOUBLE, UINT32, UINT64 = 11, 12, 13

KEY_TYPES = {"int8": (INT8, -128, 127), "uint8": (UINT8, 0, 255),
             "int16": (INT16, -32768, 32767), "uint16": (UINT16, 0, 65535),
             "int32": (INT32, -(2**31), 2**31 - 1), "uint32": (UINT32, 0, 2**32 - 1),
             "int64": (INT64, -(2**63), 2**63 - 1), "uint64": (UINT64, 0, 2**63 - 1),
             "string": (STRING, 0, 0)}


def tensor(data_type: int, dims: list[int], *storage: bytes, extra: bytes = b"") -> bytes:
    head = (packed(T_DIMS, dims) if dims else b"") + vint(T_TYPE, data_type)
    return head + b"".join(storage) + extra


def float_scalar(value: float) -> bytes:
    return tensor(FLOAT, [], ld(T_FLOAT, struct.pack("<f", value)))


def sequence(elem_type: int, field_number: int, elements: list[bytes]) -> bytes:
    return vint(S_ELEM, elem_type) + b"".join(ld(field_number, e) for e in elements)


def map_of(key_type: int, keys: list[int] | list[bytes], values: list[bytes]) -> bytes:
    """A MapProto of ``keys`` (ints, or bytes for STRING) to float scalar tensors."""
    if key_type == STRING:
        key_fields = b"".join(ld(M_STRING_KEYS, k) for k in keys if isinstance(k, bytes))
    else:
        key_fields = packed(M_KEYS, [k for k in keys if isinstance(k, int)])
    return (vint(M_KEY_TYPE, key_type) + key_fields
            + ld(M_VALUES, sequence(TENSOR, S_TENSOR, values)))


def optional(elem_type: int, field_number: int, value: bytes | None) -> bytes:
    return vint(O_ELEM, elem_type) + (b"" if value is None else ld(field_number, value))


def repeat_to(size: int, head: bytes, element: bytes) -> bytes:
    """``head`` then copies of ``element`` up to about ``size`` bytes (at least one)."""
    return head + element * max(1, (size - len(head)) // len(element))


def cycle(size: int, head: bytes, field_number: int, elements: list[bytes]) -> bytes:
    """``head`` then fields ``field_number`` holding ``elements`` in turn, about ``size``
    bytes (at least one): quick to build however big."""
    unit = b"".join(ld(field_number, e) for e in elements)
    whole, rest = divmod(max(0, size - len(head)), len(unit))
    tail, total, i = [], 0, 0
    while total < rest or (whole == 0 and i == 0):
        part = ld(field_number, elements[i % len(elements)])
        tail.append(part)
        total += len(part)
        i += 1
    return head + unit * whole + b"".join(tail)


def numbered(size: int, head: bytes, template: bytes, code: str, first: int) -> bytes:
    """``head`` then copies of ``template`` in which the run of ``#`` is replaced by
    ``first``, ``first + 1``, ... as zero-padded decimal digits (code "digits") or as a
    varint of exactly that many bytes (code "varint"): distinct elements by the million,
    built with numpy."""
    start, width = template.index(b"#"), template.count(b"#")
    n = max(1, (size - len(head)) // len(template))
    rows = np.tile(np.frombuffer(template, np.uint8), (n, 1))
    values = np.arange(first, first + n, dtype=np.uint64)
    if code == "digits":
        assert first + n <= 10**width
        for j in range(width):
            rows[:, start + j] = 48 + values // np.uint64(10 ** (width - 1 - j)) % np.uint64(10)
    else:
        assert 1 << 7 * (width - 1) <= first and first + n <= 1 << 7 * width
        for j in range(width):
            more = 0 if j == width - 1 else 0x80
            rows[:, start + j] = values >> np.uint64(7 * j) & np.uint64(0x7F) | np.uint64(more)
    return head + rows.tobytes()


def count_for(size: int, sample: bytes, least: int = 1) -> int:
    """How many elements like ``sample`` (an encoded field) fill ``size`` bytes."""
    return max(least, size // max(1, len(sample)))


# --- the shapes --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Built:
    data: bytes
    extras: dict[str, bytes] = field(default_factory=dict)  # other files beside it, by name


@dataclass(frozen=True)
class Shape:
    name: str
    kind: str  # the kind the bytes are meant as: "sequence", "tensor", ...
    doc: str
    build: Callable[[int], Built]
    onnx: bool = True  # onnx's numpy_helper can make a value of this kind

    def __call__(self, size: int) -> Built:
        return self.build(size)


SHAPES: list[Shape] = []


def shape(name: str, kind: str, doc: str, onnx: bool = True
          ) -> Callable[[Callable[[int], bytes | Built]], Callable[[int], bytes | Built]]:
    def register(fn: Callable[[int], bytes | Built]) -> Callable[[int], bytes | Built]:
        def build(size: int) -> Built:
            out = fn(size)
            return out if isinstance(out, Built) else Built(out)
        SHAPES.append(Shape(name, kind, doc, build, onnx))
        return fn
    return register


def zipmap(key_type: int, size: int) -> bytes:
    """A sequence of one-key maps, every key distinct (ZipMap over a batch)."""
    values = ld(M_VALUES, sequence(TENSOR, S_TENSOR, [float_scalar(0.5)]))
    head = vint(M_KEY_TYPE, key_type)
    if key_type == STRING:
        one, code, first = head + ld(M_STRING_KEYS, b"k########") + values, "digits", 0
    else:
        one, code, first = head + ld(M_KEYS, b"####") + values, "varint", 1 << 21
    return numbered(size, vint(S_ELEM, MAP), ld(S_MAP, one), code, first)


@shape("zipmap-string", "sequence", "sequence of one-key maps, distinct string keys")
def _zipmap_string(size: int) -> bytes:
    return zipmap(STRING, size)


@shape("zipmap-int64", "sequence", "sequence of one-key maps, distinct int64 keys")
def _zipmap_int64(size: int) -> bytes:
    return zipmap(INT64, size)


def _maps_of_key_type(name: str) -> Callable[[int], bytes]:
    code, low, high = KEY_TYPES[name]
    span = high - low + 1 if code != STRING else 1 << 62

    def build(size: int) -> bytes:
        def keys(i: int) -> list[int] | list[bytes]:
            ints = [low + (i * 4 + j) % span for j in range(4)]
            return [b"%d" % k for k in ints] if code == STRING else ints
        values = [float_scalar(float(j)) for j in range(4)]
        return cycle(size, vint(S_ELEM, MAP), S_MAP,
                     [map_of(code, keys(i), values) for i in range(64)])
    return build


for _name in KEY_TYPES:
    shape(f"maps-{_name}", "sequence",
          f"sequence of 4-key maps, {_name} keys distinct within each")(_maps_of_key_type(_name))


@shape("map-int64-one-big", "map", "one map of distinct int64 keys to scalar tensors")
def _map_big(size: int) -> bytes:
    n = count_for(size, ld(S_TENSOR, float_scalar(1.0)) + b"####")
    keys = numbered(4 * n, b"", b"####", "varint", 1 << 21)
    return (vint(M_KEY_TYPE, INT64) + ld(M_KEYS, keys)
            + ld(M_VALUES, vint(S_ELEM, TENSOR) + ld(S_TENSOR, float_scalar(1.0)) * n))


@shape("map-string-one-big", "map", "one map of distinct string keys to scalar tensors")
def _map_string_big(size: int) -> bytes:
    n = count_for(size, ld(S_TENSOR, float_scalar(1.0)) + ld(M_STRING_KEYS, b"k00000000"))
    keys = numbered(n * 11, b"", ld(M_STRING_KEYS, b"k########"), "digits", 0)
    return (vint(M_KEY_TYPE, STRING) + keys
            + ld(M_VALUES, vint(S_ELEM, TENSOR) + ld(S_TENSOR, float_scalar(1.0)) * n))


@shape("strings-empty", "tensor", "STRING tensor of empty strings")
def _strings_empty(size: int) -> bytes:
    n = count_for(size, ld(T_STRING, b""))
    return tensor(STRING, [n], ld(T_STRING, b"") * n)


@shape("strings-short", "tensor", "STRING tensor of short distinct strings")
def _strings_short(size: int) -> bytes:
    n = count_for(size, ld(T_STRING, b"w00000000"))
    return tensor(STRING, [n], numbered(n * 11, b"", ld(T_STRING, b"w########"), "digits", 0))


@shape("seq-seq-opt-map", "sequence",
       "sequence of sequences of 4 optionals of one-key string maps", onnx=False)
def _seq_seq_opt_map(size: int) -> bytes:
    values = ld(M_VALUES, sequence(TENSOR, S_TENSOR, [float_scalar(1.0)]))
    head, opt_head = vint(M_KEY_TYPE, STRING), vint(O_ELEM, MAP)

    def inner(i: int) -> bytes:
        opts = [opt_head + ld(O_MAP, head + ld(M_STRING_KEYS, b"k%d" % (i * 4 + j)) + values)
                for j in range(4)]
        return vint(S_ELEM, OPTIONAL) + b"".join(ld(S_OPT, o) for o in opts)
    return cycle(size, vint(S_ELEM, SEQUENCE), S_SEQ, [inner(i) for i in range(256)])


def external_entry(k: str, v: str) -> bytes:
    return ld(T_EXTERNAL, ld(1, k.encode()) + ld(2, v.encode()))


def external_tensor(offset: int) -> bytes:
    return tensor(FLOAT, [2], extra=external_entry("location", "shapes-ext.bin")
                  + external_entry("offset", str(offset)) + external_entry("length", "8")
                  + vint(T_LOCATION, 1))


@shape("external-tensors", "sequence",
       "sequence of [2] float tensors, each with external data in one file (1,000 places)")
def _external(size: int) -> Built:
    places = [external_tensor(8 * i) for i in range(1000)]
    data = cycle(size, vint(S_ELEM, TENSOR), S_TENSOR, places)
    return Built(data, {"shapes-ext.bin": struct.pack("<f", 1.5) * 2000})


@shape("optionals-no-elem-type", "sequence",
       "sequence of empty optionals without elem_type", onnx=False)
def _optionals_untyped(size: int) -> bytes:
    return repeat_to(size, vint(S_ELEM, OPTIONAL), ld(S_OPT, b""))


@shape("optionals-undefined", "sequence",
       "sequence of empty optionals, elem_type UNDEFINED written out", onnx=False)
def _optionals_undefined(size: int) -> bytes:
    return repeat_to(size, vint(S_ELEM, OPTIONAL), ld(S_OPT, vint(O_ELEM, 0)))


@shape("empty-tensors", "sequence", "sequence of empty tensors (no data_type)")
def _empty_tensors(size: int) -> bytes:
    return repeat_to(size, vint(S_ELEM, TENSOR), ld(S_TENSOR, b""))


def nested_sequences(depth: int) -> bytes:
    """``depth`` sequences inside each other around one [2] int64 tensor."""
    body = sequence(TENSOR, S_TENSOR, [tensor(INT64, [2], packed(T_INT64, [1, 2]))])
    for _ in range(depth - 1):
        body = sequence(SEQUENCE, S_SEQ, [body])
    return body


@shape("nested-seq-96", "sequence", "sequence of chains of sequences 96 deep, repeated")
def _deep96(size: int) -> bytes:
    return repeat_to(size, vint(S_ELEM, SEQUENCE), ld(S_SEQ, nested_sequences(95)))


# Messages nest at most 100 deep (protobuf's limit, onnxdata's max_depth): below the
# outer sequence, a chain of 99 levels is the deepest both accept (100 is refused).
CHAIN_LEVELS = 99


def chain(levels: int) -> tuple[int, int, bytes]:
    """Sequence, optional and map in turn, ``levels`` messages deep (a map counts two:
    the map and its values sequence), around a [2] int64 tensor: (elem_type, field in a
    sequence, bytes) of the chain's top."""
    elem, seq_field, body = TENSOR, S_TENSOR, tensor(INT64, [2], packed(T_INT64, [1, 2]))
    used, turn = 0, 0
    while used < levels:
        step = ("sequence", "map", "optional")[turn % 3]  # map values are never optionals
        turn += 1
        if step == "map" and levels - used >= 2:
            body = (vint(M_KEY_TYPE, INT64) + packed(M_KEYS, [7])
                    + ld(M_VALUES, sequence(elem, seq_field, [body])))
            elem, seq_field, used = MAP, S_MAP, used + 2
        elif step == "optional":
            body = optional(elem, seq_field, body)  # an optional's fields are numbered alike
            elem, seq_field, used = OPTIONAL, S_OPT, used + 1
        else:
            body = sequence(elem, seq_field, [body])
            elem, seq_field, used = SEQUENCE, S_SEQ, used + 1
    return elem, seq_field, body


@shape("chains-at-depth-limit", "sequence",
       "sequence of sequence/optional/map chains nested to the depth limit", onnx=False)
def _chains(size: int) -> bytes:
    elem, field_number, body = chain(CHAIN_LEVELS)
    return repeat_to(size, vint(S_ELEM, elem), ld(field_number, body))


def merged_optional(pad: int) -> bytes:
    """An optional float scalar whose tensor carries a doc_string of ``pad`` bytes: written
    again and again, protobuf keeps the last of each singular field, so it stays valid."""
    t = tensor(FLOAT, [], ld(T_RAW, struct.pack("<f", 2.5)), extra=ld(T_DOC, b"d" * pad))
    return optional(TENSOR, O_TENSOR, t)


@shape("optional-merged-2000", "optional",
       "one optional written 2,000 times, merged (fewer below 32 kB)")
def _optional_2000(size: int) -> bytes:
    copies = min(2000, max(2, size // 16))
    return merged_optional(max(0, size // copies - 16)) * copies


@shape("optional-merged-tiny", "optional", "one tiny optional written over and over, merged")
def _optional_tiny(size: int) -> bytes:
    one = merged_optional(0)
    return one * count_for(size, one)


@shape("tensor-merged-packed", "tensor",
       "one int64 tensor whose int64_data comes in packed runs of 4, merged")
def _merged_packed(size: int) -> bytes:
    run = packed(T_INT64, [1, 2, 3, 4])
    n = count_for(size, run)
    return tensor(INT64, [4 * n], run * n)


@shape("tensor-merged-unpacked", "tensor",
       "one float tensor whose float_data is written one value at a time (unpacked)")
def _merged_unpacked(size: int) -> bytes:
    one = key(T_FLOAT, I32) + struct.pack("<f", 1.0)
    n = count_for(size, one)
    return tensor(FLOAT, [n], one * n)


@shape("unknown-fields-groups", "sequence",
       "sequence of [2] int64 tensors, each with an unknown varint field and group")
def _unknown(size: int) -> bytes:
    group = key(51, SGROUP) + vint(1, 5) + ld(2, b"xy") + key(51, EGROUP)
    t = tensor(INT64, [2], packed(T_INT64, [1, 2]), extra=vint(50, 3) + group)
    return repeat_to(size, vint(S_ELEM, TENSOR), ld(S_TENSOR, t))


@shape("alternating-storage", "sequence",
       "sequence of [2] float tensors, float_data and raw_data in turn")
def _alternating(size: int) -> bytes:
    a = ld(S_TENSOR, tensor(FLOAT, [2], ld(T_FLOAT, struct.pack("<2f", 1.0, 2.0))))
    b = ld(S_TENSOR, tensor(FLOAT, [2], ld(T_RAW, struct.pack("<2f", 3.0, 4.0))))
    return repeat_to(size, vint(S_ELEM, TENSOR), a + b)


@shape("alternating-in-one-tensor", "tensor",
       "one float tensor with float_data and int32_data runs in turn (invalid)")
def _alternating_one(size: int) -> bytes:
    pair = ld(T_FLOAT, struct.pack("<2f", 1.0, 2.0)) + packed(T_INT32, [1, 2])
    n = count_for(size, pair)
    return tensor(FLOAT, [4 * n], pair * n)


def tiny_sparse(i: int) -> bytes:
    values = tensor(FLOAT, [1], ld(T_FLOAT, struct.pack("<f", 1.0)))
    indices = tensor(INT64, [1], packed(T_INT64, [i % 4]))
    return ld(SP_VALUES, values) + ld(SP_INDICES, indices) + packed(SP_DIMS, [4])


@shape("sparse-tiny", "sequence", "sequence of [4] sparse tensors with one value each",
       onnx=False)
def _sparse_tiny(size: int) -> bytes:
    each = [tiny_sparse(i) for i in range(4)]
    return cycle(size, vint(S_ELEM, SPARSE_TENSOR), S_SPARSE, each)


@shape("invalid-elements", "sequence",
       "sequence of [2] float tensors holding int64_data (each one invalid)")
def _invalid_elements(size: int) -> bytes:
    t = tensor(FLOAT, [2], packed(T_INT64, [1, 2]))
    return repeat_to(size, vint(S_ELEM, TENSOR), ld(S_TENSOR, t))


@shape("invalid-counts", "sequence",
       "sequence of [3] int64 tensors holding 2 values (each one invalid)")
def _invalid_counts(size: int) -> bytes:
    t = tensor(INT64, [3], packed(T_INT64, [1, 2]))
    return repeat_to(size, vint(S_ELEM, TENSOR), ld(S_TENSOR, t))


def written_tensor(data_type: int, dims: list[int], raw: bytes) -> bytes:
    """A tensor as ``onnxdata.write`` lays it out: dims unpacked, data_type, raw_data (the
    layout the bulk paths recognise; protobuf's own serializer packs the dims)."""
    return b"".join(vint(T_DIMS, d) for d in dims) + vint(T_TYPE, data_type) + ld(T_RAW, raw)


@shape("plain-int64-2", "sequence",
       "sequence of [2] int64 tensors in raw_data, as onnxdata.write lays them out")
def _plain(size: int) -> bytes:
    t = written_tensor(INT64, [2], struct.pack("<2q", 0, 1))
    return repeat_to(size, vint(S_ELEM, TENSOR), ld(S_TENSOR, t))


@shape("plain-int64-2-packed-dims", "sequence",
       "sequence of [2] int64 tensors in raw_data, dims packed (as protobuf writes them)")
def _plain_packed(size: int) -> bytes:
    t = tensor(INT64, [2], ld(T_RAW, struct.pack("<2q", 0, 1)))
    return repeat_to(size, vint(S_ELEM, TENSOR), ld(S_TENSOR, t))


@shape("float32-vectors", "sequence", "sequence of [1000] float32 tensors in raw_data")
def _vectors(size: int) -> bytes:
    t = written_tensor(FLOAT, [1000], struct.pack("<f", 0.25) * 1000)
    return repeat_to(size, vint(S_ELEM, TENSOR), ld(S_TENSOR, t))


@shape("float32-one-big", "tensor", "one float32 tensor in raw_data")
def _big(size: int) -> bytes:
    n = max(1, size // 4)
    return written_tensor(FLOAT, [n], struct.pack("<f", 0.5) * n)


# --- one tensor whose bytes are mostly one kind of field (issue 39) ---------------------------

T_METADATA = 16  # TensorProto.metadata_props


def overlong(n: int, width: int = 10) -> bytes:
    """``n`` (below 128) as a varint of ``width`` bytes: protobuf takes it as ``n``."""
    return bytes([n | 0x80] + [0x80] * (width - 2) + [0])


def fixed32(number: int) -> bytes:
    return key(number, I32) + b"\x01\x00\x00\x00"


@shape("tensor-unknown-groups", "tensor",
       "one [2] int64 tensor whose bytes are mostly unknown group fields")
def _tensor_groups(size: int) -> bytes:
    group = key(51, SGROUP) + vint(1, 5) + ld(2, b"xy") + fixed32(3) + key(51, EGROUP)
    head = tensor(INT64, [2], packed(T_INT64, [1, 2]))
    return repeat_to(size, head, group)


@shape("tensor-dims-overlong", "tensor",
       "one int64 tensor of many dims of 1, written unpacked as 10-byte varints")
def _tensor_dims_overlong(size: int) -> bytes:
    one = key(T_DIMS, VARINT) + overlong(1)
    n = count_for(size, one)
    return one * n + vint(T_TYPE, INT64) + packed(T_INT64, [7])


@shape("tensor-dims-packed-runs", "tensor",
       "one int64 tensor of many dims of 1, in packed runs of 3")
def _tensor_dims_runs(size: int) -> bytes:
    run = packed(T_DIMS, [1, 1, 1])
    n = count_for(size, run)
    return run * n + vint(T_TYPE, INT64) + packed(T_INT64, [7])


@shape("tensor-external-many-keys", "tensor",
       "one [2] float tensor in external data with many extra key/value entries (invalid)")
def _tensor_external_keys(size: int) -> Built:
    head = tensor(FLOAT, [2], extra=external_entry("location", "shapes-ext.bin")
                  + external_entry("offset", "0") + external_entry("length", "8")
                  + vint(T_LOCATION, 1))
    data = numbered(size, head, ld(T_EXTERNAL, ld(1, b"k########") + ld(2, b"value")),
                    "digits", 0)
    return Built(data, {"shapes-ext.bin": struct.pack("<2f", 1.5, 2.5)})


@shape("tensor-metadata", "tensor",
       "one [2] float tensor whose bytes are its name, doc_string and metadata_props")
def _tensor_metadata(size: int) -> bytes:
    quarter = max(1, size // 4)
    head = (tensor(FLOAT, [2], ld(T_RAW, struct.pack("<2f", 1.0, 2.0)))
            + ld(T_NAME, b"n" * quarter) + ld(T_DOC, b"d" * quarter))
    entry = ld(T_METADATA, ld(1, b"key########") + ld(2, b"a value"))
    return numbered(size, head, entry, "digits", 0)


def by_name(names: str | None) -> list[Shape]:
    """The shapes named in a comma-separated list (all of them for None or "")."""
    if not names:
        return list(SHAPES)
    wanted = names.split(",")
    known = {s.name: s for s in SHAPES}
    missing = [n for n in wanted if n not in known]
    if missing:
        raise SystemExit(f"no shape named {', '.join(missing)}; known: {', '.join(known)}")
    return [known[n] for n in wanted]
