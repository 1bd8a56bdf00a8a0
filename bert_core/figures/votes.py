"""How a class voted on one question: its split as bars (a screen) or numbered columns (the projector's card)."""

from __future__ import annotations

import plotly.graph_objects as go

ANSWER, OTHER = "#2e7d32", "#757575"  # green 5.1:1 and grey 4.6:1 on white: each bar >= 3:1 (WCAG 1.4.11)
MARK = "✓"  # the model's answer in text as well as green (WCAG 1.4.1: colour is not the only sign)


def _text(tally: tuple[int, ...], answer: int | None) -> list[str]:
    """Each bar's count; none beside an empty bar, except the answer's: its row shows 0 rather than nothing."""
    return [str(n) if n or i == answer else "" for i, n in enumerate(tally)]


def card_split_figure(choices: tuple[str, ...], tally: tuple[int, ...], answer: int | None) -> go.Figure:
    """The class's guesses as columns 1..n (the slide lists the choices by number), the model's answer in green
    and its number marked ✓."""
    colors = [ANSWER if i == answer else OTHER for i in range(len(choices))]
    fig = go.Figure(go.Bar(x=[f"{i} {MARK}" if i - 1 == answer else str(i) for i in range(1, len(choices) + 1)],
                           y=list(tally), marker_color=colors,
                           text=_text(tally, answer), textposition="outside", cliponaxis=False,
                           hovertext=list(choices)))
    fig.update_layout(height=140, margin=dict(l=4, r=4, t=30, b=30), title=f"Guesses ({sum(tally)})",
                      xaxis=dict(type="category"), showlegend=False,
                      yaxis=dict(visible=False, range=[0, max(tally or (0,)) * 1.35 + 0.5]))  # room for the counts
    return fig


def split_figure(choices: tuple[str, ...], tally: tuple[int, ...], answer: int | None) -> go.Figure:
    """The class's guesses as bars, the model's answer (once revealed) in green and its label marked in words."""
    colors = [ANSWER if i == answer else OTHER for i in range(len(choices))]
    labels = [f"{i}. {c}" + (f" {MARK} (the model's answer)" if i - 1 == answer else "")
              for i, c in enumerate(choices, 1)]
    # Counts beside the bars, never inside: plotly draws no text in an empty bar, so the answer's 0 was lost.
    fig = go.Figure(go.Bar(x=list(tally), y=labels, orientation="h", marker_color=colors,
                           text=_text(tally, answer), textposition="outside", cliponaxis=False))
    fig.update_layout(height=60 + 40 * len(choices), margin=dict(l=10, r=10, t=30, b=10),
                      title=f"The class's guesses ({sum(tally)})",
                      xaxis=dict(range=[0, max(tally or (0,)) * 1.2 + 0.5]),  # room for the counts
                      yaxis=dict(autorange="reversed", type="category"))  # "4. 4" is a label, not a number
    return fig
