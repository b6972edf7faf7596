"""``onnxdata explore FILE --html OUT.html``: the explorer as one self-contained page.

The page shows what ``explore`` found, drawn for a person: the readings table,
the chosen reading's bytes as a hex view with nested coloured spans kept in
step with the byte table (hover or click either side), and the value as
pictures made here in Python (heatmaps as inline PNG inside SVG, charts and
histograms as SVG). The ``--json`` facts are embedded as they are, and the
readings table is drawn from that same dictionary, so page and JSON agree.

Everything on it is capped so a page stays small for any file: at most
``HEX_LIMIT`` bytes in the hex view (long payloads folded to a few bytes and
a note such as "raw_data, 16 MiB"), ``ROW_LIMIT`` byte-table rows,
``PICTURE_LIMIT`` pictures, ``OUTLINE_LIMIT`` elements per sequence or map and
``ENTRY_LIMIT`` in all, and statistics on a sample of at most ``SAMPLE``
values read from the
memory-mapped value (``read``), so drawing a 1 GiB sequence touches a few
pages of each tensor, not its payload. Values that ``read`` must build whole
(strings, sparse tensors, maps) are not drawn for files over ``DRAW_LIMIT``.

It uses only the explorer's public API: ``Exploration`` (``as_json``,
``chosen``, ``data``, ``file``, ``size``), ``Reading`` (``kind``,
``kind_name``, ``valid``, ``summary``), ``byte_table`` (with ``limit=`` where
it takes one) and ``ByteRow`` (``offset``, ``depth``, ``bytes``, ``field``,
``value``; a row's extent is read from its ``bytes`` text, ``0A 07 + 7 bytes``),
and ``read``.
"""

from __future__ import annotations

import base64
import html
import inspect
import itertools
import json
import math
import os
import re
import struct
import zlib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from onnxdata.errors import OnnxDataError
from onnxdata.explorer import ByteRow, Exploration, Reading, byte_table

__all__ = ["DRAW_LIMIT", "HEX_LIMIT", "ROW_LIMIT", "render_page", "write_page"]

#: Bytes shown in the hex view at most; the rest is named in a note.
HEX_LIMIT: Final = 8 << 10
#: Byte-table rows shown at most.
ROW_LIMIT: Final = 200
#: A field's own bytes longer than this are folded to their first ``FOLD_HEAD`` bytes.
FOLD_MIN: Final = 64
FOLD_HEAD: Final = 16
#: Problems listed per reading at most.
PROBLEM_LIMIT: Final = 20
#: Values drawn at most, and elements listed per sequence or map.
PICTURE_LIMIT: Final = 12
OUTLINE_LIMIT: Final = 64
ENTRY_LIMIT: Final = 256  # outline and map entries on the whole page
#: Values a tensor's statistics and histogram are computed on at most.
SAMPLE: Final = 1 << 16
#: A larger file's value is drawn only when its summary names no strings, sparse tensors or
#: maps: ``read`` builds those in memory (every string, dense element and key), while
#: numeric tensor payloads are zero-copy views of the mapped file.
DRAW_LIMIT: Final = 64 << 20
_BUILT: Final = ("string", "sparse", "map", "mixed")
_BLOCK: Final = 1 << 10  # a sample is SAMPLE // _BLOCK evenly spaced runs of _BLOCK values
_HEAT: Final = 96  # a heatmap has at most this many cells a side
_LINE: Final = 400  # a line chart has at most this many points
_VIRIDIS: Final = np.array([(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98),
                            (253, 231, 37)], dtype=np.float64)

Array = npt.NDArray[Any]


# --- the page ------------------------------------------------------------------------------

def write_page(result: Exploration, out: str | os.PathLike[str], *,
               facts: dict[str, Any] | None = None) -> Path:
    """Write the page for ``result`` to ``out`` (UTF-8) and return its path."""
    path = Path(out)
    path.write_text(render_page(result, facts=facts), encoding="utf-8")
    return path


