"""The user's file of tolerances, known failures and skips, read by ``onnxdata run`` and the
pytest plugin (``--expectations FILE``), TOML (``.toml``) or JSON (anything else)::

    rtol = 1e-3                      # defaults for every case (these are the built-in ones)
    atol = 1e-7

    [[tolerance]]                    # per case, by glob on the case folder's name
    case = "test_dft*"
    atol = 1e-3
    output = "y"                     # optional: that output only (its name in the model)

    [[xfail]]                        # a known failure: strict, so a pass is reported
    case = "test_*_batchwise"
    set = "test_data_set_0"          # optional glob on the set's folder name
    reason = "ORT's CPU RNN, GRU and LSTM take layout 0 only (not batchwise)"

    [[skip]]
    case = "test_attention_*"
    reason = "too slow on this runner"

Later entries win over earlier ones. A file that is not this shape is an
``ExpectationsError`` naming the entry and the key.
"""

from __future__ import annotations

import fnmatch
import importlib
import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onnxdata.errors import DecodeError, OnnxDataError

__all__ = ["Expectation", "Expectations", "ExpectationsError", "read_expectations"]

RTOL = 1e-3
ATOL = 1e-7


class ExpectationsError(OnnxDataError):
    """The expectations file cannot be read or is not the documented shape."""


@dataclass(frozen=True)
class Expectation:
    """What one data set of one case is expected to do."""

    rtol: float = RTOL
    atol: float = ATOL
    per_output: dict[str, tuple[float, float]] = field(default_factory=dict)
    xfail: str | None = None
    skip: str | None = None

    def tolerance(self, output: str) -> tuple[float, float]:
        """``(rtol, atol)`` for the output named ``output``."""
        return self.per_output.get(output, (self.rtol, self.atol))


@dataclass(frozen=True)
class _Rule:
    case: str
    set: str
    rtol: float | None = None
    atol: float | None = None
    output: str | None = None
    reason: str = ""

    def matches(self, case: str, set_name: str) -> bool:
        return fnmatch.fnmatchcase(case, self.case) and fnmatch.fnmatchcase(set_name, self.set)


@dataclass(frozen=True)
class Expectations:
    """The rules of one file (or none: ``Expectations()``), looked up per case and set."""

    rtol: float = RTOL
    atol: float = ATOL
    tolerances: tuple[_Rule, ...] = ()
    xfails: tuple[_Rule, ...] = ()
    skips: tuple[_Rule, ...] = ()
    source: str = ""

    def lookup(self, case: str, set_name: str = "test_data_set_0") -> Expectation:
        """The expectation for set ``set_name`` of the case folder named ``case``."""
        rtol, atol = self.rtol, self.atol
        per: dict[str, tuple[float, float]] = {}
        for r in self.tolerances:
            if not r.matches(case, set_name):
                continue
            if r.output is None:
                rtol = r.rtol if r.rtol is not None else rtol
                atol = r.atol if r.atol is not None else atol
            else:
                old = per.get(r.output, (rtol, atol))
                per[r.output] = (r.rtol if r.rtol is not None else old[0],
                                 r.atol if r.atol is not None else old[1])
        xfail = next((r.reason for r in reversed(self.xfails) if r.matches(case, set_name)),
                     None)
        skip = next((r.reason for r in reversed(self.skips) if r.matches(case, set_name)), None)
        return Expectation(rtol, atol, per, xfail, skip)

    def with_defaults(self, rtol: float, atol: float) -> Expectations:
        """The same rules over other default tolerances (the command line's)."""
        return Expectations(rtol, atol, self.tolerances, self.xfails, self.skips, self.source)


