"""Figures for the Fine-tuning page: curves, confusion matrix, PCA of pooled vectors, class probabilities.

Class names are user text (a CSV's labels): every one goes through html.escape, because plotly
renders tick text, legends and hover text as (a subset of) HTML.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")


def _color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def curves_figure(c: dict[str, np.ndarray], height: int = 360) -> go.Figure:
    """Loss (left) and accuracy (right): per-step training (thin, smoothed), per-evaluation validation (markers)."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("loss (cross-entropy, nats)", "accuracy"))
    fig.add_trace(go.Scatter(x=c["step"], y=c["train_loss"], name="train loss (smoothed)", mode="lines",
                             line=dict(color="#1f3b73", width=1.5)), row=1, col=1)
    fig.add_trace(go.Scatter(x=c["eval_step"], y=c["valid_loss"], name="validation loss", mode="lines+markers",
                             line=dict(color="#d62728", width=3)), row=1, col=1)
    fig.add_trace(go.Scatter(x=c["step"], y=c["train_accuracy"], name="train accuracy (batch, smoothed)",
                             mode="lines", line=dict(color="#7f7f7f", width=1.5, dash="dot")), row=1, col=2)
    fig.add_trace(go.Scatter(x=c["eval_step"], y=c["valid_accuracy"], name="validation accuracy",
                             mode="lines+markers", line=dict(color="#2ca02c", width=3)), row=1, col=2)
    fig.update_xaxes(title_text="step", rangemode="tozero")
    fig.update_yaxes(rangemode="tozero", row=1, col=1)
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", row=1, col=2)
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40, b=10), uirevision="ft-curves",
                      legend=dict(orientation="h", y=-0.2, x=0), hovermode="x unified")
    return fig


def confusion_figure(confusion: np.ndarray, labels: list[str], title: str = "", height: int = 420) -> go.Figure:
    """Rows = true class, columns = predicted class; colour = share of the row, text = count."""
    names = [html.escape(lab) for lab in labels]
    counts = np.asarray(confusion)
    share = counts / np.maximum(counts.sum(1, keepdims=True), 1)  # each row sums to 1
    hover = [[f"true {names[i]}, predicted {names[j]}: {counts[i, j]} ({share[i, j]:.0%} of the row)"
              for j in range(len(names))] for i in range(len(names))]
    fig = go.Figure(go.Heatmap(z=share, x=list(range(len(names))), y=list(range(len(names))), zmin=0, zmax=1,
                               colorscale="Blues", text=counts, texttemplate="%{text}", hovertext=hover,
                               hoverinfo="text", colorbar=dict(title="share of row", tickformat=".0%")))
    ticks = lambda: dict(tickmode="array", tickvals=list(range(len(names))), ticktext=names)  # noqa: E731
    fig.update_xaxes(title_text="predicted class", **ticks())
    fig.update_yaxes(title_text="true class", autorange="reversed", **ticks())
    fig.update_layout(title=html.escape(title), height=height, margin=dict(l=10, r=10, t=40, b=10))
    return fig


def pca_figure(panels: list[tuple[str, np.ndarray, np.ndarray]], y: np.ndarray, labels: list[str],
               height: int = 420) -> go.Figure:
    """Side-by-side 2-D PCA scatters, one point per validation example, coloured by its true class.

    `panels` is [(title, coords (N, 2), variance shares (2,))]; `y` (N,) the true class ids.
    """
    names = [html.escape(lab) for lab in labels]
    fig = make_subplots(rows=1, cols=len(panels),
                        subplot_titles=[html.escape(t) for t, _, _ in panels])
    for k, (_, xy, var) in enumerate(panels, start=1):
        for c, name in enumerate(names):
            pts = xy[y[: len(xy)] == c]
            fig.add_trace(go.Scattergl(x=pts[:, 0], y=pts[:, 1], mode="markers", name=name, legendgroup=name,
                                       showlegend=k == 1, marker=dict(color=_color(c), size=6, opacity=0.75),
                                       hovertemplate=f"{name}<extra></extra>"), row=1, col=k)
        fig.update_xaxes(title_text=f"PC 1 ({var[0]:.0%} of variance)", row=1, col=k)
        fig.update_yaxes(title_text=f"PC 2 ({var[1]:.0%})", row=1, col=k)
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.2))
    return fig


def probabilities_figure(pairs: list[tuple[str, float]], height: int | None = None) -> go.Figure:
    """Horizontal bars: one per class, in label-id order, with the probability written on the bar."""
    names = [html.escape(lab) for lab, _ in pairs]
    probs = [p for _, p in pairs]
    best = int(np.argmax(probs)) if probs else -1
    fig = go.Figure(go.Bar(x=probs, y=list(range(len(names))), orientation="h", text=[f"{p:.1%}" for p in probs],
                           textposition="auto", hovertext=names, hoverinfo="text+x",
                           marker_color=["#1f3b73" if i == best else "#9db3d6" for i in range(len(names))]))
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(names))), ticktext=names, autorange="reversed")
    fig.update_xaxes(range=[0, 1], tickformat=".0%", title_text="probability")
    fig.update_layout(height=height or 60 + 32 * len(names), margin=dict(l=10, r=10, t=10, b=10))
    return fig


def comparison_figure(runs: dict[str, tuple[np.ndarray, np.ndarray]], baseline: float | None = None,
                      height: int = 360) -> go.Figure:
    """Validation accuracy against step for several runs of one recipe, and the baseline as a dashed line.

    `runs` is {name: (eval steps (E,), validation accuracy (E,))}; names are ours (not user text).
    """
    fig = go.Figure()
    for i, (name, (steps, acc)) in enumerate(runs.items()):
        fig.add_trace(go.Scatter(x=steps, y=acc, name=html.escape(name), mode="lines+markers",
                                 line=dict(color=_color(i), width=3)))
    if baseline is not None:
        fig.add_hline(y=baseline, line=dict(color="#7f7f7f", dash="dash"),
                      annotation_text=f"bag of words {baseline:.1%}", annotation_position="bottom right")
    fig.update_xaxes(title_text="step", rangemode="tozero")
    fig.update_yaxes(title_text="validation accuracy", range=[0, 1.02], tickformat=".0%")
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=30, b=10), uirevision="ft-compare",
                      legend=dict(orientation="h", y=-0.25, x=0), hovermode="x unified")
    return fig


def sample_efficiency_figure(labels: list[str], accuracy: dict[str, list[float]], spread: dict[str, list[float]],
                             height: int = 380) -> go.Figure:
    """Validation accuracy against training examples per class (categorical x: 2, 4, ..., all), one line a learner."""
    fig = go.Figure()
    for i, (name, acc) in enumerate(accuracy.items()):
        fig.add_trace(go.Scatter(x=labels, y=acc, name=html.escape(name), mode="lines+markers",
                                 error_y=dict(type="data", array=spread.get(name), visible=True, thickness=1),
                                 line=dict(color=_color(i), width=3)))
    fig.update_xaxes(title_text="training examples per class", type="category")
    fig.update_yaxes(title_text="validation accuracy", range=[0, 1.02], tickformat=".0%")
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=30, b=10),
                      legend=dict(orientation="h", y=-0.25, x=0), hovermode="x unified")
    return fig
