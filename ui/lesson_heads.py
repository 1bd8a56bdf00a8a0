"""The Lesson's knock-out step view: the head importance of the step's sentence, then the guess without its top head.

Same signature as the views in ui/lesson.py, (cur, text, pair, revealed); it reads the numbers the step's
question computed (`bert_core.lesson.heads`), from the same shared cache.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

import bert_core
from bert_core.figures.heads import importance_figure, without_head_figure
from bert_core.lesson import heads as lesson_heads
from ui.state import model_cached
from ui.widgets import lesson_chart as _chart


def view_knockout(cur, text, pair, revealed) -> None:
    """Before the answer: which head matters most (the map); after: the guesses with and without it."""
    try:
        imp = model_cached(cur, bert_core.head_importance, text, pair,
                           layers=lesson_heads.last_layer(cur.model))  # (L, nh), the question's own
        layer, head = lesson_heads.top_head(imp)
        ko = model_cached(cur, bert_core.knock_out, text, pair, ((layer, head),))
    except bert_core.BertCoreError:
        return  # the step's question has said what to change
    pos = min(ko.guesses)
    if not revealed:
        # Relative to the framed head and without a scale or values: how much the guess loses is the answer.
        fig = importance_figure(imp / max(float(np.nanmax(np.abs(imp))), 1e-12), (layer, head), ko.top_full[pos])
        fig.update_traces(showscale=False, selector=dict(type="heatmap"))
        fig.update_traces(hovertemplate="%{y}, %{x}<extra></extra>", customdata=None, selector=dict(type="scatter"))
        _chart(fig.update_layout(height=min(fig.layout.height, 380)), "lesson head importance", key="lesson-heads-imp")
        st.caption(f"Each cell of the last layer: how much log p(guess) falls when that head alone is knocked out, "
                   f"relative to the most important head (red: it helps; the Heads & patching page ranks every "
                   f"layer). The framed cell is layer {layer + 1}, head {head + 1}. How much the guess loses "
                   "appears with the answer.")
        return
    tokens, p_full, p_without = ko.guesses[pos]
    _chart(without_head_figure(tokens, p_full, p_without, f"without layer {layer + 1}, head {head + 1}"),
          "lesson knock out", key="lesson-knockout")
