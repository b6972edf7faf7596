"""The scoreboard of a run (``onnxdata run ... --report out.html`` or ``out.json``).

The page is one self-contained HTML file: a header with the backend, its versions
and providers and the totals; one row per case and set with its status and
time; a filter by status and by name (a few lines of script, no network); and for
each failure its nested differences and, for a differing array, the explorer's
pictures of both values (``pictures.tensor_figure``). Every text on it is escaped
and cut (``_TEXT``), differences are listed up to ``_SHOWN`` per output, and
pictures are drawn for the first ``_PICTURED`` failures. The JSON report is the
same facts for programs. Both are written atomically (``io.atomic.atomic_writer``):
a failed write leaves the old report as it was.
"""

from __future__ import annotations

import html
import json
import os
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from onnxdata.cases.case_run import SetResult
from onnxdata.io.atomic import atomic_writer

__all__ = ["render_page", "summarize", "write_report"]

_TEXT: Final = 400  # characters of any one message, name or difference shown
_SHOWN: Final = 20  # differences listed per output
_PICTURED: Final = 50  # failures whose arrays are drawn
STATUSES: Final = ("pass", "fail", "xfail", "skip", "error", "unchecked")


def summarize(results: Sequence[SetResult], slowest: int = 5) -> dict[str, Any]:
    """Totals: sets, cases, counts per status, skips by reason, the slowest sets."""
    counts = Counter(r.status for r in results)
    reasons = Counter(r.reason for r in results if r.status == "skip")
    top = sorted(results, key=lambda r: -r.seconds)[:slowest]
    cases = {r.folder if r.set == "*" else os.path.dirname(r.folder) for r in results}
    return {"sets": len(results), "cases": len(cases),
            "counts": {k: counts.get(k, 0) for k in STATUSES},
            "skipped_by_reason": dict(reasons.most_common()),
            "slowest": [(r.id, round(r.seconds, 6)) for r in top if r.seconds > 0]}


def write_report(path: str | os.PathLike[str], results: Sequence[SetResult],
                 header: dict[str, str]) -> None:
    """Write the report at ``path``: JSON for ``.json``, else the HTML page."""
    if Path(path).suffix == ".json":
        data = {"header": header, "summary": summarize(results),
                "sets": [r.as_json() for r in results]}
        body = (json.dumps(data, indent=2) + "\n").encode("utf-8", "surrogateescape")
    else:
        body = render_page(results, header).encode("utf-8", "backslashreplace")
    with atomic_writer(path) as f:
        f.write(body)


def _e(text: object) -> str:
    s = str(text)
    if len(s) > _TEXT:
        s = s[:_TEXT] + f"… ({len(s) - _TEXT} more characters)"
    return html.escape(s.encode("utf-8", "backslashreplace").decode("utf-8"), quote=True)


_STYLE: Final = """
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.3em}table{border-collapse:collapse;width:100%}
td,th{border-bottom:1px solid #ddd;padding:.3em .5em;text-align:left;vertical-align:top}
.pass{color:#1a7f37}.fail{color:#b35900}.error{color:#c00}.xfail{color:#8250df}
.skip{color:#0550ae}.unchecked{color:#0a7d8c}dl{display:grid;grid-template-columns:auto 1fr;
gap:.2em 1em}dt{font-weight:600}pre{white-space:pre-wrap;margin:.3em 0}
.figs{display:flex;gap:1em;flex-wrap:wrap}figure{margin:0}#bar{margin:1em 0}
"""

_SCRIPT: Final = """
const st=document.getElementById('status'),nm=document.getElementById('name');
function apply(){const s=st.value,n=nm.value.toLowerCase();let shown=0;
for(const r of document.querySelectorAll('tbody tr.row')){
const ok=(!s||r.dataset.status===s)&&r.dataset.id.toLowerCase().includes(n);
r.hidden=!ok;const d=r.nextElementSibling;if(d&&d.classList.contains('detail'))d.hidden=!ok;
if(ok)shown++;}
document.getElementById('shown').textContent=shown;}
st.addEventListener('change',apply);nm.addEventListener('input',apply);apply();
"""


def render_page(results: Sequence[SetResult], header: dict[str, str]) -> str:
    """The scoreboard page as one HTML string."""
    s = summarize(results)
    head = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in header.items())
    totals = " · ".join(f"<span class={k}>{n} {k}</span>" for k, n in s["counts"].items()
                        if n)
    options = "".join(f"<option value={k}>{k} ({n})</option>" for k, n in s["counts"].items()
                      if n)
    rows = []
    pictured = 0
    for r in results:
        why = r.message or r.reason
        rows.append(f"<tr class=row data-status={_e(r.status)} data-id=\"{_e(r.id)}\">"
                    f"<td>{_e(r.id)}</td><td class={_e(r.status)}>{_e(r.status)}</td>"
                    f"<td>{r.seconds:.3f} s</td><td>{_e(why)}</td></tr>")
        if r.status in ("fail", "xfail", "error") and r.outputs:
            detail, drew = _detail(r, pictured < _PICTURED)
            pictured += drew
            if detail:
                rows.append(f"<tr class=detail><td colspan=4>{detail}</td></tr>")
    facts = json.dumps({"header": header, "summary": s}).replace("<", "\\u003c")
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        "<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; "
        "img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">"
        f"<title>onnxdata scoreboard</title><style>{_STYLE}</style></head><body>"
        f"<h1>onnxdata scoreboard</h1><dl>{head}</dl>"
        f"<p id=totals>{s['sets']} sets in {s['cases']} cases: {totals or 'none'}</p>"
        "<div id=bar><label>status <select id=status><option value=''>all</option>"
        f"{options}</select></label> <label>name <input id=name type=search></label> "
        "<span id=shown></span> shown</div>"
        "<table><thead><tr><th>case[set]</th><th>status</th><th>time</th><th>why</th>"
        f"</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"<script type=application/json id=facts>{facts}</script>"
        f"<script>{_SCRIPT}</script></body></html>\n")


def _detail(r: SetResult, draw: bool) -> tuple[str, int]:
    from onnxdata.page.pictures import tensor_figure

    parts = []
    drew = 0
    for o in r.outputs:
        lines = [f"{d}" for d in o.differences[:_SHOWN]] + \
            [f"against: {d}" for d in o.against[:_SHOWN]]
        n = len(o.differences) + len(o.against)
        if not lines:
            continue
        more = f"\n… {n - len(lines)} more" if n > len(lines) else ""
        parts.append(f"<div class=output><b>output {o.index} {_e(repr(o.name))}</b>: "
                     f"{n} difference{'s' if n != 1 else ''}"
                     f"<pre>{chr(10).join(_e(x) for x in lines)}{_e(more)}</pre>")
        if draw and o.pictures is not None:
            actual, expected = o.pictures
            parts.append("<div class=figs>" + tensor_figure(actual, "actual") +
                         tensor_figure(expected, "expected") + "</div>")
            drew = 1
        parts.append("</div>")
    return "".join(parts), drew
