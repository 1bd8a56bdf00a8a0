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


def contrast(a: str, b: str) -> float:
    """WCAG 2.1's contrast ratio of two colours ("#rrggbb", "rgb(r, g, b)" or a CSS name plotly knows): 1 to 21."""
    def lum(c: str) -> float:
        r, g, b = (v / 255 for v in pc.unlabel_rgb(pc.convert_colors_to_same_type(c, "rgb")[0][0]))
        return sum(w * (v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4)
                   for w, v in zip((0.2126, 0.7152, 0.0722), (r, g, b)))
    hi, lo = sorted((lum(a), lum(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def cell_ink(background: str) -> str:
    """Black or white, whichever contrasts more with `background`: at least 4.58:1 on any colour (WCAG 1.4.3),
    where plotly's own choice (#444 or white, by brightness) gives 3.5:1 on a mid blue."""
    return "#000000" if contrast(background, "#000000") >= contrast(background, "#ffffff") else "#ffffff"


def legible(fig: go.Figure) -> go.Figure:
    """Every text of `fig` in dark ink (ticks, axis and legend titles, colour bars: Streamlit's chart theme draws
    them grey, 3.7:1 on white) and every heatmap cell's number in black or white by its own cell's colour. Changes
    `fig` in place and returns it; a heatmap's cell text is rewritten, so draw a copy when its text is read again."""
    ink = {"color": INK}
    fig.update_layout(font=ink, legend={"font": ink, "title": {"font": ink}}, title={"font": ink})
    for ax in (*fig.select_xaxes(), *fig.select_yaxes()):
        ax.tickfont.color = INK
        ax.title.font.color = INK
    for a in fig.layout.annotations or ():
        if a.font is None or a.font.color is None:
            a.font.color = INK
    bars = [tr.colorbar for tr in fig.data if hasattr(tr, "colorbar") and tr.colorbar is not None]
    bars += [ca.colorbar for ca in fig.select_coloraxes()]
    for cb in bars:
        cb.tickfont.color = INK
        cb.title.font.color = INK
    for tr in fig.data:
        if tr.type == "heatmap" and tr.texttemplate and tr.z is not None:
            _cell_inks(fig, tr)
    return fig


def _cell_inks(fig: go.Figure, tr) -> None:
    """A heatmap's cell text in black or white, each cell by the colour its value takes on the trace's scale: a
    <span> colour per cell (plotly's textfont.color is one colour per trace)."""
    z = np.asarray(tr.z, dtype=float)
    if z.ndim != 2:
        return
    axis = fig.layout[tr.coloraxis] if tr.coloraxis else None
    src = axis if axis is not None else tr
    scale = src.colorscale or fig.layout.colorscale.sequential or pc.get_colorscale("Plasma")
    if not (axis is not None or tr.colorscale):
        tr.colorscale = scale  # drawn with the scale the inks were chosen for (not the chart theme's own)
    zmin = src.cmin if axis is not None else tr.zmin
    zmax = src.cmax if axis is not None else tr.zmax
    finite = z[np.isfinite(z)]
    if finite.size == 0:
        return
    lo = float(finite.min()) if zmin is None else float(zmin)
    hi = float(finite.max()) if zmax is None else float(zmax)
    at = np.clip((np.nan_to_num(z, nan=lo) - lo) / (hi - lo), 0, 1) if hi > lo else np.zeros_like(z)
    if src.reversescale:
        at = 1 - at
    scale = [list(s) for s in scale]
    inks = {v: cell_ink(pc.sample_colorscale(scale, [v])[0]) for v in np.unique(np.round(at, 3))}
    grid = [[inks[v] for v in row] for row in np.round(at, 3)]
    if "%{text}" in tr.texttemplate and tr.text is not None:
        tr.text = [[f"<span style='color:{c}'>{t}</span>" for c, t in zip(crow, trow)]
                   for crow, trow in zip(grid, tr.text)]
    elif "%{text}" not in tr.texttemplate:
        tr.text = grid
        tr.texttemplate = f"<span style='color:%{{text}}'>{tr.texttemplate}</span>"


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
