"""show's preview is the text it always was, made faster (issue 39): numpy's repr of many
alike small arrays made a batch at a time (``alike_reprs``), and the tree's lines printed
a batch at a time (``_Preview``), against a twin of the per-element formatter it
replaced: numpy's repr of each array, a line at a time."""

from __future__ import annotations

import io
import itertools
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from rich.console import Console
from rich.text import Text

from onnxdata.cli import show
from onnxdata.cli.array_text import alike_reprs, batch_print_options
from onnxdata.cli.console import _SafeConsole, printable

NUMPY_2 = int(np.__version__.split(".")[0]) >= 2
SPECIALS = [0.0, -0.0, 1.0, -1.0, 0.5, 1e-4, 9.99e-5, 1e6, 999999.0, 1e8, 99999999.0,
            1000.0, 0.001, 0.1, 10.0, 1 / 3, -7.25, 12345678.9, 0.99999999999,
            np.nan, -np.nan, np.inf, -np.inf]
FLOATS = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn,
          ml_dtypes.float8_e5m2, np.longdouble]
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]


def _shown() -> Any:
    """numpy's print options while show prints its preview."""
    return np.printoptions(threshold=64, edgeitems=3)


def _reprs_are_numpys(arrays: list[np.ndarray]) -> None:
    with _shown():
        assert alike_reprs(arrays) == [repr(a) for a in arrays]


@given(st.sampled_from(FLOATS), st.integers(0, 10), st.data())
@settings(max_examples=400, deadline=None)
def test_a_batch_of_floats_is_numpys_repr_of_each(dtype: type, size: int,
                                                  data: st.DataObject) -> None:
    """Shortest digits, at most 8 after the point, padding to the row's widest, and the
    rows numpy prints otherwise (exponents, nan, inf, wrapped lines) left to numpy."""
    elements = st.one_of(st.sampled_from(SPECIALS), st.floats(-1e9, 1e9),
                         st.integers(-10**6, 10**6).map(lambda i: i / 1000),
                         st.floats(1e-6, 10.0))
    rows = data.draw(st.lists(hnp.arrays(np.float64, size, elements=elements),
                              min_size=1, max_size=12))
    with np.errstate(over="ignore"):  # as the dtype holds them (1e9 in float16: inf)
        _reprs_are_numpys([r.astype(dtype) for r in rows])


@given(st.sampled_from([*INTS, np.bool_]), st.integers(0, 10), st.data())
@settings(max_examples=200, deadline=None)
def test_a_batch_of_integers_or_bools_is_numpys_repr_of_each(dtype: type, size: int,
                                                             data: st.DataObject) -> None:
    rows = data.draw(st.lists(hnp.arrays(dtype, size), min_size=1, max_size=12))
    _reprs_are_numpys(rows)


@pytest.mark.parametrize("arrays", [
    [np.zeros((2, 2), np.float32), np.ones((2, 2), np.float32)],  # 2-D: numpy's own
    [np.float32(1.5) * np.ones((), np.float32), np.zeros((), np.float32)],  # 0-d
    [np.zeros(0, np.float32), np.zeros(0, np.float32)],  # empty
    [np.arange(9, dtype=np.float64), np.arange(9, dtype=np.float64) / 7],  # over 8 values
    [np.arange(100, dtype=np.int64)],  # summarised by the threshold
    [np.array([1, 2], ">i4"), np.array([3, 4], ">i4")],  # not native
    [np.array(["a", "b\n"]), np.array(["日本", "\x1b["])],  # strings
    [np.array([b"a", b"\xff"]), np.array([b"", b"c"])],
    [np.array([1 + 2j, 3j]), np.array([0j, -1j])],
    [np.array([10**17, -(10**17), 1, 2, 3, 4, 5, 6], np.int64)],  # a line numpy wraps
    [np.array([123456.7, 0.25], np.float32), np.array([-1e5, 99999.9], np.float32)],
    [np.ma.masked_array([1.0, 2.0]), np.ma.masked_array([3.0, 4.0])],  # a subclass
    [],
])
def test_arrays_it_does_not_batch_are_numpys_repr(arrays: list[np.ndarray]) -> None:
    _reprs_are_numpys(arrays)


@pytest.mark.skipif(not NUMPY_2, reason="the batches follow numpy 2's rules")
def test_batches_are_made_only_under_the_print_options_they_follow() -> None:
    with _shown():
        assert batch_print_options()
    with np.printoptions(precision=3):
        assert not batch_print_options()
        _reprs_are_numpys([np.array([1 / 3, 0.5]), np.array([2.0, 1e-3])])


def test_numpy_1_always_prints_with_numpys_repr() -> None:
    """numpy 1.26 prints float32 1e-4 as 1.e-04: there, every array is numpy's repr."""
    with _shown():
        assert batch_print_options() == NUMPY_2


# --- the tree: against a twin of the formatter it replaced ---------------------------

def _twin_lines(value: Any, indent: str, limit: int | None) -> list[tuple[str, str | None]]:
    """show's lines as they were made before issue 39: numpy's repr of each array, a line
    at a time, each (line, style)."""
    lines: list[tuple[str, str | None]] = [(indent + show._describe(value), "bold")]
    if isinstance(value, np.ndarray):
        return lines + [(indent + "  " + line, None) for line in repr(value).splitlines()]
    if isinstance(value, list):
        n = len(value) if limit is None else min(limit, len(value))
        items = [(f"[{i}]", value[i]) for i in range(n)]
    elif isinstance(value, dict):
        items = [(f"{show.key_text(k)}:", v)
                 for k, v in itertools.islice(value.items(), limit)]
    else:
        return lines
    for label, v in items:
        lines.append((f"{indent}{label}", None))
        lines += _twin_lines(v, indent + "  ", limit)
    if len(value) > len(items):
        lines.append((f"{indent}… {len(value) - len(items)} more (--limit N shows more)",
                      None))
    return lines


