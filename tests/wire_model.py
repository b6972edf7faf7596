"""Our wire readers against protobuf's parser: the rules compared, shared by the fuzz
harness ``wire`` and ``test_wire_differential.py``.

``check_iter_fields(data)``: ``onnxdata.wire.format.iter_fields`` reads the top level of
any bytes the way protobuf reads them into a message with no fields (all of
them unknown): the same accept or reject, and the same fields in the same
order with the same numbers, wire types and values. One difference is kept on
purpose: upb 7 (protobuf 7.36) accepts field number 0 inside an unknown group;
protobuf 4.25, the spec and upb itself since its fix (protobuf commit beb01ec, "Fix upb
wire decoder accepting field number 0", after v36) refuse it, as we do.

``check_well_formed(data)``: every reading's ``well_formed`` against whether protobuf's
compiled parser (upb, what onnx's users run) parses the bytes as that kind: equal, but
for upb 7's field number 0 inside an unknown group (we refuse it; see above). Where
protobuf's two parsers disagree (a length of 6 to 10 bytes: the pure-Python one takes
it) upb is the reference, so this check runs only where upb is protobuf's parser.

``check_fit(data, kind)``: the explorer's ``fit`` against parsing ``kind``:

- protobuf refuses  => fit refuses;
- protobuf accepts with no unknown field anywhere => fit accepts, and the
  values fit's tree stands for (applying protobuf's rules ourselves: last wins
  for a singular scalar, repeated entries concatenated across packed and
  unpacked runs, a singular message given twice merged) equal protobuf's;
- protobuf accepts but keeps unknown fields => fit refuses (a field number
  the schema lacks, or a known number with the wrong wire type), unless the
  only cause is a value outside a closed proto2 enum (``data_location`` 2),
  which protobuf keeps as an unknown field and fit reads as the number it
  is; validate reports that number either way.
"""

from __future__ import annotations

import math
import struct
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.internal import api_implementation
from google.protobuf.message import DecodeError as ProtobufDecodeError
from google.protobuf.unknown_fields import UnknownFieldSet

from onnxdata.core.messages import kind_class
from onnxdata.explorer.readings import readings
from onnxdata.wire.field_tree import FitMessage, field_tree
from onnxdata.wire.format import I32, I64, LEN, VARINT, WireError, iter_fields
from onnxdata.wire.schema import message_schema


class WireMismatch(AssertionError):
    """Our reader and protobuf's disagree about the same bytes."""


def proto_parse(data: bytes, cls: Any) -> Any:
    """The parsed message, or None when protobuf refuses the bytes."""
    m = cls()
    try:
        m.ParseFromString(data)
    except (ProtobufDecodeError, RuntimeError, ValueError):
        return None
    return m


# ------------------------------------------------------------------ iter_fields

