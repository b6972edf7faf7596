"""The TensorProto rules: dims and the shapes numpy can make, which storage and how many
entries, typed entries within their type's range, and external data."""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Mapping, Sequence
from operator import itemgetter
from typing import Any, Final, Protocol, cast, runtime_checkable

import numpy as np

from onnxdata.core.dtypes import DATA_TYPES, raw_nbytes, typed_count, typed_entry_range
from onnxdata.core.messages import EXTERNAL
from onnxdata.core.paths import join_path
from onnxdata.errors import Problem
from onnxdata.rules.common import (
    EXTERNAL_KEYS,
    HUGE,
    MAX_REPORTED,
    TYPED_FIELDS,
    PathLike,
    capped_problems,
    count_text,
    dims_text,
    elements_text,
)

__all__ = [
    "FIELD_DTYPES",
    "MAX_NDIM",
    "KeyedEntries",
    "element_count",
    "entries_in_range",
    "external_data_clean",
    "external_data_problems",
    "external_data_report",
    "location_problems",
    "numpy_shape_problems",
    "positive_product",
    "repeated_array",
    "tensor_storage_problems",
    "typed_entry_problems",
]


# --------------------------------------------------------------------------- dims

def dims_problems(path: str, dims: Sequence[int]) -> list[Problem]:
    if not dims or _smallest(dims) >= 0:
        return []
    bad = [(i, f"{d} is negative; dims must be >= 0") for i, d in enumerate(dims) if d < 0]
    return capped_problems(path, "dims", bad, len(bad))


#: The most dimensions numpy gives an array, and the largest byte size it allows.
MAX_NDIM: Final = 64 if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else 32
_MAX_INTP: Final = int(np.iinfo(np.intp).max)


def numpy_shape_problems(path: str, dims: Sequence[int], itemsize: int) -> list[Problem]:
    """Dims numpy cannot make an array of, so ``to_numpy`` and ``read`` could not either:
    more than numpy's dimensions, or non-zero dims whose product times ``itemsize`` passes
    the largest array size (numpy checks that even when another dim is 0)."""
    if len(dims) > MAX_NDIM:
        return [Problem(join_path(path, "dims"), f"{len(dims)} dimensions; numpy arrays hold at "
                                             f"most {MAX_NDIM}")]
    size = itemsize
    for d in dims:
        if d < 0:
            return []  # reported as negative
        if d:
            size *= d
            if size > _MAX_INTP:
                return [Problem(join_path(path, "dims"), f"dims {list(dims)} are too large for a "
                                                     "numpy array, even an empty one")]
    return []


def _smallest(dims: Sequence[int]) -> int:
    own = getattr(dims, "smallest", None)
    return cast(int, own()) if own is not None else min(dims)


def element_count(dims: Sequence[int]) -> int | None:
    """The number of elements ``dims`` declare, or None if a dim is negative.

    Computed with Python ints and never more than needed: once the product
    passes 2**64 it is not multiplied further (the result is then > 2**64, far
    more than any message can hold), so a bomb of many huge dims costs nothing.
    A sequence that knows its own count (the engine's long dims, ``count``)
    computes it in chunks, by the same rule.
    """
    own = getattr(dims, "element_count", None)
    if own is not None:
        return cast(int | None, own())
    if len(dims) > _CHUNK:  # (a bogus reading's 100,000 dims: C-speed passes, not a loop)
        if min(dims) < 0:
            return None
        if 0 in dims:
            return 0
        return positive_product(dims)
    total = 1
    for d in dims:
        if d < 0:
            return None
        if d == 0:
            total = 0
        elif 0 < total <= HUGE:
            total *= d
    return total


def positive_product(dims: Sequence[int]) -> int:
    """``element_count`` of dims known to be all positive: their product, a chunk of
    ``_CHUNK`` at a time, not multiplied further once past ``HUGE``."""
    total = 1
    for at in range(0, len(dims), _CHUNK):
        part = dims[at:at + _CHUNK]
        whole = total * math.prod(part)
        if whole <= HUGE:
            total = whole
            continue
        for d in part:  # the dim that passes HUGE, as element_count's loop finds it
            total *= d
            if total > HUGE:
                return total
    return total


