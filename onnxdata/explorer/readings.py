"""The explorer: which messages a file's bytes can be, and what they say byte by byte.

A ``.pb`` file does not say which message it holds, and the same bytes can be
several. ``readings(data)`` tries all five: for each, whether the wire format
holds (the engine's walk raises no ``DecodeError``), whether the value is valid
(the engine applies the rules of ``onnxdata.rules.validation`` as it walks: the very
problems ``validate(load(data, kind))`` and ``read`` give), and a one-line
summary made from wire facts. ``byte_table`` lays a reading out field by field,
the way the format notes do, as a view over the same walk. ``explore`` adds
what a model declares.

Nothing is parsed with protobuf and nothing is gathered per field: memory is
bounded by nesting depth whatever the file's size, and a file is read with
``os.pread`` (``onnxdata.wire.source``), never mapped, so a file changed by another
process during the call gives ``DecodeError``, never SIGBUS.
"""

from __future__ import annotations

import mmap
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Final

from onnxdata.core.limits import MAX_DEPTH
from onnxdata.core.messages import KIND_OF_MESSAGE, KindName
from onnxdata.engine.engine import Engine
from onnxdata.errors import Problem, no_memory_error
from onnxdata.explorer.table import DEFAULT_ROWS, ByteRow, rows
from onnxdata.model.file import Declared, declared_for
from onnxdata.model.type_walk import declared_problems
from onnxdata.model.types import IO, DeclaredType, type_problems_reference
from onnxdata.rules.common import MAX_PROBLEMS
from onnxdata.wire.field_tree import MESSAGE_NAMES, Fit, Misfit, field_tree
from onnxdata.wire.format import WireBuffer, WireError
from onnxdata.wire.source import Source, byte_buffer

__all__ = ["Exploration", "Reading", "ambiguity", "byte_table", "choose_kind", "explore",
           "kind_of_message", "message_of_kind", "other_valid", "readings", "unmerged_choice"]

_MESSAGE_OF: Final[dict[str, str]] = {kind: name for name, kind in KIND_OF_MESSAGE.items()}
_ORDER: Final = {name: i for i, name in enumerate(MESSAGE_NAMES)}


def kind_of_message(message: str) -> KindName:
    """"SequenceProto" -> "sequence" (and a kind name stays itself)."""
    if message in _MESSAGE_OF:
        return message  # type: ignore[return-value]
    try:
        return KIND_OF_MESSAGE[message]
    except KeyError:
        raise ValueError(f"unknown message {message!r}: expected one of "
                         f"{', '.join(MESSAGE_NAMES)}") from None


def message_of_kind(kind: str) -> str:
    """"sequence" -> "SequenceProto" (and a message name stays itself)."""
    return _MESSAGE_OF[kind_of_message(kind)]


@dataclass(frozen=True)
class Reading:
    """One way to read the bytes: as ``kind`` (a message name such as "SequenceProto").

    ``well_formed``: the wire format holds; if not, ``misfit`` says why and at
    which byte. ``valid``: the value also passes validation; ``problems`` lists
    what does not (empty when valid or not well-formed; at most ``max_problems``
    then "…and N more problems"), ``problem_count`` how many there are in all.
    ``summary`` is one line about the value. ``fit`` walks the bytes again into
    a tree of every field (only for what needs one: a declared type's check).
    ``merged`` lists singular message fields the bytes give more than once, which
    protobuf merges into one (``(path, occurrences)``, the first few; ``merged_count``
    counts them all): a reading that holds only so is a weak one (a sequence of two
    maps is also an optional whose two ``map_value`` are merged).
    """

    kind: str
    well_formed: bool
    valid: bool
    problems: tuple[Problem, ...]
    summary: str
    misfit: Misfit | None
    source: Source = field(repr=False, compare=False)
    problem_count: int = 0
    max_depth: int = field(default=MAX_DEPTH, repr=False, compare=False)
    merged: tuple[tuple[str, int], ...] = ()
    merged_count: int = 0
    strays: bool = field(default=False, repr=False, compare=False)

    @property
    def kind_name(self) -> KindName:
        """The short kind name: "sequence", "optional", "map", "tensor", "sparse_tensor"."""
        return KIND_OF_MESSAGE[self.kind]

    def merged_text(self, most: int = 3) -> str:
        """The fields protobuf merges, as a line says them: "tensor_value given 6 times"
        (the first ``most``, then "and N more"); "" where none is."""
        shown = ", ".join(f"{p or 'the message'} given {n} times"
                          for p, n in self.merged[:most])
        more = self.merged_count - min(most, len(self.merged))
        return shown + (f" and {more} more" if more > 0 else "")

    @cached_property
    def fit(self) -> Fit:
        return field_tree(self.source, self.kind, max_depth=self.max_depth)

    def type_problems(self, declared: DeclaredType) -> list[Problem]:
        """How the value disagrees with a model's ``declared`` type: a layout group at a
        time over the compiled walk (``model.type_walk``) where the field tree is whole (the
        walk met no field its message lacks, of another wire type, or nested too deep:
        ``strays``), else by the reference over ``fit``."""
        if self.well_formed and not self.strays:
            found = declared_problems(self.source, self.kind_name, declared,
                                      max_depth=self.max_depth)
            if found is not None:
                return found
        return type_problems_reference(self.fit.root, declared)

    def as_json(self) -> dict[str, Any]:
        m = self.misfit
        return {
            "kind": self.kind_name,
            "message": self.kind,
            "well_formed": self.well_formed,
            "valid": self.valid,
            "problems": [{"path": p.path, "message": p.message} for p in self.problems],
            "problem_count": self.problem_count,
            "summary": self.summary,
            "misfit": None if m is None else {"offset": m.offset, "path": m.path,
                                              "reason": m.reason},
            "merged": [{"path": p, "occurrences": n} for p, n in self.merged],
            "merged_count": self.merged_count,
        }


