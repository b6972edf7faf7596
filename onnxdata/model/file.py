"""The declared input and output types of a ``model.onnx``, read without reading the model.

A model's file is mostly initializers (weights): parsing it whole to learn
the type of input 0 costs the size of the model in memory, 600 MB for a 300 MB
file. ``read_model_types`` walks only the field headers it needs,
``ModelProto.graph`` (field 7) and in it ``GraphProto.input`` (11) and
``output`` (12), reading each header through a small window of the file
(``os.pread``) and stepping over every other field by its length without
reading it. Only the ``type`` (field 2) and ``name`` (1) of each
``ValueInfoProto`` are read, then parsed with protobuf: a few hundred bytes
each, capped at ``MAX_TYPE_BYTES`` in all. Memory is therefore bounded
whatever the model's size; time grows with the number of graph fields (nodes
and initializers are stepped over one header each), not with their bytes.

As protobuf merges them, a ``graph`` written several times adds up its inputs
and outputs, and a ``type`` written several times is merged. A field with the
wrong wire type for its number is stepped over like an unknown field, as
protobuf keeps it among the unknown fields. A header that breaks the wire
format (a length past the end, a truncated varint) raises ``DecodeError``
naming the model and the byte: one clear problem for a corrupt model.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from typing import Final

from google.protobuf.message import DecodeError as _ProtobufDecodeError

from onnxdata.core.limits import MAX_DEPTH
from onnxdata.errors import DecodeError, OnnxDataError, path_error
from onnxdata.generated.onnx_ml_pb2 import TypeProto
from onnxdata.model.types import IO, DeclaredType, declared_type, find_model
from onnxdata.wire.compiled import compiled_scan
from onnxdata.wire.format import (
    EGROUP,
    LEN,
    SGROUP,
    WireError,
    read_length,
    read_tag,
    skip_field,
)
from onnxdata.wire.loops import COMPILED
from onnxdata.wire.schema import LAST, MANY, Schema
from onnxdata.wire.source import Source
from onnxdata.wire.walk import Fields

__all__ = [
    "MAX_TYPE_BYTES",
    "MAX_VALUES",
    "Declared",
    "ModelTypes",
    "ModelValue",
    "NoSuchValueError",
    "declared_for",
    "read_model_types",
]

#: The input/output names and types of a model may take this many bytes in all; past it the
#: model is refused (a real model's are a few hundred bytes per value).
MAX_TYPE_BYTES: Final = 16 << 20
#: The most graph inputs and outputs a model may declare (a real one has a few hundred).
MAX_VALUES: Final = 1 << 16
#: Bytes read at once while stepping over fields: a run of small fields (nodes) shares one
#: read, and stepping over a big one (an initializer) costs no more than this.
_WINDOW: Final = 4 << 10
#: A tag (at most 5 bytes) and a length varint (at most 10 bytes) always fit in this many.
_HEADER: Final = 16

_GRAPH: Final = 7  # ModelProto.graph
_INPUT: Final = 11  # GraphProto.input
_OUTPUT: Final = 12  # GraphProto.output
_NAME: Final = 1  # ValueInfoProto.name
_TYPE: Final = 2  # ValueInfoProto.type


@dataclass(frozen=True)
class ModelValue:
    """One graph input or output: its name and its ``TypeProto`` bytes (not yet parsed)."""

    name: str
    type_bytes: bytes


@dataclass(frozen=True)
class ModelTypes:
    """The graph inputs and outputs a model declares, as read by ``read_model_types``."""

    path: str
    inputs: tuple[ModelValue, ...]
    outputs: tuple[ModelValue, ...]
    _parsed: dict[tuple[IO, int], DeclaredType] = field(default_factory=dict, compare=False,
                                                        repr=False)

    def declared(self, io: IO, index: int) -> DeclaredType:
        """The declared type of input or output ``index``; DecodeError (naming the model)
        when there is no such value or its type is not one of the data message types.
        Parsed once per value (a data set's files ask for the same ones again)."""
        known = self._parsed.get((io, index))
        if known is None:
            known = self._parsed[(io, index)] = self._declared(io, index)
        return known

    def _declared(self, io: IO, index: int) -> DeclaredType:
        values = self.inputs if io == "input" else self.outputs
        if not 0 <= index < len(values):
            raise NoSuchValueError(self.path, io, index, len(values))
        value = values[index]
        tp = TypeProto()
        try:
            tp.ParseFromString(value.type_bytes)
        except (_ProtobufDecodeError, RuntimeError, ValueError) as exc:
            raise self._error(f"{io} {index} ({value.name!r}): its type cannot be "
                              f"parsed: {exc}") from exc
        try:
            return declared_type(tp)
        except ValueError as exc:
            raise self._error(f"{io} {index} ({value.name!r}): {exc}") from exc

    def _error(self, message: str) -> DecodeError:
        return DecodeError(message, source=self.path, kind="ModelProto")


class NoSuchValueError(DecodeError):
    """A model that was read but declares no such input or output: "m.onnx has 1 input, no
    input 9" (the model is fine; the file's index is past its values). A DecodeError of the
    model, as its other faults are, so that one ``except`` takes them all."""

    def __init__(self, model: str, io: IO, index: int, count: int) -> None:
        said = f"{model} has {count} {io}{'' if count == 1 else 's'}, no {io} {index}"
        OnnxDataError.__init__(self, said)  # (not "cannot read ...": it was read)
        self.source, self.kind, self.offset, self.reason = model, "ModelProto", None, said
        self.io, self.index, self.count = io, index, count

    def __reduce__(self) -> tuple[object, ...]:
        return type(self), (self.source, self.io, self.index, self.count)


def read_model_types(path: str | os.PathLike[str]) -> ModelTypes:
    """The graph inputs and outputs of the model at ``path``, in bounded memory.

    ``errors.path_error``'s (a DecodeError, and the OSError subclass) when the file cannot
    be opened or is a folder; DecodeError when the headers on the way to the graph's
    inputs and outputs break the wire format.
    """
    name = os.fspath(path)
    try:
        known = _read_before.get(_key(name, os.stat(name)))  # (one syscall: a model read before)
        if known is not None:
            return known
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise path_error(exc, name, kind="ModelProto") from exc
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise path_error(IsADirectoryError(errno.EISDIR, "Is a directory", name), name,
                             kind="ModelProto")
        if not stat.S_ISREG(st.st_mode):  # a FIFO would block the first read forever
            raise DecodeError("not a regular file (a model must be one)", source=name,
                              kind="ModelProto")
        key = _key(name, st)
        try:
            types = _compiled_types(fd, st, name)
            if types is None:  # no compiled loop, or a group in the way: the Python walk
                types = _Reader(fd, st.st_size, name).model()
        except WireError as exc:
            raise DecodeError(exc.reason, source=name, kind="ModelProto",
                              offset=exc.offset) from None
        if _key(name, os.fstat(fd)) != key:  # rewritten meanwhile: what was read may mix
            raise DecodeError("the file changed while reading (its size or times)",
                              source=name, kind="ModelProto")
        if len(_read_before) >= _REMEMBERED:
            _read_before.pop(next(iter(_read_before)))
        _read_before[key] = types
        return types
    finally:
        os.close(fd)


#: Models already read, by name and the file's identity and stamps: a command that reads
#: many data files beside one model reads the model once (issue 23, finding 14).
_read_before: dict[tuple[str, int, int, int, int, int], ModelTypes] = {}
_REMEMBERED: Final = 8


def _key(name: str, st: os.stat_result) -> tuple[str, int, int, int, int, int]:
    return name, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


_MODEL: Final[Schema] = {_GRAPH: ("graph", MANY)}
_GRAPH_IO: Final[Schema] = {_INPUT: ("input", MANY), _OUTPUT: ("output", MANY)}
_VALUE: Final[Schema] = {_NAME: ("name", LAST), _TYPE: ("type", MANY)}


def _compiled_types(fd: int, st: os.stat_result, name: str) -> ModelTypes | None:
    """``_Reader.model`` by the wire engine's compiled loop, which steps over the fields
    that are not wanted in C: a model of 10 million tiny fields (30 MB) is read in a
    fraction of a second where the Python walk took 11 s. None where the loop is not
    built or stops (a group: the Python walk says what it finds)."""
    if not COMPILED:
        return None
    with Source(name, st.st_size, fd=os.dup(fd)) as src:  # (its own descriptor: it closes it)
        return _compiled_walk(src, name)


def _compiled_walk(src: Source, name: str) -> ModelTypes | None:
    top = _scan(src, [(0, src.size)], _MODEL, "graph")
    if top is None:
        return None
    if not top["graph"]:
        raise WireError("it has no graph (field 7): not an ONNX model", 0)
    found: dict[str, list[tuple[int, int]]] = {"input": [], "output": []}
    for graph in top["graph"]:
        got = _scan(src, [graph], _GRAPH_IO, "input", "output")
        if got is None:
            return None
        for io in ("input", "output"):
            found[io].extend(got[io])
        if len(found["input"]) + len(found["output"]) > MAX_VALUES:
            raise WireError(f"more than {MAX_VALUES} graph inputs and outputs, more than "
                            "any model has", graph[0])
    kept = 0
    values: dict[str, list[ModelValue]] = {"input": [], "output": []}
    for io, ranges in found.items():
        for a, b in ranges:
            parts = _scan(src, [(a, b)], _VALUE, "name", "type")
            if parts is None:
                return None
            kept += sum(e - s for s, e in parts["name"][-1:] + parts["type"])
            if kept > MAX_TYPE_BYTES:
                raise WireError(f"the graph's input and output types take more than "
                                f"{MAX_TYPE_BYTES} bytes, more than any model needs", a)
            text = src.read(*parts["name"][-1]) if parts["name"] else b""
            values[io].append(ModelValue(text.decode("utf-8", errors="backslashreplace"),
                                         b"".join(src.read(s, e) for s, e in parts["type"])))
    return ModelTypes(name, tuple(values["input"]), tuple(values["output"]))


def _scan(src: Source, ranges: list[tuple[int, int]], schema: Schema, *names: str
          ) -> dict[str, list[tuple[int, int]]] | None:
    """The ranges of the LEN fields ``names`` of the message at ``ranges``, in wire order
    (a LAST field: its last one); None where the compiled loop stops or keeps too many."""
    out = Fields()
    if not compiled_scan(src, ranges, lambda: iter(()), schema, out, 0):
        return None
    got: dict[str, list[tuple[int, int]]] = {}
    for n in names:
        if n in out.last:
            got[n] = [out.last[n]]
            continue
        kept = out.many.get(n, [])
        if kept is None:  # past what the walk keeps: more than any model has
            raise WireError(f"more than {MAX_VALUES} fields {n}, more than any model has",
                            ranges[0][0])
        got[n] = list(kept)
    return got


class _Reader:
    """Field headers of a file read through a window, and the few payloads asked for."""

    def __init__(self, fd: int, size: int, name: str) -> None:
        self.fd = fd
        self.size = size
        self.name = name
        self.window = b""
        self.window_at = 0
        self.kept = 0  # bytes of names and types read so far

    def _bytes(self, pos: int, n: int) -> bytes:
        """``n`` bytes from ``pos`` (fewer at the end of the file), from the window if there."""
        if pos >= self.window_at and pos + n <= self.window_at + len(self.window):
            a = pos - self.window_at
            return self.window[a:a + n]
        self.window = os.pread(self.fd, max(n, _WINDOW), pos)
        self.window_at = pos
        return self.window[:n]

    def header(self, pos: int, end: int) -> tuple[int, int, int, int]:
        """The field at ``pos``: ``(number, wire_type, value_start, value_end)``; for LEN the
        value is the payload after the length."""
        chunk = self._bytes(pos, min(_HEADER, end - pos))  # a tag and 8 bytes fit in it
        try:
            number, wire_type, p = read_tag(chunk, 0, len(chunk))
            if wire_type == LEN:
                length, q = read_length(chunk, p, len(chunk))
            elif wire_type not in (SGROUP, EGROUP):  # a varint or fixed width: in the chunk
                after = skip_field(chunk, p, len(chunk), number, wire_type)
                return number, wire_type, pos + p, pos + after
        except WireError as exc:
            raise WireError(exc.reason, pos + (exc.offset or 0)) from None
        start = pos + p
        if wire_type == LEN:
            if length > end - (pos + q):
                raise WireError(f"field {number}: length {length} runs past the end "
                                f"({end - pos - q} bytes left)", start)
            return number, wire_type, pos + q, pos + q + length
        if wire_type == SGROUP:
            return number, wire_type, start, self._group_end(number, start, end, 1)
        raise WireError(f"unexpected end-group tag for field {number}", pos)

    def _group_end(self, number: int, pos: int, end: int, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise WireError(f"groups nested deeper than {MAX_DEPTH}", pos)
        while True:
            if pos >= end:
                raise WireError(f"group {number} is not closed", pos)
            chunk = self._bytes(pos, min(_HEADER, end - pos))
            try:
                n, wire_type, p = read_tag(chunk, 0, len(chunk))
            except WireError as exc:
                raise WireError(exc.reason, pos + (exc.offset or 0)) from None
            if wire_type == EGROUP:
                if n != number:
                    raise WireError(f"group {number} closed by end-group {n}", pos)
                return pos + p
            if wire_type == SGROUP:
                pos = self._group_end(n, pos + p, end, depth + 1)
            else:
                pos = self.header(pos, end)[3]

    def _walk(self, start: int, end: int, wanted: frozenset[int]
              ) -> list[tuple[int, int, int]]:
        """``(number, value_start, value_end)`` of the LEN fields numbered ``wanted``
        between ``start`` and ``end``; every other field is stepped over unread."""
        out: list[tuple[int, int, int]] = []
        pos = start
        while pos < end:
            number, wire_type, a, b = self.header(pos, end)
            if number in wanted and wire_type == LEN:
                out.append((number, a, b))
            pos = b
        return out

    def _read(self, a: int, b: int) -> bytes:
        self.kept += b - a
        if self.kept > MAX_TYPE_BYTES:
            raise WireError(f"the graph's input and output types take more than "
                            f"{MAX_TYPE_BYTES} bytes, more than any model needs", a)
        return os.pread(self.fd, b - a, a) if b > a else b""

    def model(self) -> ModelTypes:
        inputs: list[ModelValue] = []
        outputs: list[ModelValue] = []
        graphs = 0
        for _, g0, g1 in self._walk(0, self.size, frozenset({_GRAPH})):
            graphs += 1
            for number, v0, v1 in self._walk(g0, g1, frozenset({_INPUT, _OUTPUT})):
                if len(inputs) + len(outputs) >= MAX_VALUES:  # as the compiled reader says
                    raise WireError(f"more than {MAX_VALUES} graph inputs and outputs, more "
                                    "than any model has", g0)
                (inputs if number == _INPUT else outputs).append(self._value(v0, v1))
        if not graphs:  # a value file given as --model, say: not "a model of 0 inputs"
            raise WireError("it has no graph (field 7): not an ONNX model", 0)
        return ModelTypes(self.name, tuple(inputs), tuple(outputs))

    def _value(self, start: int, end: int) -> ModelValue:
        name = b""
        parts: list[bytes] = []
        for number, a, b in self._walk(start, end, frozenset({_NAME, _TYPE})):
            if number == _NAME:
                name = self._read(a, b)  # the last one wins, as protobuf reads a string
            else:
                parts.append(self._read(a, b))  # concatenated messages merge
        return ModelValue(name.decode("utf-8", errors="backslashreplace"), b"".join(parts))


@dataclass(frozen=True)
class Declared:
    """What a model says about one value file: its ``type`` (None without a usable model),
    the ``model`` path, ``io`` and ``index``, and ``warning``: why the model found beside the
    file was not used (it cannot be read, or has no such input or output)."""

    type: DeclaredType | None = None
    model: str | None = None
    io: IO | None = None
    index: int | None = None
    warning: str | None = None


def declared_for(file: str | os.PathLike[str] | None, *,
                 model: str | os.PathLike[str] | None = None, io: IO | None = None,
                 index: int | None = None, find: bool = True) -> Declared:
    """The declared type of a value file, from ``model`` or from the model found in the
    ``test_data_set_N/input_K.pb`` layout (``find``).

    The one rule for every command: a model the caller names must be usable (its
    DecodeError or OSError propagates: refuse); a model merely found beside the file
    that cannot be used is left out, and ``warning`` says why (fall back to no model).
    """
    if io not in (None, "input", "output"):
        raise ValueError(f"io must be 'input' or 'output', not {io!r}")
    if model is not None:
        if io is None or index is None:
            raise ValueError("a model needs the input or output index (io and index)")
        path = os.fspath(model)
        return Declared(read_model_types(path).declared(io, index), path, io, index)
    if file is None or not find:
        return Declared()
    found = find_model(file)
    if found is None:
        return Declared()
    path, io, index = os.fspath(found[0]), found[1], found[2]
    try:
        return Declared(read_model_types(path).declared(io, index), path, io, index)
    except NoSuchValueError as exc:  # a model that is fine, but not for this file
        return Declared(None, path, io, index,
                        f"{exc}: the file's type is not checked against it")
    except (DecodeError, OSError) as exc:
        return Declared(None, path, io, index,
                        f"{exc}; the model is ignored and the value read without a declared type")
