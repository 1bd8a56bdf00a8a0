"""Figures for the Probing and Neighbours pages: accuracy by layer, a histogram of tags, a 2-D projection.

Arrays in, plotly figures out. Layers are shown 1..L with 0 = the embeddings' output (the app's convention).
Words, sentences and sense definitions come from corpora and from the user: every one is escaped.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .finetuning import PALETTE

MARGIN = dict(l=10, r=10, t=50, b=40)
ROW_STYLE = {  # row name -> (colour, dash)
    "pretrained": (PALETTE[0], "solid"),
    "random weights": (PALETTE[1], "dash"),
    "control task": (PALETTE[2], "dot"),
}


def esc(s) -> str:
    return html.escape(str(s), quote=False)


def layer_names(n_states: int) -> list[str]:
    """Axis labels of hidden states 0..L. Example: 3 -> ["0 (embeddings)", "1", "2"]."""
    return ["0 (embeddings)"] + [str(i) for i in range(1, n_states)]


def accuracy_by_layer_figure(accuracy: dict[str, np.ndarray], majority: float, title: str,
                             baselines: dict[str, float] | None = None, height: int = 380) -> go.Figure:
    """Held-out accuracy of each row's probe at every layer (lines), and the constant baselines (flat lines)."""
    n = len(next(iter(accuracy.values())))
    x = layer_names(n)
    fig = go.Figure()
    for row, acc in accuracy.items():
        colour, dash = ROW_STYLE.get(row, (PALETTE[3], "solid"))
        fig.add_trace(go.Scatter(x=x, y=np.asarray(acc) * 100, name=esc(row), mode="lines+markers",
                                 line=dict(color=colour, dash=dash),
                                 hovertemplate="layer %{x}: %{y:.1f}%<extra>" + esc(row) + "</extra>"))
    lines = {"majority label": majority, **(baselines or {})}
    for i, (name, value) in enumerate(lines.items()):
        fig.add_trace(go.Scatter(x=x, y=[value * 100] * n, name=f"{esc(name)} ({value:.1%})", mode="lines",
                                 line=dict(color=["#7f7f7f", "#bcbd22", "#17becf"][i % 3], dash="longdash"),
                                 hoverinfo="skip"))
    # Category axis: left to guess, plotly reads "1", "2"... as numbers and drops "0 (embeddings)", layer 0.
    fig.update_layout(title=esc(title), height=height, margin=MARGIN, xaxis_title="layer", xaxis_type="category",
                      yaxis_title="held-out accuracy (%)", yaxis_range=[0, 100], legend=dict(orientation="h", y=-0.2))
    return fig


def tag_histogram_figure(tag_names, counts: np.ndarray, title: str, height: int = 300) -> go.Figure:
    """How many of the neighbours have each tag (bars, tags with no neighbour left out)."""
    counts = np.asarray(counts)
    keep = np.flatnonzero(counts)
    fig = go.Figure(go.Bar(x=[esc(tag_names[i]) for i in keep], y=counts[keep], marker_color=PALETTE[0],
                           hovertemplate="%{x}: %{y}<extra></extra>"))
    fig.update_layout(title=esc(title), height=height, margin=MARGIN, xaxis_title="part of speech",
                      yaxis_title="neighbours")
    return fig


def projection_figure(coords: np.ndarray, groups: list[str], hover: list[str], share: np.ndarray, title: str,
                      height: int = 460) -> go.Figure:
    """Points on their first two principal components, one colour per group (sense or tag); hover: the sentence."""
    fig = go.Figure()
    names = list(dict.fromkeys(groups))
    for i, g in enumerate(names):
        ix = [j for j, x in enumerate(groups) if x == g]
        fig.add_trace(go.Scatter(x=coords[ix, 0], y=coords[ix, 1], mode="markers", name=esc(g)[:70],
                                 marker=dict(color=PALETTE[i % len(PALETTE)], size=9, opacity=0.8),
                                 text=[esc(hover[j]) for j in ix], hovertemplate="%{text}<extra></extra>"))
    fig.update_layout(title=esc(title), height=height, margin=MARGIN,
                      xaxis_title=f"PC 1 ({share[0]:.0%} of the variance)",
                      yaxis_title=f"PC 2 ({share[1]:.0%} of the variance)", legend=dict(orientation="h", y=-0.2))
    return fig