#: Dims multiplied at a time by ``element_count`` (a product of at most 16,384 bits).
_CHUNK: Final = 256


# --------------------------------------------------------------------------- tensors

def tensor_storage_problems(
    path: str,
    data_type: int,
    dims: Sequence[int],
    counts_by_field: Mapping[str, int],
    raw_len: int | None,
    *,
    data_location: int = 0,
    external_entries: int = 0,
    has_segment: bool = False,
) -> list[Problem]:
    """The TensorProto rules that need only counts: type, dims, storage, sizes.

    ``data_type`` is the code (0 when absent); ``counts_by_field`` maps each
    typed field name (``TYPED_FIELDS``) to its number of entries (missing means
    0); ``raw_len`` is the length of ``raw_data`` or None when it is absent;
    ``data_location`` the DataLocation code and ``external_entries`` the number
    of ``external_data`` entries. Counts are compared with Python ints before
    anything is allocated, so 40 bytes declaring 2**40 floats cost nothing.
    """
    dt = DATA_TYPES.get(data_type)
    if dt is not None and not (data_location or external_entries or has_segment):
        n = element_count(dims)  # fast path: the common valid tensor, one storage that fits
        if n is not None and (n or len(dims) < 2) and len(dims) <= MAX_NDIM:
            used_counts = [(f, c) for f, c in counts_by_field.items() if c]
            if raw_len is None:
                if (not used_counts and n == 0) or used_counts == [
                        (dt.field, typed_count(dt, n))]:
                    return []
            elif not used_counts and not dt.is_string and raw_len == raw_nbytes(dt, n):
                return []
    out = _storage_problems(path, data_type, dims, counts_by_field, raw_len,
                            data_location, external_entries, has_segment)
    if dt is not None and (len(dims) > MAX_NDIM or element_count(dims) == 0):
        out += numpy_shape_problems(path, dims, dt.dtype.itemsize)  # what to_numpy can make
    return out


def _storage_problems(path: str, data_type: int, dims: Sequence[int],
                      counts_by_field: Mapping[str, int], raw_len: int | None,
                      data_location: int, external_entries: int,
                      has_segment: bool) -> list[Problem]:
    dt = DATA_TYPES.get(data_type)
    out: list[Problem] = []
    if data_type == 0:
        out.append(Problem(join_path(path, "data_type"),
                           "data_type is UNDEFINED or missing; a tensor needs a data type"))
    elif dt is None:
        out.append(Problem(join_path(path, "data_type"),
                           f"{data_type} is not an ONNX tensor data type (known: 1 to "
                           f"{max(DATA_TYPES)})"))
    out += dims_problems(path, dims)
    if has_segment:
        out.append(Problem(join_path(path, "segment"),
                           "segment is not supported: a tensor split into segments cannot be "
                           "read as one value; join the segments into one TensorProto"))
    external = data_location == EXTERNAL
    if data_location not in (0, EXTERNAL):
        out.append(Problem(join_path(path, "data_location"),
                           f"{data_location} is not DEFAULT (0) or EXTERNAL (1)"))
    used = [f for f in TYPED_FIELDS if counts_by_field.get(f, 0) > 0]
    if raw_len is not None:
        used.append("raw_data")
    if external_entries and not external:
        out.append(Problem(join_path(path, "external_data"),
                           f"{external_entries} external_data entries but data_location is not "
                           "EXTERNAL; readers would ignore them and lose the data"))
    if external:
        if dt is not None and dt.is_string:
            out.append(Problem(path, "STRING tensors cannot be stored in external data"))
        if not external_entries:
            out.append(Problem(join_path(path, "external_data"),
                               "data_location is EXTERNAL but external_data is empty"))
        if used:
            out.append(Problem(path, f"data_location is EXTERNAL but the tensor also holds data "
                                     f"in {' and '.join(used)}"))
        return out
    if len(used) > 1:
        out.append(Problem(path, f"data in {' and '.join(used)}: only one storage may be used"))
        return out
    n = element_count(dims)
    if dt is None or n is None:
        return out
    what = f"dims {dims_text(dims)} declare {elements_text(n)} of {dt.name}"
    if not used:
        if n > 0:
            where = (f"{count_text(typed_count(dt, n))} entries of {dt.field}" if dt.is_string
                     else f"{count_text(typed_count(dt, n))} entries of {dt.field} or "
                          f"{count_text(raw_nbytes(dt, n))} bytes of raw_data")
            out.append(Problem(path, f"{what} but the tensor holds no data (expected {where})"))
        return out
    field = used[0]
    if field == "raw_data":
        assert raw_len is not None
        if dt.is_string:
            out.append(Problem(join_path(path, "raw_data"),
                               "STRING tensors cannot use raw_data; strings go in string_data"))
        elif raw_len != raw_nbytes(dt, n):
            packing = f" packed {8 // dt.bits} to a byte" if dt.bits in (2, 4) else (
                " packed 4 to 3 bytes" if dt.bits == 6 else "")
            out.append(Problem(join_path(path, "raw_data"),
                               f"{what}, {count_text(raw_nbytes(dt, n))} bytes{packing}, but "
                               f"raw_data has {raw_len} bytes"))
        return out
    have = counts_by_field[field]
    if field != dt.field:
        out.append(Problem(join_path(path, field),
                           f"{field} holds {have} entries but {dt.name} is stored in {dt.field}"
                           + ("" if dt.is_string else " or raw_data")))
        return out
    need = typed_count(dt, n)
    if have != need:
        packing = (f", {dt.per_entry} per entry" if dt.per_entry > 1 else
                   f", {dt.entries_per} entries each" if dt.entries_per > 1 else "")
        out.append(Problem(join_path(path, field),
                           f"{what}, {count_text(need)} entries of {field}{packing}, but "
                           f"{field} has {have}"))
    return out


