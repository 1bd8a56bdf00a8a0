"""Figures for the Question answering page: start and end probabilities over the passage, the answer highlighted.

Tokens and the passage are user text: every one goes through html.escape (plotly renders tick and hover
text as a subset of HTML; the highlighted passage is HTML).
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go


def span_probabilities_figure(tokens: list[str], p_start: np.ndarray, p_end: np.ndarray,
                              best: tuple[int, int] | None = None, height: int = 340) -> go.Figure:
    """p_start and p_end (softmax over the window's tokens) drawn over the passage's tokens; the best span shaded."""
    names = [html.escape(t) for t in tokens]
    x = list(range(len(names)))
    fig = go.Figure()
    fig.add_trace(go.Bar(x=x, y=p_start, name="p(start)", marker_color="#2ca02c",
                         hovertext=[f"{n}: p(start) = {p:.3f}" for n, p in zip(names, p_start)], hoverinfo="text"))
    fig.add_trace(go.Bar(x=x, y=p_end, name="p(end)", marker_color="#d62728",
                         hovertext=[f"{n}: p(end) = {p:.3f}" for n, p in zip(names, p_end)], hoverinfo="text"))
    if best is not None:
        fig.add_vrect(x0=best[0] - 0.5, x1=best[1] + 0.5, fillcolor="#ffdd57", opacity=0.3, line_width=0,
                      annotation_text="best span", annotation_position="top left")
    fig.update_xaxes(tickmode="array", tickvals=x, ticktext=names, tickangle=-60, title_text="passage token")
    fig.update_yaxes(range=[0, 1.02], title_text="probability")
    fig.update_layout(barmode="group", height=height, margin=dict(l=10, r=10, t=30, b=10),
                      legend=dict(orientation="h", y=1.12, x=0))
    return fig


def highlighted_passage_html(passage: str, spans: list[tuple[int, int]]) -> str:
    """The passage, escaped, with spans (character ranges, best first) marked: the best in yellow, others grey."""
    kept: list[tuple[int, int, int]] = []
    for i, (a, b) in enumerate(spans):  # best first: a span overlapping a better one is not marked
        if all(b <= ka or a >= kb for ka, kb, _ in kept):
            kept.append((a, b, i))
    out, cursor = [], 0
    for a, b, i in sorted(kept):
        out.append(html.escape(passage[cursor:a]))
        color = "#ffdd57" if i == 0 else "#e0e0e0"
        out.append(f'<mark style="background:{color};border-radius:3px;padding:0 2px" title="answer {i + 1}">'
                   f"{html.escape(passage[a:b])}</mark>")
        cursor = b
    out.append(html.escape(passage[cursor:]))
    return f'<div style="line-height:1.8">{"".join(out)}</div>'
