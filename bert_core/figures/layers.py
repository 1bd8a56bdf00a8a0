"""Figures for the Layers and Inside-a-layer pages: the residual stream, the logit lens, one layer's steps.

Arrays in, plotly figures out; no model code. Token labels are escaped (`attention.token_labels`):
plotly reads a small HTML subset in labels, and user text must show as typed, never as markup.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .attention import token_labels
from .style import integer_ticks

# Heatmaps with one column per token draw at most this many tokens; token x token maps fewer.
STREAM_TOKEN_CAP = 256
PAIR_TOKEN_CAP = 128
TRAJECTORY_CAP = 40  # PCA: one line per token; beyond this the picture is a tangle
KEY_CAP = 128  # Inside a layer: keys drawn for one query

MARGIN = dict(l=10, r=10, t=50, b=40)


def esc(s: str) -> str:
    return html.escape(str(s), quote=False)


def state_labels(n_states: int) -> list[str]:
    """Names of hidden states 0..L as users read them: state 0 is the embeddings' output, state l the output of
    layer l (layers count from 1; Python indexes from 0).

    Example: 3 -> ["emb", "L1", "L2"]
    """
    return ["emb"] + [f"L{i}" for i in range(1, n_states)]


def layer_labels(n_layers: int) -> list[str]:
    """Names of the layers themselves (their updates, not the states between them): L1..LL.

    Example: 2 -> ["L1", "L2"]
    """
    return [f"L{i}" for i in range(1, n_layers + 1)]


def _height(n_rows: int, per_row: int = 22, lo: int = 220, hi: int = 900) -> int:
    return int(min(hi, max(lo, per_row * n_rows + 120)))


def layer_token_heatmap(values: np.ndarray, tokens: list[str], rows: list[str], title: str, value_name: str,
                        colorscale: str = "Viridis", zmin: float | None = None, zmax: float | None = None,
                        zmid: float | None = None) -> go.Figure:
    """(rows, T) values: one row per layer (or state), one column per token."""
    z = np.asarray(values)
    fig = go.Figure(go.Heatmap(
        z=z, x=token_labels(tokens), y=rows, colorscale=colorscale, zmin=zmin, zmax=zmax, zmid=zmid,
        colorbar=dict(title=value_name),
        hovertemplate="%{y}, token %{x}<br>" + value_name + " %{z:.3f}<extra></extra>"))
    fig.update_xaxes(type="category", tickangle=-60, tickmode="linear", dtick=1)  # every token labelled
    fig.update_yaxes(type="category", autorange="reversed", title_text="layer")
    fig.update_layout(title=title, height=_height(len(rows), 28, 260, 800), margin=MARGIN)
    return fig


def similarity_heatmap(sim: np.ndarray, tokens: list[str], title: str) -> go.Figure:
    """(T, T) cosine similarities between tokens at one layer, -1..1."""
    labels = token_labels(tokens)
    fig = go.Figure(go.Heatmap(z=np.asarray(sim), x=labels, y=labels, colorscale="RdBu", zmin=-1, zmax=1,
                               reversescale=True, colorbar=dict(title="cos"),
                               hovertemplate="%{y} · %{x}<br>cos %{z:.3f}<extra></extra>"))
    fig.update_xaxes(type="category", tickangle=-60, tickmode="linear", dtick=1)  # every token labelled
    fig.update_yaxes(type="category", autorange="reversed", tickmode="linear", dtick=1)
    size = _height(len(tokens), 16, 360, 900)
    fig.update_layout(title=title, height=size, margin=MARGIN)
    return fig


def lens_figure(states: list[list[tuple[str, float]]], title: str, answer: str | None = None) -> go.Figure:
    """The logit lens at one [MASK]: rows are hidden states, columns the top-k; cell = token, colour = p."""
    rows = state_labels(len(states))
    k = max(len(c) for c in states)
    z = np.full((len(states), k), np.nan)
    text = [[""] * k for _ in states]
    for i, cands in enumerate(states):
        for j, (tok, p) in enumerate(cands):
            z[i, j] = p
            text[i][j] = esc(tok) if tok != answer else f"<b>{esc(tok)}</b>"
    fig = go.Figure(go.Heatmap(
        z=z, x=[f"#{j + 1}" for j in range(k)], y=rows, text=text, texttemplate="%{text}",
        colorscale="Blues", zmin=0, colorbar=dict(title="p"),
        hovertemplate="%{y}, candidate %{x}: %{text}<br>p = %{z:.3f}<extra></extra>"))
    fig.update_yaxes(type="category", autorange="reversed", title_text="hidden state")
    fig.update_xaxes(title_text="candidate (most likely first)")
    fig.update_layout(title=title, height=_height(len(rows), 30, 260, 900), margin=MARGIN)
    return fig


def answer_trajectory(rank: np.ndarray, prob: np.ndarray, answer: str, title: str) -> go.Figure:
    """The final answer's probability (left axis) and rank (right axis, log) at every hidden state."""
    x = state_labels(len(prob))
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=x, y=np.asarray(prob), mode="lines+markers", name="probability",
                             hovertemplate="%{x}: p = %{y:.4f}<extra></extra>"), secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=np.asarray(rank), mode="lines+markers", name="rank", line=dict(dash="dot"),
                             hovertemplate="%{x}: rank %{y}<extra></extra>"), secondary_y=True)
    fig.update_yaxes(title_text=f"p({esc(answer)})", rangemode="tozero", secondary_y=False)
    ticks = integer_ticks(int(np.max(rank)) if len(rank) else 1)  # whole ranks, never 3, 8, 3
    fig.update_yaxes(title_text="rank (1 = top)", type="log", autorange="reversed", tickvals=ticks,
                     ticktext=[f"{t:,}" for t in ticks], secondary_y=True)
    fig.update_layout(title=title, height=320, margin=MARGIN, legend=dict(orientation="h", y=-0.25))
    return fig


