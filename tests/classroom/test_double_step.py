"""One click on Next (or Back, or the presenter's Page Down / Page Up) moves exactly one step, however often Streamlit
dispatches that click's callback before the page is drawn again.

A button's callback is looked up in what the last run drew: a click that reaches the server twice before the next
run draws the button again (a second click on the still-visible button while a slow step, or a store that does not
answer, holds the run; a run stopped for a rerun before it drew the nav keeps the old registration) runs the same
callback twice. A relative `move(+1)` then moved two steps; the callback carries the step it was drawn for instead."""

from __future__ import annotations

import pytest
import streamlit
from streamlit.delta_generator import DeltaGenerator
from streamlit.testing.v1 import AppTest
from support.apptest import ROOT, assert_ok

from ui.lesson import state as lesson

KEYS = {"lesson_next": 4, "lesson_back": 2, "lesson_next_pd": 4, "lesson_back_pu": 2}  # drawn on step 3


@pytest.fixture
def drawn(monkeypatch):
    """The callbacks the Lesson's step buttons were drawn with, on step 3 in presenter mode (every key drawn)."""
    bound, button, st_button = {}, DeltaGenerator.button, streamlit.button

    def seen(kw):
        if kw.get("key") in KEYS:
            bound[kw["key"]] = (kw.get("on_click"), kw.get("args") or ())

    def spy(self, *a, **kw):
        seen(kw)
        return button(self, *a, **kw)

    def st_spy(*a, **kw):
        seen(kw)
        return st_button(*a, **kw)

    monkeypatch.setattr(DeltaGenerator, "button", spy)  # a column's button
    monkeypatch.setattr(streamlit, "button", st_spy)  # st.button
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["step"], at.query_params["present"] = "3", "1"
    at.run()
    assert_ok(at)
    assert set(bound) == set(KEYS), bound
    return bound


def test_a_step_buttons_callback_dispatched_twice_moves_one_step(drawn, monkeypatch):
    for key, target in KEYS.items():
        state = {"lesson_step": 3}
        monkeypatch.setattr(lesson.st, "session_state", state)
        callback, args = drawn[key]
        callback(*args)
        callback(*args)  # the same click again, before the page is drawn anew
        assert state["lesson_step"] == target, (key, callback.__name__, args)
