"""Figure styles shared by every page: type large enough to read from the back of a room, and axes whose
ticks say the values they mean (a log axis labelled 0.5, 1, 2, 5, not 5, 1, 2, 5)."""

from __future__ import annotations

import math

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go

INK = "#262730"  # Streamlit's text colour: 15:1 on white, where plotly's default grey ticks are lighter
PROJECTOR_PX = 18  # the smallest chart text in presenter mode


def projector(fig: go.Figure, size: int = PROJECTOR_PX) -> go.Figure:
    """Every text of `fig` at least `size` px and in dark ink: ticks, axis titles, legend, annotations,
    colour bars and numbers printed in cells. Returns the same figure, changed in place."""
    font = {"size": size, "color": INK}
    fig.update_layout(font=font, legend={"font": font}, hoverlabel={"font": {"size": size}},
                      title={"font": {"size": size + 2, "color": INK}})
    for ax in (*fig.select_xaxes(), *fig.select_yaxes()):
        ax.tickfont = font
        if ax.title is not None and ax.title.text:  # an axis whose title was set to None has no title to size
            ax.title.font = font
    for a in fig.layout.annotations or ():
        a.font = {**(a.font.to_plotly_json() if a.font else {}), **font}
    for tr in fig.data:
        if hasattr(tr, "textfont"):
            tr.textfont = {**(tr.textfont.to_plotly_json() if tr.textfont else {}), "size": size}
        if hasattr(tr, "colorbar"):
            tr.colorbar.tickfont, tr.colorbar.title.font = font, font
        if hasattr(tr, "outsidetextfont"):
            tr.outsidetextfont = {"size": size}
        if hasattr(tr, "insidetextfont"):
            tr.insidetextfont = {"size": size}
    if fig.layout.coloraxis and fig.layout.coloraxis.colorbar:
        fig.layout.coloraxis.colorbar.tickfont = font
        fig.layout.coloraxis.colorbar.title.font = font
    _nothing_cut(fig)
    _no_text_shrunk(fig, size)
    _legible_maps(fig)
    return fig


TITLE_CHARS = 42  # a projected chart's title longer than this is wrapped: at 20 px it would run past a half-slide


def _nothing_cut(fig: go.Figure) -> None:
    """Margins that grow to hold every tick label, axis title and the chart's title (wrapped when long)."""
    for ax in (*fig.select_xaxes(), *fig.select_yaxes()):
        ax.automargin = True
    text = fig.layout.title.text
    if text and len(text) > TITLE_CHARS and "<br>" not in text:
        lines, line = [], ""
        for word in text.split(" "):
            if line and len(line) + 1 + len(word) > TITLE_CHARS:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        fig.layout.title.text = "<br>".join([*lines, line])
    if text:  # above the plot and its top ticks, the margin grown to hold it
        fig.update_layout(title={"automargin": True, "yref": "paper", "y": 1, "yanchor": "bottom", "pad": {"b": 8}})


def _no_text_shrunk(fig: go.Figure, size: int) -> None:
    """Numbers on bars outside the bar, never scaled down to fit inside one, with the room they need kept free."""
    widest = 0
    for tr in fig.data:
        if tr.type == "bar" and tr.text is not None:
            tr.textposition, tr.cliponaxis = "outside", False
            widest = max([widest, *(len(str(t)) for t in (tr.text if isinstance(tr.text, tuple) else [tr.text]))])
            horizontal = tr.orientation == "h"
    if widest:
        need = int(0.62 * size * widest) + 12  # px of the widest number beside the longest bar
        m = fig.layout.margin
        if horizontal:
            m.r = max(m.r or 0, need)
        else:
            m.t = max(m.t or 0, (m.t or 0) + size + 8)
        fig.update_layout(uniformtext={"minsize": size, "mode": "show"})


def _legible_maps(fig: go.Figure) -> None:
    """A heatmap's token ticks at the projector's size: plotly leaves out labels that would overlap (instead of
    every token labelled into a smear), and the map fills its height (no square cells in a narrow column)."""
    if not any(tr.type == "heatmap" for tr in fig.data):
        return
    for ax in (*fig.select_xaxes(), *fig.select_yaxes()):
        if ax.type == "category" and ax.tickmode == "linear":
            ax.tickmode, ax.dtick = "auto", None
        ax.scaleanchor, ax.constrain = None, None
    for ax in fig.select_xaxes():
        ax.side = "bottom"  # ticks on top ran into the chart's title


