"""Figures for the Tokenization page: arrays in, plotly figures out."""

from __future__ import annotations

import plotly.graph_objects as go


def pieces_per_word_figure(counts: dict[int, int]) -> go.Figure:
    """Bar chart: how many words WordPiece left whole (1 piece) or cut into 2, 3, ... pieces."""
    xs = list(counts)
    fig = go.Figure(go.Bar(x=[str(x) for x in xs], y=[counts[x] for x in xs], marker_color="#4c78a8",
                           hovertemplate="%{y} word(s) in %{x} piece(s)<extra></extra>"))
    fig.update_layout(title="Pieces per word", xaxis_title="pieces in the word", yaxis_title="words",
                      xaxis_type="category", height=300, margin=dict(l=40, r=20, t=50, b=40))
    return fig
