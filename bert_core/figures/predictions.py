"""Predictions page: the top-k candidates of one [MASK] and the NSP probabilities, as plotly bars.

At a [MASK] the model's guess is p = softmax(W_e · LN(gelu(W h + b)) + b_v): h is the position's
final hidden state, W_e the word-embedding matrix (shared with the input side).
"""

from __future__ import annotations

import html

import plotly.graph_objects as go


def _esc(s: str) -> str:
    """Plotly reads labels as a small HTML subset and decodes &lt; &gt; &amp;: escaped text shows literally."""
    return html.escape(str(s), quote=False)


def candidates_figure(candidates: list[tuple[str, float]], title: str, highlight: str | None = None) -> go.Figure:
    """Horizontal bars of a [MASK]'s top-k (token, probability), most likely on top.

    `highlight` (e.g. the word that was masked) is drawn in another colour when it is among them.
    """
    toks = [_esc(t) for t, _ in candidates][::-1]  # plotly draws the first category at the bottom
    probs = [round(p, 5) for _, p in candidates][::-1]
    colors = ["#e67e22" if highlight is not None and t == _esc(highlight) else "#2e86c1" for t in toks]
    fig = go.Figure(go.Bar(x=probs, y=toks, orientation="h", marker_color=colors,
                           text=[f"{p:.1%}" for p in probs], textposition="auto",
                           hovertemplate="%{y}: p = %{x:.4f}<extra></extra>"))
    # Up to 1 for a confident model, but never so wide that an unsure model's bars vanish.
    top = min(1.0, max(0.05, 1.25 * max(probs, default=0)))
    fig.update_layout(title=_esc(title), xaxis_title="probability", xaxis_range=[0, top],
                      height=120 + 24 * len(toks), margin=dict(l=10, r=20, t=50, b=40))
    fig.update_yaxes(type="category")
    return fig


def nsp_figure(p_is_next: float, p_not_next: float) -> go.Figure:
    """Two bars: P(IsNext) and P(NotNext) from the NSP head on the pooled [CLS] vector."""
    fig = go.Figure(go.Bar(x=[p_is_next, p_not_next], y=["IsNext", "NotNext"], orientation="h",
                           marker_color=["#27ae60", "#c0392b"], text=[f"{p_is_next:.1%}", f"{p_not_next:.1%}"],
                           textposition="auto", hovertemplate="%{y}: %{x:.4f}<extra></extra>"))
    fig.update_layout(title="Next sentence prediction", xaxis_title="probability", xaxis_range=[0, 1],
                      height=200, margin=dict(l=10, r=20, t=50, b=40))
    return fig
