"""A Lesson chart's record (handout_record.py) as a static SVG: the handout's charts.

The handout must open with no network and stay under 5 MB: plotly.js alone is 4.8 MB, and a static image
needs a browser (kaleido) or a new plotting dependency. The Lesson's charts are few kinds (horizontal bars,
lines on category or numeric axes, one or two y axes, log axes with their own ticks, heatmaps, a band or a
line with a note), so `handout_record.record` keeps the numbers, labels and colours of those and `svg` draws them.
Pure: plain dicts in, strings out; no streamlit.

Every label plotly draws is pseudo-HTML (the figure builders escape user text for it): `_label_text` turns it back
into text, and every string goes into the SVG through `html.escape`.
"""

from __future__ import annotations

import html
import math
import re

from ui.lesson.handout_record import DEFAULT_COLORS, listed

WIDTH = 720
INK, GRID, FONT = "#2a3f5f", "#e5ecf6", "font-family:sans-serif"

# ------------------------------------------------------------------------------------------- helpers
_TAG = re.compile(r"<[^>]*>")


def _label_text(s) -> str:
    """Plotly's pseudo-HTML label as plain text: <br> a space, other tags dropped, entities decoded."""
    s = "" if s is None else str(s)
    return html.unescape(_TAG.sub("", s.replace("<br>", " ")))


CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # not allowed in HTML or XML text


def _e(s) -> str:
    """A label as SVG text: plain, escaped, control characters as \ufffd (they are not allowed in XML)."""
    return html.escape(CONTROL.sub("\ufffd", _label_text(s)), quote=True)


def _fmt(v: float, tickformat: str | None = None) -> str:
    """A tick or cell value the way plotly's d3 formats we use print it (".0%", ".2f"), else short."""
    if tickformat:
        m = re.fullmatch(r"\.(\d+)([f%])", tickformat)
        if m:
            n, kind = int(m.group(1)), m.group(2)
            return f"{v * 100:.{n}f}%" if kind == "%" else f"{v:.{n}f}"
    if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
        return f"{v:.3g}"
    return f"{v:,.4g}" if abs(v) >= 1000 else f"{v:.4g}"


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About n round ticks (1, 2, 5 x 10^k apart) inside [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 12) for i in range(int((hi - first) / step + 1e-9) + 1)]


def _rgb(c: str) -> tuple[float, float, float]:
    c = c.strip()
    if c.startswith("#"):
        c = c[1:]
        if len(c) == 3:
            c = "".join(ch * 2 for ch in c)
        return tuple(int(c[i:i + 2], 16) for i in (0, 2, 4))
    nums = re.findall(r"[\d.]+", c)
    return tuple(float(x) for x in nums[:3]) if len(nums) >= 3 else (128.0, 128.0, 128.0)


def _scale_color(scale: list, u: float) -> str:
    """The colour at u in [0, 1] of a plotly colorscale [[pos, colour], ...], linearly between its stops."""
    u = min(max(u, 0.0), 1.0)
    for (p0, c0), (p1, c1) in zip(scale, scale[1:]):
        if u <= p1:
            f = 0.0 if p1 == p0 else (u - p0) / (p1 - p0)
            a, b = _rgb(c0), _rgb(c1)
            return "rgb({},{},{})".format(*(round(x + f * (y - x)) for x, y in zip(a, b)))
    return "rgb({},{},{})".format(*(round(x) for x in _rgb(scale[-1][1])))


def cell_ink(color: str) -> str:
    """Black or white text on `color`, whichever contrasts more by WCAG 2.1's relative luminance: >= 4.58:1 on any
    colour (as bert_core.figures.style.cell_ink, which this plain-data module may not import)."""
    lum = sum(w * (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)
              for w, c in zip((0.2126, 0.7152, 0.0722), (v / 255 for v in _rgb(color))))
    return "#000000" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#ffffff"


def _text(x, y, s, size=12, anchor="middle", fill=INK, extra="") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"{extra}>'
            f"{_e(s)}</text>")


