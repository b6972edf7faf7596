"""``onnxdata explore FILE --html OUT.html``: the explorer as one self-contained page.

The page shows what ``explore`` found, drawn for a person. It leads with the
chosen reading (the model's, the only valid one, or the first of several) and
its value: an outline for sequences and optionals, a table for maps, and for
each tensor the pictures of ``onnxdata.page.pictures``; then its bytes as a hex view
with nested coloured spans kept in step with the byte table (hover or click
either side). Every other valid reading is laid out the same way, hidden, and
a selector shows it in place of the first (bytes valid as several messages need
no command-line flag to see each). The readings table comes last, each other
reading one line with its problems folded. The ``--json`` facts are embedded as
they are, and the readings table is drawn from that same dictionary, so page and
JSON agree.

Everything on it is capped so a page stays small for any file: at most
``HEX_LIMIT`` bytes in the hex view (long payloads folded to a few bytes and
a note such as "raw_data, 16 MiB"), ``ROW_LIMIT`` byte-table rows,
``PICTURE_LIMIT`` pictures, ``OUTLINE_LIMIT`` elements per sequence or map and
``ENTRY_LIMIT`` in all. The value comes from ``read``, memory-mapped, and each
picture reads a bounded sample of it, so drawing a 1 GiB sequence touches a
few pages of each tensor, not its payload. Values that ``read`` must build
whole (strings, sparse tensors, maps) are not drawn for files over
``DRAW_LIMIT``, and the densified sparse tensors and external data of the value
drawn may take at most ``DRAW_LIMIT`` bytes in all. Every string, name and key
shown is cut to ``pictures.STRING_LIMIT`` characters. A file of at most
``DRAW_LIMIT`` bytes is read as one copy (``copy=True``), so a rewrite cannot
fault it; a larger one is mapped, as ``read`` documents.

It uses only the explorer's public API: ``Exploration`` (``as_json``,
``chosen``, ``data``, ``file``, ``size``), ``Reading`` (``kind``,
``kind_name``, ``valid``, ``summary``), ``byte_table`` (with ``limit=`` where
it takes one) and ``ByteRow`` (``offset``, ``depth``, ``bytes``, ``field``,
``value``; a row's extent is read from its ``bytes`` text, ``0A 07 + 7 bytes``),
and ``read``.
"""

from __future__ import annotations

import html
import itertools
import json
import os
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Final

import numpy as np

from onnxdata.core.messages import KIND_OF_MESSAGE
from onnxdata.errors import OnnxDataError
from onnxdata.explorer.readings import Exploration, Reading, byte_table
from onnxdata.explorer.table import ByteRow
from onnxdata.page.pictures import clip, tensor_figure

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
#: A larger file's value is drawn only when its summary names no strings, sparse tensors or
#: maps: ``read`` builds those in memory (every string, dense element and key), while
#: numeric tensor payloads are zero-copy views of the mapped file.
DRAW_LIMIT: Final = 64 << 20
_BUILT: Final = ("string", "sparse", "map", "mixed")


# --- the page ------------------------------------------------------------------------------

def write_page(result: Exploration, out: str | os.PathLike[str], *,
               facts: dict[str, Any] | None = None) -> Path:
    """Write the page for ``result`` to ``out`` (UTF-8) and return its path.

    The page is rendered whole first, then written atomically (``atomic_writer``):
    a failure (a full disk, a name that cannot be encoded) leaves the old page as
    it was, never a partial or empty one.
    """
    from onnxdata.io.atomic import atomic_writer

    path = Path(out)
    data = page_bytes(render_page(result, facts=facts))
    with atomic_writer(path) as fh:
        fh.write(data)
    return path


def page_bytes(page: str) -> bytes:
    """The page as UTF-8; a file name's undecodable bytes (surrogate escapes) as ``\\xNN``."""
    return re.sub("[\udc80-\udcff]", lambda m: f"\\x{ord(m.group(0)) - 0xDC00:02x}",
                  page).encode("utf-8", "backslashreplace")


def render_page(result: Exploration, *, facts: dict[str, Any] | None = None) -> str:
    """The whole page for ``result``, as one HTML string.

    ``facts`` are embedded and the readings are drawn from them: by default
    ``result.as_json()``; a caller printing more as ``--json`` passes what it prints.
    """
    if facts is None:
        facts = result.as_json()
    views = _laid_out(result)
    laid = [_view(result, r, first=i == 0) for i, r in enumerate(views)] or [
        _no_reading_bytes(result), "<h2>Value</h2><p>No valid reading, so no value to draw.</p>"]
    body = [_header(facts), _lead(result, views), *laid, _readings_table(facts)]
    template = resources.files("onnxdata.page").joinpath("page.html").read_text(encoding="utf-8")
    fill = {
        "title": _e(f"onnxdata explore {Path(result.file).name}"),
        "body": "\n".join(body),
        # "<" only occurs inside JSON strings, where \u003c is the same character; so no
        # "</script>" in a file name or message can end the script element early.
        "facts": json.dumps(facts).replace("<", "\\u003c"),
    }
    return re.sub(r"\{\{(title|body|facts)\}\}", lambda m: fill[m.group(1)], template)


