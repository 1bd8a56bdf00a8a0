"""The Lesson's own figures: the full pages' builders, shaped for a step's slide (arrays in, figures out)."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from .attention import head_heatmap
from .heads import importance_figure
from .training import loss_figure


def pretraining_start_figure(curves, example_vocab: int, vocab: int) -> go.Figure:
    """The example run's loss curve with ln V marked where it starts: the example's V, and the model on screen's V
    when it differs (the question's V is the model on screen's, so its line names its own V)."""
    fig = loss_figure(curves, height=300)
    fig.add_hline(y=math.log(example_vocab), line_dash="dash", annotation_position="bottom right",
                  annotation_text=f"ln {example_vocab:,} = {math.log(example_vocab):.2f}: the example's start "
                                  f"(its V = {example_vocab:,})")
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
    """The last layer's head importance relative to the framed head, without a scale or values: how much the guess
    loses is the question's answer, shown only with it."""
    fig = importance_figure(importance / max(float(np.nanmax(np.abs(importance))), 1e-12), framed, guess)
    fig.update_traces(showscale=False, selector=dict(type="heatmap"))
    fig.update_traces(hovertemplate="%{y}, %{x}<extra></extra>", customdata=None, selector=dict(type="scatter"))
    return fig.update_layout(height=min(fig.layout.height, 380))