class _Axis:
    """One axis: category, linear or log, mapped onto pixels [p0, p1] (p0 at the range's low end)."""

    def __init__(self, spec: dict, values: list, categories: list[str] | None, zero: bool = False):
        self.spec = spec
        self.kind = "category" if categories is not None else ("log" if spec.get("type") == "log" else "linear")
        self.categories = categories or []
        self.reversed = spec.get("autorange") == "reversed"
        if self.kind == "category":
            self.lo, self.hi = -0.5, len(self.categories) - 0.5
            return
        nums = [float(v) for v in values if isinstance(v, int | float) and math.isfinite(v)]
        if self.kind == "log":
            nums = [math.log10(v) for v in nums if v > 0]
        rng = spec.get("range")
        if rng and len(rng) == 2 and None not in rng:
            self.lo, self.hi = float(rng[0]), float(rng[1])
        else:
            lo, hi = (min(nums), max(nums)) if nums else (0.0, 1.0)
            if zero or spec.get("rangemode") == "tozero":
                lo, hi = min(lo, 0.0), max(hi, 0.0)
            pad = (hi - lo) * 0.05 or 0.5
            self.lo, self.hi = (lo if lo == 0 else lo - pad), hi + pad
        if self.hi <= self.lo:
            self.hi = self.lo + 1

    def place(self, p0: float, p1: float) -> None:
        self.p0, self.p1 = (p1, p0) if self.reversed else (p0, p1)

    def value(self, v) -> float | None:
        """A data value (a category label or a number) as an axis coordinate; None when it cannot be placed."""
        if self.kind == "category":
            label = str(v)
            return float(self.categories.index(label)) if label in self.categories else None
        if not isinstance(v, int | float) or not math.isfinite(v):
            return None
        if self.kind == "log":
            return math.log10(v) if v > 0 else None
        return float(v)

    def px(self, coord: float) -> float:
        return self.p0 + (coord - self.lo) / (self.hi - self.lo) * (self.p1 - self.p0)

    def ticks(self) -> list[tuple[float, str]]:
        """(axis coordinate, label) of each tick."""
        if self.kind == "category":
            step = max(1, math.ceil(len(self.categories) / 40))
            return [(float(i), c) for i, c in enumerate(self.categories) if i % step == 0]
        vals, texts = self.spec.get("tickvals"), self.spec.get("ticktext")
        if vals:
            texts = texts if texts and len(texts) == len(vals) else [_fmt(v, self.spec.get("tickformat")) for v in vals]
            out = [(self.value(v), t) for v, t in zip(vals, texts)]
            return [(c, t) for c, t in out if c is not None and self.lo - 1e-9 <= c <= self.hi + 1e-9]
        if self.kind == "log":
            return [(float(k), _fmt(10.0 ** k)) for k in range(math.ceil(self.lo), math.floor(self.hi) + 1)]
        return [(v, _fmt(v, self.spec.get("tickformat"))) for v in _nice_ticks(self.lo, self.hi)]


def _categories(traces: list[dict], key: str, spec: dict) -> list[str] | None:
    """The axis's categories in order of first appearance, when it is a category axis (explicitly or by its data)."""
    vals = [v for t in traces for v in (t.get(key) or [])]
    if spec.get("type") == "category" or any(isinstance(v, str) for v in vals):
        seen: dict[str, None] = {}
        for v in vals:
            seen.setdefault(str(v), None)
        return list(seen)
    return None


