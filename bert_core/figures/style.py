"""Figure styles shared by every page: type large enough to read from the back of a room, and axes whose
ticks say the values they mean (a log axis labelled 0.5, 1, 2, 5, not 5, 1, 2, 5)."""

from __future__ import annotations

import math

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