def _luminance(rgb: np.ndarray) -> np.ndarray:
    """WCAG 2.1's relative luminance of (..., 3) sRGB colours, 0-255."""
    v = np.asarray(rgb, dtype=float) / 255
    v = np.where(v <= 0.04045, v / 12.92, ((v + 0.055) / 1.055) ** 2.4)
    return v @ np.array([0.2126, 0.7152, 0.0722])


def _rgb(colour: str) -> tuple[float, float, float]:
    return pc.unlabel_rgb(pc.convert_colors_to_same_type(colour, "rgb")[0][0])


def contrast(a: str, b: str) -> float:
    """WCAG 2.1's contrast ratio of two colours ("#rrggbb", "rgb(r, g, b)"): 1 to 21."""
    hi, lo = sorted(_luminance(np.array([_rgb(a), _rgb(b)])), reverse=True)
    return float((hi + 0.05) / (lo + 0.05))


def cell_ink(background: str) -> str:
    """Black or white, whichever contrasts more with `background`: at least 4.58:1 on any colour (WCAG 1.4.3),
    where plotly's own choice (#444 or white, by brightness) gives 3.5:1 on a mid blue."""
    return "#000000" if contrast(background, "#000000") >= contrast(background, "#ffffff") else "#ffffff"


CELL_TEXT = "cell text"  # the name of the text layers legible() lays over a heatmap


def legible(fig: go.Figure) -> go.Figure:
    """`fig` with each heatmap's cell numbers in black or white by their own cell's colour (WCAG 1.4.3).

    A heatmap prints its cell text in one colour (plotly picks #444 or white by brightness: 3.5:1 on a mid blue),
    so the numbers move to text layers over the map: the cells that want black, those that want white. Such a
    figure is copied first: the caller's figure (its Data table, its alt text) keeps its cells; any other figure is
    returned as it is. The copy leaves out plotly's template, which Streamlit's chart theme replaces in the browser
    (and whose copy costs 8x the rest). The axes' own text is the page's ink by CSS (ui/theme.py), at no cost per
    chart."""
    if not any(_cell_text(tr) is not None for tr in fig.data):
        return fig
    layout = fig.layout.to_plotly_json()
    layout.pop("template", None)
    fig = go.Figure(data=fig.data, layout=layout)
    for tr in list(fig.data):
        text = _cell_text(tr)
        if text is not None:
            _text_layer(fig, tr, text)
    return fig


def _cell_text(tr) -> np.ndarray | None:
    """A heatmap's printed cell text (ny, nx) as plotly would print it, for the templates the app's figures use
    ("%{text}", "%{z:<format>}"); None for any other trace."""
    if tr.type != "heatmap" or not tr.texttemplate or tr.z is None:
        return None
    z = np.asarray(tr.z, dtype=float)
    if z.ndim != 2:
        return None
    t = tr.texttemplate
    if t == "%{text}" and tr.text is not None:
        return np.asarray(tr.text, dtype=object).reshape(z.shape)
    if t.startswith("%{z:") and t.endswith("}") and t.count("%{") == 1:
        fmt = t[4:-1]
        return np.array([["" if not np.isfinite(v) else format(v, fmt) for v in row] for row in z], dtype=object)
    return None