def typed_entry_problems(path: str, data_type: int, field: str,
                         entries: Sequence[int] | np.ndarray[Any, Any]) -> list[Problem]:
    """Entries of the typed ``field`` outside the range their data type allows.

    ``entries`` is a repeated field, a list or an ndarray. It is read into one
    array of the field's own width (as large as protobuf's own storage of it),
    checked with a min/max pass, and scanned for the faulty entries only when
    one lies outside. Call only when ``field`` is the data type's own typed
    field (``tensor_storage_problems`` found no fault).
    """
    dt = DATA_TYPES.get(data_type)
    if dt is None or field != dt.field:
        return []
    bounds = typed_entry_range(dt)
    if bounds is None:
        return []
    lo, hi = bounds
    values = _entry_array(entries, field)
    if entries_in_range(values, lo, hi):
        return []
    bad = np.flatnonzero((values < lo) | (values > hi))
    found = [(int(i), f"{int(values[i])} is outside [{lo}, {hi}], the range of a {dt.name} "
                      f"entry of {field}") for i in bad[:MAX_REPORTED]]
    return capped_problems(path, field, found, len(bad))


#: The numpy dtype of each typed field's entries, as protobuf keeps them.
FIELD_DTYPES: Final[dict[str, np.dtype[Any]]] = {
    "float_data": np.dtype(np.float32), "double_data": np.dtype(np.float64),
    "int32_data": np.dtype(np.int32), "int64_data": np.dtype(np.int64),
    "uint64_data": np.dtype(np.uint64),
}


