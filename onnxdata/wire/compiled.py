"""The compiled loops' side of the walk (``_walk.pyx``, ``_layouts.pyx``): a schema as the
loop reads it, the windows of a message handed to it, a sequence's elements grouped by
layout, and the byte table's counts.

The loops are loaded by ``loops`` (the one switch); where they are off, each function here
that can decline says None and ``walk.scan_reference``, the Python walk, does the work.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from onnxdata.wire.fields import fields
from onnxdata.wire.format import I32, I64, LEN, SGROUP, VARINT, WireError, iter_fields
from onnxdata.wire.loops import layout_loop, walk_loop
from onnxdata.wire.source import Source

Batch = tuple[npt.NDArray[np.uint64], npt.NDArray[np.uint64]]

__all__ = ["COUNT_BYTES", "LAYOUT_KINDS", "PREFIX_BYTES", "compiled_scan",
           "count_fields", "count_prefix",
           "element_groups", "layout_spans", "short_runs"]


_LOOP: Final = walk_loop
_LAYOUTS: Final = layout_loop
#: The loop's kinds: wire/walk.py's SCALAR ... FIXED64S, and data_location's closed enum.
_ENUM: Final = 6
#: Bytes a field's head can need (tag of 5 bytes + varint of 10), with room.
_HEAD: Final = 32
_TABLES: dict[int, tuple[array[int], list[str | None]]] = {}


def _table(schema: dict[int, tuple[str, int]]) -> tuple[array[int], list[str | None]]:
    """A schema as the compiled loop reads it: kinds and names indexed by field number."""
    got = _TABLES.get(id(schema))
    if got is None:
        top = max(schema) + 1
        kinds = array("b", [-1] * top)
        names: list[str | None] = [None] * top
        for number, (name, kind) in schema.items():
            kinds[number] = _ENUM if name == "data_location" else kind
            names[number] = name
        got = _TABLES[id(schema)] = (kinds, names)  # the schemas are wire/walk.py's constants
    return got


def compiled_scan(src: Source, ranges: Any, batches: Callable[[], Iterable[Batch]],
                  schema: dict[int, tuple[str, int]], out: Any, limit: int,
                  depth: int = 0) -> bool:
    """Add the fields of one message (``ranges``, or the ``batches()`` of its occurrences
    when they are not kept; at ``depth``) to ``out`` (a ``walk.Fields``) by the compiled
    loop; False where it stops (a group, bad bytes), and ``walk.scan_reference`` then walks
    the message again and says why."""
    assert _LOOP is not None
    kinds, names = _table(schema)
    memory = src.in_memory()
    if memory is not None and type(ranges) is list and len(ranges) == 1:
        start, end = ranges[0]  # (all in memory: one call, no window to read)
        return bool(_LOOP.scan(memory, 0, start, end, kinds, names, out, limit, depth) == end)
    if ranges is None:  # past COMPACT_PIECES: found again as arrays, a batch at a time
        return all(_scan_many(src, np.asarray(s, np.uint64), np.asarray(e, np.uint64), kinds,
                              names, out, limit, depth) for s, e in batches())
    starts = getattr(ranges, "starts", None)  # a RangeStore: many occurrences
    if starts is not None and len(starts):
        return _scan_many(src, np.frombuffer(starts, np.uint64),
                          np.frombuffer(ranges.ends, np.uint64), kinds, names, out, limit,
                          depth)
    for start, end in ranges:  # (a loop, not all() of a generator: most are one range)
        if not _scan_windows(src, start, end, kinds, names, out, limit, depth):
            return False
    return True


def _scan_many(src: Source, starts: npt.NDArray[np.uint64], ends: npt.NDArray[np.uint64],
               kinds: array[int], names: list[str | None], out: Any, limit: int,
               depth: int = 0) -> bool:
    """Many occurrences (in wire order) by the compiled loop: one call for them all where the
    source is in memory, else by pread as many as fit in _SCAN_BYTES (at least one) a call."""
    assert _LOOP is not None
    n = int(starts.size)
    if not n:
        return True
    buf, base = src.window(int(starts[0]), int(starts[0]))
    if base == 0 and len(buf) == src.size:
        return bool(_LOOP.scan_many(buf, 0, starts, ends, kinds, names, out, limit, depth))
    if (ends < starts).any() or (starts[1:] < ends[:-1]).any():
        return False  # not in wire order (never from a walk): the Python walk's
    first = 0
    while first < n:
        lo = int(starts[first])
        stop = max(first + 1, int(np.searchsorted(ends, np.uint64(lo + _SCAN_BYTES),
                                                  side="right")))
        hi = int(ends[stop - 1])
        if hi - lo > _SCAN_BYTES:  # one big occurrence: read as it goes
            if not _scan_windows(src, lo, int(ends[first]), kinds, names, out, limit, depth):
                return False
        elif not _LOOP.scan_many(src.read(lo, hi), lo, starts[first:stop], ends[first:stop],
                                 kinds, names, out, limit, depth):
            return False
        first = stop
    return True


def _scan_windows(src: Source, start: int, end: int, kinds: array[int],
                  names: list[str | None], out: Any, limit: int, depth: int = 0) -> bool:
    """One occurrence by the compiled loop, its bytes read (or viewed) as it goes: where
    the loop stops at the start of its window (a group it cannot skip within it), the
    next window is twice as wide, up to the message's end."""
    assert _LOOP is not None
    pos = start
    want = _HEAD
    while pos < end:
        buf, base = src.window(pos, min(end, pos + want))
        got = _LOOP.scan(buf, base, pos, end, kinds, names, out, limit, depth)
        if got < 0:
            return False
        want = _HEAD if got > pos else 2 * max(want, base + len(buf) - pos)
        pos = got
    return True


