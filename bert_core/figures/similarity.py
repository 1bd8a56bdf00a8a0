"""Similarity page: the cosine matrix of a few sentences (arrays in, figures out)."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .attention import heatmap_figure


def sentence_labels(texts: list[str], width: int = 40) -> list[str]:
    """Unique, escaped axis labels: "1. first words…" (plotly reads labels as a small HTML subset)."""
    out = []
    for i, t in enumerate(texts, 1):
        short = t if len(t) <= width else t[: width - 1].rstrip() + "…"
        out.append(f"{i}. {html.escape(short, quote=False)}")
    return out


def cosine_heatmap(matrix: np.ndarray, texts: list[str], title: str) -> go.Figure:
    """(N, N) cosine similarities with the value in each cell, on a fixed -1..1 scale so models compare."""
    z = np.asarray(matrix, dtype=np.float32)
    labels = sentence_labels(texts)
    if z.shape != (len(labels), len(labels)):
        raise ValueError(f"cosine matrix has shape {z.shape}, expected ({len(labels)}, {len(labels)})")
    side = int(min(max(60 * len(labels) + 200, 360), 900))
    return heatmap_figure(
        {"z": z, "x": labels, "y": labels, "zmin": -1.0, "zmax": 1.0, "colorscale": "RdBu", "reversescale": True,
         "texttemplate": "%{z:.2f}", "colorbar": {"title": {"text": "cosine"}},
         "hovertemplate": "%{y}<br>%{x}<br>cos = %{z:.3f}<extra></extra>"},
        title, side, xaxis={"type": "category", "tickangle": -30}, yaxis={"type": "category", "autorange": "reversed"})