def render_page(result: Exploration, *, facts: dict[str, Any] | None = None) -> str:
    """The whole page for ``result``, as one HTML string.

    ``facts`` are embedded and the readings are drawn from them: by default
    ``result.as_json()``; a caller printing more as ``--json`` passes what it prints.
    """
    if facts is None:
        facts = result.as_json()
    body = [_header(facts), _readings_table(facts), _bytes_section(result),
            _value_section(result)]
    template = resources.files("onnxdata").joinpath("page.html").read_text(encoding="utf-8")
    fill = {
        "title": _e(f"onnxdata explore {Path(result.file).name}"),
        "body": "\n".join(body),
        # "<" only occurs inside JSON strings, where \u003c is the same character; so no
        # "</script>" in a file name or message can end the script element early.
        "facts": json.dumps(facts).replace("<", "\\u003c"),
    }
    return re.sub(r"\{\{(title|body|facts)\}\}", lambda m: fill[m.group(1)], template)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.3g} {unit}"
    return f"{n} byte{'s' if n != 1 else ''}"


def _header(facts: dict[str, Any]) -> str:
    exact = f" ({facts['size']} bytes)" if facts["size"] >= 1024 else ""
    parts = [f"<h1>{_e(facts['file'])}</h1><p class=sub>{_size(facts['size'])}{exact}</p>"]
    if facts.get("model_warning"):
        parts.append(f"<p class=warn>warning: {_e(facts['model_warning'])}</p>")
    if facts["declared_type"] is not None:
        parts.append(f"<p>declared: <code>{_e(facts['declared_type'])}</code> "
                     f"(model {_e(facts['model'])}, {_e(facts['io'])} {_e(facts['index'])})</p>")
        if facts["type_problems"]:
            parts.append("<p class=bad>the value does not match the declared type:</p>"
                         + _problems(facts["type_problems"]))
        elif any(_kind_word(r["kind"]) == facts["chosen"] and r["well_formed"]
                 for r in facts["readings"]):
            parts.append("<p class=good>the value matches the declared type</p>")
    return "\n".join(parts)


def _problems(problems: list[dict[str, str]]) -> str:
    """The first PROBLEM_LIMIT problems, each with its path (all are in the facts)."""
    items = "".join(f"<li><code>{_e(p['path'] or '(message)')}</code> {_e(p['message'])}</li>"
                    for p in problems[:PROBLEM_LIMIT])
    if len(problems) > PROBLEM_LIMIT:
        items += (f"<li class=sub>… {len(problems) - PROBLEM_LIMIT} more, in the facts "
                  "at the end</li>")
    return f"<ul class=problems>{items}</ul>"


