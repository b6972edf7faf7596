"""Compare two values (arrays, lists, dicts, None, or messages) and say where they differ.

``compare(actual, expected)`` walks both values together and returns one
``Difference`` per place they disagree, with a path to it in the style of
validation paths, written for values: ``[3]['k']`` is element 3 of a sequence,
then the map entry with key ``'k'`` (an optional is its value or None, so it
adds nothing to the path). What differs is one of:

* ``kind``: an array where a list was expected, None where a value was, ...
* ``length``: sequences of different lengths (the common elements are still compared);
* ``keys``: maps with different keys (the common keys are still compared);
* ``dtype`` or ``shape``: arrays that cannot be compared element by element;
* ``values``: how many elements differ, the worst absolute and relative error
  and the first few indices with both values.

Floating-point elements are close when ``|actual - expected| <= atol + rtol *
|expected|`` (``numpy.isclose``'s rule); NaN equals NaN when ``equal_nan``
(as ONNX's backend tests have it) and infinities equal only themselves.
bfloat16, float8, float6 and float4 compare through their float32 values, the
2- and 4-bit integers through int8/uint8. Integers, bools and strings compare
exactly; a ``str`` equals the ``bytes`` of its UTF-8 encoding, since
``to_numpy`` gives bytes and runtimes such as ONNX Runtime give str.

Arrays are compared a chunk at a time, so comparing two 1 GiB values needs a
few MiB beyond the arrays themselves, and no Python loop runs per element.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from onnxdata.core.dtypes import data_type_for_dtype
from onnxdata.core.strings import json_text
from onnxdata.model.types import DeclaredType

__all__ = ["Collected", "Difference", "Mismatch", "assert_close", "collect", "compare",
           "format_differences"]

Array: TypeAlias = "npt.NDArray[Any]"
What: TypeAlias = Literal["kind", "length", "keys", "dtype", "shape", "values"]

#: Elements compared at once: small enough to keep temporaries in cache and memory flat.
CHUNK_ELEMENTS = 1 << 18
#: Arrays in a list of at most this many elements are compared a group at a time (those of
#: one dtype and shape stacked), not one by one.
GROUP_ELEMENTS = 64
#: How many differing elements a Difference shows.
SHOWN = 5


@dataclass(frozen=True)
class Mismatch:
    """One differing element: its ``index`` in the array and both values."""

    index: tuple[int, ...]
    actual: Any
    expected: Any

    def __str__(self) -> str:
        return (f"{_index_text(self.index)}: actual {_show(self.actual)} vs expected "
                f"{_show(self.expected)}")


@dataclass(frozen=True)
class Difference:
    """Where two values differ (``path``), what differs (``what``) and how (``message``).

    For ``what == "values"``: ``count`` of ``total`` elements differ, the worst
    absolute and relative errors among them (``max_abs``/``max_rel``; None for
    exact comparisons), and ``mismatches`` lists the first few.
    """

    path: str
    what: What
    message: str
    count: int = 0
    total: int = 0
    max_abs: float | None = None
    max_rel: float | None = None
    mismatches: tuple[Mismatch, ...] = field(default=())

    def __str__(self) -> str:
        return f"{self.path or '(top)'}: {self.message}"

    def as_json(self) -> dict[str, Any]:
        """The difference as JSON-ready data (values as numbers or strings)."""
        out: dict[str, Any] = {"path": self.path, "what": self.what, "message": self.message}
        if self.what == "values":
            out.update(count=self.count, total=self.total, max_abs=_json_num(self.max_abs),
                       max_rel=_json_num(self.max_rel),
                       mismatches=[{"index": list(m.index), "actual": _json_value(m.actual),
                                    "expected": _json_value(m.expected)}
                                   for m in self.mismatches])
        return out


def compare(actual: object, expected: object, *, rtol: float = 1e-3, atol: float = 1e-7,
            equal_nan: bool = True, declared: str | DeclaredType | None = None
            ) -> list[Difference]:
    """Every place ``actual`` and ``expected`` differ; [] when they agree.

    Either side may be an ndarray, a numpy or Python scalar, a list or tuple
    (a sequence), a dict (a map), None (an empty optional), or one of the data
    messages (converted with ``to_numpy``), nested any way. ``declared`` (the
    model's type, "seq(map(string, tensor(float)))", as onnxruntime's
    ``NodeArg.type`` gives it) first turns plain Python values on either side into
    that type (``as_declared``): ZipMap's Python floats compare as float32.
    """
    return collect(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   declared=declared).kept


@dataclass
class Collected:
    """What ``collect`` found: the first ``keep`` differences, and how many there are."""

    kept: list[Difference]
    #: Differences found in all (``len(kept)`` when nothing was left out).
    count: int
    #: Of the differences left out, how many are of each kind (``what``).
    left_out: dict[str, int] = field(default_factory=dict)


def collect(actual: object, expected: object, *, rtol: float = 1e-3, atol: float = 1e-7,
            equal_nan: bool = True, keep: int | None = None,
            declared: str | DeclaredType | None = None) -> Collected:
    """``compare``, streamed: every difference is counted, only the first ``keep`` are built
    (None: all), so memory is bounded by ``keep`` whatever the values hold. Past ``keep``
    a differing array costs one pass that only asks whether anything differs."""
    if not (rtol >= 0 and atol >= 0):
        raise ValueError(f"rtol and atol must be >= 0, not rtol={rtol!r}, atol={atol!r}")
    if declared is not None:
        from onnxdata.convert.declared import as_declared

        actual, expected = as_declared(actual, declared), as_declared(expected, declared)
    sink = _Sink(keep)
    _walk(actual, expected, "", _Tolerance(rtol, atol, equal_nan), sink)
    return Collected(sink.kept, sink.count, sink.left_out)


class _Sink:
    """Where the walk puts differences: the first ``keep`` kept, the rest counted."""

    def __init__(self, keep: int | None) -> None:
        self.keep = keep
        self.kept: list[Difference] = []
        self.count = 0
        self.left_out: dict[str, int] = {}

    @property
    def full(self) -> bool:
        return self.keep is not None and len(self.kept) >= self.keep

    def append(self, d: Difference) -> None:
        self.count += 1
        if not self.full:
            self.kept.append(d)
        else:
            self.left_out[d.what] = self.left_out.get(d.what, 0) + 1


def assert_close(actual: object, expected: object, *, rtol: float = 1e-3, atol: float = 1e-7,
                 equal_nan: bool = True, declared: str | DeclaredType | None = None) -> None:
    """Raise AssertionError listing every difference ``compare`` finds (for pytest);
    ``declared`` as for ``compare``."""
    found = compare(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                    declared=declared)
    if found:
        raise AssertionError(format_differences(found, rtol=rtol, atol=atol))


def format_differences(found: list[Difference], *, rtol: float, atol: float,
                       limit: int | None = None) -> str:
    """A readable list of differences, at most ``limit`` of them."""
    n = len(found)
    head = f"{n} difference{'s' if n != 1 else ''} (actual vs expected, rtol {rtol:g}, " \
           f"atol {atol:g}):"
    shown = found if limit is None else found[:limit]
    lines = [head, *(f"  {d}" for d in shown)]
    if len(shown) < n:
        lines.append(f"  … {n - len(shown)} more")
    return "\n".join(lines)


# ---------------------------------------------------------------- the walk

@dataclass(frozen=True)
class _Tolerance:
    rtol: float
    atol: float
    equal_nan: bool


def _kind(value: object) -> str:
    if value is None:
        return "None"
    if isinstance(value, (list, tuple)):
        return "list"
    if isinstance(value, dict):
        return "dict"
    return "array"


def _describe(value: object) -> str:
    if value is None:
        return "None"
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)}"
    if isinstance(value, dict):
        return f"a dict of {len(value)}"
    arr = np.asarray(value)
    return f"an array {arr.dtype} {tuple(arr.shape)}"


def _as_value(value: object) -> object:
    """Messages become numpy values; scalars and array-likes stay for _walk to read."""
    if hasattr(value, "DESCRIPTOR") and hasattr(value, "SerializeToString"):
        from onnxdata.convert.values import to_numpy_reference

        return to_numpy_reference(value)
    return value


def _walk(actual: object, expected: object, path: str, tol: _Tolerance,
          out: _Sink) -> None:
    actual, expected = _as_value(actual), _as_value(expected)
    ka, ke = _kind(actual), _kind(expected)
    if ka != ke:
        out.append(Difference(path, "kind", f"actual is {_describe(actual)}, expected "
                                            f"{_describe(expected)}"))
        return
    if ka == "None":
        return
    if ka == "list":
        assert isinstance(actual, (list, tuple)) and isinstance(expected, (list, tuple))
        if len(actual) != len(expected):
            out.append(Difference(path, "length", f"actual has {len(actual)} elements, "
                                                  f"expected {len(expected)}"))
        _walk_list(actual, expected, path, tol, out)
        return
    if ka == "dict":
        assert isinstance(actual, dict) and isinstance(expected, dict)
        _walk_dicts(actual, expected, path, tol, out)
        return
    _compare_arrays(np.asarray(actual), np.asarray(expected), path, tol, out)


def _walk_list(actual: list[Any] | tuple[Any, ...], expected: list[Any] | tuple[Any, ...],
               path: str, tol: _Tolerance, out: _Sink) -> None:
    """The common elements of two lists, in order; small arrays alike on both sides are
    compared a group at a time (``_group_states``), and only those that differ, and the
    other elements, are walked one by one: the same differences as one by one."""
    n = min(len(actual), len(expected))
    states = _group_states(actual, expected, n, tol)
    for i in np.flatnonzero(states).tolist():
        if states[i] == 1 and out.full:  # differs, past keep: counted, as _compare_arrays
            out.count += 1
            out.left_out["values"] = out.left_out.get("values", 0) + 1
            continue
        _walk(actual[i], expected[i], f"{path}[{i}]", tol, out)


def _group_states(actual: list[Any] | tuple[Any, ...], expected: list[Any] | tuple[Any, ...],
                  n: int, tol: _Tolerance) -> npt.NDArray[np.int8]:
    """Per common element: 0 an array pair found equal, 1 found to differ (in values only:
    same dtype and shape), -1 not grouped (to be walked)."""
    states = np.full(n, -1, dtype=np.int8)
    groups: dict[tuple[np.dtype[Any], tuple[int, ...]], list[int]] = {}
    for i in range(n):
        a, e = actual[i], expected[i]
        if type(a) is np.ndarray and type(e) is np.ndarray and a.dtype == e.dtype \
                and a.shape == e.shape and 0 < a.size <= GROUP_ELEMENTS:
            groups.setdefault((a.dtype, a.shape), []).append(i)
    for (dtype, shape), where in groups.items():
        family, work = _family(dtype)
        if len(where) < 2 or family == "string" or work.kind not in "biufc":
            continue
        size = math.prod(shape)
        rows = max(1, CHUNK_ELEMENTS // size)
        for start in range(0, len(where), rows):
            part = where[start:start + rows]
            sa = np.stack([actual[i] for i in part]).reshape(-1)
            se = np.stack([expected[i] for i in part]).reshape(-1)
            if sa.dtype != work:
                sa, se = sa.astype(work), se.astype(work)
            bad = _close_mismatch(sa, se, tol) if family == "float" else sa != se
            states[part] = bad.reshape(len(part), size).any(axis=1)
    return states


def _key(k: object) -> object:
    """Map keys as compared: str as its UTF-8 bytes, numpy integers as int."""
    if isinstance(k, str):
        return k.encode("utf-8")
    if isinstance(k, np.integer):
        return int(k)
    return k


def _walk_dicts(actual: dict[Any, Any], expected: dict[Any, Any], path: str, tol: _Tolerance,
                out: _Sink) -> None:
    a_keys = {_key(k): k for k in actual}
    e_keys = {_key(k): k for k in expected}
    missing = [e_keys[k] for k in e_keys if k not in a_keys]
    extra = [a_keys[k] for k in a_keys if k not in e_keys]
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing keys {_few(missing)}")
        if extra:
            parts.append(f"unexpected keys {_few(extra)}")
        out.append(Difference(path, "keys", "; ".join(parts)))
    for k, ek in e_keys.items():
        if k in a_keys:
            _walk(actual[a_keys[k]], expected[ek], f"{path}[{_key_text(ek)}]", tol, out)


def _few(keys: list[Any]) -> str:
    shown = ", ".join(_key_text(k) for k in keys[:SHOWN])
    return shown + (f", … ({len(keys)} in all)" if len(keys) > SHOWN else "")


def _key_text(k: object) -> str:
    if isinstance(k, bytes):
        try:
            return repr(k.decode("utf-8"))
        except UnicodeDecodeError:
            return repr(k)
    return repr(int(k)) if isinstance(k, np.integer) else repr(k)


# ---------------------------------------------------------------- arrays

def _family(dtype: np.dtype[Any]) -> tuple[str, np.dtype[Any]]:
    """How a dtype compares, and the dtype it is compared in.

    "float" (with tolerance), "exact" (integers and bools), or "string".
    ml_dtypes types are kind "V": floats compare as float32, the 2- and
    4-bit integers as int8/uint8.
    """
    if dtype.kind in "OSU":
        return "string", np.dtype(object)
    if dtype.kind in "fc":
        return "float", dtype
    if dtype.kind in "biu":
        return "exact", dtype
    dt = data_type_for_dtype(dtype)
    if dt is None:
        return "exact", dtype
    if dt.name in ("INT4", "INT2"):
        return "exact", np.dtype(np.int8)
    if dt.name in ("UINT4", "UINT2"):
        return "exact", np.dtype(np.uint8)
    return "float", np.dtype(np.float32)


def _compare_arrays(a: Array, e: Array, path: str, tol: _Tolerance,
                    out: _Sink) -> None:
    fa, fe = _family(a.dtype), _family(e.dtype)
    if fa[0] != fe[0] or (fa[0] != "string" and a.dtype != e.dtype):
        out.append(Difference(path, "dtype", f"actual dtype {a.dtype}, expected {e.dtype}"))
        return
    if a.shape != e.shape:
        out.append(Difference(path, "shape", f"actual shape {list(a.shape)}, expected "
                                             f"{list(e.shape)}"))
        return
    family, work = fa
    if out.full:  # counted, not built: does anything differ at all?
        if not _equal(a, e, family, work, tol):
            out.count += 1
            out.left_out["values"] = out.left_out.get("values", 0) + 1
        return
    count = 0
    first: list[int] = []
    worst_abs = worst_rel = math.nan
    for offset, ca, ce, bad in _mismatched_chunks(a, e, family, work, tol):
        where = np.flatnonzero(bad)
        count += int(where.size)
        if len(first) < SHOWN:
            first.extend(int(i) + offset for i in where[:SHOWN - len(first)])
        if family != "string":
            wa, wr = _worst(ca[where], ce[where])
            worst_abs, worst_rel = float(np.fmax(worst_abs, wa)), float(np.fmax(worst_rel, wr))
    if count == 0:
        return
    at = [_unravel(i, a.shape) for i in first]  # indexing, not reshape: no copy of a view
    shown = tuple(Mismatch(i, _scalar(a[i]), _scalar(e[i])) for i in at)
    exact = family != "float"
    how = "" if exact else f" (rtol {tol.rtol:g}, atol {tol.atol:g})"
    message = f"{count} of {a.size} values differ{how}"
    if family != "string":
        message += f"; worst abs {worst_abs:.4g}"
        if not exact:
            message += f", rel {worst_rel:.4g}"
    message += "; " + ", ".join(f"{path or ('value' if not m.index else '')}{m}"
                                for m in shown)
    if count > len(shown):
        message += ", …"
    out.append(Difference(path, "values", message, count, int(a.size),
                          None if family == "string" else worst_abs,
                          None if exact else worst_rel, shown))


def _mismatched_chunks(a: Array, e: Array, family: str, work: np.dtype[Any], tol: _Tolerance
                       ) -> Iterator[tuple[int, Array, Array, npt.NDArray[np.bool_]]]:
    """``(offset, a_chunk, e_chunk, mismatch mask)`` of every chunk where an element
    differs; chunks of equal bytes are passed over without the tolerance arithmetic."""
    for offset, ca, ce in _chunks(a, e):
        if _same_bytes(ca, ce, family, tol):
            continue
        if family == "string":
            bad = _string_mismatch(ca, ce)
        else:
            if ca.dtype != work:
                ca, ce = ca.astype(work), ce.astype(work)
            bad = _close_mismatch(ca, ce, tol) if family == "float" else ca != ce
        if bad.any():
            yield offset, ca, ce, bad


def _equal(a: Array, e: Array, family: str, work: np.dtype[Any], tol: _Tolerance) -> bool:
    """Whether no element differs (the question asked of arrays past ``keep``)."""
    for _ in _mismatched_chunks(a, e, family, work, tol):
        return False
    return True


_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _same_bytes(a: Array, e: Array, family: str, tol: _Tolerance) -> bool:
    """Whether two chunks hold the same bytes, checked as unsigned words (one pass at
    memory bandwidth): equal arrays need no tolerance arithmetic. Equal bytes are equal
    values, save a float NaN when NaN is not equal to itself (``equal_nan=False``: the
    arithmetic decides)."""
    if family == "string" or not (a.flags.c_contiguous and e.flags.c_contiguous):
        return False
    if a.dtype != e.dtype or a.dtype.hasobject:
        return False
    size = a.dtype.itemsize
    word = _UINT.get(size)
    if word is not None:
        same = bool(np.array_equal(a.view(word), e.view(word)))
    else:  # complex128, float80: compare the bytes
        same = bool(np.array_equal(a.view(np.uint8), e.view(np.uint8)))
    return same and (tol.equal_nan or family != "float")


def _chunks(a: Array, e: Array, offset: int = 0) -> Iterator[tuple[int, Array, Array]]:
    """``(flat offset, a part, e part)``: 1-D pieces of both arrays in C order, views where
    the arrays are contiguous; strided ones are sliced along their first axes so that
    no piece copies more than CHUNK_ELEMENTS elements."""
    if a.ndim == 0:
        yield offset, a.reshape(1), e.reshape(1)
        return
    if a.size == 0:
        return
    if (a.flags.c_contiguous and e.flags.c_contiguous) or a.size <= CHUNK_ELEMENTS:
        fa, fe = a.reshape(-1), e.reshape(-1)
        for start in range(0, fa.size, CHUNK_ELEMENTS):
            yield (offset + start, fa[start:start + CHUNK_ELEMENTS],
                   fe[start:start + CHUNK_ELEMENTS])
        return
    row = a.size // a.shape[0]
    if row >= CHUNK_ELEMENTS:
        for r in range(a.shape[0]):
            yield from _chunks(a[r], e[r], offset + r * row)
        return
    rows = CHUNK_ELEMENTS // row
    for r in range(0, a.shape[0], rows):
        yield offset + r * row, a[r:r + rows].reshape(-1), e[r:r + rows].reshape(-1)


def _close_mismatch(a: Array, e: Array, tol: _Tolerance) -> npt.NDArray[np.bool_]:
    """Elements not close by numpy.isclose's rule, NaN equal to NaN when asked."""
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - e)
        bound = np.abs(e)
        bound *= tol.rtol
        bound += tol.atol
        bad: npt.NDArray[np.bool_] = ~(diff <= bound)
        # an infinite (or NaN) value is close only to itself, whatever the tolerance (as
        # numpy.isclose: an infinite atol makes every finite pair close, not every pair)
        bad |= ~(np.isfinite(a) & np.isfinite(e))
        if bad.any():  # NaN or inf somewhere, or a real mismatch: look closer there only
            where = np.flatnonzero(bad)
            sa, se = a[where], e[where]
            same = sa == se
            if tol.equal_nan:
                same |= np.isnan(sa) & np.isnan(se)
            bad[where[same]] = False
    return bad


