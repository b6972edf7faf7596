"""A sequence's element values built a layout at a time (issue 18).

Elements of one layout (``_layouts.layout_groups``) differ only in the contents the layout
leaves out: names and doc strings (in no value), raw_data, float_data and double_data
bytes, string_data, a map's only string key, and a map's int keys when all are in range
and distinct (as many in each member). So once the engine has read a group's first
element, every other element's value is that value with its own contents:
``_layouts.layout_spans`` gives the first one's message tree and every member's contents,
and ``layout_values`` builds the values a field at a time, each tensor's arrays for the
whole group in one numpy call. The value it builds for the first element must equal the
engine's, or the caller reads the elements one by one, as it does for merged messages,
sparse tensors inside other elements, and anything else this module does not build.

Elements that are tensors with external data are built too: a layout keeps external_data
byte for byte, so every member names the same bytes of the same file as the first, whose
read checked them (inside base_dir, a regular file long enough); each member's value is
the first's bytes again, taken from the call's budget (``_spend_external``) before any is
made.
"""

from __future__ import annotations

import math
import sys
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from onnxdata.convert.common import SparseParts, from_le_bytes
from onnxdata.core.budget import budget_mark, get_densify_limit, spend
from onnxdata.core.dtypes import DATA_TYPES, KEY_TYPES, STRING, raw_nbytes
from onnxdata.wire.compiled import layout_spans
from onnxdata.wire.decode import decode_varints
from onnxdata.wire.source import Source

__all__ = ["dense_rows", "group_trees", "layout_values"]

_U64 = np.dtype(np.uint64)
_TENSOR, _SPARSE, _SEQUENCE, _MAP, _OPTIONAL, _INDICES = 1, 2, 3, 4, 5, 6
_OPEN: Final = 1 << 16
_CLOSE: Final = 2 << 16


def _role(kind: int, number: int, wire_type: int) -> int:
    return (kind << 8) | (number << 3) | wire_type


_DATA_TYPE: Final = 2 << 3  # (tags: a tensor's data_type and data_location, in the tree)
_DATA_LOCATION: Final = 14 << 3
_RAW: Final = _role(_TENSOR, 9, 2)
_FLOATS: Final = frozenset({_role(_TENSOR, 4, 2), _role(_TENSOR, 4, 5)})
_DOUBLES: Final = frozenset({_role(_TENSOR, 10, 2), _role(_TENSOR, 10, 1)})
_STRINGS: Final = _role(_TENSOR, 6, 2)
_STRING_KEY: Final = _role(_MAP, 4, 2)
_INT_KEY: Final = _role(_MAP, 3, 0)
#: The data types float_data and double_data hold as they stand (complex: pairs).
_FLOAT_CODES: Final = {1, 14}
_DOUBLE_CODES: Final = {11, 15}


