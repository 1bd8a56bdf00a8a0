"""The step view every follower of a class shares: drawn once per (model, step, sentence(s), reveal, look), replayed
for the others by Streamlit's cached-element replay, with the handout records of its charts as the cached value."""

from __future__ import annotations

import os

import streamlit as st

from ui.lesson import handout_record
from ui.lesson.live_class.session import Live, following_student
from ui.lesson.state import QUESTION_ERROR
from ui.lesson.views import SHARED_DRAWING, VIEWS, masking_drawing, masking_widgets

# Drawings shared by the screens of a class (Streamlit's cached-element replay keeps each drawing's element
# messages), bounded in bytes as every cache here: st.cache_data's max_size counts the pickled entry, messages
# included, and drops the least recently used (sizes of a step's drawing: docs/benchmarks.md). One drawing larger
# than the whole budget is kept alone until the next one (Streamlit's rule): the bound is the budget or that drawing.
VIEWS_MB = "BERT_EXPLORER_CLASS_VIEWS_MB"


def _mb(name: str, default: float) -> float:
    """A size setting in MB from the environment; unset or not a positive number: the default."""
    try:
        v = float(os.environ.get(name, "") or default)
    except ValueError:
        return default
    return v if v > 0 else default


SHARED_VIEWS_MB = _mb(VIEWS_MB, 32.0)


# Views with a widget of their own (a drawing with a widget cannot be replayed): step key -> (its drawing, shared and
# keyed also by the session's draw and seed, which it reads; its widgets, drawn after it by each session).
SPLIT_VIEWS = {"masking": (masking_drawing, masking_widgets)}


def draw_step(live: Live | None, step, cur, text: str, pair: str | None, revealed: bool, large: bool) -> None:
    """The step's view (`large`: the role's, on a projector); for a following student, the class's shared drawing.

    Every follower of a class draws the same view (the teacher's model, step, sentence(s) and reveal): the first
    draws it, the others replay its elements (their figures are not built, serialised and hashed again), so a
    step change costs the server one drawing, not one per student. Not shared: a model a session trains. A view
    with a widget of its own (SPLIT_VIEWS) shares its drawing, and each session draws the widget after it."""
    if not following_student(live) or cur.model_key.startswith("session:"):
        VIEWS[step.key](cur, text, pair, revealed, large)
        return
    split = SPLIT_VIEWS.get(step.key)
    own = (int(st.session_state.get("lesson_draw", 1)), cur.seed) if split else None  # "Draw again" is the session's
    # Everything the drawing reads, as one string: Streamlit's cache hashes each argument it is given (name and value,
    # on every follower's run), so one argument is hashed; the drawing's own arguments start with "_" (not hashed).
    # Keywords: a positional argument's name is looked up on every call.
    drawing = repr((cur.model_key, step.key, text, pair, bool(revealed), bool(large),
                    bool(st.session_state.get("lesson_large")), st.session_state.get(QUESTION_ERROR), own))
    charts = _shared_view(drawing=drawing, _step_key=step.key, _text=text, _pair=pair, _revealed=bool(revealed),
                          _large=bool(large), _cur=cur)
    drawn = st.session_state.setdefault(handout_record.DRAWN, {})
    k = st.session_state.get("lesson_step")  # keyed as handout_record.keep keys a chart drawn by the view itself
    drawn.update(((k, key), rec) for key, rec in charts.items())  # a replay runs no view code: its charts come back
    if split:
        split[1]()


@st.cache_data(max_size=int(SHARED_VIEWS_MB * 2**20), show_spinner=False)
def _shared_view(drawing: str, _step_key: str, _text: str, _pair: str | None, _revealed: bool, _large: bool,
                 _cur) -> dict:
    """One drawing of a step's view, keyed by `drawing`: everything the view reads (the model by its key, the
    role's large type, the BERT-large toggle, the question's error and the session's own draw), written out. Returns
    the handout records of the charts it drew ({chart key: record}): a replay repeats the elements only, so every
    follower takes its handout's charts from this return value, not from the view's own bookkeeping."""
    split = SPLIT_VIEWS.get(_step_key)
    draw = split[0] if split else VIEWS[_step_key]
    before = st.session_state.pop(handout_record.DRAWN, {})
    st.session_state[SHARED_DRAWING] = True  # its charts' Data expanders are no widgets (views.lesson_chart)
    try:
        draw(_cur, _text, _pair, _revealed, _large)
        mine = st.session_state.pop(handout_record.DRAWN, {})
    finally:
        st.session_state[handout_record.DRAWN] = before
        st.session_state.pop(SHARED_DRAWING, None)
    return {key: rec for (_, key), rec in mine.items()}
