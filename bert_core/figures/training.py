"""Figures for the Training page: the live loss curves and a probe's attention heatmap."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

# One colour per series, the same on every redraw so the eye can follow a line as it grows.
COLORS = {"loss": "#1f3b73", "[MASK]": "#d62728", "random": "#ff7f0e", "kept": "#2ca02c", "accuracy": "#7f7f7f",
          "rtd": "#9467bd", "rtd_accuracy": "#9467bd"}
LABELS = {"loss": "total MLM loss", "[MASK]": "loss at [MASK]", "random": "loss at random",
          "kept": "loss at kept", "accuracy": "masked-token accuracy",
          "rtd": "discriminator loss (BCE)", "rtd_accuracy": "discriminator accuracy"}


def loss_labels(objective: str) -> dict[str, str]:
    """The chart's legend for an objective: what "loss" and "accuracy" mean in its run."""
    if objective == "clm":
        return LABELS | {"loss": "next-token loss", "accuracy": "next-token accuracy"}
    if objective == "rtd":
        return LABELS | {"loss": "total: generator MLM + 50 × discriminator", "accuracy": "generator accuracy"}
    return LABELS


def loss_figure(curves: dict[str, np.ndarray], height: int = 380, objective: str = "mlm") -> go.Figure:
    """Loss per step (total and per 80/10/10 outcome) on the left axis, accuracy on the right.

    `curves` has "step" (S,) and any of "loss", "[MASK]", "random", "kept", "accuracy", "rtd", "rtd_accuracy",
    each (S,). `objective` names the series ("mlm", "clm" or "rtd").
    """
    labels = loss_labels(objective)
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    x = np.asarray(curves["step"])
    for name in ("loss", "[MASK]", "random", "kept", "rtd"):
        if name in curves:
            fig.add_trace(go.Scatter(x=x, y=curves[name], name=labels[name], mode="lines", connectgaps=True,
                                     line=dict(color=COLORS[name], width=3 if name == "loss" else 1.5)),
                          secondary_y=False)
    for name in ("accuracy", "rtd_accuracy"):
        if name in curves:
            fig.add_trace(go.Scatter(x=x, y=curves[name], name=labels[name], mode="lines",
                                     connectgaps=True, line=dict(color=COLORS[name], dash="dot")),
                          secondary_y=True)
    fig.update_xaxes(title_text="step", rangemode="tozero")
    fig.update_yaxes(title_text="cross-entropy (nats)", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="accuracy", range=[0, 1], secondary_y=True, showgrid=False, tickmode="array",
                     tickvals=[0, 0.25, 0.5, 0.75, 1], tickformat=".0%")
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=30, b=10), uirevision="loss",
                      legend=dict(orientation="h", y=1.12, x=0), hovermode="x unified")
    return fig


def attention_heatmap(attn: np.ndarray, tokens: list[str], title: str = "", height: int = 420) -> go.Figure:
    """One head's attention: row i = query token i, column j = key token j, colour = weight.

    `attn` is (T, T) with rows summing to 1. Axes are positions labelled with the tokens, so a
    token that occurs twice keeps two rows.
    """
    T = len(tokens)
    labels = [html.escape(t) for t in tokens]  # plotly renders tick text as HTML
    hover = [[f"{labels[i]} → {labels[j]}: {attn[i, j]:.3f}" for j in range(T)] for i in range(T)]
    fig = go.Figure(go.Heatmap(z=attn, x=list(range(T)), y=list(range(T)), zmin=0, zmax=1,
                               colorscale="Blues", text=hover, hoverinfo="text",
                               colorbar=dict(title="weight")))
    ticks = dict(tickmode="array", tickvals=list(range(T)), ticktext=labels)
    fig.update_xaxes(title_text="key (attended to)", tickangle=-45, **ticks)
    fig.update_yaxes(title_text="query (attending)", autorange="reversed", **ticks)
    fig.update_layout(title=html.escape(title), height=height, margin=dict(l=10, r=10, t=40, b=10))
    return fig