@dataclass
class _Node:
    """One message of a group's tree: its kind, a map's key type or a tensor's data type,
    its child messages, and its contents (role, column in the spans) in wire order."""

    kind: int
    code: int = 0
    external: bool = False  # a tensor's data elsewhere (built only as an element itself)
    children: list[_Node] = field(default_factory=list)
    spans: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class _Group:
    """A group's ``n`` members' contents: ``starts[j]``/``ends[j]`` are every member's
    content ``j`` in ``buf``, which starts at file offset ``base``. A column apiece, each
    dropped (``drop``) once its node's values are built: the whole table of 57 maps of
    1,040 contents was 1.4 MB held beside the value it became (the peak: 12.7x the file,
    was 10.4x before those maps were grouped)."""

    buf: npt.NDArray[np.uint8]
    base: int
    n: int
    starts: list[npt.NDArray[np.int64] | None]
    ends: list[npt.NDArray[np.int64] | None]
    whole: npt.NDArray[np.uint8] | None
    _bytes: bytes | None = None

    def span(self, j: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Every member's content ``j``: its starts and ends."""
        s, e = self.starts[j], self.ends[j]
        assert s is not None and e is not None  # (dropped only once its node is built)
        return s, e

    def spans(self, columns: list[int]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Contents ``columns`` of every member, a row per member (members x columns)."""
        got = [self.span(j) for j in columns]
        return (np.stack([s for s, _ in got], axis=1), np.stack([e for _, e in got], axis=1))

    def drop(self, columns: list[int]) -> None:
        """Let contents ``columns`` go: their node's values are built (or not built here)."""
        for j in columns:
            self.starts[j] = self.ends[j] = None

    def data(self) -> bytes:
        if self._bytes is None:
            self._bytes = self.buf.tobytes()
        return self._bytes

    def gather(self, columns: list[int]) -> npt.NDArray[np.uint8] | None:
        """Each member's contents ``columns`` joined, a row per member (None: unequal)."""
        parts = []
        for j in columns:
            s, e = self.span(j)
            width = int(e[0] - s[0])
            if not bool((e - s == width).all()):
                return None
            stride = int(s[1] - s[0]) if s.size > 1 else width
            if stride >= width and (s.size < 3 or bool((np.diff(s) == stride).all())):
                # at one stride (like elements): one strided copy, not an index per byte
                rows = np.lib.stride_tricks.as_strided(
                    self.buf[int(s[0]):], shape=(int(s.size), width), strides=(stride, 1),
                    writeable=False)
                parts.append(np.ascontiguousarray(rows))
            else:
                parts.append(self.buf[s[:, None] + np.arange(width)])
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)


def _tree(events: npt.NDArray[np.uint64]) -> _Node | None:
    """The first member's message tree from its events (None: a sparse tensor inside)."""
    stack: list[_Node] = []
    root: _Node | None = None
    column = 0
    for role, a, _ in events.tolist():
        if role & _OPEN:
            node = _Node(role & 0xFF, a)
            if node.kind == _SPARSE and stack:
                return None  # only an element's own: read budgets it (dense_rows)
            if stack:
                stack[-1].children.append(node)
            else:
                root = node
            stack.append(node)
        elif role == _CLOSE:
            stack.pop()
        elif role == _DATA_TYPE:
            stack[-1].code = a if a < 2**31 else a - 2**32
        elif role == _DATA_LOCATION:  # (an int32, as the engine reads it)
            stack[-1].external = a & 0xFFFFFFFF == 1
        else:
            stack[-1].spans.append((role, column))
            column += 1
    return root


def _buildable(node: _Node, root: bool = True) -> bool:
    """No external data but an element's own, no merged optional or map values: worth
    walking the first for."""
    if (node.external and not (root and node.kind == _TENSOR)) or (
            node.kind in (_OPTIONAL, _MAP) and len(node.children) > 1):
        return False
    return all(_buildable(child, False) for child in node.children)


def _rows(arr: npt.NDArray[Any], shape: tuple[int, ...], writeable: bool = False
          ) -> list[Any]:
    """The rows of ``arr`` (members x ...) as arrays of ``shape``, read-only unless
    ``writeable`` (``to_numpy``'s decoded float_data: copies, writable)."""
    arr = arr.reshape(arr.shape[0], *shape)
    arr.flags.writeable = writeable
    if not shape:
        return [arr[i, ...] for i in range(arr.shape[0])]
    return list(arr)


def _tensors(node: _Node, v0: Any, g: _Group) -> list[Any] | None:
    if not isinstance(v0, np.ndarray) or node.children or node.kind == _SPARSE:
        return None
    if node.external:
        return _external(node, v0, g.n)
    roles = {role for role, _ in node.spans}
    columns = [j for _, j in node.spans]
    dt = DATA_TYPES.get(node.code)
    if not roles:  # every member's value is the first's
        out = [v0.copy() for _ in range(g.n)]
        for arr in out:
            arr.flags.writeable = v0.flags.writeable
        return out
    if dt is None:
        return None
    if roles == {_RAW} and len(columns) == 1:
        return _raw(dt, v0, g, columns[0])
    if (roles <= _FLOATS and node.code in _FLOAT_CODES) or (
            roles <= _DOUBLES and node.code in _DOUBLE_CODES):
        rows = g.gather(columns)
        if rows is None or rows.shape[1] != v0.nbytes:
            return None
        return _rows(rows.view(np.dtype(dt.dtype).newbyteorder("<")).astype(dt.dtype,
                                                                            copy=False),
                     v0.shape, bool(v0.flags.writeable))
    if roles == {_STRINGS} and v0.dtype == object:
        data = g.data()
        out = []
        starts, ends = g.spans(columns)
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            arr = np.empty(len(s), dtype=object)
            arr[:] = [data[a:b] for a, b in zip(s, e, strict=True)]
            arr = arr.reshape(v0.shape)
            arr.flags.writeable = v0.flags.writeable
            out.append(arr)
        return out
    return None


def _external(node: _Node, v0: npt.NDArray[Any], n: int) -> list[Any] | None:
    """The values of ``n`` tensors whose external data is the first's (``v0``): each its own
    array, made as the engine makes it (engine.tensor.external_value), read-only: a view of
    read-only bytes, which ``to_numpy`` cannot make writable, or (a sub-byte type, which
    is unpacked) a new array."""
    dt = DATA_TYPES.get(node.code)
    if node.spans or dt is None or sys.byteorder != "little":
        return None  # (other contents besides: the tensor has problems, no value)
    if dt.sub_byte:
        out = [v0.copy() for _ in range(n)]
        for arr in out:
            arr.flags.writeable = False
        return out
    return _rows(np.frombuffer(v0.tobytes() * n, dtype=v0.dtype).reshape(n, *v0.shape),
                 v0.shape)


def _external_cost(trees: list[tuple[_Node, _Group]], firsts: list[Any]) -> int:
    """The bytes reading the external data of every element but each group's first takes
    from the call's budget, as ``wire.external.read_external`` takes them."""
    total = 0
    for (node, g), v0 in zip(trees, firsts, strict=True):
        dt = DATA_TYPES.get(node.code)
        if node.external and dt is not None and isinstance(v0, np.ndarray):
            total += (g.n - 1) * raw_nbytes(dt, int(v0.size))
    return total


def _spend_external(trees: list[tuple[_Node, _Group]], firsts: list[Any]) -> bool:
    """Take the bytes of the elements' external data (but the firsts', taken as they were
    read) from the call's budget: False, taking none, when they are over what is left, so
    the caller reads the elements one by one and names the element over it, as that walk
    does. (With no budget open each read is checked alone, and each is its first's.)"""
    cost = _external_cost(trees, firsts)
    if not cost:
        return True
    left = budget_mark()
    if left is None:
        return True
    if cost > left:
        return False
    spend(cost, get_densify_limit(), "", "external data", "reading external data")
    return True


def _raw(dt: Any, v0: npt.NDArray[Any], g: _Group, j: int) -> list[Any] | None:
    """Each member's raw_data as ``Engine`` reads it (engine.tensor._from_raw): views of the
    mapping where it can, else decoded from the joined bytes."""
    s, e = g.span(j)
    width = int(e[0] - s[0])
    if not bool((e - s == width).all()):
        return None
    count = v0.size
    if width == 0 and count == 0:  # empty tensors: views of one empty array of their own,
        # not of the file's buffer (or mapping), which each would keep alive for a user
        return _rows(np.empty((g.n, 0), v0.dtype), v0.shape, bool(v0.flags.writeable))
    if g.whole is not None and not dt.sub_byte and np.little_endian and \
            width == count * dt.dtype.itemsize:
        return _mapped(dt.dtype, v0.shape, g.whole, s + g.base)
    joined = g.gather([j])
    if joined is None:
        return None
    if not dt.sub_byte and np.little_endian and width == count * dt.dtype.itemsize:
        # the joined rows are the values: each member's array a row of them (its own bytes)
        return _rows(joined.view(dt.dtype), v0.shape, v0.flags.writeable)
    data = joined.tobytes()
    decoded = [from_le_bytes(data, dt, count, k * width).reshape(v0.shape) for k in range(g.n)]
    return decoded if v0.flags.writeable else [_read_only(arr) for arr in decoded]  # (read's)


def _mapped(dtype: np.dtype[Any], shape: tuple[int, ...], whole: npt.NDArray[np.uint8],
            at: npt.NDArray[np.int64]) -> list[Any]:
    """Arrays of ``dtype`` and ``shape`` at offsets ``at`` (ascending) of the mapping
    ``whole``, read-only views of it: one array a run of members at one stride, made
    directly (as_strided would keep two more objects and a dict alive per call, as the
    rows' base: 3.5 MB more for a 1 MB file of 58,000 tensors in groups of 16). Members
    of one layout are at one stride but where a content left out (a key, a name) changes
    length: maps of 16 int64 keys, 57 of them, are 2 or 3 runs, not 57 slices."""
    n = int(at.size)
    item = dtype.itemsize
    inner = [item]
    for d in reversed(shape[1:]):
        inner.insert(0, inner[0] * d)
    inner = inner[:len(shape)]
    steps = np.diff(at)
    # where the stride changes: a run of members at the stride steps[i] ends at the first
    # change past i (steps[k] is the stride from member k to k + 1)
    changes = [*(np.flatnonzero(steps[1:] != steps[:-1]) + 1).tolist(), n - 1]
    if 4 * len(changes) > n:  # runs of a few: a slice each is quicker (40,000 tensors
        # whose names have 7 lengths in turn: 42 ms, where runs of 1 to 3 took 63 ms)
        width = item * math.prod(shape)
        alone: list[Any] = []
        for a in at.tolist():
            arr = whole[a:a + width].view(dtype).reshape(shape)
            arr.flags.writeable = False
            alone.append(arr)
        return alone
    out: list[Any] = []
    i = 0
    while i < n:
        last = changes[bisect_right(changes, i)] if i < n - 1 else i
        rows = np.ndarray((last - i + 1, *shape), dtype=dtype, buffer=whole,
                          offset=int(at[i]), strides=(int(steps[i]) if last > i else item,
                                                      *inner))
        rows.flags.writeable = False
        out += list(rows) if shape else [rows[k, ...] for k in range(last - i + 1)]
        i = last + 1
    return out


def _read_only(arr: npt.NDArray[Any]) -> npt.NDArray[Any]:
    arr.flags.writeable = False
    return arr


def _keys(node: _Node, v0: dict[Any, Any], g: _Group) -> tuple[list[Any], bool] | None:
    """Every member's keys one after another, in wire order, as ``engine._map_value`` makes
    them, and whether each member's are the first's (None: not built here): its one string
    key, or its int keys (distinct and in range, as the layout says: ``len(v0)`` in every
    member), packed or not, decoded at once. (A flat list: a list per member cost 10 % of
    reading 40,000 one-key maps; maps of one set of keys, ZipMap's, share the first's.)"""
    roles = {role for role, _ in node.spans}
    columns = [j for _, j in node.spans]
    if roles == {_STRING_KEY} and node.code == STRING:
        if len(columns) != 1 or len(v0) != 1:
            return None
        data = g.data()
        s, e = g.span(columns[0])
        return [data[a:b] for a, b in zip(s.tolist(), e.tolist(), strict=True)], False
    if roles != {_INT_KEY} or node.code not in KEY_TYPES or node.code == STRING:
        return None
    width = len(v0)
    if not width:
        return [], True
    starts, ends = g.spans(columns)
    s, e = starts.ravel(), ends.ravel()  # member by member
    widths = e - s
    total = int(widths.sum())
    # every run's bytes joined: where each byte comes from, run by run
    at = np.repeat(s - (np.cumsum(widths) - widths), widths) + np.arange(total)
    values = decode_varints(g.buf[at])
    if values.size != g.n * width:
        return None
    if bool((values.reshape(g.n, width) == values[:width]).all()):
        return list(v0), True
    keys: list[Any] = values.view(np.int64).astype(DATA_TYPES[node.code].dtype).tolist()
    return keys, False


def _values(node: _Node, v0: Any, g: _Group) -> list[Any] | None:
    """Every member's value of ``node``, whose first member's is ``v0``; its contents'
    columns are dropped from ``g`` then, and its children (no other node reads them)."""
    try:
        return _node_values(node, v0, g)
    finally:  # (a node is built once: its tree and columns go as the value grows)
        g.drop([j for _, j in node.spans])
        node.children.clear()


def _node_values(node: _Node, v0: Any, g: _Group) -> list[Any] | None:
    n = g.n
    if node.kind in (_TENSOR, _INDICES):
        return _tensors(node, v0, g)
    if node.kind == _SPARSE:  # its parts (engine.Deferred's): the caller densifies them
        return _sparse(node, getattr(v0, "parts", None), g)
    if node.kind == _OPTIONAL:
        if node.spans or len(node.children) > 1:
            return None
        if not node.children:
            return [None] * n if v0 is None else None
        return _values(node.children[0], v0, g)
    if node.kind == _SEQUENCE:
        columns = _columns(node, v0, g)
        if columns is None:
            return None
        if len(columns) == 1:
            return [[v] for v in columns[0]]
        return list(map(list, zip(*columns, strict=True))) if columns else \
            [[] for _ in range(n)]
    if node.kind == _MAP and isinstance(v0, dict) and len(node.children) == 1:
        # each member's dict made from its values' columns, not from a list of each
        columns = _columns(node.children[0], list(v0.values()), g)
        if columns is None:
            return None
        if not node.spans:  # no key, or keys kept in the layout: the first's
            keys = list(v0)
            return list(map(dict, map(zip, repeat(keys), zip(*columns, strict=True)))) \
                if keys else [{} for _ in range(n)]
        got = _keys(node, v0, g)
        if got is None:
            return None
        flat, same = got
        width = len(v0)
        if same or not width:  # every member's keys the first's
            return list(map(dict, map(zip, repeat(flat), zip(*columns, strict=True)))) \
                if width else [{} for _ in range(n)]
        if width == 1:
            return [{k: v} for k, v in zip(flat, columns[0], strict=True)]
        return list(map(dict, map(zip, zip(*[iter(flat)] * width, strict=True),
                                  zip(*columns, strict=True))))
    return None


def _columns(node: _Node, v0: Any, g: _Group) -> list[list[Any]] | None:
    """A sequence's members' values a column (element) at a time: column ``i`` holds every
    member's element ``i``; ``v0`` is the first member's list."""
    if node.kind != _SEQUENCE or node.spans or not isinstance(v0, list) or \
            len(v0) != len(node.children):
        return None
    columns = []
    for child, value in zip(node.children, v0, strict=True):
        got = _values(child, value, g)
        if got is None:
            return None
        columns.append(got)
    return columns


def _sparse(node: _Node, parts: SparseParts | None, g: _Group) -> list[Any] | None:
    kinds = [child.kind for child in node.children]
    if parts is None or node.spans or sorted(kinds) != [_TENSOR, _INDICES][:len(kinds)]:
        return None
    got = _tensors(node.children[kinds.index(_TENSOR)], parts.values, g) if kinds else None
    if got is None:
        return None
    return [SparseParts(values, parts.indices, parts.shape) for values in got]


def dense_rows(parts: list[SparseParts]) -> list[npt.NDArray[Any]]:
    """The dense arrays of sparse tensors of one layout (one indices, one shape) as
    ``densify`` makes them, read-only, in one numpy call; their bytes already spent."""
    first = parts[0]
    shape = first.shape
    total = math.prod(shape)
    n = len(parts)
    dtype = first.values.dtype
    out = np.full((n, total), b"", dtype=object) if dtype.kind == "O" else \
        np.zeros((n, total), dtype=dtype)
    indices = first.indices
    if indices.ndim == 2:
        linear = (np.ravel_multi_index(tuple(indices.T), shape) if shape
                  else np.zeros(len(indices), dtype=np.intp))
    else:
        linear = indices
    if linear.size:
        out[:, linear] = np.stack([p.values for p in parts])
    return _rows(out, shape)


def _same(a: Any, b: Any) -> bool:
    """``a`` and ``b`` are the same value: types, dtypes, shapes, flags, bytes, keys."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape or \
                a.flags.writeable != b.flags.writeable:
            return False
        if a.dtype == object:
            return bool(a.tolist() == b.tolist())
        return bool(a.tobytes() == b.tobytes())
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, bytes, str)):
        return bool(a == b)
    if isinstance(a, dict):
        ka, kb = list(a), list(b)
        return len(ka) == len(kb) and all(type(x) is type(y) and x == y
                                          for x, y in zip(ka, kb, strict=True)) and \
            all(_same(a[k], b[k]) for k in ka)
    return a is None and b is None


def group_trees(src: Source, kind: int, depth: int, starts: npt.NDArray[np.uint64],
                ends: npt.NDArray[np.uint64], ids: npt.NDArray[np.int32], groups: int
                ) -> list[tuple[_Node, _Group]] | None:
    """Each group's tree and members' contents, or None where one is not built here."""
    lo, hi = int(starts[0]), int(ends[-1])
    buf = src.u8(lo, hi)
    whole = src.whole()
    order = np.argsort(ids, kind="stable").astype(np.int64)
    bounds = np.concatenate([[0], np.cumsum(np.bincount(ids, minlength=groups))]).tolist()
    out = []
    for g in range(groups):
        members = order[bounds[g]:bounds[g + 1]]
        got = layout_spans(buf, lo, starts, ends, members, kind, depth)
        if got is None:
            return None
        events, spans = got
        node = _tree(np.frombuffer(events, dtype=_U64).reshape(-1, 3))
        if node is None or not _buildable(node):
            return None
        if members.size == 1:  # its value is the engine's (``_members``): no tree kept
            node.children.clear()
            out.append((node, _Group(buf, lo, 1, [], [], whole)))
            continue
        # a column apiece (contents x members), each its own array, so each can go
        table = np.frombuffer(spans, dtype=_U64).reshape(members.size, -1, 3)
        starts_t = table[:, :, 1].T.astype(np.int64)
        ends_t = table[:, :, 2].T.astype(np.int64)
        del table
        out.append((node, _Group(buf, lo, int(members.size),
                                 [row.copy() for row in starts_t],
                                 [row.copy() for row in ends_t], whole)))
    return out


def layout_values(trees: list[tuple[_Node, _Group]], ids: npt.NDArray[np.int32],
                 firsts: list[Any]) -> list[Any] | None:
    """Every element's value, from its group's tree and first value (``firsts``, by
    group), in document order; None where one group's cannot be built here, or their
    external data is over the call's budget (``_spend_external``)."""
    if not _spend_external(trees, firsts):
        return None
    built = []
    for (node, g), v0 in zip(trees, firsts, strict=True):
        got = _members(node, g, v0)
        if got is None:
            return None  # (before the other groups are built)
        built.append(got)
    if len(built) == 1:  # one layout: the values are in document order already
        return built[0]
    order = np.argsort(ids, kind="stable").tolist()
    out: list[Any] = [None] * len(order)
    at = 0
    for got in built:
        for i, value in zip(order[at:at + len(got)], got, strict=True):
            out[i] = value
        at += len(got)
    return out


def _members(node: _Node, g: _Group, v0: Any) -> list[Any] | None:
    """One group's values, its first the engine's own ``v0``; None where the value built
    for the first is not ``v0`` (the guard) or cannot be built."""
    if g.n == 1:  # the engine's value is the group's only one: nothing to build or check
        return [v0]
    got = _values(node, v0, g)
    if got is None or not _same(got[0], getattr(v0, "parts", v0)):
        return None
    got[0] = v0
    return got