def _e(text: object) -> str:
    return html.escape(clip(str(text)), quote=True)


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
        what = _e(r["summary"])
        if r.get("merged_count"):
            what += (f" <span class=tag>merged</span> <span class=sub>valid only by merging "
                     f"{_e(_merge_text(r))}</span>")
        if r["problems"]:  # folded to one line unless it is the reading shown
            n = r["problem_count"] or len(r["problems"])
            what += (f"<details{' open' if is_chosen else ''}><summary>{n} problem"
                     f"{'s' if n != 1 else ''}</summary>{_problems(r['problems'])}</details>")
        mark = " ←" if is_chosen else ""
        if facts["declared"] is not None and _kind_word(r["kind"]) == facts["declared"]:
            mark += " <span class=tag>declared</span>"
        name = r.get("message", r["kind"])  # the message name, where kinds are short names
        rows.append(f"<tr{' class=chosen' if is_chosen else ''}><th>{_e(name)}{mark}</th>"
                    f"{fits}{valid}<td>{what}</td></tr>")
    legend = "; <span class=tag>declared</span> the model's" if facts["declared"] else ""
    marks = ("← marks the one shown above; the others are folded to one line, their "
             "problems a click away" if shown is not None else
             "none is valid, so none is laid out above")
    return ("<h2>Readings</h2><p class=sub>Which messages these bytes can be; "
            f"{marks}{legend}.</p><table id=readings><thead><tr><th>reading</th>"
            "<th>fits</th><th>valid</th><th>value, or what is wrong</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table>")


def _merge_text(r: dict[str, Any]) -> str:
    first = r["merged"][0]
    more = r["merged_count"] - 1
    return (f"{first['path'] or 'the message'} given {first['occurrences']} times"
            + (f" and {more} more" if more else ""))


def _laid_out(result: Exploration) -> list[Reading]:
    """The readings the page lays out, the one shown first: the chosen (or first valid)
    reading, then every other valid one, for the selector to switch to."""
    shown = _shown(result)
    if shown is None:
        return []
    return [shown, *(r for r in result.readings if r.valid and r is not shown)]


def _lead(result: Exploration, views: list[Reading]) -> str:
    """What the page says before the readings laid out: a model that declares another
    kind, and the selector that shows another valid reading in place of the first."""
    if not views:
        return ("<p class=lead>No reading is valid: the readings below say what breaks "
                "each.</p>")
    parts = []
    if result.mismatch is not None:
        parts.append(f"<p class=warn>{_e(result.mismatch)}</p>")
    if len(views) > 1:
        options = "".join(
            f'<option value="{_e(r.kind_name)}"{" selected" if i == 0 else ""}>{_e(r.kind)}'
            f'{" (valid only by merging)" if r.merged_count else ""}</option>'
            for i, r in enumerate(views))
        parts.append(f"<p id=switch><label>{len(views)} readings are valid; show the value "
                     f"and the bytes as <select id=reading>{options}</select></label></p>")
    return "\n".join(parts)


def _why(result: Exploration, shown: Reading, first: bool) -> str:
    """Why a laid-out reading is there, in a few words."""
    valid = result.valid_readings
    if not first:
        return (f"also valid, only by merging {_merge_text(shown.as_json())}"
                if shown.merged_count else "also valid: the same bytes")
    if result.declared is not None and result.declared.kind == shown.kind_name:
        why = "the reading the model declares"
    elif result.note is not None:
        why = "the only valid reading that needs no merging"
    elif result.chosen is None:
        why = "one of several valid readings of the same bytes"
    elif valid == [shown]:
        why = "the only valid reading"
    else:
        why = "the reading asked for"
    return f"{why}, {'valid' if shown.valid else 'not valid'}"


def _view(result: Exploration, reading: Reading, *, first: bool) -> str:
    """One reading laid out: what it is, its value, then its bytes; only the first is
    shown at load (the selector shows another)."""
    lead = (f"<p class=lead>Read as <b>{_e(reading.kind)}</b> ({_e(_why(result, reading, first))})"
            f": {_e(reading.summary)}</p>")
    return (f'<section class=view data-kind="{_e(reading.kind_name)}"'
            f'{"" if first else " hidden"}>{lead}{_value_section(result, reading, first)}'
            f"{_bytes_section(result, reading, first)}</section>")


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
    return KIND_OF_MESSAGE.get(message, message)


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
            self.out.append(" ".join(f"{x:02X}" for x in self.data.read(a, a + take)) + " ")
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