def _source(data: WireBuffer | Source, what: str) -> Source:
    """The bytes to walk: a Source as it is, any other contiguous buffer as its bytes."""
    if isinstance(data, Source):
        return data
    return Source.of_buffer(byte_buffer(data, what))


@no_memory_error("data")
def readings(data: WireBuffer | Source, /, *,
             base_dir: str | os.PathLike[str] | None = None,
             max_depth: int = MAX_DEPTH,
             max_problems: int = MAX_PROBLEMS,
             progress: Callable[[float], None] | None = None) -> list[Reading]:
    """The five readings of ``data``, most plausible first.

    Valid readings come first (those that merge no singular field given more than
    once before those that do), then well-formed ones with the fewest problems,
    then those whose structure broke furthest into the bytes. Ties keep the
    order SequenceProto, OptionalProto, MapProto, TensorProto, SparseTensorProto.
    Bad bytes never raise: they give readings that say what broke and where.
    ``progress`` is called with the fraction of the work done, from 0 to 1.
    """
    src = _source(data, "readings")
    out = []
    for i, name in enumerate(MESSAGE_NAMES):
        out.append(reading(src, name, base_dir=base_dir, max_depth=max_depth,
                           max_problems=max_problems))
        if progress is not None:
            progress((i + 1) / len(MESSAGE_NAMES))
    out.sort(key=_plausibility)
    return out


def reading(data: WireBuffer | Source, kind: str, /, *,
            base_dir: str | os.PathLike[str] | None = None,
            max_depth: int = MAX_DEPTH,
            max_problems: int = MAX_PROBLEMS) -> Reading:
    """One reading of ``data`` as ``kind`` (message or kind name)."""
    name = message_of_kind(kind)
    src = _source(data, "reading")
    engine = Engine(src, base_dir=Path(base_dir) if base_dir is not None else None,
                    max_depth=max_depth, summaries=True, max_problems=max_problems)
    try:
        out = engine.run(KIND_OF_MESSAGE[name])
    except WireError as e:
        misfit = Misfit(e.offset if e.offset is not None else 0, getattr(e, "path", ""),
                        e.reason)
        return Reading(name, False, False, (), f"does not fit: {misfit}", misfit, src,
                       max_depth=max_depth)
    probs = tuple(engine.problems.result())
    total = len(engine.problems.items) + engine.problems.dropped
    return Reading(name, True, not probs, probs, out.summary, None, src, total,
                   max_depth=max_depth, merged=tuple(engine.merged),
                   merged_count=engine.merged_count, strays=engine.strays)


def _plausibility(r: Reading) -> tuple[int, int, int]:
    if r.valid:  # one that holds only by merging a singular field given twice is weaker
        return (0, 1 if r.merged_count else 0, _ORDER[r.kind])
    if r.well_formed:
        return (1, r.problem_count, _ORDER[r.kind])
    assert r.misfit is not None
    return (2, -r.misfit.offset, _ORDER[r.kind])


@no_memory_error("data")
def byte_table(data: WireBuffer | Source, kind_or_reading: str | Reading, /, *,
               max_depth: int = MAX_DEPTH,
               limit: int | None = DEFAULT_ROWS) -> list[ByteRow]:
    """The rows of the byte table for reading ``data`` as one message.

    One row per field in wire order (a nested message's header row before its
    own rows), at most ``limit`` of them (None: all), then one row "… N more
    fields"; bytes that break the wire format end the table with a row saying
    what broke.
    """
    if isinstance(kind_or_reading, Reading):
        src, name = kind_or_reading.source, kind_or_reading.kind
    else:
        src, name = _source(data, "byte_table"), message_of_kind(kind_or_reading)
    return rows(src, name, limit=limit, max_depth=max_depth)