def _twin_piped(value: Any, limit: int | None) -> str:
    """The twin's text through a pipe: escaped, then each line without its end's spaces."""
    with _shown():
        text = printable("\n".join(line for line, _ in _twin_lines(value, "", limit)),
                         newlines=True) + "\n"
    return "\n".join(line.rstrip() for line in text.split("\n"))


class _Piped:
    """A console stand-in, piped: what _Preview writes goes to write_checked (patched)."""

    is_terminal = False
    file = io.StringIO()


def _piped(value: Any, limit: int | None, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    written: list[str] = []
    monkeypatch.setattr(show, "write_checked", written.append)
    with _shown():
        show._print_value(_Piped(), value, "", limit)  # type: ignore[arg-type]
    return written


def _terminal(print_lines: Any) -> str:
    out = _SafeConsole(file=io.StringIO(), force_terminal=True, width=60,
                       color_system="standard", highlight=False)
    with _shown():
        print_lines(out)
    text: str = out.file.getvalue()  # type: ignore[attr-defined]
    return text


def _twin_terminal(value: Any, limit: int | None) -> str:
    def print_lines(out: Console) -> None:
        text = Text()
        for i, (line, style) in enumerate(_twin_lines(value, "", limit)):
            if i:
                text.append("\n")
            text.append(line, style)
        out.print(text, soft_wrap=out.soft_wrap)
    return _terminal(print_lines)


ELEMENT_DTYPES = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int8,
                  np.int64, np.uint16, np.bool_, np.str_, np.bytes_]


def _arrays() -> st.SearchStrategy[np.ndarray]:
    floats = st.sampled_from(SPECIALS) | st.floats(-1e4, 1e4) | st.floats(0, 1)
    small = st.sampled_from([(2,), (3,), (1,), (8,), (9,), (0,), (), (2, 2)])
    return st.sampled_from(ELEMENT_DTYPES).flatmap(lambda dtype: small.flatmap(
        lambda shape: hnp.arrays(np.float64, shape, elements=floats).map(
            lambda a: _cast(a, dtype)) if dtype in FLOATS else
        hnp.arrays(dtype, shape)))


def _cast(a: np.ndarray, dtype: type) -> np.ndarray:
    with np.errstate(over="ignore"):
        return a.astype(dtype)


def _values() -> st.SearchStrategy[Any]:
    keys = st.integers(-5, 5) | st.binary(max_size=3) | \
        st.integers(0, 3).map(lambda i: np.int64(i))
    # runs of alike arrays (one dtype and shape: show adds up to RUN of them as a block),
    # longer than a run, cut by the limit, or broken by another item
    alike = st.builds(lambda a, k, other, at: [a.copy() for _ in range(k)][:at] + other +
                      [a.copy() for _ in range(k)][at:],
                      _arrays(), st.integers(1, 20), st.lists(_arrays(), max_size=1),
                      st.integers(0, 20))
    return st.recursive(
        st.none() | _arrays() | st.builds(lambda: np.ma.masked_array([1.0, 2.0])),
        lambda inner: st.lists(inner, max_size=6) | st.dictionaries(keys, inner, max_size=4) |
        alike, max_leaves=30)


@given(_values(), st.sampled_from([None, 0, 1, 3]))
@settings(max_examples=300, deadline=None)
def test_show_prints_what_the_per_element_formatter_printed(value: Any,
                                                            limit: int | None) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert "".join(_piped(value, limit, monkeypatch)) == _twin_piped(value, limit)
    assert _terminal(lambda out: show._print_value(out, value, "", limit)) == \
        _twin_terminal(value, limit)


class _Key:
    """A map key whose repr is any text."""

    def __repr__(self) -> str:
        return "k\x1b[31m \n x \t"


def test_lines_that_need_it_are_escaped_and_stripped_as_before(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A string array's repr holds what a terminal must not get raw only escaped; a value
    of an odd type prints its type's name, a key its repr: all as the twin printed them."""
    odd = type("odd\x1b[31m ", (), {})()
    value = [np.array(["a\x1b[2J", "b \u2028"], dtype=object), odd,
             {b"\xff\x00": np.array([" ", "x "], dtype=object), _Key(): None},
             np.array([["a "], ["b"]])]
    assert "".join(_piped(value, None, monkeypatch)) == _twin_piped(value, None)
    assert _terminal(lambda out: show._print_value(out, value, "", None)) == \
        _twin_terminal(value, None)


def test_a_value_of_many_tiny_arrays_is_printed_in_batches_of_bounded_size(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch lives beside the whole value (its size adds to show's peak memory): it
    is printed every BATCH lines or so, and the batches make the twin's text."""
    rng = np.random.default_rng(0)
    value = [{k: [list(rng.random((3, 2), dtype=np.float32)) for _ in range(2)]
              for k in range(40)} for _ in range(30)]
    monkeypatch.setattr(show._Preview, "BATCH", 64)
    written = _piped(value, None, monkeypatch)
    assert "".join(written) == _twin_piped(value, None)
    assert len(written) > 100
    assert all(w.count("\n") <= 64 + 16 for w in written)


def test_a_batch_holds_a_bounded_number_of_large_arrays(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """numpy's repr of an array of more than 8 values may be many lines: a batch holds
    at most LARGE of them, however few lines it has."""
    value = [np.arange(100, dtype=np.float32).reshape(10, 10) + i for i in range(200)]
    written = _piped(value, None, monkeypatch)
    assert "".join(written) == _twin_piped(value, None)
    assert len(written) == -(-200 // show._Preview.LARGE)
