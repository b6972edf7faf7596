"""The page of ``onnxdata locate --report out.html``: one self-contained HTML file.

It shows the case and both backends, the graph path from an input to the located
node (each node with its op type, the located one marked), the differing output with
its path, errors and differences, the explorer's pictures of both backends' values
at that path (``pictures.tensor_figure``, as the scoreboard draws a failure), the later
nodes the difference spreads to, and the notes (values out of sight). Every text is
escaped; the page is written atomically. ``--report out.json`` writes the JSON object.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Final

from onnxdata.cases.divergence import Located
from onnxdata.io.atomic import atomic_writer

__all__ = ["render_locate_page", "write_locate_report"]

_STYLE: Final = """
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}h1{font-size:1.3em}
dl{display:grid;grid-template-columns:auto 1fr;gap:.2em 1em}dt{font-weight:600}
ol.path{display:flex;flex-wrap:wrap;gap:.4em;list-style:none;padding:0}
ol.path li{border:1px solid #bbb;border-radius:4px;padding:.2em .5em}
ol.path li+li::before{content:"\\2192";margin-right:.4em;color:#888}
ol.path li.here{border-color:#b35900;background:#fff3e6;font-weight:600}
pre{white-space:pre-wrap}.figs{display:flex;gap:1em;flex-wrap:wrap}figure{margin:0}
"""


def _e(text: object) -> str:
    return html.escape(str(text).encode("utf-8", "backslashreplace").decode("utf-8"),
                       quote=True)


def render_locate_page(found: Located) -> str:
    """The page as one HTML string."""
    from onnxdata.page.pictures import tensor_figure

    head = {"case": found.case, "set": found.set, "backend": found.backend,
            "against": found.against, "status": found.status}
    parts = ["<dl>" + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in head.items())
             + "</dl>"]
    n = found.node
    if n is None:
        parts.append(f"<p>{_e(found.message)}</p>")
    else:
        last = len(found.graph_path) - 1
        steps = "".join(f"<li class={'here' if i == last else 'step'}>{_e(p.label)}</li>"
                        for i, p in enumerate(found.graph_path))
        parts.append(f"<h2>The first differing node: {_e(n.label)}</h2>"
                     f"<p>domain {_e(n.domain or 'ai.onnx')}, node {n.index} of "
                     + (f"{found.node_count}" if found.enclosing is None else
                        f"the {_e(found.subgraph)} of {_e(found.enclosing.label)}") +
                     "; its inputs agree: "
                     f"{_e(', '.join(map(repr, n.inputs)) or '(none)')}</p>"
                     f"<h3>Graph path</h3><ol class=path>{steps}</ol>"
                     f"<h3>Output {found.output_index} {_e(repr(found.output))} at "
                     f"{_e(found.path or '(top)')}</h3>"
                     f"<p>worst error: absolute {_e(found.max_abs)}, relative "
                     f"{_e(found.max_rel)}</p>"
                     f"<pre>{_e(chr(10).join(str(d) for d in found.differences))}</pre>")
        if found.pictures is not None:
            a, b = found.pictures
            parts.append("<div class=figs>" + tensor_figure(a, found.backend) +
                         tensor_figure(b, found.against) + "</div>")
        spread = ", ".join(s.label for s in found.spread) or "no later node"
        parts.append(f"<h3>Spread</h3><p>{len(found.spread)} later node"
                     f"{'s' if len(found.spread) != 1 else ''} differ: {_e(spread)}</p>")
    if found.notes or found.unseen:
        items = [f"<li>{_e(x)}</li>" for x in found.notes] + \
            [f"<li>{_e(repr(k))} unseen: {_e(v)}</li>" for k, v in found.unseen.items()]
        parts.append(f"<h3>Notes</h3><ul>{''.join(items)}</ul>")
    parts.append(f"<p>{found.checked} values compared in {found.runs} runs of each backend, "
                 f"at most {found.largest_run} exposed at once.</p>")
    facts = json.dumps(found.as_json()).replace("<", "\\u003c")
    return ("<!doctype html><html lang=en><head><meta charset=utf-8>"
            "<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; "
            "img-src data:; style-src 'unsafe-inline'\">"
            f"<title>onnxdata locate: {_e(found.case)}</title><style>{_STYLE}</style>"
            f"</head><body><h1>onnxdata locate: {_e(found.case)}</h1>{''.join(parts)}"
            f"<script type=application/json id=facts>{facts}</script></body></html>\n")


def write_locate_report(path: str | os.PathLike[str], found: Located) -> None:
    """``found`` as a page (or JSON for ``.json``) at ``path``, written atomically."""
    if Path(path).suffix == ".json":
        body = (json.dumps(found.as_json(), indent=2) + "\n").encode("utf-8",
                                                                     "surrogateescape")
    else:
        body = render_locate_page(found).encode("utf-8", "backslashreplace")
    with atomic_writer(path) as f:
        f.write(body)