def _ids(first: bool, kind: str) -> dict[str, str]:
    """The ids of a view's parts: plain on the view shown at load, suffixed on the others."""
    tail = "" if first else f"-{kind}"
    return {k: f"{k}{tail}" for k in ("hex", "bytes", "info", "value")}


def _no_reading_bytes(result: Exploration) -> str:
    hexer = _Hex(result.data, 256)
    hexer.bytes(0, result.data.size, "bytes")
    return ("<h2>Bytes</h2><p>No valid reading; explore with <code>--kind KIND</code> "
            f"to see one laid out.</p><div id=hex class=hex>{''.join(hexer.out)}</div>")


def _bytes_section(result: Exploration, shown: Reading, first: bool = True) -> str:
    data = result.data
    size = data.size
    ids = _ids(first, shown.kind_name)
    # The walk stops recording after ROW_LIMIT rows and closes the table with a row
    # counting the rest; that row names no bytes, and the hex view stops with it.
    rows = byte_table(data, shown, limit=ROW_LIMIT)
    cut = any(_row_extent(r) is None for r in rows)
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
    table = "".join(
        f'<tr data-r="{i}" class="d{min(r.depth, 6)}{" misfit" if _is_misfit(r) else ""}">'
        f"<td class=off>{r.offset}</td><td class=hx>{_e(r.bytes)}</td>"
        f'<td style="padding-left:{0.4 + r.depth * 1.1:.1f}em">{_e(r.field)}</td>'
        f"<td>{_e(r.value)}</td></tr>" for i, r in enumerate(rows))
    if result.chosen is None and first:
        others = [r.kind for r in result.readings if r.valid]
        notes.insert(0, f"These bytes are valid as {' and as '.join(others)}, and nothing "
                        f"says which: shown as {shown.kind}; the selector at the top shows "
                        "the other.")
    note = "".join(f"<p class=note>{_e(n)}</p>" for n in notes)
    return (f"<h2>Bytes as {_e(shown.kind)}</h2><p class=sub>Hover or click a field "
            "on either side to see it on the other.</p>" + note +
            f"<div class=pair><div id={ids['hex']} class=hex>{''.join(hexer.out)}</div>"
            f"<div class=tablebox><div id={ids['info']} class=info>click a field</div>"
            f"<table id={ids['bytes']} class=bytes><thead><tr><th>offset</th><th>bytes</th>"
            f"<th>field</th><th>value</th></tr></thead><tbody>{table}</tbody></table>"
            "</div></div>")


def _is_misfit(row: ByteRow) -> bool:
    return row.value.startswith("does not fit")


# --- the value, drawn ----------------------------------------------------------------------

def _value_section(result: Exploration, chosen: Reading, first: bool = True) -> str:
    head = f"<h2>Value as {_e(chosen.kind)}</h2>"
    if not chosen.valid:
        return head + f"<p>Not drawn: the {_e(chosen.kind)} reading is not valid.</p>"
    if not os.path.isfile(result.file):
        return head + "<p>Not drawn: the value is drawn from a file, and these were bytes.</p>"
    built = [w for w in _BUILT if w in chosen.summary]
    if result.size > DRAW_LIMIT and built:
        return head + (f"<p>Not drawn: a {_size(result.size)} value of {', '.join(built)} "
                       "would be built whole in memory to draw it; "
                       f"<code>onnxdata.read(path, \"{chosen.kind_name}\")</code> gives it.</p>")
    from onnxdata.core.budget import densify_budget, get_densify_limit
    from onnxdata.io.read import read

    try:
        # what read builds (densified sparse tensors, external data) is judged by the value's
        # size, not the file's: a 2 KB file can name gigabytes of external data
        with densify_budget(min(DRAW_LIMIT, get_densify_limit())):
            # a copy (the file at one instant) where it is small enough: a file truncated
            # while its mapped pages are drawn would end the command by SIGBUS
            value = read(result.file, chosen.kind_name, copy=result.size <= DRAW_LIMIT)
    except (OnnxDataError, OSError, ValueError, MemoryError) as exc:
        return head + f"<p class=bad>Not drawn: reading the value failed: {_e(exc)}</p>"
    drawn = (_optional_figure(value, _Budget()) if chosen.kind_name == "optional" else
             _draw(value, "", _Budget()))
    return head + f"<div id={_ids(first, chosen.kind_name)['value']} class=value>{drawn}</div>"


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
        return tensor_figure(value, _describe(value), OUTLINE_LIMIT)
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