#: Many occurrences of a message within this many bytes are read at once for the loop.
_SCAN_BYTES: Final = 1 << 24
#: The layout kinds of ``_layouts.layout_groups``, by element kind.
LAYOUT_KINDS: Final = {"tensor": 1, "sparse_tensor": 2, "sequence": 3, "map": 4, "optional": 5}
#: Elements bigger than this on average are walked one by one: their walk is mostly their
#: payload, and the layouts would read every payload byte once more (a pread copy: 1.6 us
#: for 16 KiB, where walking an element alone costs about 5 us of Python; at 4096, a
#: sequence of 10,000 float32[1024] was read in 51 ms, now 7).
GROUP_MEAN: Final = 16384
#: ... and containers bigger than this: a sequence, map or optional is two messages or
#: more, each about 5 us walked alone, and its layout skips the payloads in it (a map of
#: 1,024 tensors of 2 floats is 17.7 KB: walked alone, 57 of them in a sequence cost 2.5x
#: the time of one group).
GROUP_MEAN_CONTAINERS: Final = 65536
#: Bytes of elements read (pread or a view) per call of the compiled loop.
_GROUP_CHUNK: Final = 1 << 24


def element_groups(src: Source, starts: npt.NDArray[np.uint64], ends: npt.NDArray[np.uint64],
                   kind: str, depth: int) -> tuple[npt.NDArray[np.int32], list[int]] | None:
    """The elements ``[starts[k], ends[k])`` (of one field, in wire order) of ``kind`` at
    ``depth``, grouped by layout (see ``_layouts.layout_groups``): each one's group number,
    and each group's first element. None where the compiled loop is off, the elements
    are big, or some element has no layout (bad wire, a group, too deep)."""
    n = int(starts.size)
    if _LAYOUTS is None or not n:
        return None
    mean = GROUP_MEAN if kind in ("tensor", "sparse_tensor") else GROUP_MEAN_CONTAINERS
    if int(ends[-1]) - int(starts[0]) > n * mean:
        return None
    ids = np.empty(n, dtype=np.int32)
    seen: dict[bytes, int] = {}
    firsts: list[int] = []
    lo = 0
    while lo < n:
        at = int(starts[lo])
        hi = max(lo + 1, int(np.searchsorted(ends, np.uint64(at + _GROUP_CHUNK), side="right")))
        buf = src.u8(at, int(ends[hi - 1]))
        if not _LAYOUTS.layout_groups(buf, at, starts, ends, lo, hi, LAYOUT_KINDS[kind], depth,
                                   seen, ids, firsts):
            return None
        lo = hi
    return ids, firsts  # by group number: as first met


def layout_spans(buf: npt.NDArray[np.uint8], base: int, starts: npt.NDArray[np.uint64],
                 ends: npt.NDArray[np.uint64], members: npt.NDArray[np.int64], kind: int,
                 depth: int) -> tuple[bytes, bytes] | None:
    """The first member's message tree and every member's contents that a value reads,
    for the elements ``members`` of one group (see ``_layouts.layout_spans``); ``buf`` holds
    the elements' bytes from file offset ``base``. None where the compiled loop is off."""
    if _LAYOUTS is None:
        return None
    got = _LAYOUTS.layout_spans(buf, base, starts, ends, members, kind, depth)
    return None if got is None else (got[0], got[1])


#: The root's first fields sampled by ``short_runs``, and the bytes it looks at.
_SAMPLE: Final = 64
_SAMPLE_BYTES: Final = 4096
#: A LEN value this long or longer is one Python step of the root's walk ...
_LONG_VALUE: Final = 128
#: ... and the compiled loop walks the root where this many of its first fields are.
_LONG_SEEN: Final = 4
#: Long values early in a big file that ``short_runs`` looks past, at most.
_HOPS: Final = 4


def short_runs(src: Source) -> bool:
    """Whether the root's first fields change field number every other field or more
    often, are numbers written one at a time (fixed-width, or varints: a map's keys as
    protobuf writes them), groups (unknown fields the Python walk skips a byte at a
    time) or fields of a tag of two bytes or more (field 16 and up: the Python walk's bulk
    runs are of one-byte tags), or are values of 128 bytes or more: the Python walk then takes
    them one Python step each (its bulk runs are of values with a one-byte length), and
    the compiled loop walks them faster. (Long runs of one short LEN field, a sequence's
    small elements or a tensor's strings, the Python walk takes in bulk.)
    In a file too big to read whole, a few fields then a long value (a tensor's name or
    payload) say nothing of the rest: the fields after it are sampled instead (up to
    _HOPS long values), so 16 MB of metadata_props after 16 MB of name and doc_string
    are the compiled loop's too (the Python walk took 0.8 s for 32 MB of them)."""
    if src.size <= _SAMPLE_BYTES:  # the whole root: the loop walks it for what sampling costs
        return True
    return _sampled(src, 0, _HOPS)


