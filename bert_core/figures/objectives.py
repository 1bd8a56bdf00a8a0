"""Figures for the BERT vs GPT page: masks, visibility, loss positions, three runs' losses, sample efficiency."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .attention import token_labels

OBJECTIVE_COLORS = {"mlm": "#1f77b4", "clm": "#d62728", "rtd": "#9467bd"}
OBJECTIVE_LABELS = {"mlm": "BERT: masked words", "clm": "GPT: next token", "rtd": "ELECTRA: replaced tokens"}


def _ticks(tokens: list[str]) -> dict:
    return dict(tickmode="array", tickvals=list(range(len(tokens))), ticktext=token_labels(tokens))


def _objective_rows(fig: go.Figure, names: list[str], tokens: list[str], height: int) -> go.Figure:
    """Axes of a rows-are-objectives, columns-are-tokens grid."""
    fig.update_xaxes(tickangle=-45, **_ticks(tokens))
    fig.update_yaxes(tickmode="array", tickvals=list(range(len(names))), autorange="reversed",
                     ticktext=[OBJECTIVE_LABELS.get(n, n) for n in names])
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=10, b=10))
    return fig


def mask_pair_figure(left: np.ndarray, right: np.ndarray, tokens: list[str], titles: tuple[str, str],
                     zmax: float = 1.0, colorscale: str = "Blues", height: int = 430) -> go.Figure:
    """Two (T, T) maps side by side (row i = query, column j = key): the two masks, or the attention under each."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=[html.escape(t) for t in titles], horizontal_spacing=0.12)
    labels = token_labels(tokens)
    for col, z in ((1, left), (2, right)):
        hover = [[f"{labels[i]} → {labels[j]}: {z[i, j]:.3f}" for j in range(len(tokens))] for i in range(len(tokens))]
        fig.add_trace(go.Heatmap(z=z, zmin=0, zmax=zmax, colorscale=colorscale, text=hover, hoverinfo="text",
                                 showscale=col == 2), row=1, col=col)
        fig.update_xaxes(title_text="key j (attended to)", tickangle=-45, row=1, col=col, **_ticks(tokens))
        fig.update_yaxes(title_text="query i" if col == 1 else None, autorange="reversed", row=1, col=col,
                         **_ticks(tokens))
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40, b=10))
    return fig


VIS_COLORS = ["#eeeeee", "#9ecae1", "#e6550d"]  # cannot see, sees, the predicted token


def visibility_figure(codes: dict[str, np.ndarray], tokens: list[str], height: int = 260) -> go.Figure:
    """Rows = objectives, columns = tokens; grey: cannot be read, blue: read, orange: the token being predicted."""
    names = list(codes)
    z = np.stack([codes[n] for n in names])  # (3, T) in {0, 1, 2}
    meaning = {0: "cannot see", 1: "sees", 2: "predicted here"}
    hover = [[f"{OBJECTIVE_LABELS.get(n, n)}: {html.escape(tokens[j])} — {meaning[int(z[r, j])]}"
              for j in range(len(tokens))] for r, n in enumerate(names)]
    scale = [[0, VIS_COLORS[0]], [0.33, VIS_COLORS[0]], [0.34, VIS_COLORS[1]], [0.66, VIS_COLORS[1]],
             [0.67, VIS_COLORS[2]], [1, VIS_COLORS[2]]]
    fig = go.Figure(go.Heatmap(z=z, zmin=0, zmax=2, colorscale=scale, showscale=False, text=hover, hoverinfo="text",
                               xgap=2, ygap=2))
    return _objective_rows(fig, names, tokens, height)


def loss_positions_figure(rows: dict[str, np.ndarray], texts: dict[str, list[str]], tokens: list[str],
                          height: int = 280) -> go.Figure:
    """Rows = objectives, columns = tokens; filled where that objective's loss is computed, with its target."""
    names = list(rows)
    z = np.stack([rows[n].astype(float) for n in names])  # (3, T) 0/1
    cell = [[html.escape(texts[n][j] or "") if rows[n][j] else "" for j in range(len(tokens))] for n in names]
    fig = go.Figure(go.Heatmap(z=z, zmin=0, zmax=1, colorscale=[[0, "#f4f4f4"], [1, "#fdae6b"]], showscale=False,
                               text=cell, texttemplate="%{text}", hovertemplate="%{text}<extra></extra>",
                               xgap=2, ygap=2))
    return _objective_rows(fig, names, tokens, height)


def objective_losses_figure(curves: dict[str, dict[str, np.ndarray]], height: int = 340) -> go.Figure:
    """One panel per objective (their losses have different units): the smoothed optimised loss against step."""
    names = list(curves)
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=[OBJECTIVE_LABELS.get(n, n) for n in names])
    for k, n in enumerate(names, start=1):
        c = curves[n]
        fig.add_trace(go.Scatter(x=c["step"], y=c["loss"], mode="lines", name=OBJECTIVE_LABELS.get(n, n),
                                 line=dict(color=OBJECTIVE_COLORS.get(n), width=3)), row=1, col=k)
        if "discriminator" in c:
            fig.add_trace(go.Scatter(x=c["step"], y=c["discriminator"] * 50, mode="lines", name="50 × discriminator",
                                     line=dict(color=OBJECTIVE_COLORS.get(n), dash="dot")), row=1, col=k)
            fig.add_trace(go.Scatter(x=c["step"], y=c["generator"], mode="lines", name="generator MLM",
                                     line=dict(color="#7f7f7f", dash="dash")), row=1, col=k)
        fig.update_xaxes(title_text="step", row=1, col=k)
    fig.update_yaxes(title_text="loss (nats)", rangemode="tozero", row=1, col=1)
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", y=-0.25))
    return fig


def sample_efficiency_figure(points: dict[str, tuple[np.ndarray, np.ndarray]], chance: float,
                             height: int = 360) -> go.Figure:
    """Held-out probe accuracy against tokens seen, one line per objective, and the chance level."""
    fig = go.Figure()
    for n, (tokens, acc) in points.items():
        fig.add_trace(go.Scatter(x=tokens, y=acc, mode="lines+markers", name=OBJECTIVE_LABELS.get(n, n),
                                 line=dict(color=OBJECTIVE_COLORS.get(n), width=3 if n != "clm" else 1.5,
                                           dash="solid" if n != "clm" else "dot")))
    fig.add_hline(y=chance, line=dict(color="#999999", dash="dash"), annotation_text="chance",
                  annotation_position="bottom right")
    fig.update_xaxes(title_text="tokens seen in pretraining", rangemode="tozero")
    fig.update_yaxes(title_text="probe accuracy (held out)", range=[0, 1], tickformat=".0%")
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=10, b=10), legend=dict(orientation="h", y=1.1))
    return fig


def replaced_figure(tokens: list[str], probs: np.ndarray, height: int = 300) -> go.Figure:
    """P(replaced) per token, as bars; the 0.5 line is where the discriminator's call flips."""
    labels = token_labels(tokens)
    fig = go.Figure(go.Bar(x=list(range(len(tokens))), y=probs, marker_color=np.where(probs > 0.5, "#d62728",
                                                                                        "#9ecae1"),
                           hovertext=[f"{lab}: {p:.3f}" for lab, p in zip(labels, probs)], hoverinfo="text"))
    fig.add_hline(y=0.5, line=dict(color="#999999", dash="dash"))
    fig.update_xaxes(tickangle=-45, **_ticks(tokens))
    fig.update_yaxes(title_text="P(replaced)", range=[0, 1])
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=10, b=10))
    return fig
