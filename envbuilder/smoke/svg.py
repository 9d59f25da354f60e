"""Line charts as inline SVG strings: the HTML report must open offline, so no chart library or CDN.

Only what the report needs: several named series, linear or log2 x, optional error bars, ticks at
round numbers, a legend, and a <title> tooltip on every point.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
W, H = 640, 340
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 30, 50


@dataclass(frozen=True)
class Series:
    name: str
    points: list[tuple[float, float]]
    errors: list[float] = field(default_factory=list)  # +- per point, same order
    markers: bool = True


def nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks, t = [], start
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 10))
        t += step
    return ticks


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 10000:
        return f"{v / 1000:,.0f}k"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def _legend(series: list[Series]) -> str:
    """Top right, on a translucent panel, so it never hides the lines' start at the left axis."""
    width = 24 + 7 * max(len(s.name) for s in series)
    x = W - RIGHT - width - 6
    parts = [f'<rect x="{x - 6}" y="{TOP}" width="{width + 8}" height="{16 * len(series) + 6}" fill="#fff" '
             f'fill-opacity="0.85" stroke="#ddd"/>']
    for i, s in enumerate(series):
        ly = TOP + 8 + 16 * i
        parts.append(f'<rect x="{x}" y="{ly}" width="12" height="3" fill="{PALETTE[i % len(PALETTE)]}"/>'
                     f'<text x="{x + 18}" y="{ly + 5}">{escape(s.name)}</text>')
    return "".join(parts)


def line_chart(series: list[Series], *, title: str, x_label: str, y_label: str, log2_x: bool = False,
               chart_id: str = "") -> str:
    pts = [p for s in series for p in s.points if math.isfinite(p[1])]
    if not pts:
        return f'<p class="empty">{escape(title)}: no data</p>'
    fx = (lambda x: math.log2(x)) if log2_x else (lambda x: x)
    xs = [fx(x) for x, _ in pts]
    tops = [y + (s.errors[i] if i < len(s.errors) else 0) for s in series for i, (_, y) in enumerate(s.points)]
    x_lo, x_hi = min(xs), max(xs)
    if x_hi == x_lo:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    y_ticks = nice_ticks(min(0.0, min(y for _, y in pts)), max(tops))
    y_lo, y_hi = y_ticks[0], y_ticks[-1]
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def sx(x: float) -> float:
        return LEFT + (fx(x) - x_lo) / (x_hi - x_lo) * pw

    def sy(y: float) -> float:
        return TOP + ph - (y - y_lo) / ((y_hi - y_lo) or 1) * ph

    out = [f'<svg class="plot" id="{escape(chart_id)}" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" '
           f'width="{W}" height="{H}" role="img" aria-label="{escape(title)}">',
           f'<text x="{W / 2}" y="18" text-anchor="middle" class="title">{escape(title)}</text>']
    for t in y_ticks:
        out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{sy(t):.1f}" y2="{sy(t):.1f}" class="grid"/>'
                   f'<text x="{LEFT - 6}" y="{sy(t) + 4:.1f}" text-anchor="end">{_fmt(t)}</text>')
    x_ticks = sorted({x for x, _ in pts}) if log2_x else nice_ticks(x_lo, x_hi)
    for t in x_ticks:
        if x_lo - 1e-9 <= fx(t) <= x_hi + 1e-9:
            out.append(f'<text x="{sx(t):.1f}" y="{TOP + ph + 18}" text-anchor="middle">{_fmt(t)}</text>')
    out.append(f'<line x1="{LEFT}" x2="{W - RIGHT}" y1="{TOP + ph}" y2="{TOP + ph}" class="axis"/>'
               f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + ph}" class="axis"/>'
               f'<text x="{LEFT + pw / 2}" y="{H - 10}" text-anchor="middle">{escape(x_label)}</text>'
               f'<text transform="translate(16 {TOP + ph / 2}) rotate(-90)" text-anchor="middle">{escape(y_label)}</text>')
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        good = [(x, y, s.errors[j] if j < len(s.errors) else 0.0) for j, (x, y) in enumerate(s.points)
                if math.isfinite(y)]
        path = " ".join(f"{'M' if j == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for j, (x, y, _) in enumerate(good))
        out.append(f'<path d="{path}" fill="none" stroke="{color}" stroke-width="2" class="series"/>')
        for x, y, e in good:
            if e:
                out.append(f'<line x1="{sx(x):.1f}" x2="{sx(x):.1f}" y1="{sy(y - e):.1f}" y2="{sy(y + e):.1f}" '
                           f'stroke="{color}"/>')
            if s.markers:
                out.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{color}">'
                           f'<title>{escape(s.name)}: x={_fmt(x)} y={y:,.4g}{f" ±{e:,.3g}" if e else ""}</title></circle>')
    out.append(_legend(series))
    out.append("</svg>")
    return "".join(out)