def _sampled(src: Source, at: int, hops: int) -> bool:
    """``short_runs`` of the fields from ``at``."""
    buf, base = src.window(at, min(src.size, at + _SAMPLE_BYTES))
    view = memoryview(buf)[at - base:]
    stop = min(len(view), _SAMPLE_BYTES)
    sample = sample_reference if _LOOP is None else _LOOP.sample
    count, changes, fixed, long, cut = sample(view, stop, _SAMPLE, _LONG_VALUE)
    if cut:  # a field past the sample's end: a long value's (a LEN field's length says so)
        long += src.size - at > _SAMPLE_BYTES and count < _SAMPLE
        if count < _SAMPLE // 4 and src.read_whole:
            return True  # values of 256 bytes and more in a file read whole: the loop's
        if count < _SAMPLE // 4 and hops:
            after = _past_field(src, at, count)
            if after is not None and after < src.size:
                return _sampled(src, after, hops - 1)
    if long >= _LONG_SEEN and 2 * long >= count:
        return True
    return count >= _SAMPLE // 4 and (2 * changes >= count or 2 * fixed >= count)


def _past_field(src: Source, at: int, skip: int) -> int | None:
    """Where the LEN field after the first ``skip`` fields from ``at`` ends (None where the
    bytes break first, or that field is not a LEN field)."""
    try:
        for k, (_, wt, _, _, end) in enumerate(fields(src, at, src.size)):
            if k == skip:
                return end if wt == LEN else None
    except WireError:
        return None
    return None


def sample_reference(buf: Any, end: int, most: int, long_value: int
                  ) -> tuple[int, int, int, int, bool]:
    """``_walk.sample`` in Python (its reference): the first ``most`` fields of
    ``buf[:end]``: how many, how many change field number, are numbers, groups or of
    field 16 and up, are LEN values of ``long_value`` bytes or more, and whether a field
    broke the wire format first."""
    count = changes = fixed = long = 0
    last = -1
    if most <= 0:
        return 0, 0, 0, 0, False
    try:
        for f in iter_fields(buf, 0, min(end, len(buf))):
            count += 1
            changes += f.number != last
            fixed += f.wire_type in (I32, I64, VARINT, SGROUP) or f.number >= 16
            long += f.wire_type == LEN and f.end - f.start >= long_value
            last = f.number
            if count == most:
                break
    except WireError:
        return count, changes, fixed, long, True
    return count, changes, fixed, long, False


#: The kinds of ``_layouts.count_fields``, by message name (7: no message fields).
_COUNTED: Final = {"TensorProto": 1, "SparseTensorProto": 2, "SequenceProto": 3,
                   "MapProto": 4, "OptionalProto": 5, "StringStringEntryProto": 7,
                   "TensorProto.Segment": 7}
#: Messages longer than this are counted by the Python walk, which reads a big tensor's
#: head, not its payload.
COUNT_BYTES: Final = 1 << 24


def count_fields(src: Source, start: int, end: int, message: str, depth: int) -> int | None:
    """The fields of the ``message`` at ``[start, end)`` and of the messages in it, as the
    byte table counts them (``table._Table.count``); None where the compiled loop is off,
    the message is big, or the Python count must say what is wrong."""
    kind = _COUNTED.get(message)
    if _LAYOUTS is None or kind is None or end - start > COUNT_BYTES:
        return None
    got = int(_LAYOUTS.count_fields(src.u8(start, end), kind, depth))
    return None if got < 0 else got


def count_prefix(src: Source, start: int, end: int, message: str, depth: int, window: int
                 ) -> tuple[int, int] | None:
    """``count_fields`` of the fields of the ``message`` at ``[start, end)`` that lie whole
    within its first ``window`` bytes (COUNT_BYTES at most), a window at a time for a
    message too long to read at once: ``(count, where they end)``; they end at ``start``
    where the first field must go to the Python count (a long one, or one it must say
    something of). None where the compiled loop is off."""
    kind = _COUNTED.get(message)
    if _LAYOUTS is None or kind is None:
        return None
    window = min(COUNT_BYTES, window)
    count, stop = _LAYOUTS.count_prefix(src.u8(start, min(end, start + window)), kind, depth)
    return int(count), start + int(stop)


#: ``count_prefix``'s first window and its largest: a window doubles while the fields fill
#: it, so a big tensor's raw_data (left to the Python count, which reads its head, not its
#: payload) costs a small read, and many small fields few calls.
PREFIX_BYTES: Final = (1 << 16, 1 << 20)