# ------------------------------------------------------------------------------------------- svg
def svg(rec: dict, uid: str) -> str:
    """The record as an inline <svg> (no script, no external reference); `uid` keeps its gradient ids unique."""
    traces = [{k: listed(v) for k, v in t.items()} for t in rec.get("data", [])]
    heat = next((t for t in traces if t.get("type") == "heatmap"), None)
    y1 = [t for t in traces if t.get("yaxis", "y") == "y"]
    y2 = [t for t in traces if t.get("yaxis") == "y2"]
    horizontal = any(t.get("type") == "bar" and t.get("orientation") == "h" for t in traces)
    xspec, yspec, y2spec = rec.get("xaxis", {}), rec.get("yaxis", {}), rec.get("yaxis2", {})

    if heat is not None:
        z = heat.get("z") or [[]]
        xs = [str(v) for v in heat.get("x") or range(len(z[0]) if z else 0)]
        ys = [str(v) for v in heat.get("y") or range(len(z))]
        xa, ya = _Axis(xspec, [], xs), _Axis(yspec, [], ys)
    else:
        # A horizontal bar's categories are its y and its values its x (from 0).
        # Plotly's autorange takes in the shapes drawn in data coordinates (a line at ln V above every loss).
        sx = [v for sh in rec.get("shapes", []) if sh.get("xref", "x") == "x" for v in (sh.get("x0"), sh.get("x1"))]
        sy = [v for sh in rec.get("shapes", []) if sh.get("yref", "y") == "y" for v in (sh.get("y0"), sh.get("y1"))]
        xcats = _categories(traces, "x", xspec)
        xa = _Axis(xspec, [v for t in traces for v in (t.get("x") or [])] + ([] if xcats else sx), xcats,
                   zero=any(t.get("type") == "bar" for t in traces) and horizontal)
        ycats = _categories(y1, "y", yspec)
        ya = _Axis(yspec, [v for t in y1 for v in (t.get("y") or [])] + ([] if ycats else sy), ycats,
                   zero=any(t.get("type") == "bar" for t in traces) and not horizontal)
    ya2 = _Axis(y2spec, [v for t in y2 for v in (t.get("y") or [])], None) if y2 else None

    names = [(t.get("name"), i) for i, t in enumerate(traces) if t.get("name")]
    legend = bool(names) and rec.get("showlegend") is not False and (len(names) > 1 or rec.get("showlegend"))
    label_w = lambda labels: 7 * max((len(_label_text(s)) for s in labels), default=1)  # noqa: E731
    left = 30 + min(170, label_w(t for _, t in ya.ticks())) + (18 if yspec.get("title") else 0)
    right = 20 + (60 if ya2 is not None else 0) + (70 if heat is not None else 0)
    top = 34 if rec.get("title") else 12
    if heat is not None and xspec.get("side") == "top":
        top += min(170, label_w(xs)) * 0.87 + 10 + (18 if xspec.get("title") else 0)
        bottom = 12
    else:
        bottom = 30 + (18 if xspec.get("title") else 0)
    spots = _legend_spots([n for n, _ in names]) if legend else []
    legend_rows = 1 + max((r for _, r in spots), default=-1)
    bottom += 22 * legend_rows + (6 if legend_rows else 0)
    tilt = xa.kind == "category" and not (heat is not None and xspec.get("side") == "top") and \
        7 * sum(len(_label_text(c)) + 2 for _, c in xa.ticks()) > WIDTH - left - right
    if tilt:  # labels that would overlap side by side are drawn at 45 degrees
        bottom += min(120, 0.71 * label_w(c for _, c in xa.ticks()))
    plot_h = max(120.0, float(rec.get("height", 400)) - 40)
    if heat is not None and yspec.get("scaleanchor"):  # square cells, as the app draws them
        side = min(WIDTH - left - right, 18 * len(ys) + 200, 640)
        plot_w, plot_h = side, side * len(ys) / max(len(xs), 1)
    else:
        plot_w = WIDTH - left - right
    H = top + plot_h + bottom
    x0, x1, yb, yt = left, left + plot_w, top + plot_h, top
    xa.place(x0, x1)
    ya.place(yb, yt)
    if ya2 is not None:
        ya2.place(yb, yt)

    # Named by the chart's text alternative (plain text already: escaped only), else by its title (plotly's markup).
    name = html.escape(CONTROL.sub("\ufffd", rec["alt"]), quote=True) if rec.get("alt") else \
        _e(rec.get("title") or "chart")
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {H:.0f}" width="{WIDTH}" '
           f'height="{H:.0f}" role="img" aria-label="{name}" style="{FONT}">',
           f'<rect x="0" y="0" width="{WIDTH}" height="{H:.0f}" fill="#ffffff"/>']
    if rec.get("title"):
        out.append(_text(left, 20, rec["title"], 15, "start", extra=' font-weight="bold"'))
    if heat is None:
        out.append(f'<rect x="{x0}" y="{yt}" width="{plot_w:.1f}" height="{plot_h:.1f}" fill="{GRID}" '
                   'fill-opacity="0.35"/>')
    out += _shapes(rec, xa, ya, x0, x1, yb, yt, below=True)
    out += _axes(xa, ya, ya2, xspec, yspec, y2spec, x0, x1, yb, yt, heat is not None, tilt)
    colors = rec.get("colors") or list(DEFAULT_COLORS)
    if heat is not None:
        out += _heatmap(heat, xa, ya, xs, ys, x1, yb, yt, uid)
    bars = [i for i, t in enumerate(traces) if t.get("type") == "bar"]

    def group(i: int) -> tuple[int, int]:
        """(place, count) of trace i among bars side by side (barmode "group"); (0, 1) when they overlap."""
        return (bars.index(i), len(bars)) if rec.get("barmode") == "group" and len(bars) > 1 else (0, 1)

    for i, t in enumerate(traces):
        color = t.get("line_color") or (t.get("color") if isinstance(t.get("color"), str) else None) \
            or colors[i % len(colors)]
        if t.get("type") == "bar":
            out += _bars(t, xa, ya, horizontal, colors[i % len(colors)], *group(i))
        elif t.get("type") == "scatter":
            out += _lines(t, xa, ya2 if t.get("yaxis") == "y2" and ya2 is not None else ya, color)
    out += _shapes(rec, xa, ya, x0, x1, yb, yt, below=False)
    out += _notes(rec, xa, ya, x0, x1, yb, yt)
    for (name, i), (lx, row) in zip(names, spots):
        t = traces[i]
        c = t.get("line_color") or (t.get("color") if isinstance(t.get("color"), str) else None) \
            or colors[i % len(colors)]
        ly = H - 22 * (legend_rows - row) + 4
        out.append(f'<line x1="{lx:.1f}" y1="{ly - 4}" x2="{lx + 24:.1f}" y2="{ly - 4}" stroke="{_e(c)}" '
                   'stroke-width="3"' + (' stroke-dasharray="4 3"' if t.get("dash") in ("dot", "dash") else "") + "/>")
        out.append(_text(lx + 30, ly, name, 12, "start"))
    out.append("</svg>")
    return "".join(out)


