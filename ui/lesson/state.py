"""A session's place in the Lesson: its step, each step's sentence (in the URL as t<k> / b<k>), its guesses and
reveals, and the callbacks that change them (callbacks live outside the page: see ui/callbacks.py)."""

from __future__ import annotations

import time

import streamlit as st

import bert_core
from ui.lesson.content import STEPS

QUESTION_ERROR = "_lesson_question_error"  # this run's question message, so the view does not repeat it


QUESTION_PAIR = "_lesson_question_pair"  # this run's sentence B (None: a single-sentence step), for messages


def text_key(i: int) -> str:
    return f"lesson_text_{i}"


def pair_key(i: int) -> str:
    return f"lesson_pair_{i}"


TEXTS_READY = "lesson_texts_ready"


def init_texts() -> None:
    """Each step's sentence from the URL (t<k>, b<k>; 1-based) or the lesson's own, once per session."""
    q, state = st.query_params, st.session_state
    if state.get(TEXTS_READY):  # once per session: a run after the first skips the steps' look-ups
        return
    for i, s in enumerate(STEPS, start=1):  # the URL read only for a key not set yet
        if text_key(i) not in state:
            state[text_key(i)] = q.get(f"t{i}", s.text)[: bert_core.MAX_TEXT_CHARS]
        if s.pair is not None and pair_key(i) not in state:
            state[pair_key(i)] = q.get(f"b{i}", s.pair)[: bert_core.MAX_TEXT_CHARS]
    state[TEXTS_READY] = True


def texts_in_url() -> None:
    """Write every changed sentence into the URL (and drop the unchanged ones), so one link shares them."""
    shown = st.query_params.to_dict()  # read once: most steps' sentences are not in the URL
    for i, s in enumerate(STEPS, start=1):
        for k, key, default in ((f"t{i}", text_key(i), s.text), (f"b{i}", pair_key(i), s.pair)):
            v = st.session_state.get(key)
            if default is None or v is None or v == default:
                if k in shown:
                    st.query_params.pop(k, None)
            elif shown.get(k) != v[:2000]:
                st.query_params[k] = v[:2000]


MOVED_AT = "lesson_moved_at"  # time.monotonic() of this session's last Back / Next / "Go to step"


def go(step: int) -> None:
    """Back / Next: move to step `step` (1-based)."""
    st.session_state["lesson_step"] = min(max(int(step), 1), len(STEPS))
    st.session_state[MOVED_AT] = time.monotonic()


def step_from_url(v) -> int:
    """?step=k (1-based) as a step number, 1 when missing or not a number."""
    try:
        return min(max(int(str(v)), 1), len(STEPS))
    except (TypeError, ValueError):
        return 1


def goto_picked() -> None:
    """The "Go to step" box."""
    go(st.session_state["lesson_goto"])


def widget_key(key: str) -> str:
    return f"w_{key}"


def _put_text(i: int, text: str, pair: str | None) -> None:
    """Set step i's sentence (and pair): the stored value and its input box."""
    for key, v in ((text_key(i), text), (pair_key(i), pair)):
        if v is not None:
            st.session_state[key] = v
            st.session_state[widget_key(key)] = v


def try_this(i: int) -> None:
    """The step's one-click change: its alternative sentence (and pair)."""
    s = STEPS[i - 1]
    _put_text(i, s.try_text, s.try_pair if s.pair is not None else None)


def restore(i: int) -> None:
    """Back to the lesson's own sentence for step i."""
    s = STEPS[i - 1]
    _put_text(i, s.text, s.pair)


def keep_text(key: str) -> None:
    """An edit in a step's input box becomes the step's sentence."""
    st.session_state[key] = st.session_state[widget_key(key)][: bert_core.MAX_TEXT_CHARS]


def reveal(token: str, step_key: str, guess_key: str, answer: int) -> None:
    """Reveal the answer of the question `token`, and count the guess (the first one for this step)."""
    st.session_state.setdefault("lesson_revealed", set()).add(token)
    guess = st.session_state.get(guess_key)
    if guess is not None:
        st.session_state.setdefault("lesson_answers", {})[step_key] = guess == answer


def keep_guess(guess_key: str, token: str) -> None:
    """A guess outlives its widget: back on the step (← then →), the class's guess is still there."""
    st.session_state.setdefault("lesson_guesses", {})[token] = st.session_state.get(guess_key)


def kept_guess(token: str) -> int | None:
    guess = st.session_state.get("lesson_guesses", {}).get(token)
    return guess if isinstance(guess, int) else None  # a radio passes on a value none of its options has (forged)


def next_draw() -> None:
    st.session_state["lesson_draw"] = int(st.session_state.get("lesson_draw", 1)) + 1


def toggle_present() -> None:
    """Presenter mode on or off, kept in the URL (?present=1)."""
    if st.session_state.get("lesson_present"):
        st.query_params["present"] = "1"
    else:
        st.query_params.pop("present", None)


def pick(guess_key: str, token: str, i: int) -> None:
    """A number key: choice i (0-based) becomes the guess, as a click on it would."""
    st.session_state[guess_key] = i
    keep_guess(guess_key, token)


def exit_present() -> None:
    """The corner's button (or Esc): back to the normal page, the step kept."""
    st.session_state["lesson_present"] = False
    st.query_params.pop("present", None)
