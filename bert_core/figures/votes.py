"""How a class voted on one question: its split as bars (a screen) or numbered columns (the projector's card)."""

from __future__ import annotations

import plotly.graph_objects as go


def card_split_figure(choices: tuple[str, ...], tally: tuple[int, ...], answer: int | None) -> go.Figure:
    """The class's guesses as columns 1..n (the slide lists the choices by number), the model's answer in green."""
    colors = ["#2e7d32" if i == answer else "#90a4ae" for i in range(len(choices))]
    fig = go.Figure(go.Bar(x=[str(i) for i in range(1, len(choices) + 1)], y=list(tally), marker_color=colors,
                           text=[str(n) if n else "" for n in tally], textposition="outside", cliponaxis=False,
                           hovertext=list(choices)))
    fig.update_layout(height=140, margin=dict(l=4, r=4, t=30, b=30), title=f"Guesses ({sum(tally)})",
                      xaxis=dict(type="category"), showlegend=False,
                      yaxis=dict(visible=False, range=[0, max(tally or (0,)) * 1.35 + 0.5]))  # room for the counts
    return fig


def split_figure(choices: tuple[str, ...], tally: tuple[int, ...], answer: int | None) -> go.Figure:
    """The class's guesses as bars, the model's answer (once revealed) in green."""
    colors = ["#2e7d32" if i == answer else "#90a4ae" for i in range(len(choices))]
    fig = go.Figure(go.Bar(x=list(tally), y=[f"{i}. {c}" for i, c in enumerate(choices, 1)], orientation="h",
                           marker_color=colors, text=[str(n) if n else "" for n in tally],
                           textposition="auto"))  # no "0" beside an empty bar
    fig.update_layout(height=60 + 40 * len(choices), margin=dict(l=10, r=10, t=30, b=10),
                      title=f"The class's guesses ({sum(tally)})",
                      yaxis=dict(autorange="reversed", type="category"))  # "4. 4" is a label, not a number
    return fig