def repeated_array(field: Any, dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """The entries of a repeated scalar field as one new ndarray of ``dtype``.

    protobuf >= 5 (upb) gives its repeated scalars ``__array__``, a C copy;
    older ones have none, and ``np.fromiter`` with a count is the fastest way
    there (no list of Python ints in between).
    """
    if hasattr(type(field), "__array__"):
        return np.array(field, dtype=dtype)
    return np.fromiter(field, dtype=dtype, count=len(field))


def _entry_array(entries: Any, field: str) -> np.ndarray[Any, Any]:
    wide = np.uint64 if field == "uint64_data" else np.int64
    if isinstance(entries, np.ndarray):
        return entries if entries.dtype.kind in "iu" else entries.astype(wide)
    if isinstance(entries, (list, tuple)):  # Python ints of any size: the wide type
        return np.array(entries, dtype=wide)
    return repeated_array(entries, FIELD_DTYPES.get(field, np.dtype(wide)))


def entries_in_range(values: np.ndarray[Any, Any], lo: int, hi: int) -> bool:
    """Every integer in ``values`` lies in [lo, hi]; one pass over the data when lo is 0."""
    if not values.size:
        return True
    if lo == 0 and hi < (1 << (8 * values.dtype.itemsize - 1)):
        # negatives seen as unsigned are >= 2**(bits-1) > hi: one max() checks both ends
        unsigned = values.view(f"u{values.dtype.itemsize}") if values.dtype.kind == "i" \
            else values
        return bool(unsigned.max() <= hi)
    return bool(values.min() >= lo and values.max() <= hi)


_DRIVE = re.compile(r"^[A-Za-z]:")


def location_problems(path: str, location: str) -> list[Problem]:
    """Lexical checks of an external-data location: relative, inside, no NUL."""
    if not location:
        return [Problem(path, "location is empty")]
    out: list[Problem] = []
    if "\0" in location:
        out.append(Problem(path, f"location {location!r} contains a NUL character"))
    if location.startswith(("/", "\\")) or _DRIVE.match(location):
        out.append(Problem(path, f"location {location!r} is absolute; it must be relative to "
                                 "the folder of the file holding the tensor"))
    if ".." in re.split(r"[/\\]", location):
        out.append(Problem(path, f"location {location!r} has a '..' part, which could leave "
                                 "the tensor's folder"))
    return out


def _as_text(value: str | bytes) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value


#: Whether location_problems finds nothing in a location, by location (a pure function).
_SAFE_LOCATIONS: dict[str, bool] = {}


def _safe_location(location: str) -> bool:
    safe = _SAFE_LOCATIONS.get(location)
    if safe is None:
        safe = not location_problems("", location)
        if len(_SAFE_LOCATIONS) < 4096:
            _SAFE_LOCATIONS[location] = safe
    return safe


def _file_facts(base_dir: PathLike, location: str) -> tuple[str, str, int | None, bool]:
    """The base folder and target, resolved, the target's size (None: not a file), and
    whether the target lies inside the base folder."""
    base = os.path.realpath(os.fspath(base_dir))
    target = os.path.realpath(os.path.join(base, location))
    size = os.path.getsize(target) if os.path.isfile(target) else None
    return base, target, size, os.path.commonpath([base, target]) == base


def external_data_problems(path: str, entries: Sequence[tuple[str, str]],
                           base_dir: PathLike | None = None, *,
                           nbytes: int | None = None,
                           facts: dict[tuple[str, str], Any] | None = None) -> list[Problem]:
    """The ``external_data`` (key, value) entries of one tensor, and with ``base_dir`` its file.

    ``path`` is the tensor's path; ``nbytes`` is the raw size the tensor needs
    (None when unknown). Keys come from EXTERNAL_KEYS, each once; ``location``
    is required and safe (see :func:`location_problems`); ``offset`` and
    ``length`` are decimal integers >= 0 and ``length`` equals ``nbytes``.
    With ``base_dir``, the file must resolve (symlinks followed) to a regular
    file inside ``base_dir`` holding ``offset + length`` bytes. ``facts`` keeps what the
    file system said of each (base_dir, location) for one walk: one look, not one per
    tensor of 15,000 in one file.
    """
    return external_data_report(path, entries, base_dir, nbytes=nbytes, facts=facts)[0]


_KEY_SET: Final = frozenset(EXTERNAL_KEYS)
#: Where ``external_data_clean`` keeps its largest offsets in a walk's facts.
_LARGEST: Final = ("", "largest offsets")


def external_data_clean(entries: Sequence[tuple[str, str]], base_dir: PathLike | None, *,
                        nbytes: int | None, facts: dict[tuple[str, str], Any]) -> bool:
    """``not external_data_problems(...)``, fast for entries of distinct keys: what the rule
    says of their location, length and file is kept in ``facts`` (one walk's) as the
    largest offset it takes, so 1,000 tensors at 1,000 offsets of one file cost one look
    each, not one rule each."""
    values = dict(entries)
    offset = values.get("offset", "0")
    if len(values) != len(entries) or type(values.get("location")) is not str or \
            type(offset) is not str or type(values.get("length", "")) is not str or \
            not values.keys() <= _KEY_SET:
        return not external_data_problems("", entries, base_dir, nbytes=nbytes, facts=facts)
    if not (offset.isascii() and offset.isdigit()):
        return False
    kept = facts.get(_LARGEST)
    if kept is None:
        kept = facts[_LARGEST] = {}
    seen_at = (None if base_dir is None else str(os.fspath(base_dir)), values["location"],
               values.get("length"), nbytes)
    largest = kept.get(seen_at)
    if largest is None:
        largest = _largest_offset(values, base_dir, nbytes, facts)
        if len(kept) < 4096:
            kept[seen_at] = largest
    return largest is True or (largest is not False and int(offset) <= largest)


def _largest_offset(values: dict[str, str], base_dir: PathLike | None, nbytes: int | None,
                    facts: dict[tuple[str, str], Any]) -> int | bool:
    """The largest offset ``external_data_report`` finds nothing wrong with, for entries of
    these location and length (True: any; False: none)."""
    location = values["location"]
    length = values.get("length")
    if not _safe_location(location) or (length is not None and not (
            length.isascii() and length.isdigit())):
        return False
    with_offset = {"location": location, "offset": "0"}
    if length is not None:
        with_offset["length"] = length
    if _length_and_file_problems("", with_offset, {"location": 0, "length": 1}, None, nbytes,
                                 None):
        return False  # (the length)
    if base_dir is None:
        return True
    seen_at = (str(os.fspath(base_dir)), location)
    found = facts.get(seen_at)
    if found is None:
        found = _file_facts(base_dir, location)
        if len(facts) < 4096:
            facts[seen_at] = found
    _, _, size, inside = found
    if not inside or size is None:
        return False
    need = int(length) if length is not None else nbytes
    largest = size - need if need is not None else size
    return largest if largest >= 0 else False


def external_data_report(path: str, entries: Sequence[tuple[str, str]],
                         base_dir: PathLike | None = None, *, nbytes: int | None = None,
                         facts: dict[tuple[str, str], Any] | None = None,
                         room: int | None = None) -> tuple[list[Problem], int]:
    """:func:`external_data_problems`'s problems, only the first ``room`` of them worded
    (all with None), and how many more there are: a tensor merged from 15,000 with 45,000
    entries has 45,000 problems, of which a capped list keeps a few (``ProblemSink``), so
    the rest are only counted."""
    out: list[Problem] = []
    more = 0
    left = sys.maxsize if room is None else room
    seen: dict[str, int] = {}
    values: dict[str, str] = {}
    for i, (key, value) in enumerate(entries):
        if type(key) is not str:  # protobuf gives a string that is not UTF-8 as bytes
            key = _as_text(key)
        if key in seen or key not in EXTERNAL_KEYS:
            if left <= 0:  # the list is full: the rest is only counted
                rest, location_at = _unworded(entries, i, seen)
                more += rest
                if location_at is not None:
                    values["location"] = ""
                break
            left -= 1
            here = join_path(path, f"external_data[{i}]")
            out.append(Problem(here, f"key {key!r} appears again (first at external_data"
                                     f"[{seen[key]}])" if key in seen else
                                     f"unknown key {key!r}; expected one of "
                                     f"{', '.join(EXTERNAL_KEYS)}"))
            continue
        if type(value) is not str:
            value = _as_text(value)
        seen[key] = i
        values[key] = value
        if key == "location":
            found = [] if _safe_location(value) else \
                location_problems(join_path(path, f"external_data[{i}]"), value)
        elif key in ("offset", "length") and not (value.isascii() and value.isdigit()):
            found = [Problem(join_path(path, f"external_data[{i}]"),
                             f"{key} {value!r} is not an integer >= 0 written in decimal "
                             "digits")]
        else:
            continue
        kept = found[:max(left, 0)]
        out += kept
        more += len(found) - len(kept)
        left -= len(kept)
    location = values.get("location")
    if location is None:
        found = [Problem(join_path(path, "external_data"),
                         "no location: external data needs a 'location' entry")]
        kept = found[:max(left, 0)]
        out += kept
        more += len(found) - len(kept)
    if out or more:
        return out, more
    found = _length_and_file_problems(path, values, seen, base_dir, nbytes, facts)
    kept = found[:max(left, 0)]
    return kept, len(found) - len(kept)


@runtime_checkable
class KeyedEntries(Protocol):
    """Entries that find a key without a Python step per entry (the engine's many entries
    written as protobuf writes them, decoded only where asked)."""

    def __len__(self) -> int: ...

    def __getitem__(self, i: int) -> tuple[str, str]: ...

    def find_key(self, key: str, start: int) -> int | None:
        """The first entry at ``start`` or after whose key is ``key`` (None: none is)."""


def _unworded(entries: Sequence[tuple[str, str]], start: int, seen: dict[str, int]
              ) -> tuple[int, int | None]:
    """How many problems ``entries[start:]`` have (after the entries ``seen``), and where
    the first location among them is (None: none is): each entry has one (its key is
    unknown, or seen before), but the first of a key not seen yet, which has those of its
    value. Keys that are not ``str`` (protobuf's bytes, not UTF-8) are unknown keys.
    ``KeyedEntries`` find each known key themselves, so 50,000 entries are no 50,000 keys."""
    keyed = entries if isinstance(entries, KeyedEntries) else None
    keys = [] if keyed is not None else list(map(itemgetter(0), entries[start:]))
    count = len(entries) - start if keyed is not None else len(keys)
    location_at = None
    for key in EXTERNAL_KEYS:
        if key in seen:
            continue
        if keyed is not None:
            found = keyed.find_key(key, start)
            if found is None:
                continue
            at = found - start
        else:
            try:
                at = keys.index(key)
            except ValueError:
                continue
        value = _as_text(entries[start + at][1])
        count -= 1
        if key == "location":
            location_at = start + at
            count += len(location_problems("", value))
        elif key in ("offset", "length"):
            count += not (value.isascii() and value.isdigit())
    return count, location_at


def _length_and_file_problems(path: str, values: dict[str, str], seen: dict[str, int],
                              base_dir: PathLike | None, nbytes: int | None,
                              facts: dict[tuple[str, str], Any] | None) -> list[Problem]:
    """The problems of well-formed entries: their length, then the file."""
    out: list[Problem] = []
    location = values["location"]
    offset = int(values.get("offset", "0"))
    length = int(values["length"]) if "length" in values else None
    if length is not None and nbytes is not None and length != nbytes:
        out.append(Problem(join_path(path, f"external_data[{seen['length']}]"),
                           f"length {length} but the tensor needs {nbytes} bytes"))
    if base_dir is None:
        return out
    seen_at = (str(os.fspath(base_dir)), location)
    found = facts.get(seen_at) if facts is not None else None
    if found is None:
        found = _file_facts(base_dir, location)
        if facts is not None and len(facts) < 4096:
            facts[seen_at] = found
    base, target, size, inside = found
    need = length if length is not None else nbytes
    if inside and size is not None and (offset + need <= size if need is not None
                                        else offset <= size):
        return out
    here = join_path(path, f"external_data[{seen['location']}]")
    if not inside:
        out.append(Problem(here, f"location {location!r} resolves to {target}, outside "
                                 f"base_dir {base} (through a symlink)"))
    elif size is None:
        out.append(Problem(here, f"location {location!r} is not a file in {base}"))
    elif need is not None and offset + need > size:
        out.append(Problem(here, f"file {location!r} has {size} bytes but offset {offset} + "
                                 f"{need} bytes runs past its end"))
    else:
        out.append(Problem(here, f"offset {offset} lies past the end of {location!r} "
                                 f"({size} bytes)"))
    return out