def _cell_colours(fig: go.Figure, tr, z: np.ndarray) -> np.ndarray:
    """(ny, nx, 3) the RGB plotly fills each cell with: the trace's (or its colour axis's) scale over its range,
    interpolated linearly in RGB between the scale's stops, as plotly.js does."""
    axis = fig.layout[tr.coloraxis] if tr.coloraxis else None
    src = axis if axis is not None else tr
    if not src.colorscale:  # otherwise the chart theme picks a scale in the browser: draw the one inks are for
        src.colorscale = "Blues"
    stops = np.array([float(at) for at, _ in src.colorscale])
    rgb = np.array([_rgb(c) for _, c in src.colorscale])
    lo, hi = (src.cmin, src.cmax) if axis is not None else (tr.zmin, tr.zmax)
    mid = src.cmid if axis is not None else tr.zmid
    if lo is None or hi is None:  # plotly.js: unless both ends are set, both come from the data (zauto)
        shared = [np.asarray(t.z, dtype=float).ravel() for t in fig.data  # a colour axis spans all its maps
                  if axis is not None and t.type == "heatmap" and t.coloraxis == tr.coloraxis and t.z is not None]
        finite = np.concatenate(shared or [z.ravel()])
        finite = finite[np.isfinite(finite)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        if mid is not None:  # widened about a set middle, as far as the data's far side
            half = max(hi - mid, mid - lo)
            lo, hi = mid - half, mid + half
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    at = np.clip((np.nan_to_num(z, nan=lo) - lo) / (hi - lo), 0, 1) if hi > lo else np.zeros_like(z)
    if src.reversescale:
        at = 1 - at
    return np.stack([np.interp(at, stops, rgb[:, c]) for c in range(3)], axis=-1)


def _text_layer(fig: go.Figure, tr, text: np.ndarray) -> None:
    """Move `tr`'s cell text to scatters of text over it: the cells whose fill wants black, those that want white."""
    z = np.asarray(tr.z, dtype=float)
    ny, nx = z.shape
    xs = list(tr.x) if tr.x is not None else [(tr.x0 or 0) + j * (tr.dx or 1) for j in range(nx)]
    ys = list(tr.y) if tr.y is not None else [(tr.y0 or 0) + i * (tr.dy or 1) for i in range(ny)]
    lum = _luminance(np.round(_cell_colours(fig, tr, z)))
    black = (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05)  # (ny, nx): black contrasts more than white
    keep = [(i, j) for i in range(ny) for j in range(nx) if np.isfinite(z[i, j]) and str(text[i, j])]
    font = tr.textfont.to_plotly_json() if tr.textfont else {}
    tr.texttemplate = None
    for ink, on_light in (("#000000", True), ("#ffffff", False)):  # one colour a trace: a colour per point
        cells = [(i, j) for i, j in keep if black[i, j] == on_light]   # costs plotly 4x the validation
        if cells:
            fig.add_trace({
                "type": "scatter", "x": [xs[j] for _, j in cells], "y": [ys[i] for i, _ in cells],
                "text": [str(text[i, j]) for i, j in cells], "mode": "text", "textposition": "middle center",
                "name": CELL_TEXT, "showlegend": False, "hoverinfo": "skip", "xaxis": tr.xaxis, "yaxis": tr.yaxis,
                "textfont": {**font, "color": ink}})


def log_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Tick values and their labels for a log axis from lo to hi: 1, 2 and 5 times each power of ten, each
    labelled with its own value.

    Ticks a little outside [lo, hi] are kept too (plotly draws only those its padded range shows).
    Example: (0.3, 30) -> [0.2, 0.5, 1, 2, 5, 10, 20, 50], ["0.2", "0.5", "1", "2", "5", "10", "20", "50"]
    Over more than four decades only the powers of ten are kept: (0.01, 1000) -> 0.01, 0.1, 1, 10, 100, 1000.
    """
    lo, hi = max(min(lo, hi), 1e-12), max(lo, hi, 1e-12)
    if hi / lo < 1e4:
        lo, hi = lo / 2, hi * 2
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    steps = (1,) if last - first > 4 else (1, 2, 5)
    vals = [m * 10.0 ** e for e in range(first, last + 1) for m in steps]
    vals = [v for v in vals if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)] or [lo, hi]
    return vals, [f"{v:g}" if v < 1e5 else f"{v:.0e}" for v in vals]


def integer_ticks(hi: int) -> list[int]:
    """Integer ticks from 1 to hi for a rank axis: 1, then 1-2-5 steps, never a fraction or a repeat.

    Example: 300 -> [1, 2, 5, 10, 20, 50, 100, 200, 500]
    """
    vals, _ = log_ticks(1, max(int(hi), 1))
    return sorted({int(round(v)) for v in vals if v >= 1 and v.is_integer()})