# --- exploring a file, with or without a model --------------------------------------------

@dataclass
class Exploration:
    """What ``explore`` found: the readings, the declared type if a model was given or
    found, the chosen reading, and how the value disagrees with the declared type."""

    file: str
    size: int
    readings: list[Reading]
    data: Source = field(repr=False)
    declared: DeclaredType | None = None
    model: str | None = None
    io: IO | None = None
    index: int | None = None
    chosen: Reading | None = None
    type_problems: list[Problem] = field(default_factory=list)
    model_warning: str | None = None
    #: Why the chosen reading was taken when that is not obvious (the only valid reading
    #: that needs no merging), in one line; None otherwise.
    note: str | None = None

    @property
    def valid_readings(self) -> list[Reading]:
        return [r for r in self.readings if r.valid]

    @property
    def mismatch(self) -> str | None:
        """"valid SequenceProto, but the model declares tensor(float)": the declared kind
        does not read validly and another kind does (None otherwise)."""
        if self.declared is None:
            return None
        declared = message_of_kind(self.declared.kind)
        if any(r.kind == declared and r.valid for r in self.readings):
            return None
        valid = self.valid_readings
        plain = [r for r in valid if not r.merged_count]  # merging ones only if all merge
        others = [r.kind for r in (plain or valid)]
        if not others:
            return None
        return f"valid {' or '.join(others)}, but the model declares {self.declared}"

    @property
    def ambiguous(self) -> bool:
        """Several readings are valid and neither a model nor the caller said which: the
        bytes are all of them (a one-element sequence is also an optional)."""
        return self.chosen is None and len(self.valid_readings) > 1

    def as_json(self) -> dict[str, Any]:
        """Kinds are short names everywhere ("sequence"); each reading also gives its
        ``message`` name ("SequenceProto")."""
        return {
            "file": self.file,
            "size": self.size,
            "readings": [r.as_json() for r in self.readings],
            "declared": None if self.declared is None else self.declared.kind,
            "declared_type": None if self.declared is None else str(self.declared),
            "model": self.model,
            "io": self.io,
            "index": self.index,
            "model_warning": self.model_warning,
            "chosen": None if self.chosen is None else self.chosen.kind_name,
            "note": self.note,
            "mismatch": self.mismatch,
            "ambiguous": self.ambiguous,
            "valid_readings": [r.kind_name for r in self.valid_readings],
            "type_problems": [{"path": p.path, "message": p.message}
                              for p in self.type_problems],
        }

    def byte_table(self, limit: int | None = DEFAULT_ROWS) -> list[ByteRow]:
        """The byte table of the chosen reading (or [] when none was chosen), at most
        ``limit`` field rows (None: all)."""
        return [] if self.chosen is None else byte_table(self.data, self.chosen, limit=limit)


def unmerged_choice(valid: list[Reading]) -> tuple[Reading, str] | None:
    """Of several valid readings, the only one that merges no singular field given more than
    once, and the line that says so; None when there is no such single one (the bytes
    are truly the same: a one-element sequence is also an optional)."""
    plain = [r for r in valid if not r.merged_count]
    if len(valid) < 2 or len(plain) != 1:
        return None
    pick = plain[0]
    why = "; ".join(f"{r.kind} only by merging {_merges(r)}" for r in valid if r is not pick)
    return pick, (f"read as {pick.kind}, the only valid reading that needs no merging "
                  f"(also valid: {why})")


def _merges(r: Reading) -> str:
    path, n = r.merged[0]
    more = r.merged_count - 1
    return f"{path or 'the message'} given {n} times" + (f" and {more} more" if more else "")


def other_valid(data: WireBuffer | Source, kind: str) -> str:
    """The valid readings of ``data`` other than ``kind``'s, "TensorProto or ..." (those
    that need no merging, where one does), or "" where there is none or ``kind``'s own is
    valid: what a file whose model declares ``kind`` is said to be instead."""
    mine = message_of_kind(kind)
    found = readings(data)
    if any(r.valid and r.kind == mine for r in found):
        return ""
    valid = [r for r in found if r.valid]
    plain = [r for r in valid if not r.merged_count]  # as Exploration.mismatch says it
    return " or ".join(r.kind for r in (plain or valid))