def _probe_class() -> Any:
    """A message whose only field is number 2**29 - 1, so every other field is unknown.

    Not ``google.protobuf.Empty``: upb 7 accepts a field-0 tag into Empty (and into no
    message with a field), so an empty message is not a faithful reference.
    """
    fdp = descriptor_pb2.FileDescriptorProto(name="onnxdata_wire_probe.proto",
                                             package="onnxdata_probe", syntax="proto2")
    fdp.message_type.add(name="Probe").field.add(
        name="x", number=_PROBE_FIELD, type=descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    desc = pool.FindMessageTypeByName("onnxdata_probe.Probe")
    try:
        from google.protobuf.message_factory import GetMessageClass
    except ImportError:  # pragma: no cover - protobuf < 4.22
        from google.protobuf import reflection
        return reflection.message_factory.MessageFactory(pool).GetPrototype(desc)
    return GetMessageClass(desc)


_PROBE_FIELD = (1 << 29) - 1
_PROBE = _probe_class()


def _proto_top_fields(data: bytes) -> list[tuple[int, int, Any]] | None:
    m = proto_parse(data, _PROBE)
    if m is None:
        return None
    if m.HasField("x"):
        raise _Skip
    out: list[tuple[int, int, Any]] = []
    for f in UnknownFieldSet(m):
        value = None if f.wire_type == 3 else f.data
        out.append((f.field_number, f.wire_type, value))
    return out


def _ours_top_fields(data: bytes) -> list[tuple[int, int, Any]] | None:
    out: list[tuple[int, int, Any]] = []
    try:
        for f in iter_fields(data):
            if f.wire_type == VARINT:
                value: Any = f.value
            elif f.wire_type == LEN:
                value = data[f.start:f.end]
            elif f.wire_type in (I32, I64):
                value = int.from_bytes(data[f.start:f.end], "little")
            else:
                value = None
            out.append((f.number, f.wire_type, value))
    except WireError:
        return None
    return out


class _Skip(Exception):
    """The bytes use the probe's own field number; its order among the others is lost."""


def _zero_in_group(fields: Any, inside: bool = False, depth: int = 0) -> bool:
    for f in fields:
        if f.field_number == 0 and inside:
            return True
        if f.wire_type == 3 and _zero_in_group(f.data, True, depth):
            return True
        if f.wire_type == 2 and depth < 100 and upb7_zero_in_group(f.data, depth + 1):
            return True  # a submessage's unknown group (a sequence's element)
    return False


def upb7_zero_in_group(data: bytes, depth: int = 0) -> bool:
    """upb 7 (protobuf 7.x) takes field number 0 inside an unknown group; protobuf 4.25
    and the spec refuse it, and so do we. True when ``data`` has one (at any depth of
    groups, in the top level or in any length-delimited field that parses as a message)."""
    m = proto_parse(data, _PROBE)
    return m is not None and _zero_in_group(UnknownFieldSet(m), depth=depth)


def check_iter_fields(data: bytes) -> None:
    try:
        theirs = _proto_top_fields(data)
    except _Skip:
        return
    ours = _ours_top_fields(data)
    if ours is None and theirs is not None and upb7_zero_in_group(data):
        return
    if (theirs is None) != (ours is None):
        raise WireMismatch(f"iter_fields {'refuses' if ours is None else 'accepts'} but "
                           f"protobuf {'refuses' if theirs is None else 'accepts'}: {data[:64]!r}")
    if theirs != ours:
        raise WireMismatch(f"iter_fields read {ours[:4] if ours else ours} but protobuf "
                           f"{theirs[:4] if theirs else theirs}")


# ------------------------------------------------------------------ well_formed

def _refuses_overlong_lengths() -> bool:
    """Whether protobuf's parser here refuses a length written in 6 bytes, as upb 7 does
    (the upb of protobuf 4.25, the old-protobuf suite's, takes it)."""
    from onnxdata.core.messages import TensorProto

    six = b"\x10\x01\x42\x81\x80\x80\x80\x80\x00t"  # data_type 1, name of length 1 in 6 bytes
    return proto_parse(six, TensorProto) is None


#: Is protobuf's parser here upb, and one that checks lengths as upb 7 does (the
#: reference of ``check_well_formed``)?
UPB = api_implementation.Type() == "upb" and _refuses_overlong_lengths()


def check_well_formed(data: bytes) -> None:
    """Each reading of ``data`` is well formed exactly where upb parses it as that kind."""
    for r in readings(data):
        takes = proto_parse(data, kind_class(r.kind_name)) is not None
        if takes == r.well_formed:
            continue
        if takes and upb7_zero_in_group(data):
            continue
        raise WireMismatch(f"{r.kind} is {'' if r.well_formed else 'not '}well formed "
                           f"({r.misfit}) but upb {'takes' if takes else 'refuses'} it: "
                           f"{data[:64]!r}")


# ------------------------------------------------------------------ fit

def _varints(buf: bytes, start: int, end: int) -> list[int]:
    """An independent packed-varint decoder (protobuf's rule: 10 bytes at most, high bits
    of the 10th byte dropped)."""
    out = []
    pos = start
    while pos < end:
        result = shift = 0
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                break
        out.append(result & 0xFFFFFFFFFFFFFFFF)
    return out


_FIXED = {2: "<f", 1: "<d", 6: "<Q", 7: "<I", 15: "<i", 16: "<q"}  # FieldDescriptor.TYPE_*


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for k, v in b.items():
        if k in out and isinstance(v, list):
            out[k] = out[k] + v
        elif k in out and isinstance(v, dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def fit_value(buf: bytes, node: FitMessage) -> dict[str, Any]:
    """What protobuf would make of the fields fit found, by protobuf's rules, applied here."""
    out: dict[str, Any] = {}
    for f in node.fields:
        spec = f.spec
        name = spec.name
        if spec.message is not None:
            assert f.child is not None
            child = fit_value(buf, f.child)
            if spec.repeated:
                out.setdefault(name, []).append(child)
            else:
                out[name] = _merge(out[name], child) if name in out else child
            continue
        if spec.wire_type == LEN:
            values: list[Any] = [bytes(buf[f.start:f.end])]
        elif f.wire_type == VARINT:
            assert f.value is not None
            values = [spec.as_int(f.value)]
        elif f.wire_type == LEN:  # packed
            if spec.wire_type == VARINT:
                raw = list(f.values) if f.values is not None else _varints(buf, f.start, f.end)
                values = [spec.as_int(v) for v in raw]
            else:
                fmt = _FIXED[spec.type]
                size = struct.calcsize(fmt)
                values = [struct.unpack_from(fmt, buf, p)[0]
                          for p in range(f.start, f.end, size)]
        else:
            values = [struct.unpack_from(_FIXED[spec.type], buf, f.start)[0]]
        if spec.repeated:
            out.setdefault(name, []).extend(values)
        else:
            out[name] = values[-1]
    return {k: v for k, v in out.items() if v != []}


def proto_value(message: Any) -> dict[str, Any]:
    """The same shape of value, read from a parsed message."""
    out: dict[str, Any] = {}
    for fd in message.DESCRIPTOR.fields:
        repeated = getattr(fd, "is_repeated", None)
        if repeated is None:
            repeated = fd.label == fd.LABEL_REPEATED
        value = getattr(message, fd.name)
        if repeated:
            items = list(value)
            if not items:
                continue
            if fd.message_type is not None:
                out[fd.name] = [proto_value(x) for x in items]
            else:
                out[fd.name] = [_scalar(x) for x in items]
        elif message.HasField(fd.name):
            out[fd.name] = proto_value(value) if fd.message_type is not None else _scalar(value)
    return out


def _scalar(x: Any) -> Any:
    return x.encode("utf-8", "surrogateescape") if isinstance(x, str) else x


def _norm(x: Any) -> Any:
    """NaN equals NaN (float32 NaN payloads may be quieted on the way to a Python float)."""
    if isinstance(x, float):
        return "nan" if math.isnan(x) else x
    if isinstance(x, list):
        return [_norm(v) for v in x]
    if isinstance(x, dict):
        return {k: _norm(v) for k, v in x.items()}
    return x


def has_unknown(message: Any) -> bool:
    """Does protobuf keep an unknown field anywhere in the tree of ``message``?"""
    if len(UnknownFieldSet(message)):
        return True
    for fd, value in message.ListFields():
        if fd.message_type is None:
            continue
        items = value if isinstance(value, list) or hasattr(value, "add") else [value]
        if any(has_unknown(x) for x in items):
            return True
    return False


def _closed_enum_outlier(node: FitMessage) -> bool:
    for f in node.fields:
        if f.spec.enum is not None and f.value is not None \
                and f.spec.as_int(f.value) not in f.spec.enum:
            return True
        if f.child is not None and _closed_enum_outlier(f.child):
            return True
    return False


def check_fit(data: bytes, kind: str) -> None:
    message = proto_parse(data, kind_class(kind))
    result = field_tree(data, kind)
    if message is None:
        if result.ok:
            raise WireMismatch(f"fit accepts {kind} but protobuf refuses: {data[:64]!r}")
        return
    if has_unknown(message):
        if result.ok and not _closed_enum_outlier(result.root):
            raise WireMismatch(f"fit accepts {kind} but protobuf keeps unknown fields: "
                               f"{data[:64]!r}")
        return
    if not result.ok:
        raise WireMismatch(f"fit refuses {kind} ({result.misfit}) but protobuf parses it "
                           f"cleanly: {data[:64]!r}")
    ours, theirs = _norm(fit_value(data, result.root)), _norm(proto_value(message))
    if ours != theirs:
        raise WireMismatch(f"fit's {kind} is {ours!r:.300} but protobuf's is {theirs!r:.300}")


def schema_fields(kind: str) -> dict[int, Any]:
    return message_schema(kind)
