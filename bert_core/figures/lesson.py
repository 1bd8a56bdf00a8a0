"""The Lesson's own figures: the full pages' builders, shaped for a step's slide (arrays in, figures out)."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from .attention import head_heatmap
from .training import loss_figure


def pretraining_start_figure(curves, example_vocab: int, vocab: int) -> go.Figure:
    """The example run's loss curve with ln V marked where it starts: the example's V, and the model on screen's V
    when it differs (the question's V is the model on screen's, so its line names its own V)."""
    fig = loss_figure(curves, height=340)
    # The legend under the plot: at its top it covered the ln V lines' notes.
    fig.update_layout(legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0),
                      margin=dict(b=90))
    fig.add_hline(y=math.log(example_vocab), line_dash="dash", annotation_position="bottom right",
                  # Two short lines at the right: in one, its left end reached the curve's first steep fall.
                  annotation_text=f"ln {example_vocab:,} = {math.log(example_vocab):.2f}: the example's start"
                                  f"<br>(its V = {example_vocab:,})")
    if vocab != example_vocab:
        fig.add_hline(y=math.log(vocab), line_dash="dot", annotation_position="top left",
                      annotation_text=f"ln {vocab:,} = {math.log(vocab):.2f}: a fresh model with V = {vocab:,}")
    return fig


def mask_heatmap(z: np.ndarray, tokens: list[str], title: str) -> go.Figure:
    """One head's weights under one mask, for two side by side: no scale or numbers, and zmax 0.3, so the heavy [CLS]
    column saturates and the empty triangle above a causal mask's diagonal stands out."""
    fig = head_heatmap(z, tokens, title, zmax=0.3)
    fig.update_traces(showscale=False, texttemplate=None)
    fig.update_layout(height=360, margin=dict(l=10, r=10, t=60, b=10), xaxis_title=None, yaxis_title=None)
    return fig


def hidden_importance_figure(importance: np.ndarray, framed: tuple[int, int], guess: str) -> go.Figure:
    """The ranked layers' head importance (the Lesson ranks the last layer's), relative to the framed head, without
    a scale or values: how much the guess loses is the question's answer, shown only with it. Only the layers that
    were ranked are drawn (a layer not ranked is NaN: no empty rows), each head labelled."""
    imp = np.asarray(importance, dtype=float)  # (L, nh)
    rows = [layer for layer in range(imp.shape[0]) if np.isfinite(imp[layer]).any()]
    lim = max(float(np.nanmax(np.abs(imp))), 1e-12)
    nh = imp.shape[1]
    xs, ys = [str(h + 1) for h in range(nh)], [f"layer {layer + 1}" for layer in rows]
    fig = go.Figure(go.Heatmap(z=imp[rows] / lim, x=xs, y=ys, colorscale="RdBu_r", zmid=0.0, zmin=-1, zmax=1,
                               showscale=False, xgap=1, ygap=1, hovertemplate="%{y}, %{x}<extra></extra>"))
    layer, head = framed
    if layer in rows:
        r = rows.index(layer)
        fig.add_shape(type="rect", x0=head - 0.5, x1=head + 0.5, y0=r - 0.5, y1=r + 0.5,
                      line=dict(color="black", width=3))
    return fig.update_layout(
        title=f"What “{guess}” loses without each head", height=170 + 50 * len(rows),
        margin=dict(l=10, r=10, t=50, b=60), dragmode=False,
        xaxis=dict(type="category", tickmode="linear", dtick=1, tickangle=0, title=dict(text="head")),
        yaxis=dict(type="category", autorange="reversed"))


def every_label(fig: go.Figure, height: int, keys: bool = True) -> go.Figure:
    """An attention map for a slide: every row labelled (cells as tall as the height allows, not square), and
    the columns labelled too when `keys` (else the axis says they are the same tokens, left to right)."""
    fig.update_yaxes(tickmode="linear", dtick=1, scaleanchor=None, constrain=None)
    if keys:
        fig.update_xaxes(tickmode="linear", dtick=1)
    else:
        # Set whole: a title set to None (mask_heatmap's) cannot be updated in place.
        fig.layout.xaxis = {**fig.layout.xaxis.to_plotly_json(), "showticklabels": False, "side": "bottom",
                            "title": {"text": "attended to"}}
        fig.update_layout(margin=dict(b=40))  # room for that title
    return fig.update_layout(height=height)


def bars_every_label(fig: go.Figure, per_bar: int = 44) -> go.Figure:
    """A horizontal bar chart for a slide: tall enough that every bar's label is drawn (plotly drops labels that
    would overlap), each category labelled."""
    n = max(len(tr.y) for tr in fig.data if getattr(tr, "y", None) is not None)
    fig.update_yaxes(tickmode="linear", dtick=1)
    return fig.update_layout(height=max(int(fig.layout.height or 0), 110 + per_bar * n))


def row_bars(weights: np.ndarray, tokens: list[str], title: str, mark: int | None = None) -> go.Figure:
    """One query token's attention weights (T,) as a bar per key token, each labelled "i token" upright: a slide's
    view of one row of a head's map when the whole map has no room for every label. `mark` is drawn darker."""
    labels = [f"{i} {t}" for i, t in enumerate(tokens)]
    colors = ["#1f4e79" if i == mark else "#7fb3d5" for i in range(len(tokens))]
    fig = go.Figure(go.Bar(x=labels, y=np.asarray(weights, dtype=float), marker_color=colors,
                           hovertemplate="%{x}: %{y:.1%}<extra></extra>"))
    return fig.update_layout(title=title, height=400, margin=dict(l=10, r=10, t=50, b=10), yaxis_tickformat=".0%",
                             yaxis_title="weight", xaxis=dict(type="category", tickmode="linear", dtick=1,
                                                              tickangle=-90))
