"""Figures for the Embeddings page: heatmaps, per-token norms, position similarity."""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .style import log_ticks

SEGMENT_COLORS = ("#4c78a8", "#f58518")  # sentence A, sentence B
PART_COLORS = {"word": "#4c78a8", "segment": "#f58518", "position": "#54a24b", "sum": "#b279a2",
               "normed": "#e45756"}


def plot_text(s: str) -> str:
    """Plotly reads a few HTML tags (<b>, <br>) in labels: escape so tokens show as typed."""
    return html.escape(s, quote=False)


def _height(n_rows: int) -> int:
    return int(min(1400, max(260, 18 * n_rows + 120)))


def embedding_heatmap(values: np.ndarray, labels: list[str], n_dims: int, title: str,
                      segments: np.ndarray | None = None) -> go.Figure:
    """Tokens x first `n_dims` hidden dims of a (T, H) array; with `segments`, a strip marks A/B."""
    z = values[:, :n_dims]  # (T, n_dims)
    y = [plot_text(s) for s in labels]
    heat = go.Heatmap(z=z, x=list(range(z.shape[1])), y=y, colorscale="RdBu", zmid=0, reversescale=True,
                      colorbar=dict(title="value"),
                      hovertemplate="token %{y}<br>dim %{x}<br>value %{z:.4f}<extra></extra>")
    if segments is None:
        fig = go.Figure(heat)
        fig.update_xaxes(title_text="hidden dimension")
    else:
        fig = make_subplots(rows=1, cols=2, shared_yaxes=True, column_widths=[0.05, 0.95], horizontal_spacing=0.01)
        seg = np.asarray(segments).reshape(-1, 1)  # (T, 1)
        fig.add_trace(go.Heatmap(z=seg, x=["segment"], y=y, zmin=0, zmax=1, showscale=False,
                                 colorscale=[[0, SEGMENT_COLORS[0]], [1, SEGMENT_COLORS[1]]],
                                 text=[["AB"[int(s)]] for s in seg[:, 0]], texttemplate="%{text}",
                                 hovertemplate="token %{y}<br>segment %{text}<extra></extra>"), row=1, col=1)
        fig.add_trace(heat, row=1, col=2)
        fig.update_xaxes(title_text="hidden dimension", row=1, col=2)
    fig.update_yaxes(type="category", autorange="reversed")
    fig.update_layout(title=title, height=_height(len(labels)), margin=dict(l=10, r=10, t=50, b=40))
    return fig


def norms_figure(norms: dict[str, np.ndarray], labels: list[str], titles: dict[str, str] | None = None,
                 segments: np.ndarray | None = None) -> go.Figure:
    """One line per embedding part: the L2 norm of each token's vector; sentence B shaded."""
    # One constructor call with the whole layout: plotly validates the figure once, not per add_*/update_*
    # (add_vrect alone cost a third of the build: 30 students of a class draw this on the same step).
    x = [plot_text(s) for s in labels]
    traces = [go.Scatter(x=x, y=vals, mode="lines+markers", name=(titles or {}).get(name, name),
                         line=dict(color=PART_COLORS.get(name)),
                         hovertemplate="%{x}<br>|v| = %{y:.3f}<extra>" + name + "</extra>")
              for name, vals in norms.items()]
    shapes, notes = [], []
    b = np.flatnonzero(np.asarray(segments) == 1) if segments is not None else []
    if len(b):
        shapes.append(dict(type="rect", xref="x", yref="y domain", x0=b[0] - 0.5, x1=b[-1] + 0.5, y0=0, y1=1,
                           fillcolor=SEGMENT_COLORS[1], opacity=0.12, line_width=0, layer="below"))
        notes.append(dict(text="sentence B", xref="x", yref="y domain", x=b[0] - 0.5, y=0, xanchor="left",
                          yanchor="bottom", showarrow=False))
    # Log scale: LayerNorm's output is ~sqrt(H) long, the looked-up rows often far shorter. Each tick says its own
    # value (0.5, 1, 2, 5): plotly's "D2" ticks print 5 for 0.5, so a 0.53 segment row read as larger than a 2.
    vals = np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in norms.values()]) if norms else np.ones(1)
    vals = vals[vals > 0]
    ticks, labels_ = log_ticks(float(vals.min()) if len(vals) else 1.0, float(vals.max()) if len(vals) else 1.0)
    return go.Figure(traces, layout=dict(
        title="L2 norm per token (log scale)", height=420, margin=dict(l=40, r=20, t=50, b=40),
        xaxis=dict(type="category"), yaxis=dict(title="L2 norm", type="log", tickvals=ticks, ticktext=labels_),
        legend=dict(orientation="h", yanchor="top", y=-0.3), shapes=shapes, annotations=notes))


def position_similarity_figure(sim: np.ndarray) -> go.Figure:
    """Heatmap of cos(E_pos[i], E_pos[j]) for positions 0..n-1."""
    n = sim.shape[0]
    fig = go.Figure(go.Heatmap(z=sim, x=list(range(n)), y=list(range(n)), colorscale="RdBu", reversescale=True,
                               zmin=-1, zmax=1, colorbar=dict(title="cosine"),
                               hovertemplate="positions %{y} and %{x}<br>cosine %{z:.3f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed", title_text="position i", scaleanchor="x", constrain="domain")
    fig.update_xaxes(title_text="position j", constrain="domain")
    fig.update_layout(title=f"Cosine similarity of position embeddings 0..{n - 1}", height=560,
                      margin=dict(l=40, r=20, t=50, b=40))
    return fig
