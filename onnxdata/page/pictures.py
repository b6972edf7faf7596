"""Pictures of tensors for ``explore --html``, made here: no plotting library.

Each is HTML and inline SVG: statistics (min, max, mean, NaN and inf counts), a
heatmap (an inline PNG written by hand with zlib, inside the SVG) for 2-D data or the
first 2-D slice of higher ranks, bars or a line for 1-D, and a histogram.
bfloat16, float8, float4 and the 4-bit integers are drawn through their float values
(``astype(float32)``). Each picture reads a bounded part of the array: statistics
and histogram a sample of at most ``SAMPLE`` values in evenly spaced runs, a
heatmap at most ``_HEAT`` cells a side, a line at most ``_LINE`` points; so a tensor
that views a memory-mapped file has only those pages read.
"""

from __future__ import annotations

import base64
import html
import math
import struct
import zlib
from typing import Any, Final

import numpy as np
import numpy.typing as npt

__all__ = ["SAMPLE", "tensor_figure"]

#: Values a tensor's statistics and histogram are computed on at most.
SAMPLE: Final = 1 << 16
_BLOCK: Final = 1 << 10  # a sample is SAMPLE // _BLOCK evenly spaced runs of _BLOCK values
_HEAT: Final = 96  # a heatmap has at most this many cells a side
_LINE: Final = 400  # a line chart has at most this many points
_VIRIDIS: Final = np.array([(68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98),
                            (253, 231, 37)], dtype=np.float64)

Array = npt.NDArray[Any]


def _e(text: object) -> str:
    return html.escape(clip(str(text)), quote=True)


#: Characters of one string, name or key shown on a page; the rest are counted.
STRING_LIMIT: Final = 256


def clip(text: str, limit: int = STRING_LIMIT) -> str:
    """``text`` cut to ``limit`` characters with a note of how many were left out: every
    string on the page is capped, so 58 MB of strings make a page of kilobytes."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


def tensor_figure(a: Array, title: str, listed: int = 64) -> str:
    """A tensor's figure: statistics, a heatmap (2-D and up) or a line or bars (1-D), and
    a histogram, the pictures only for two values or more; a table of the first
    ``listed`` strings for a string tensor."""
    if a.dtype == object:
        return _strings_table(a, title, listed)
    try:
        values = _floats(_sample(a))
    except (TypeError, ValueError) as exc:  # a dtype numpy cannot turn into floats
        return (f"<figure class=tensor data-kind=tensor><figcaption>{_e(title)}</figcaption>"
                f"<p class=bad>not drawn: {_e(exc)}</p></figure>")
    parts = [_stats(a, values)]
    # One value is in the statistics already; drawn, it is a single full bar or pixel.
    if a.ndim >= 2 and a.size > 1:
        parts.append(_heatmap(a))
    elif a.ndim == 1 and a.size > 1:
        parts.append(_line(a))
    if values.size > 1:
        parts.append(_histogram(values))
    return (f'<figure class=tensor data-kind=tensor><figcaption>{_e(title)}</figcaption>'
            f"<div class=pics>{''.join(parts)}</div></figure>")


def _strings_table(a: Array, title: str, listed: int) -> str:
    flat = a.reshape(-1)
    rows = "".join(
        f"<tr><td>{i}</td><td><code>"
        f"{_e(s.decode('utf-8', 'backslashreplace') if isinstance(s, bytes) else s)}"
        f"</code></td></tr>" for i, s in enumerate(flat[:listed]))
    more = (f"<tr><td colspan=2 class=sub>… {flat.size - listed} more</td></tr>"
            if flat.size > listed else "")
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
