"""The Lesson's content is data and its views are found by step key: every step has exactly one view."""

from ui.lesson.content import KEYS, STEPS
from ui.lesson.views import VIEWS


def test_every_step_has_one_view_and_a_unique_key():
    assert len(set(KEYS)) == len(STEPS) == 13
    assert list(VIEWS) == KEYS  # in the steps' order, none missing, none extra
    assert all(callable(v) for v in VIEWS.values())