def _string_mismatch(a: Array, e: Array) -> npt.NDArray[np.bool_]:
    a = a.astype(object) if a.dtype != object else a
    e = e.astype(object) if e.dtype != object else e
    bad: npt.NDArray[np.bool_] = np.asarray(a != e, dtype=bool)
    if bad.any():  # str against bytes: equal when the str's UTF-8 is those bytes
        where = np.flatnonzero(bad)
        encode = np.frompyfunc(lambda s: s.encode("utf-8") if isinstance(s, str) else s, 1, 1)
        same = np.asarray(encode(a[where]) == encode(e[where]), dtype=bool)
        bad[where[same]] = False
    return bad


def _worst(a: Array, e: Array) -> tuple[float, float]:
    """The worst absolute and relative errors among mismatched elements (NaN-free)."""
    with np.errstate(all="ignore"):
        a64 = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
        e64 = e.astype(a64.dtype)
        diff = np.abs(a64 - e64)
        rel = diff / np.abs(e64)
    finite = diff[~np.isnan(diff)]
    finite_rel = rel[~np.isnan(rel)]
    return (float(finite.max()) if finite.size else math.nan,
            float(finite_rel.max()) if finite_rel.size else math.nan)


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    if not shape:
        return ()
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def _scalar(x: Any) -> Any:
    """A numpy element as a Python value (ml_dtypes floats give float, their ints int)."""
    return x.item() if isinstance(x, np.generic) else x


def _index_text(index: tuple[int, ...]) -> str:
    """"[0, 2]"; a 0-d value has no index: "" (its path alone names it)."""
    return "[" + ", ".join(str(i) for i in index) + "]" if index else ""


def _show(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.7g}"
    return repr(x)


def _json_num(x: float | None) -> float | str | None:
    if x is None or math.isfinite(x):
        return x
    return str(x)


def _json_value(x: Any) -> Any:
    if isinstance(x, bytes):
        return json_text(x)
    if isinstance(x, float):
        return _json_num(x)
    if isinstance(x, (bool, int, str)):
        return x
    return str(x)