def figure_html(rec: dict, uid: str) -> str:
    """The handout's chart: its SVG, named by the chart's text alternative, and under it the numbers behind it as a
    table with a header row, in a <details> a screen reader or a reader of the printout opens (WCAG 1.1.1)."""
    out = svg(rec, uid)
    table = rec.get("table")
    if table:
        cols = list(table)
        head = "".join(f'<th scope="col">{_e(c)}</th>' for c in cols)
        rows = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in row) + "</tr>"
                       for row in zip(*(table[c] for c in cols)))
        title = rec.get("title") or "this chart"
        out += (f'<details class="data"><summary>Data: {_e(title)}</summary><table><caption>The numbers behind '
                f"{_e(title)}</caption><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></details>")
    return out


def _cell(v) -> str:
    if isinstance(v, bool) or v is None:
        return "" if v is None else str(v)
    if isinstance(v, int | float):
        return _fmt(float(v))
    return html.escape(CONTROL.sub("\ufffd", str(v)), quote=True)  # figure_table's text is plain text already


def _legend_spots(names: list[str]) -> list[tuple[float, int]]:
    """(x, row) of each legend entry, flowing left to right and wrapping at the chart's width."""
    spots, x, row = [], 20.0, 0
    for name in names:
        w = 40 + 7 * len(_label_text(name))
        if x > 20 and x + w > WIDTH - 10:
            x, row = 20.0, row + 1
        spots.append((x, row))
        x += w + 16
    return spots


def _axes(xa, ya, ya2, xspec, yspec, y2spec, x0, x1, yb, yt, heat: bool, tilt: bool) -> list[str]:
    out = []
    top_side = heat and xspec.get("side") == "top"
    for c, label in xa.ticks():
        x = xa.px(c)
        if not heat and xa.kind != "category":
            out.append(f'<line x1="{x:.1f}" y1="{yt}" x2="{x:.1f}" y2="{yb:.1f}" stroke="#ffffff" stroke-width="1"/>')
        if top_side:
            out.append(_text(x, yt - 6, label, 11, "start", extra=f' transform="rotate(-60 {x:.1f} {yt - 6:.1f})"'))
        elif tilt:
            turn = f' transform="rotate(-45 {x + 4:.1f} {yb + 12:.1f})"'
            out.append(_text(x + 4, yb + 12, label, 11, "end", extra=turn))
        else:
            out.append(_text(x, yb + 16, label, 11))
    for c, label in ya.ticks():
        y = ya.px(c)
        if not heat and ya.kind != "category":
            out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x1:.1f}" y2="{y:.1f}" stroke="#ffffff" stroke-width="1"/>')
        out.append(_text(x0 - 6, y + 4, label, 11, "end"))
    if ya2 is not None:
        for c, label in ya2.ticks():
            out.append(_text(x1 + 6, ya2.px(c) + 4, label, 11, "start"))
    if xspec.get("title"):
        y = yb + 34 + (min(120, 0.71 * 7 * max((len(_label_text(c)) for _, c in xa.ticks()), default=1)) if tilt else 0)
        if top_side:  # above the rotated labels
            y = yt - 6 - 0.87 * min(170, 7 * max((len(_label_text(c)) for c in xa.categories), default=1)) - 8
        out.append(_text((x0 + x1) / 2, y, xspec["title"], 12))
    if yspec.get("title"):
        y = (yt + yb) / 2
        out.append(_text(14, y, yspec["title"], 12, extra=f' transform="rotate(-90 14 {y:.1f})"'))
    if ya2 is not None and y2spec.get("title"):
        y, x = (yt + yb) / 2, x1 + 62
        out.append(_text(x, y, y2spec["title"], 12, extra=f' transform="rotate(90 {x:.1f} {y:.1f})"'))
    return out