def same_word_figure(words, title: str) -> go.Figure:
    """cos(first occurrence, second occurrence) at every hidden state, one line per repeated word."""
    fig = go.Figure()
    for w in words:
        fig.add_trace(go.Scatter(x=state_labels(len(w.cos)), y=np.asarray(w.cos), mode="lines+markers",
                                 name=esc(w.word), hovertemplate="%{x}: cos %{y:.3f}<extra>%{fullData.name}</extra>"))
    fig.update_yaxes(title_text="cosine similarity", range=[-1.05, 1.05])
    fig.update_xaxes(title_text="hidden state")
    fig.update_layout(title=title, height=340, margin=MARGIN)
    return fig


def pca_figure(pca: np.ndarray, tokens: list[str], shown: list[int], explained: np.ndarray) -> go.Figure:
    """Each shown token's path through the layers on the first two principal axes.

    pca: (L+1, T, 2). A line per token, a small marker per state, the token's label at its last state.
    """
    rows = state_labels(pca.shape[0])
    labels = token_labels(tokens)
    fig = go.Figure()
    for t in shown:
        path = pca[:, t]  # (L+1, 2)
        fig.add_trace(go.Scatter(
            x=path[:, 0], y=path[:, 1], mode="lines+markers+text", name=labels[t],
            customdata=[[r, labels[t]] for r in rows],  # the label goes in as data, never into the template
            text=[""] * (len(rows) - 1) + [labels[t]], textposition="top center",
            marker=dict(size=[5] * (len(rows) - 1) + [10]),
            hovertemplate="%{customdata[1]}, %{customdata[0]}<extra></extra>"))
    fig.update_xaxes(title_text=f"PC 1 ({explained[0]:.0%} of the variance)")
    fig.update_yaxes(title_text=f"PC 2 ({explained[1]:.0%})")
    fig.update_layout(title="Every token through the layers (big dot: last layer)", height=560, margin=MARGIN,
                      showlegend=len(shown) <= 20)
    return fig