def choose_kind(file: str | os.PathLike[str] | None, data: WireBuffer | Source, *,
                declared: Declared | None = None, how: str = 'kind="{}"',
                progress: Callable[[float], None] | None = None,
                strict: bool = False,
                note: Callable[[str], None] | None = None) -> KindName:
    """The kind to read a file as when none is given: the model's declared kind in the
    ``test_data_set_N/input_K.pb`` layout, else the only valid reading.

    ``declared`` is the model lookup when the caller made it (and showed its
    warning); otherwise it is made here and a model found but unusable is left
    out with a UserWarning. Several valid readings (a one-element sequence is also
    an optional) raise DecodeError naming each and how to pick one (``how``
    formats a kind name, e.g. ``--kind {}``), unless exactly one of them merges no
    singular field given more than once (a sequence of two maps is also an optional
    with its maps merged): that one is taken and ``note`` is called with a line that
    says so. With none valid the first
    well-formed one is taken (its problems are what to show), or with ``strict``
    (``load`` and ``read``, which promise the only valid reading) DecodeError
    says so, and with none well-formed DecodeError names the nearest. An empty file
    is no message's valid bytes: DecodeError says it is empty.
    ``progress`` is as for ``readings``.
    """
    from onnxdata.errors import DecodeError

    name = "<bytes>" if file is None else os.fspath(file)
    if declared is None:
        declared = declared_for(file)
        if declared.warning is not None:
            warnings.warn(declared.warning, UserWarning, stacklevel=3)
    if declared.type is not None:
        return declared.type.kind
    base = None if file is None else Path(name).parent
    rs = readings(data, base_dir=base, progress=progress)
    valid = [r for r in rs if r.valid]
    if len(valid) == 1:
        return valid[0].kind_name
    plain = unmerged_choice(valid)
    if plain is not None:
        if note is not None:
            note(plain[1])
        return plain[0].kind_name
    if valid:
        raise DecodeError(f"{ambiguity(valid)}: say which with "
                          f"{' or '.join(how.format(r.kind_name) for r in valid)}", source=name)
    formed = [r for r in rs if r.well_formed]
    if rs and rs[0].source.size == 0:
        raise DecodeError("the file is empty (0 bytes): no data message is valid empty",
                          source=name)
    if formed and strict:
        problems = formed[0].problems
        first = f": {problems[0]}" if problems else ""
        raise DecodeError(f"no kind reads it validly; nearest is {formed[0].kind}{first}",
                          source=name)
    if formed:
        return formed[0].kind_name
    best = rs[0]
    assert best.misfit is not None
    raise DecodeError(f"no message fits; nearest is {best.kind}: {best.misfit.reason}",
                      source=name, offset=best.misfit.offset)


def ambiguity(valid: list[Reading]) -> str:
    """"valid as SequenceProto or OptionalProto (the same bytes)"."""
    return f"valid as {' or '.join(r.kind for r in valid)} (the same bytes)"


def open_buffer(path: str | os.PathLike[str]) -> Source:
    """A file's bytes, read with pread as the walk needs them: nothing is read up front,
    nothing is mapped (a file changed meanwhile gives DecodeError, never SIGBUS)."""
    return Source.of_file(os.fspath(path), "pread")


@no_memory_error("source")
def explore(source: str | os.PathLike[str] | WireBuffer | Source, *,
            model: str | os.PathLike[str] | None = None, io: IO | None = None,
            index: int | None = None, reading: str | None = None,
            base_dir: str | os.PathLike[str] | None = None,
            find: bool = True, progress: Callable[[float], None] | None = None
            ) -> Exploration:
    """Readings of a file (or buffer), with the model's declared type when one is given
    or found from the ``test_data_set_N/input_K.pb`` layout (``find``).

    The chosen reading is ``reading`` if given, else the declared kind's, else the
    only valid one; with several valid readings none is chosen and the exploration
    is ``ambiguous``. A ``model`` given here must be usable (its OSError or
    DecodeError propagates); a model found beside the file that is not usable is
    left out, and ``model_warning`` says why. ``progress`` is as for ``readings``.
    """
    file: str | None = None
    if isinstance(source, (bytes, bytearray, memoryview, mmap.mmap, Source)):
        data = _source(source, "explore")
        name = "<bytes>" if not isinstance(source, Source) else source.name
    else:
        name = file = os.fspath(source)
        data = open_buffer(name)
        if base_dir is None:
            base_dir = Path(name).parent
    declared = declared_for(file, model=model, io=io, index=index, find=find)
    result = Exploration(name, data.size, readings(data, base_dir=base_dir, progress=progress),
                         data,
                         declared.type, declared.model, declared.io, declared.index,
                         model_warning=declared.warning)
    data.finish()
    by_kind = {r.kind: r for r in result.readings}
    if reading is not None:
        result.chosen = by_kind[message_of_kind(reading)]
    elif result.declared is not None:
        result.chosen = by_kind[message_of_kind(result.declared.kind)]
    else:
        valid = result.valid_readings
        plain = unmerged_choice(valid)
        if plain is not None:
            result.chosen, result.note = plain
        else:
            result.chosen = valid[0] if len(valid) == 1 else None
    if result.declared is not None and result.chosen is not None and result.chosen.well_formed:
        result.type_problems = result.chosen.type_problems(result.declared)
    return result