def _readings_table(facts: dict[str, Any]) -> str:
    shown = _shown_kind(facts)
    rows = []
    for r in facts["readings"]:
        is_chosen = shown is not None and _kind_word(r["kind"]) == shown
        fits = "<td class=good>yes</td>" if r["well_formed"] else "<td class=bad>no</td>"
        valid = ("<td class=good>yes</td>" if r["valid"] else
                 f"<td class=warn>no ({len(r['problems'])})</td>" if r["well_formed"] else
                 "<td>-</td>")
        what = _e(r["summary"]) + (_problems(r["problems"]) if r["problems"] else "")
        mark = " ←" if is_chosen else ""
        if facts["declared"] is not None and _kind_word(r["kind"]) == facts["declared"]:
            mark += " <span class=tag>declared</span>"
        name = r.get("message", r["kind"])  # the message name, where kinds are short names
        rows.append(f"<tr{' class=chosen' if is_chosen else ''}><th>{_e(name)}{mark}</th>"
                    f"{fits}{valid}<td>{what}</td></tr>")
    legend = "; <span class=tag>declared</span> the model's" if facts["declared"] else ""
    return ("<h2>Readings</h2><p class=sub>Which messages these bytes can be; ← marks the "
            f"one shown below{legend}.</p><table id=readings><thead><tr><th>reading</th>"
            "<th>fits</th><th>valid</th><th>value, or what is wrong</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def _shown_kind(facts: dict[str, Any]) -> str | None:
    """The kind laid out below: the chosen one, else (several valid readings and nothing
    to choose between them) the first valid one."""
    if facts["chosen"] is not None:
        return str(facts["chosen"])
    valid = [_kind_word(r["kind"]) for r in facts["readings"] if r["valid"]]
    return valid[0] if valid else None


def _shown(result: Exploration) -> Reading | None:
    """The reading laid out and drawn, as ``_shown_kind`` picks it."""
    return result.chosen or next((r for r in result.readings if r.valid), None)


def _kind_word(message: str) -> str:
    words = {"SequenceProto": "sequence", "OptionalProto": "optional", "MapProto": "map",
             "TensorProto": "tensor", "SparseTensorProto": "sparse_tensor"}
    return words.get(message, message)


# --- bytes: the hex view and the byte table ------------------------------------------------

@dataclass
class _Span:
    """A byte-table row placed in the bytes: ``[start, end)`` and the rows nested in it."""

    index: int
    row: ByteRow
    start: int
    end: int
    payload: int  # the length after a LEN field's tag and length ("+ 240 bytes"), else 0
    children: list[_Span] = field(default_factory=list)


def _row_extent(row: ByteRow) -> tuple[int, int] | None:
    """Where a row's bytes end, and its payload's length: ``0A 07 + 7 bytes`` ends
    2 + 7 bytes after its offset, with a payload of 7.

    A row that names no bytes (a note such as an elided stretch) has no span.
    """
    head, plus, tail = row.bytes.partition("+")
    tokens = head.split()
    if not tokens or not all(len(t) == 2 for t in tokens):
        return None
    try:
        int("".join(tokens), 16)
        extra = int(tail.split()[0]) if plus else 0
    except (ValueError, IndexError):
        return None
    return row.offset + len(tokens) + extra, extra


def _nest(rows: list[ByteRow], size: int) -> list[_Span]:
    """Place rows in the bytes by containment; a row overlapping a sibling gets no span."""
    root = _Span(-1, ByteRow(0, 0, "", "", ""), 0, size, 0)
    stack = [root]
    for i, row in enumerate(rows):
        extent = _row_extent(row)
        if extent is None or not 0 <= row.offset < extent[0] <= size:
            continue
        end, payload = extent
        while len(stack) > 1 and not (stack[-1].start <= row.offset and end <= stack[-1].end):
            stack.pop()
        parent = stack[-1]
        if parent.children and parent.children[-1].end > row.offset:
            continue
        span = _Span(i, row, row.offset, end, payload)
        parent.children.append(span)
        stack.append(span)
    return root.children


class _Hex:
    """Writes the hex view of ``data`` with at most ``limit`` bytes shown."""

    def __init__(self, data: Any, limit: int) -> None:
        self.data = data
        self.left = limit
        self.out: list[str] = []
        self.stopped_at: int | None = None

    def bytes(self, a: int, b: int, name: str, whole: int = 0) -> None:
        """Bytes ``[a, b)`` that no nested row covers, folded when long; the fold is
        labelled with ``whole`` (the field's payload length) when given."""
        if a >= b or self.stopped_at is not None:
            return
        shown = b if b - a <= FOLD_MIN else a + FOLD_HEAD
        take = min(shown - a, self.left)
        if take:
            self.out.append(" ".join(f"{x:02X}" for x in bytes(self.data[a:a + take])) + " ")
            self.left -= take
        if a + take < shown:
            self.stopped_at = a + take
            return
        if shown < b:
            self.out.append(f'<span class=fold title="{b - shown} bytes not shown">'
                            f"… {_e(name)}, {_size(whole or b - a)} …</span> ")

    def span(self, s: _Span) -> None:
        if self.stopped_at is not None:
            return
        hue = (s.index * 47) % 360
        misfit = " misfit" if _is_misfit(s.row) else ""
        self.out.append(f'<span class="f{misfit}" data-r="{s.index}" style="--h:{hue};'
                        f'--d:{min(s.row.depth, 4)}" title="{_e(s.row.field)} '
                        f'[{s.start}, {s.end})">')
        pos = s.start
        name = s.row.field.rsplit(".", 1)[-1]
        for child in s.children:
            self.bytes(pos, child.start, name)
            self.span(child)
            pos = child.end
        self.bytes(pos, s.end, name, 0 if s.children else s.payload)
        self.out.append("</span>")


def _rows_of(result: Exploration) -> tuple[list[ByteRow], int | None]:
    """The chosen reading's byte table, and how many rows it had when cut here.

    Where ``byte_table`` takes a ``limit`` (the streaming engine's) it is asked
    for ROW_LIMIT rows and ends with its own elision row (total None); else the
    whole table is made and the first ROW_LIMIT rows kept.
    """
    shown = _shown(result)
    assert shown is not None
    if "limit" in inspect.signature(byte_table).parameters:
        limit: dict[str, int] = {"limit": ROW_LIMIT}  # typed so mypy passes before the engine
        return byte_table(result.data, shown, **limit), None
    rows = byte_table(result.data, shown)
    return rows[:ROW_LIMIT], len(rows)


def _bytes_section(result: Exploration) -> str:
    data = result.data
    size = len(data)
    shown = _shown(result)
    if shown is None:
        hexer = _Hex(data, 256)
        hexer.bytes(0, size, "bytes")
        return ("<h2>Bytes</h2><p>No valid reading; explore with <code>--reading KIND</code> "
                f"to see one laid out.</p><div id=hex class=hex>{''.join(hexer.out)}</div>")
    rows, total = _rows_of(result)
    cut = (total is not None and total > len(rows)) or \
        any(_row_extent(r) is None for r in rows)  # an elision row names no bytes
    hexer = _Hex(data, HEX_LIMIT)
    pos = 0
    for s in _nest(rows, size):
        hexer.bytes(pos, s.start, "bytes")
        hexer.span(s)
        pos = s.end
    if not cut:
        hexer.bytes(pos, size, "bytes")
    notes = []
    if hexer.stopped_at is not None:
        notes.append(f"The hex view stops at byte {hexer.stopped_at} after {_size(HEX_LIMIT)} "
                     f"shown; {_size(size - hexer.stopped_at)} after it are not shown.")
    elif cut and pos < size:
        notes.append(f"The hex view stops with the byte table; bytes {pos} to {size} "
                     "are not shown.")
    if total is not None and total > len(rows):
        notes.append(f"The byte table shows its first {len(rows)} of {total} rows.")
    table = "".join(
        f'<tr data-r="{i}" class="d{min(r.depth, 6)}{" misfit" if _is_misfit(r) else ""}">'
        f"<td class=off>{r.offset}</td><td class=hx>{_e(r.bytes)}</td>"
        f'<td style="padding-left:{0.4 + r.depth * 1.1:.1f}em">{_e(r.field)}</td>'
        f"<td>{_e(r.value)}</td></tr>" for i, r in enumerate(rows))
    if result.chosen is None:
        others = [r.kind for r in result.readings if r.valid]
        notes.insert(0, f"These bytes are valid as {' and as '.join(others)}, and nothing "
                        f"says which: shown as {shown.kind}. Name one with --reading.")
    note = "".join(f"<p class=note>{_e(n)}</p>" for n in notes)
    return (f"<h2>Bytes as {_e(shown.kind)}</h2><p class=sub>Hover or click a field "
            "on either side to see it on the other.</p>" + note +
            f"<div class=pair><div id=hex class=hex>{''.join(hexer.out)}</div>"
            "<div class=tablebox><div id=info class=info>click a field</div>"
            "<table id=bytes><thead><tr><th>offset</th><th>bytes</th><th>field</th>"
            f"<th>value</th></tr></thead><tbody>{table}</tbody></table></div></div>")


def _is_misfit(row: ByteRow) -> bool:
    return row.value.startswith("does not fit")


# --- the value, drawn ----------------------------------------------------------------------

def _value_section(result: Exploration) -> str:
    head = "<h2>Value</h2>"
    chosen = _shown(result)
    if chosen is None:
        return head + "<p>No valid reading, so no value to draw.</p>"
    if not chosen.valid:
        return head + f"<p>Not drawn: the {_e(chosen.kind)} reading is not valid.</p>"
    if not os.path.isfile(result.file):
        return head + "<p>Not drawn: the value is drawn from a file, and these were bytes.</p>"
    built = [w for w in _BUILT if w in chosen.summary]
    if result.size > DRAW_LIMIT and built:
        return head + (f"<p>Not drawn: a {_size(result.size)} value of {', '.join(built)} "
                       "would be built whole in memory to draw it; "
                       f"<code>onnxdata.read(path, \"{chosen.kind_name}\")</code> gives it.</p>")
    from onnxdata.fast_read import read

    try:
        value = read(result.file, chosen.kind_name)
    except (OnnxDataError, OSError, ValueError, MemoryError) as exc:
        return head + f"<p class=bad>Not drawn: reading the value failed: {_e(exc)}</p>"
    drawn = (_optional_figure(value, _Budget()) if chosen.kind_name == "optional" else
             _draw(value, "", _Budget()))
    return head + f"<div id=value>{drawn}</div>"


@dataclass
class _Budget:
    """What is left to put on the page: tensor pictures, and outline or table entries in
    all (so sequences of sequences of sequences stay a few hundred lines)."""

    pictures: int = PICTURE_LIMIT
    entries: int = ENTRY_LIMIT

    def take(self, n: int) -> int:
        """Up to ``n`` entries, as many as are left."""
        got = max(0, min(n, OUTLINE_LIMIT, self.entries))
        self.entries -= got
        return got


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        name = "string" if value.dtype == object else value.dtype.name
        return f"tensor {name} {list(value.shape)}"
    if isinstance(value, list):
        return f"sequence of {len(value)}"
    if isinstance(value, dict):
        return f"map of {len(value)}"
    return "empty optional" if value is None else type(value).__name__


def _more(left: int, what: str) -> str:
    return f"… {left} more {what}, not listed" if left else ""


def _draw(value: Any, path: str, budget: _Budget) -> str:
    """A value's figure: pictures for a tensor, an outline for a sequence or optional,
    a table for a map, within what ``budget`` has left."""
    if isinstance(value, np.ndarray):
        if budget.pictures <= 0:
            return f"<p class=sub>{_e(_describe(value))}: not drawn ({PICTURE_LIMIT} " \
                   "pictures already on the page)</p>"
        budget.pictures -= 1
        return _tensor_figure(value)
    if isinstance(value, list):
        n = budget.take(len(value))
        items = []
        for i, v in enumerate(value[:n]):
            sub = f"{path}[{i}]"
            items.append(f"<li><details open><summary><code>{_e(sub)}</code> "
                         f"{_e(_describe(v))}</summary>{_draw(v, sub, budget)}</details></li>")
        more = _more(len(value) - n, "elements")
        return (f"<figure class=outline data-kind=sequence><figcaption>sequence of "
                f"{len(value)}</figcaption><ul>{''.join(items)}"
                f"{f'<li class=sub>{more}</li>' if more else ''}</ul></figure>")
    if isinstance(value, dict):
        return _map_table(value, budget)
    # an optional reads as its value or None; a top-level optional is drawn by the caller
    return "<p class=sub>empty optional (no value)</p>"


def _optional_figure(value: Any, budget: _Budget) -> str:
    inner = ("<p>empty: the optional holds no value</p>" if value is None else
             f"<details open><summary>holds {_e(_describe(value))}</summary>"
             f"{_draw(value, '', budget)}</details>")
    return f"<figure class=outline data-kind=optional><figcaption>optional</figcaption>" \
           f"{inner}</figure>"


def _map_table(value: dict[Any, Any], budget: _Budget) -> str:
    n = budget.take(len(value))
    rows = []
    for k, v in itertools.islice(value.items(), n):
        key = k.decode("utf-8", "backslashreplace") if isinstance(k, bytes) else str(k)
        rows.append(f"<tr><td><code>{_e(key)}</code></td><td>{_e(_describe(v))}</td>"
                    f"<td><code>{_e(_preview(v))}</code></td></tr>")
    more = _more(len(value) - n, "keys")
    return (f"<figure class=table data-kind=map><figcaption>map of {len(value)} keys"
            "</figcaption><table><thead><tr><th>key</th><th>value</th><th>preview</th></tr>"
            f"</thead><tbody>{''.join(rows)}"
            f"{f'<tr><td colspan=3 class=sub>{more}</td></tr>' if more else ''}"
            "</tbody></table></figure>")


def _preview(value: Any) -> str:
    if isinstance(value, np.ndarray):
        small = value.reshape(-1)[:8] if value.size > 8 else value
        text = np.array2string(small, threshold=8, edgeitems=3, max_line_width=80)
        return text + (" …" if value.size > 8 else "")
    return ""


def _tensor_figure(a: Array) -> str:
    title = _describe(a)
    if a.dtype == object:
        return _strings_table(a, title)
    try:
        values = _floats(_sample(a))
    except (TypeError, ValueError) as exc:  # a dtype numpy cannot turn into floats
        return (f"<figure class=tensor data-kind=tensor><figcaption>{_e(title)}</figcaption>"
                f"<p class=bad>not drawn: {_e(exc)}</p></figure>")
    parts = [_stats(a, values)]
    if a.ndim >= 2 and a.size:
        parts.append(_heatmap(a))
    elif a.ndim == 1 and a.size:
        parts.append(_line(a))
    if values.size > 1:
        parts.append(_histogram(values))
    return (f'<figure class=tensor data-kind=tensor><figcaption>{_e(title)}</figcaption>'
            f"<div class=pics>{''.join(parts)}</div></figure>")


def _strings_table(a: Array, title: str) -> str:
    flat = a.reshape(-1)
    rows = "".join(
        f"<tr><td>{i}</td><td><code>"
        f"{_e(s.decode('utf-8', 'backslashreplace') if isinstance(s, bytes) else s)}"
        f"</code></td></tr>" for i, s in enumerate(flat[:OUTLINE_LIMIT]))
    more = (f"<tr><td colspan=2 class=sub>… {flat.size - OUTLINE_LIMIT} more</td></tr>"
            if flat.size > OUTLINE_LIMIT else "")
    return (f"<figure class=table data-kind=strings><figcaption>{_e(title)}</figcaption>"
            f"<table><thead><tr><th>#</th><th>string</th></tr></thead><tbody>{rows}{more}"
            "</tbody></table></figure>")


def _sample(a: Array) -> Array:
    """At most SAMPLE values of ``a``, flat: all of them, or evenly spaced runs of _BLOCK
    (so a memory-mapped tensor has only the pages of those runs read)."""
    flat = a.reshape(-1)
    if flat.size <= SAMPLE:
        return flat
    runs = SAMPLE // _BLOCK
    starts = np.linspace(0, flat.size - _BLOCK, runs).astype(np.int64)
    return np.concatenate([flat[s:s + _BLOCK] for s in starts])


def _floats(a: Array) -> npt.NDArray[np.float64]:
    """Values as float64: bool and integers as numbers, complex as magnitude, and the
    ml_dtypes types (bfloat16, float8, float4, 4-bit integers) through float32."""
    if a.dtype.kind == "c":
        return np.abs(a).astype(np.float64)
    if a.dtype.kind in "biuf":
        return a.astype(np.float64)
    return a.astype(np.float32).astype(np.float64)


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _stats(a: Array, v: npt.NDArray[np.float64]) -> str:
    finite = v[np.isfinite(v)]
    facts = [("values", f"{a.size}")]
    if v.size < a.size:
        facts.append(("sampled", f"{v.size} values in {v.size // _BLOCK} runs"))
    if finite.size:
        facts += [("min", _fmt(float(finite.min()))), ("max", _fmt(float(finite.max()))),
                  ("mean", _fmt(float(finite.mean())))]
    facts += [("NaN", str(int(np.isnan(v).sum()))), ("±inf", str(int(np.isinf(v).sum())))]
    if a.dtype.kind == "c":
        facts.append(("note", "complex values drawn as their magnitude"))
    rows = "".join(f"<tr><th>{k}</th><td>{_e(x)}</td></tr>" for k, x in facts)
    return f"<table class=stats>{rows}</table>"


def _svg(width: int, height: int, inner: str, kind: str, label: str) -> str:
    return (f'<svg class=pic data-kind={kind} '
            f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" '
            f'aria-label="{_e(label)}"><title>{_e(label)}</title>{inner}</svg>')


def _colours(v: npt.NDArray[np.float64]) -> npt.NDArray[np.uint8]:
    """Viridis colours for ``v`` scaled to its finite range; NaN and inf are grey."""
    finite = np.isfinite(v)
    lo = float(v[finite].min()) if finite.any() else 0.0
    hi = float(v[finite].max()) if finite.any() else 1.0
    t = np.where(finite, (v - lo) / (hi - lo) if hi > lo else 0.5, 0.0)
    stops = np.linspace(0.0, 1.0, len(_VIRIDIS))
    rgb = np.stack([np.interp(t, stops, _VIRIDIS[:, c]) for c in range(3)], axis=-1)
    rgb[~finite] = (160, 160, 160)
    return rgb.round().astype(np.uint8)


def _png(rgb: npt.NDArray[np.uint8]) -> bytes:
    """A truecolour PNG of an (h, w, 3) image, by hand (zlib and crc32 only)."""
    h, w = rgb.shape[:2]

    def chunk(kind: bytes, payload: bytes) -> bytes:
        return (struct.pack(">I", len(payload)) + kind + payload
                + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF))

    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def _heatmap(a: Array) -> str:
    lead = a.shape[:-2]
    plane = a[(0,) * len(lead)] if lead else a
    h, w = plane.shape
    sy, sx = max(1, math.ceil(h / _HEAT)), max(1, math.ceil(w / _HEAT))
    cells = _floats(np.asarray(plane[::sy, ::sx]))
    where = "slice [" + ", ".join(["0"] * len(lead) + [":", ":"]) + "]" if lead else "2-D"
    step = f", every {sy}x{sx}" if sy * sx > 1 else ""
    label = f"heatmap, {where} of {h}x{w}{step}"
    png = base64.b64encode(_png(_colours(cells))).decode("ascii")
    ch, cw = cells.shape
    scale = min(240 / cw, 240 / ch)
    width, height = max(1, round(cw * scale)), max(1, round(ch * scale))
    finite = cells[np.isfinite(cells)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
    inner = (f'<image href="data:image/png;base64,{png}" x="0" y="0" width="{width}" '
             f'height="{height}" preserveAspectRatio="none" style="image-rendering:pixelated"/>'
             f'<text x="0" y="{height + 14}" class=ax>{_e(label)}</text>'
             f'<text x="0" y="{height + 28}" class=ax>dark {_fmt(lo)} … bright {_fmt(hi)}'
             "</text>")
    return _svg(max(width, 240), height + 34, inner, "heatmap", label)


def _line(a: Array) -> str:
    """Bars from zero for up to 48 values, else a line (broken at NaN and inf)."""
    n = a.shape[0]
    step = max(1, math.ceil(n / _LINE))
    v = _floats(np.asarray(a[::step]))
    bars = n <= 48
    width, height, pad = 320, 150, 22
    finite = v[np.isfinite(v)]
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    if bars:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    span = hi - lo if hi > lo else 1.0

    def y(x: float) -> float:
        return pad / 2 + (height - pad) * (1 - (x - lo) / span)

    label = f"{'bars' if bars else 'line'} of {n} values" + \
            (f", every {step}th" if step > 1 else "")
    axes = (f'<text x="2" y="10" class="ax">{_fmt(hi)}</text>'
            f'<text x="2" y="{height - 2}" class="ax">{_fmt(lo)}</text>'
            f'<text x="{width - 2}" y="{height - 2}" class="ax" text-anchor="end">{n - 1}'
            "</text>")
    if bars:
        base, bw = y(0.0), (width - 40) / n
        shapes = "".join(
            f'<rect x="{40 + i * bw:.1f}" y="{min(y(x), base):.1f}" width="{max(bw - 1, 1):.1f}"'
            f' height="{max(abs(base - y(x)), 0.5):.1f}" class="bar"><title>[{i}] {_fmt(x)}'
            "</title></rect>" for i, x in enumerate(v.tolist()) if math.isfinite(x))
        return _svg(width, height, axes + shapes, "bar", label)
    xs = np.linspace(40, width - 4, v.size).tolist()
    runs: list[list[str]] = [[]]
    for px, x in zip(xs, v.tolist(), strict=True):
        if math.isfinite(x):
            runs[-1].append(f"{px:.1f},{y(x):.1f}")
        elif runs[-1]:
            runs.append([])
    lines = "".join(f'<polyline points="{" ".join(r)}" class="line"/>' for r in runs if r)
    return _svg(width, height, axes + lines, "line", label)


def _histogram(v: npt.NDArray[np.float64]) -> str:
    finite = v[np.isfinite(v)]
    width, height, bins = 320, 150, 32
    if not finite.size:
        return ""
    counts, edges = np.histogram(finite, bins=bins if finite.min() < finite.max() else 1)
    top = int(counts.max()) or 1
    bw = (width - 8) / len(counts)
    bars = "".join(
        f'<rect x="{4 + i * bw:.1f}" y="{height - 20 - (height - 34) * c / top:.1f}" '
        f'width="{max(bw - 1, 1):.1f}" height="{(height - 34) * c / top:.1f}" class=hist>'
        f"<title>[{_fmt(float(edges[i]))}, {_fmt(float(edges[i + 1]))}): {c}</title></rect>"
        for i, c in enumerate(counts.tolist()))
    label = f"histogram of {finite.size} finite values"
    axes = (f'<text x="4" y="{height - 6}" class=ax>{_fmt(float(edges[0]))}</text>'
            f'<text x="{width - 4}" y="{height - 6}" class=ax text-anchor=end>'
            f"{_fmt(float(edges[-1]))}</text><text x=\"4\" y=\"10\" class=ax>{label}, "
            f"tallest {top}</text>")
    return _svg(width, height, axes + bars, "histogram", label)