def _heatmap(t, xa, ya, xs, ys, x1, yb, yt, uid) -> list[str]:
    z = t.get("z") or []
    flat = [v for row in z for v in row if isinstance(v, int | float)]
    zmin = t.get("zmin") if t.get("zmin") is not None else min(flat, default=0.0)
    zmax = t.get("zmax") if t.get("zmax") is not None else max(flat, default=1.0)
    scale = t.get("colorscale") or [[0.0, "#f7fbff"], [1.0, "#08306b"]]
    if t.get("reversescale"):
        scale = [[1 - p, c] for p, c in reversed(scale)]
    span = (zmax - zmin) or 1.0
    cw, ch = abs(xa.px(1) - xa.px(0)), abs(ya.px(1) - ya.px(0))
    template, texts = t.get("texttemplate"), t.get("text")
    out = []
    for i, row in enumerate(z):
        for j, v in enumerate(row):
            if not isinstance(v, int | float):
                continue
            color = _scale_color(scale, (v - zmin) / span)
            cx, cy = xa.px(j), ya.px(i)
            out.append(f'<rect x="{cx - cw / 2:.1f}" y="{cy - ch / 2:.1f}" width="{cw:.1f}" height="{ch:.1f}" '
                       f'fill="{color}"><title>{_e(ys[i] if i < len(ys) else i)} → '
                       f"{_e(xs[j] if j < len(xs) else j)}: {v:.3f}</title></rect>")
            label = None
            if template and "%{z" in template:
                m = re.search(r"%\{z:?([^}]*)\}", template)
                label = _fmt(v, m.group(1) if m and m.group(1) else None)
            elif template and texts and i < len(texts) and j < len(texts[i]):
                label = texts[i][j]
            if label and ch >= 10:
                out.append(_text(cx, cy + 4, label, min(11, ch * 0.6),
                                 fill=cell_ink(color)))  # black or white, >= 4.58:1 on any cell
    if t.get("showscale") is not False:  # the colour bar
        gid = f"cb-{uid}"
        bx, h = x1 + 20, yb - yt
        stops = "".join(f'<stop offset="{p:.3f}" stop-color="{_e(c)}"/>' for p, c in scale)
        out.append(f'<defs><linearGradient id="{gid}" x1="0" y1="1" x2="0" y2="0">{stops}</linearGradient></defs>'
                   f'<rect x="{bx}" y="{yt}" width="14" height="{h:.1f}" fill="url(#{gid})"/>')
        out.append(_text(bx + 18, yb, _fmt(zmin), 11, "start"))
        out.append(_text(bx + 18, yt + 10, _fmt(zmax), 11, "start"))
    return out


def _bars(t, xa, ya, horizontal: bool, default_color: str, place: int = 0, count: int = 1) -> list[str]:
    cats, vals = (t.get("y"), t.get("x")) if horizontal else (t.get("x"), t.get("y"))
    cat_ax, val_ax = (ya, xa) if horizontal else (xa, ya)
    colors, texts, out = t.get("color"), t.get("text"), []
    for k, (c, v) in enumerate(zip(cats or [], vals or [])):
        pos, val = cat_ax.value(c), val_ax.value(v)
        if pos is None or val is None:
            continue
        color = colors[k] if isinstance(colors, list) else (colors or default_color)
        a, b = cat_ax.px(pos - 0.4 + 0.8 * place / count), cat_ax.px(pos - 0.4 + 0.8 * (place + 1) / count)
        z, e = val_ax.px(max(val_ax.lo, 0.0)), val_ax.px(min(val, val_ax.hi))
        label = texts[k] if isinstance(texts, list) and k < len(texts) else None
        if horizontal:
            out.append(f'<rect x="{min(z, e):.1f}" y="{min(a, b):.1f}" width="{abs(e - z):.1f}" '
                       f'height="{abs(b - a):.1f}" fill="{_e(color)}"/>')
            if label is not None:
                inside = abs(e - z) > 7 * len(_label_text(label)) + 8
                out.append(_text(e - 4 if inside else e + 4, (a + b) / 2 + 4, label, 11, "end" if inside else "start",
                                 fill=cell_ink(color) if inside else INK))
        else:
            out.append(f'<rect x="{min(a, b):.1f}" y="{min(z, e):.1f}" width="{abs(b - a):.1f}" '
                       f'height="{abs(e - z):.1f}" fill="{_e(color)}"/>')
            if label is not None:
                out.append(_text((a + b) / 2, e - 4, label, 11))
    return out


