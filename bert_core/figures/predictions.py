"""Predictions page: top-k candidates of a [MASK], NSP, salience strips and pseudo-log-likelihood bars.

At a [MASK] the model's guess is p = softmax(W_e · LN(gelu(W h + b)) + b_v): h is the position's
final hidden state, W_e the word-embedding matrix (shared with the input side).
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from bert_core.figures.style import INK


def _esc(s: str) -> str:
    """Plotly reads labels as a small HTML subset and decodes &lt; &gt; &amp;: escaped text shows literally."""
    return html.escape(str(s), quote=False)

# A bar's number is printed white inside it when it fits: both colours hold white text at >= 4.5:1 and stand out from
# the white page at >= 3:1 (WCAG 1.4.3, 1.4.11); #2e86c1 and #e67e22 gave 3.97:1 and 2.85:1.
BAR, HIGHLIGHT = "#2874a6", "#c0561a"
IS_NEXT, NOT_NEXT = "#2e7d32", "#c0392b"  # white numbers inside at 5.1:1 and 5.4:1 (#27ae60 had #444 at 3.39:1)


def candidates_figure(candidates: list[tuple[str, float]], title: str, highlight: str | None = None) -> go.Figure:
    """Horizontal bars of a [MASK]'s top-k (token, probability), most likely on top.

    `highlight` (e.g. the word that was masked) is drawn in another colour when it is among them.
    """
    toks = [_esc(t) for t, _ in candidates][::-1]  # plotly draws the first category at the bottom
    probs = [round(p, 5) for _, p in candidates][::-1]
    colors = [HIGHLIGHT if highlight is not None and t == _esc(highlight) else BAR for t in toks]
    fig = go.Figure(go.Bar(x=probs, y=toks, orientation="h", marker_color=colors,
                           text=[f"{p:.1%}" for p in probs], textposition="auto",
                           hovertemplate="%{y}: p = %{x:.2%}<extra></extra>"))
    # Up to 1 for a confident model, but never so wide that an unsure model's bars vanish.
    top = min(1.0, max(0.05, 1.25 * max(probs, default=0)))
    fig.update_layout(title=_esc(title), xaxis_title="probability", xaxis_range=[0, top], xaxis_tickformat=".0%",
                      height=120 + 24 * len(toks), margin=dict(l=10, r=20, t=50, b=40))
    fig.update_yaxes(type="category", title_text="candidate")  # also its Data table's row headers' name
    return fig


def nsp_figure(p_is_next: float, p_not_next: float) -> go.Figure:
    """Two bars: P(IsNext) and P(NotNext) from the NSP head on the pooled [CLS] vector."""
    fig = go.Figure(go.Bar(x=[p_is_next, p_not_next], y=["IsNext", "NotNext"], orientation="h",
                           marker_color=[IS_NEXT, NOT_NEXT], text=[f"{p_is_next:.1%}", f"{p_not_next:.1%}"],
                           textposition="auto", insidetextfont={"color": "#ffffff"}, outsidetextfont={"color": INK},
                           hovertemplate="%{y}: %{x:.2%}<extra></extra>"))
    fig.update_layout(title="Next sentence prediction", xaxis_title="probability", xaxis_range=[0, 1],
                      xaxis_tickformat=".0%",
                      height=200, margin=dict(l=10, r=20, t=50, b=40))
    return fig


# ----------------------------------------------------------------------------------------------
# Salience and pseudo-log-likelihood
# ----------------------------------------------------------------------------------------------


def token_strip_figure(tokens: list[str], values, title: str, diverging: bool, per_row: int = 10) -> go.Figure:
    """The tokens as cells of a grid (`per_row` to a line, in reading order), each coloured by its value.

    `diverging`: blue (negative) - white - red (positive), centred on 0 (occlusion can be negative); else white to red.
    NaN (a token the capped pass did not score) stays blank.
    """
    v = np.asarray(values, dtype=np.float64)
    n = len(tokens)
    rows = max(1, -(-n // per_row))
    z = np.full((rows, per_row), np.nan)
    text = [[""] * per_row for _ in range(rows)]
    hover = [[""] * per_row for _ in range(rows)]
    for i, (tok, x) in enumerate(zip(tokens, v)):
        r, c = divmod(i, per_row)
        z[r, c] = x
        text[r][c] = _esc(tok)
        hover[r][c] = f"{i} {_esc(tok)}: " + ("not scored (capped)" if np.isnan(x) else f"{x:+.4f}")
    top = float(np.nanmax(np.abs(v))) if np.isfinite(v).any() else 0.0
    top = max(top, 1e-9)
    scale = dict(colorscale="RdBu", reversescale=True, zmid=0.0, zmin=-top, zmax=top) if diverging else \
        dict(colorscale="Reds", zmin=0.0, zmax=top)
    fig = go.Figure(go.Heatmap(z=z.astype(np.float32), text=text, texttemplate="%{text}", customdata=hover,
                               hovertemplate="%{customdata}<extra></extra>", xgap=2, ygap=2,
                               colorbar={"title": {"text": "salience"}}, **scale))
    fig.update_layout(title=_esc(title), height=90 + 42 * rows, margin=dict(l=10, r=10, t=50, b=10))
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, autorange="reversed")
    return fig


def pll_figure(sentences: list[tuple[str, list[tuple[str, float]], float]]) -> go.Figure:
    """Per-token bars of log p(token | rest), one row per sentence: (label, per_token, total)."""
    n = max(len(sentences), 1)
    fig = make_subplots(rows=n, cols=1, vertical_spacing=0.12 if n > 1 else 0.1,
                        subplot_titles=[f"{_esc(label)}: PLL = {total:.2f}" for label, _, total in sentences])
    low = min((v for _, per, _ in sentences for _, v in per), default=-1.0)
    for r, (label, per, _) in enumerate(sentences, start=1):
        x = [f"{i + 1} {_esc(t)}" for i, (t, _) in enumerate(per)]
        y = [round(v, 4) for _, v in per]
        fig.add_trace(go.Bar(x=x, y=y, marker_color="#8e44ad", name=_esc(label), showlegend=False,
                             hovertemplate="%{x}: log p = %{y:.3f}<extra></extra>"), row=r, col=1)
        fig.update_xaxes(type="category", row=r, col=1)
        fig.update_yaxes(range=[1.05 * low, 0], title_text="log p", row=r, col=1)
    fig.update_layout(title="log p(token | the sentence with that token masked)", height=80 + 220 * n,
                      margin=dict(l=10, r=10, t=80, b=10))
    return fig
