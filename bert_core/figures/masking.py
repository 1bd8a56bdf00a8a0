"""Masking page: the coloured token chips of one draw and the plotly figures of many draws.

BERT corrupts 15% of the tokens it trains on: of those, 80% become [MASK], 10% a random token,
10% stay as they are; the loss is taken at exactly those 15%.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

# Background colour per outcome, light enough for black text.
KIND_COLORS = {
    "mask": "#f5b041",  # orange
    "random": "#ec7063",  # red
    "kept": "#58d68d",  # green
    "not selected": "#eaecee",  # grey
    "special": "#aed6f1",  # blue
}
KIND_LABELS = {"mask": "[MASK]", "random": "random token", "kept": "kept (selected, unchanged)",
               "not selected": "not selected", "special": "special (never selected)"}


def _esc(s: str) -> str:
    """Plotly reads labels as a small HTML subset and decodes &lt; &gt; &amp;: escaped text shows literally."""
    return html.escape(str(s), quote=False)


def _chip(top: str, bottom: str, kind: str, title: str) -> str:
    # Classes bx-chip / bx-chip-label: presenter mode sets their size (ui/lesson/controls.py).
    return (f'<span class="bx-chip" title="{html.escape(title)}" style="display:inline-block;margin:2px;'
            f'padding:2px 6px;border-radius:6px;background:{KIND_COLORS[kind]};color:#111;font-family:monospace;'
            f'text-align:center;line-height:1.2">{html.escape(top)}'
            f'<br><span class="bx-chip-label" style="font-size:0.75em;color:#222">{html.escape(bottom) or "&nbsp;"}'
            '</span></span>')


def chips_html(tokens: list[str], read: list[str], kinds: list[str]) -> str:
    """One chip per token: what the model reads on top, the original below when it changed.

    Every token is html-escaped: user text never becomes markup.
    """
    chips = []
    for i, (orig, r, kind) in enumerate(zip(tokens, read, kinds)):
        bottom = f"was {orig}" if kind in ("mask", "random") else ("kept" if kind == "kept" else "")
        chips.append(_chip(r, bottom, kind, f"position {i}: {orig} → {r} ({KIND_LABELS[kind]})"))
    return '<div class="bx-chips" style="line-height:2.6">' + "".join(chips) + "</div>"


def legend_html() -> str:
    """The colour key of `chips_html`."""
    return '<span class="bx-legend">' + " ".join(
        f'<span style="display:inline-block;margin:2px;padding:1px 6px;border-radius:6px;'
        f'background:{c};color:#111;font-size:0.85em">{html.escape(KIND_LABELS[k])}</span>'
        for k, c in KIND_COLORS.items()) + "</span>"


def rates_figure(names: list[str], observed: np.ndarray, expected: np.ndarray, sigma: np.ndarray,
                 n_draws: int) -> go.Figure:
    """Observed rates beside the expected ones, the expected bars carrying ±3 sigma error bars."""
    fig = go.Figure([
        go.Bar(name="observed", x=names, y=np.round(observed, 5), marker_color="#2e86c1",
               hovertemplate="%{x}: observed %{y:.4f}<extra></extra>"),
        go.Bar(name="expected ± 3σ", x=names, y=expected, marker_color="#bdc3c7",
               error_y=dict(type="data", array=3 * np.asarray(sigma), visible=True, color="#424949"),
               hovertemplate="%{x}: expected %{y:.3f}<extra></extra>"),
    ])
    fig.update_layout(barmode="group", title=f"Rates over {n_draws:,} draws", yaxis_title="rate",
                      yaxis_range=[0, 1.05], height=380, margin=dict(l=40, r=20, t=50, b=40),
                      legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"))
    return fig


def position_figure(tokens: list[str], rate: np.ndarray, special: np.ndarray, p: float, sigma: float,
                    n_draws: int) -> go.Figure:
    """How often each position was selected, with the expected rate p and its ±3 sigma band."""
    labels = [f"{i} {_esc(t)}" for i, t in enumerate(tokens)]  # the position keeps repeated tokens apart
    colors = ["#aed6f1" if s else "#2e86c1" for s in special]
    fig = go.Figure(go.Bar(x=labels, y=np.round(rate, 5), marker_color=colors,
                           hovertemplate="%{x}: selected in %{y:.3f} of draws<extra></extra>"))
    fig.add_hrect(y0=max(p - 3 * sigma, 0), y1=min(p + 3 * sigma, 1), fillcolor="#f5b041", opacity=0.25,
                  line_width=0)
    fig.add_hline(y=p, line_dash="dash", line_color="#ca6f1e", annotation_text=f"expected {p:.2f} ± 3σ",
                  annotation_position="top left")
    fig.update_layout(title=f"Selection frequency per position ({n_draws:,} draws; light bars: special tokens)",
                      yaxis_title="fraction of draws selected", xaxis_tickangle=-60, height=380,
                      margin=dict(l=40, r=20, t=50, b=80), showlegend=False)
    fig.update_xaxes(type="category")
    return fig
