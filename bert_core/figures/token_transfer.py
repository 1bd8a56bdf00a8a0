"""Figures for "why pre-train" on the Tagging and Question answering pages: the pretrained model, the same
network with fresh weights, and the task's baseline, over a run and over the number of training examples.

Run names come from model names (a hub id, a folder): every one goes through html.escape.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

PRETRAINED, SCRATCH, BASELINE = "#1f77b4", "#d62728", "#7f7f7f"


def transfer_curves_figure(runs: dict[str, tuple[np.ndarray, np.ndarray]], baseline: float | None,
                           metric: str, baseline_name: str = "baseline", height: int = 340) -> go.Figure:
    """Validation `metric` against step for each run (name -> (steps, values)), the baseline as a dashed line.

    The first run is drawn in the pretrained colour, the second in the from-scratch colour.
    """
    fig = go.Figure()
    for i, (name, (x, y)) in enumerate(runs.items()):
        fig.add_trace(go.Scatter(x=np.asarray(x), y=np.asarray(y), name=html.escape(name), mode="lines+markers",
                                 line=dict(color=(PRETRAINED, SCRATCH)[min(i, 1)], width=3)))
    if baseline is not None:
        fig.add_hline(y=baseline, line=dict(color=BASELINE, dash="dash", width=2),
                      annotation_text=f"{html.escape(baseline_name)}: {100 * baseline:.1f}%",
                      annotation_position="bottom right")
    fig.update_xaxes(title_text="step", rangemode="tozero")
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", title_text=f"validation {html.escape(metric)}")
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=30, b=10), uirevision="transfer-curves",
                      legend=dict(orientation="h", y=1.12, x=0), hovermode="x unified")
    return fig


def sample_efficiency_figure(curves: dict[str, tuple[list[int], list[float]]], metric: str, examples: str,
                             height: int = 360) -> go.Figure:
    """Validation `metric` against training examples (log axis) for each curve (name -> (sizes, values)).

    Curves are coloured in order: pretrained, from scratch, baseline (dashed).
    """
    fig = go.Figure()
    styles = [dict(color=PRETRAINED, width=3), dict(color=SCRATCH, width=3), dict(color=BASELINE, width=2,
                                                                                    dash="dash")]
    for i, (name, (x, y)) in enumerate(curves.items()):
        fig.add_trace(go.Scatter(x=list(x), y=list(y), name=html.escape(name), mode="lines+markers",
                                 line=styles[min(i, 2)],
                                 hovertemplate=f"%{{x:,}} {html.escape(examples)}: %{{y:.1%}}<extra></extra>"))
    fig.update_xaxes(type="log", title_text=f"training {html.escape(examples)} (log scale)")
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", title_text=f"validation {html.escape(metric)}")
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h", y=1.12, x=0))
    return fig