def vector_strip(vectors: dict[str, np.ndarray], title: str, boundaries: int | None = None,
                 zmax: float | None = None) -> go.Figure:
    """Vectors as 1-pixel-high strips, one row each (hover: index and value).

    With `boundaries` = d_k, thin lines mark where each head's slice begins.
    """
    names = list(vectors)
    n = max(len(np.asarray(v)) for v in vectors.values())
    z = np.full((len(names), n), np.nan)
    for i, v in enumerate(vectors.values()):
        z[i, : len(v)] = np.asarray(v)
    lim = zmax if zmax is not None else float(np.nanmax(np.abs(z))) if np.isfinite(z).any() else 1.0
    # The head boundaries go in with the layout, validated once, because add_vline validates the figure again per line.
    shapes = [{"type": "line", "x0": b - 0.5, "x1": b - 0.5, "xref": "x", "y0": 0, "y1": 1, "yref": "y domain",
               "line": {"width": 1, "color": "black"}} for b in range(boundaries, n, boundaries)] if boundaries else []
    return go.Figure(go.Heatmap(z=z, y=[esc(s) for s in names], colorscale="RdBu", reversescale=True,
                                zmin=-lim, zmax=lim, colorbar=dict(title="value"),
                                hovertemplate="%{y}<br>dim %{x}: %{z:.4f}<extra></extra>"),
                     layout=dict(**({"shapes": shapes} if shapes else {}),
                                 yaxis=dict(type="category", autorange="reversed"),
                                 xaxis=dict(title=dict(text="dimension")), title=dict(text=title),
                                 height=_height(len(names), 40, 200, 600), margin=MARGIN))


def matrix_heatmap(values: np.ndarray, tokens: list[str], title: str, highlight: int | None = None) -> go.Figure:
    """(T, d) per-token vectors (e.g. one head's keys); `highlight` outlines one token's row."""
    labels = token_labels(tokens)
    z = np.asarray(values)
    lim = float(np.abs(z).max()) or 1.0
    fig = go.Figure(go.Heatmap(z=z, y=labels, colorscale="RdBu", reversescale=True, zmin=-lim, zmax=lim,
                               colorbar=dict(title="value"),
                               hovertemplate="%{y}<br>dim %{x}: %{z:.4f}<extra></extra>"))
    if highlight is not None and highlight < len(labels):
        fig.add_shape(type="rect", x0=-0.5, x1=z.shape[1] - 0.5, y0=highlight - 0.5, y1=highlight + 0.5,
                      line=dict(color="black", width=2), xref="x", yref="y")
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title_text="dimension (within the head)")
    fig.update_layout(title=title, height=_height(len(labels), 16, 260, 800), margin=MARGIN)
    return fig


def attention_steps_figure(dots: np.ndarray, scaled: np.ndarray, weights: np.ndarray, tokens: list[str],
                           d_k: int) -> go.Figure:
    """One query against every key: q·k_j, then / sqrt(d_k), then softmax, as three bar rows."""
    labels = token_labels(tokens)
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=("q · k_j", f"q · k_j / √{d_k}  (= the score)", "softmax: the weight"))
    for row, (vals, fmt) in enumerate(((dots, ".3f"), (scaled, ".3f"), (weights, ".4f")), start=1):
        fig.add_trace(go.Bar(x=labels, y=np.asarray(vals), showlegend=False,
                             hovertemplate="key %{x}: %{y:" + fmt + "}<extra></extra>"), row=row, col=1)
    fig.update_xaxes(type="category", tickangle=-60, row=3, col=1)
    fig.update_yaxes(range=[0, max(1e-9, float(np.max(weights))) * 1.1], row=3, col=1)
    fig.update_layout(height=620, margin=MARGIN)
    return fig


def activation_histogram(act: np.ndarray, title: str) -> go.Figure:
    """The F feed-forward activations of one token: most sit near 0, a few fire strongly."""
    fig = go.Figure(go.Histogram(x=np.asarray(act), nbinsx=80, hovertemplate="%{x}: %{y} neurons<extra></extra>"))
    fig.update_xaxes(title_text="activation")
    # Powers of ten only: plotly labels a log axis's 2s and 5s at 9 px (under a phone's 12 px least).
    fig.update_yaxes(title_text="neurons", type="log", dtick=1)
    fig.update_layout(title=title, height=300, margin=MARGIN)
    return fig


def top_neurons_figure(index: np.ndarray, values: np.ndarray, title: str) -> go.Figure:
    """The most active feed-forward neurons of one token, largest first."""
    fig = go.Figure(go.Bar(x=[f"n{int(i)}" for i in index], y=np.asarray(values),
                           hovertemplate="neuron %{x}: %{y:.4f}<extra></extra>"))
    fig.update_xaxes(type="category", title_text="neuron (index in the F hidden units)")
    fig.update_yaxes(title_text="activation")
    fig.update_layout(title=title, height=300, margin=MARGIN)
    return fig
