"""Heads & patching page: head importance, predictions without a head, the pruning curve, the patching grid.

Arrays in, figures out. Layers and heads are shown 1-based (layer 1 = the first encoder layer; in the
patching grid, row "embeddings" is hidden state 0, the embeddings' output); the arrays are 0-based.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go


def _esc(s: str) -> str:
    """User-derived text for a plotly label: shown literally, never as markup."""
    return html.escape(str(s), quote=False)


def importance_figure(importance: np.ndarray, selected: tuple[int, int] | None = None,
                      top_token: str | None = None) -> go.Figure:
    """(L, nh) head importance as a layers x heads heatmap, 0 white, red = the guess leans on the head.

    Plotly cannot select a heatmap's cells, so an invisible scatter point sits on each cell: clicking a
    cell selects its point (x "head h", y "layer l", 1-based), which the page reads. `selected`
    (0-based layer, head) gets a black frame.
    """
    imp = np.asarray(importance, dtype=float)  # (L, nh)
    L, nh = imp.shape
    lim = float(np.nanmax(np.abs(imp))) if np.isfinite(imp).any() else 1.0  # NaN: a head not ranked
    lim = lim or 1.0
    xs, ys = [f"head {h + 1}" for h in range(nh)], [f"layer {layer + 1}" for layer in range(L)]
    what = f"log p(“{_esc(top_token)}”)" if top_token else "log p(top-1)"
    fig = go.Figure(go.Heatmap(z=imp, x=xs, y=ys, colorscale="RdBu_r", zmid=0.0, zmin=-lim, zmax=lim,
                               colorbar=dict(title="nats lost"), hoverinfo="skip", xgap=1, ygap=1))
    fig.add_trace(go.Scatter(
        x=[xs[h] for _ in range(L) for h in range(nh)], y=[ys[layer] for layer in range(L) for _ in range(nh)],
        customdata=imp.ravel(), mode="markers", showlegend=False,
        marker=dict(size=max(8, min(28, 360 // max(nh, 1))), symbol="square", opacity=0),
        selected=dict(marker=dict(opacity=0)), unselected=dict(marker=dict(opacity=0)),
        hovertemplate="%{y}, %{x}: without it " + what + " falls by %{customdata:.3f} (click to knock it out)"
                      "<extra></extra>",
    ))
    if selected is not None:
        layer, head = selected
        fig.add_shape(type="rect", x0=head - 0.5, x1=head + 0.5, y0=layer - 0.5, y1=layer + 0.5,
                      line=dict(color="black", width=3))
    fig.update_layout(title="Head importance: what the [MASK] guess loses without each head",
                      height=max(260, 40 * L + 120), yaxis=dict(autorange="reversed"),
                      margin=dict(l=10, r=10, t=50, b=10), clickmode="event+select", dragmode=False)
    return fig


def without_head_figure(tokens: list[str], p_full: list[float], p_ablated: list[float], label: str) -> go.Figure:
    """Probabilities at a [MASK] of the full model's and the knocked-out model's top tokens, both models' bars
    side by side per token."""
    p_full = dict(zip(tokens, p_full))
    p_abl = dict(zip(tokens, p_ablated))
    fig = go.Figure([
        go.Bar(name="full model", x=[_esc(t) for t in tokens], y=[p_full.get(t) for t in tokens],
               marker_color="#1f77b4", hovertemplate="%{x}: %{y:.3f}<extra>full model</extra>"),
        go.Bar(name=_esc(label), x=[_esc(t) for t in tokens], y=[p_abl.get(t) for t in tokens],
               marker_color="#d62728", hovertemplate="%{x}: %{y:.3f}<extra>" + _esc(label) + "</extra>"),
    ])
    fig.update_layout(barmode="group", yaxis_title="probability", height=340, margin=dict(l=10, r=10, t=60, b=10),
                      title="The guesses with and without the head",
                      legend=dict(orientation="h", y=1.0, yanchor="bottom", x=1.0, xanchor="right"))
    return fig


def pruning_figure(removed: np.ndarray, prob: np.ndarray, kept_top: np.ndarray, top: str) -> go.Figure:
    """p(the full model's top-1) as the k least important heads are removed together, k = 0 .. L x nh."""
    n = int(removed[-1])
    fig = go.Figure(go.Scatter(
        x=removed, y=prob, mode="lines+markers", name=f"p(“{_esc(top)}”)", marker=dict(size=5),
        customdata=kept_top, hovertemplate="%{x} heads removed: p = %{y:.3f}<extra></extra>"))
    lost = np.flatnonzero(np.asarray(kept_top) < 1)
    if lost.size:
        k = int(lost[0])
        fig.add_vline(x=k, line_dash="dot", annotation_text=f"top-1 changes at k = {k}")
    fig.update_layout(title=f"Pruning: remove the k least important heads (of {n})", xaxis_title="heads removed (k)",
                      yaxis_title="probability of the full model's guess", height=340,
                      margin=dict(l=10, r=10, t=50, b=10))
    return fig


def patching_figure(grid: np.ndarray, tokens: list[str], target: str, mask_position: int) -> go.Figure:
    """(L+1, T) p(target) with one clean hidden state patched in; rows embeddings, layer 1 .. L; columns tokens."""
    g = np.asarray(grid, dtype=float)
    rows = ["embeddings"] + [f"layer {i}" for i in range(1, g.shape[0])]
    cols = [f"{i} {_esc(t)}" + (" ←" if i == mask_position else "") for i, t in enumerate(tokens)]
    fig = go.Figure(go.Heatmap(
        z=g, x=cols, y=rows, colorscale="Purples", zmin=0.0, zmax=max(float(g.max()), 1e-6),
        colorbar=dict(title=f"p({_esc(target)})"),
        hovertemplate="clean %{y} at %{x} patched in: p(" + _esc(target) + ") = %{z:.3f}<extra></extra>",
        xgap=1, ygap=1,
    ))
    fig.update_layout(title=f"p(“{_esc(target)}”) at the [MASK] with one clean vector patched in",
                      yaxis=dict(autorange="reversed"), height=max(280, 34 * g.shape[0] + 140),
                      margin=dict(l=10, r=10, t=50, b=10), xaxis=dict(tickangle=-45))
    return fig