def read_expectations(path: str | Path) -> Expectations:
    """The rules in ``path`` (TOML for ``.toml``, else JSON); ExpectationsError naming the
    file for anything it cannot take: a folder, a FIFO, more than ``MAX_BYTES`` (a device
    is read up to that), nesting deeper than ``MAX_NESTING``, a number of more than
    ``MAX_DIGITS`` digits or one that is not finite."""
    p = Path(path)
    kind = "TOML" if p.suffix == ".toml" else "JSON"
    try:
        from onnxdata.wire.source import read_checked  # (numpy: only when read)

        text = bytes(read_checked(os.fspath(p), fifo=False, limit=MAX_BYTES))
    except DecodeError as exc:
        raise ExpectationsError(f"cannot read the expectations file {p}: {exc.reason}") \
            from exc
    except OSError as exc:
        raise ExpectationsError(f"cannot read the expectations file {p}: "
                                f"{exc.strerror or exc}") from exc
    depth = _nesting(text)
    if depth > MAX_NESTING:
        raise ExpectationsError(f"{p}: nested {depth} levels deep; an expectations file "
                                f"needs at most {MAX_NESTING}")
    try:
        data = _toml().loads(text.decode("utf-8"), parse_float=_float) \
            if kind == "TOML" else json.loads(text, parse_int=_int, parse_float=_float,
                                              parse_constant=_constant)
    except (ValueError, UnicodeDecodeError, RecursionError, OverflowError) as exc:
        raise ExpectationsError(f"{p}: not valid {kind}: {exc}") from exc
    if not isinstance(data, dict):
        raise ExpectationsError(f"{p}: the top level must be a table (an object)")
    unknown = sorted(set(data) - {"rtol", "atol", "tolerance", "xfail", "skip"})
    if unknown:
        raise ExpectationsError(f"{p}: unknown key {unknown[0]!r} (known: rtol, atol, "
                                "tolerance, xfail, skip)")
    return Expectations(
        _number(data, "rtol", str(p), RTOL), _number(data, "atol", str(p), ATOL),
        _rules(data, "tolerance", p, {"case", "set", "rtol", "atol", "output"}),
        _rules(data, "xfail", p, {"case", "set", "reason"}),
        _rules(data, "skip", p, {"case", "set", "reason"}), str(p))


#: The most bytes an expectations file may have (a device is read up to this).
MAX_BYTES = 16 << 20
#: The deepest nesting of arrays and tables an expectations file may have (it needs 3).
MAX_NESTING = 32
#: The most digits a number may have (a tolerance needs a handful).
MAX_DIGITS = 64


def _nesting(text: bytes) -> int:
    """An upper bound of the file's nesting: the most ``[`` and ``{`` open at once, counted
    in strings and comments too (a real file is far below the limit even so). Counted
    before parsing, so no parser recurses into a file 100,000 levels deep."""
    depth = top = 0
    for b in text.translate(None, _NOT_BRACKETS):
        depth = depth + 1 if b in b"[{" else max(0, depth - 1)
        top = max(top, depth)
    return top


_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _int(s: str) -> int:
    if len(s) > MAX_DIGITS:
        raise ValueError(f"a number of {len(s)} digits (at most {MAX_DIGITS})")
    return int(s)


def _float(s: str) -> float:
    if len(s) > MAX_DIGITS:
        raise ValueError(f"a number of {len(s)} characters (at most {MAX_DIGITS})")
    return float(s)


def _constant(s: str) -> float:
    raise ValueError(f"{s} is not a tolerance")


def _toml() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    # Python 3.10: the same parser, as a package (the [pytest] extra); imported by name so
    # a user's mypy on 3.11+, where it is absent, has nothing to find
    return importlib.import_module("tomli")


def _number(d: dict[str, Any], key: str, where: str, default: float) -> float:
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < math.inf:
        shown = repr(v) if len(repr(v)) < 80 else f"{repr(v)[:40]}…"
        raise ExpectationsError(f"{where}: {key} must be a number >= 0 and finite, not {shown}")
    try:
        return float(v)
    except OverflowError:  # an int too big for a float (TOML's own ints)
        raise ExpectationsError(f"{where}: {key} is too big for a tolerance") from None


def _rules(data: dict[str, Any], key: str, p: Path, allowed: set[str]) -> tuple[_Rule, ...]:
    entries = data.get(key, [])
    if not isinstance(entries, list):
        raise ExpectationsError(f"{p}: {key} must be a list of tables ([[{key}]])")
    rules = []
    for i, e in enumerate(entries):
        where = f"{p}: {key}[{i}]"
        if not isinstance(e, dict):
            raise ExpectationsError(f"{where} must be a table")
        extra = sorted(set(e) - allowed)
        if extra:
            raise ExpectationsError(f"{where}: unknown key {extra[0]!r} (known: "
                                    f"{', '.join(sorted(allowed))})")
        case, set_name = e.get("case"), e.get("set", "*")
        if not isinstance(case, str) or not isinstance(set_name, str):
            raise ExpectationsError(f"{where}: case (and set) must be glob strings")
        reason = e.get("reason", "")
        if key != "tolerance" and (not isinstance(reason, str) or not reason):
            raise ExpectationsError(f"{where}: a {key} needs a reason")
        output = e.get("output")
        if output is not None and not isinstance(output, str):
            raise ExpectationsError(f"{where}: output must be an output's name")
        rtol = _number(e, "rtol", where, 0) if "rtol" in e else None
        atol = _number(e, "atol", where, 0) if "atol" in e else None
        rules.append(_Rule(case, set_name, rtol, atol, output, reason))
    return tuple(rules)