def _lines(t, xa, ya, color: str) -> list[str]:
    pts, runs = [], []
    for xv, yv in zip(t.get("x") or [], t.get("y") or []):
        cx, cy = xa.value(xv), ya.value(yv)
        if cx is None or cy is None:
            if not t.get("connectgaps") and pts:
                runs.append(pts)
                pts = []
            continue
        pts.append((xa.px(cx), ya.px(cy)))
    if pts:
        runs.append(pts)
    mode = t.get("mode") or "lines+markers"
    dash = {"dot": ' stroke-dasharray="2 3"', "dash": ' stroke-dasharray="6 4"'}.get(t.get("dash"), "")
    width = t.get("line_width") or 2
    out = []
    for run in runs:
        if "lines" in mode and len(run) > 1:
            d = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
            out.append(f'<polyline points="{d}" fill="none" stroke="{_e(color)}" stroke-width="{width}"{dash}/>')
        if "markers" in mode and not t.get("hidden_markers"):
            out += [f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{_e(color)}"/>' for x, y in run]
    return out


def _ref(ref: str, v, ax, lo: float, hi: float) -> float | None:
    """A shape's or note's coordinate in pixels: data ("x"), or a fraction of the plot ("x domain", "paper")."""
    if v is None:
        return None
    if ref and (ref.endswith("domain") or ref == "paper"):
        return lo + float(v) * (hi - lo)
    if ax.kind == "category" and isinstance(v, int | float):
        return ax.px(float(v))
    c = ax.value(v)
    return None if c is None else ax.px(c)


def _shapes(rec, xa, ya, x0, x1, yb, yt, below: bool) -> list[str]:
    out = []
    for s in rec.get("shapes", []):
        if (s.get("layer") == "below") != below:
            continue
        xr, yr = s.get("xref", "x"), s.get("yref", "y")
        a = _ref(xr, s.get("x0"), xa, x0, x1)
        b = _ref(xr, s.get("x1"), xa, x0, x1)
        c = _ref(yr, s.get("y0"), ya, yb, yt)
        d = _ref(yr, s.get("y1"), ya, yb, yt)
        if None in (a, b, c, d):
            continue
        line = s.get("line") or {}
        stroke = line.get("color") or INK
        if s.get("type") == "rect":  # a band (a fill, no line) or a frame (a line, no fill)
            fill = (f'fill="{_e(s["fillcolor"])}" fill-opacity="{float(s.get("opacity") or 1):.2f}"'
                    if s.get("fillcolor") else 'fill="none"')
            edge = f' stroke="{_e(stroke)}" stroke-width="{line.get("width")}"' if line.get("width") else ""
            out.append(f'<rect x="{min(a, b):.1f}" y="{min(c, d):.1f}" width="{abs(b - a):.1f}" '
                       f'height="{abs(d - c):.1f}" {fill}{edge}/>')
        elif s.get("type") == "line":
            dash = {"dot": ' stroke-dasharray="2 3"', "dash": ' stroke-dasharray="6 4"'}.get(line.get("dash"), "")
            out.append(f'<line x1="{a:.1f}" y1="{c:.1f}" x2="{b:.1f}" y2="{d:.1f}" stroke="{_e(stroke)}" '
                       f'stroke-width="{line.get("width") or 1.5}"{dash}/>')
    return out


def _notes(rec, xa, ya, x0, x1, yb, yt) -> list[str]:
    out = []
    for a in rec.get("annotations", []):
        x = _ref(a.get("xref", "x"), a.get("x"), xa, x0, x1)
        y = _ref(a.get("yref", "y"), a.get("y"), ya, yb, yt)
        if x is None or y is None or not a.get("text"):
            continue
        anchor = {"left": "start", "right": "end"}.get(a.get("xanchor"), "middle")
        dy = {"top": 13, "bottom": -4}.get(a.get("yanchor"), 4)
        out.append(_text(x + (4 if anchor == "start" else -4 if anchor == "end" else 0), y + dy, a["text"], 11,
                         anchor))
    return out
