"""The live class on the Lesson page: a student's side of the class's question in the step's column (`question_ui`)
and the class's panel (`panel`: start or join a class; the code, QR, seats and results; a student's count)."""

from __future__ import annotations

import streamlit as st

import classroom
from ui.lesson.live_class.join import CARD_CSS, join_card, presenter_tools
from ui.lesson.live_class.results import results_ui
from ui.lesson.live_class.session import (
    ENDED_NOTE,
    FOLLOW,
    JOIN_FIRST,
    LOST,
    MSG,
    NICK_KEPT,
    RECONNECT,
    Live,
    leave,
    reconnecting,
)
from ui.lesson.live_class.student import count_ui, join, keep_seat, student_question
from ui.lesson.live_class.teacher import end, lost_class, seats_ui, start


def question_ui(live: Live | None, col, q, token: str, k: int, text: str, pair: str | None, revealed: bool) -> bool:
    """A student's side of the class's question in `col`: their vote, or out of a class the note of the class that
    just ended; returns whether it is revealed. The teacher's is live_class.teacher's `teacher_question` (the
    Lesson's Teacher roles call it)."""
    if live is None:
        note = st.session_state.pop(ENDED_NOTE, None)
        if note:
            col.warning(note, icon=":material/logout:")
            st.toast(note, icon=":material/logout:")
        return revealed
    return student_question(live, col, q, revealed)


# A phone in a class (a 390 px screen, a finger): vote targets, buttons (Join, Leave) and text boxes (the class code,
# the nickname) at least 44 px tall (WCAG 2.5.5's size) on a touch screen; plotly's toolbar off on a touch screen,
# where it sat over the chart's title after a tap (the chart's own fullscreen stays in Streamlit's toolbar); a display
# formula wider than the screen wraps at its top-level relations and operators (KaTeX's pieces, `.base`) instead of
# scrolling sideways; a chart's title (SVG text, which cannot wrap) at 14 px, so a title of about 44 characters fits
# a 390 px screen's chart.
PHONE_CSS = """<style>
@media (pointer: coarse) {
  [data-testid="stRadio"] [role="radiogroup"] label {min-height: 44px; min-width: 44px; align-items: center;
    padding-right: 0.5rem;}
  [data-testid="stRadio"] [role="radiogroup"] {row-gap: 0.25rem;}
  [data-testid="stMain"] .stButton button {min-height: 44px;}
  [data-testid="stMain"] [data-testid="stTextInput"] > div {height: auto;}
  [data-testid="stMain"] [data-testid="stTextInputRootElement"] {height: auto; min-height: 44px;}
  [data-testid="stMain"] [data-testid="stTextInput"] input {min-height: 42px;}  /* in the box's 1 px border */
  .js-plotly-plot .modebar-container {display: none !important;}
}
@media (max-width: 640px) {
  [data-testid="stMain"] .js-plotly-plot .gtitle {font-size: 14px !important;}
}
</style>"""


def join_first(live: Live | None) -> None:
    """A join link not joined yet: the nickname and Join at the top of the page, above the step (on a phone the side
    column is below the whole step, ~1,800 px down, under the step's own guess). The step follows once joined."""
    if not _joining_first(live):
        return
    st.html(PHONE_CSS)
    with st.container(key="class_join_first", border=True):
        code = st.session_state.get("class_link_code", "")
        st.markdown(f"**Join the live class {code}**")
        msg = st.session_state.pop(MSG, None)
        if msg:  # a refused join, said here where Join was pressed
            st.warning(msg)
        _join_box()
        st.caption("Below is the Lesson on your own; once you join, it follows your teacher's step and you vote on "
                   "the class's question.")


def _joining_first(live: Live | None) -> bool:
    return live is None and bool(st.session_state.get(JOIN_FIRST))


def _join_box() -> None:
    st.text_input("Class code", value=st.session_state.get("class_link_code", ""), key="class_join_code",
                  max_chars=12, placeholder="e.g. K7QM2X")
    # No max_chars: Streamlit's box empties a paste longer than it; the store cuts a nickname to 24 characters.
    st.text_input("Nickname (optional)", value=st.session_state.get(NICK_KEPT, ""), key="class_nick",
                  help=f"Shown only to the teacher, in the class's seats and the end-of-lesson table (at most "
                       f"{classroom.codes.MAX_NICKNAME} characters; a longer one is cut). Leave it empty to be "
                       "“Student 7”.")
    st.button("Join the class", key="class_join", on_click=join, type="primary", width="stretch")


def panel(live: Live | None, present: bool, side, body) -> None:
    """The class's part of the page, the same for every role first (what a class action said, a store that does not
    answer, a class lost), then the role's own `body` (roles.py picks it: below, or join's presenter_tools)."""
    if not present:
        st.html(PHONE_CSS)  # the whole page's, for a phone (a style element takes no room)
    msg = st.session_state.pop(MSG, None)
    away, lost = st.session_state.pop(RECONNECT, None), st.session_state.get(LOST)  # lost: until a new class
    if present:
        if msg:
            st.warning(msg)
        if away or lost:  # where the join card was, beside the slide (below it, a projector would not show it)
            st.html(CARD_CSS)
            with st.container(key="class_card"):
                reconnecting(away, present) if away else lost_class(lost, present)
                presenter_tools(live, in_card=True)
            return
        body(live)
        return
    with side:
        st.subheader("A live class", anchor=False)  # a heading: focused after Start a class / Join
        if msg:
            st.warning(msg)
        if away:
            reconnecting(away)
            return
        if lost:
            lost_class(lost, present)
            return
        body(live)


def presenting_teacher(live: Live) -> None:
    """The teacher's projector: the join card beside the slide, the presenter's tools in it."""
    join_card(live, big=True)


def on_your_own(live: Live | None) -> None:
    """Out of a class: Start or Join; a student exploring on their own in a class: the student's part."""
    if live is not None:
        student(live)
        return
    st.button("Start a class", key="class_start", on_click=start, width="stretch",
              help="Students join from their own devices with a code; they follow your step and sentence, vote on "
                   "each question, and see the model's answer when you reveal it.")
    if _joining_first(live):
        st.caption("Join the class with the box at the top of the page.")
    else:
        _join_box()


def teaching(live: Live) -> None:
    """The teacher's side column: the join card, seats, results and End."""
    join_card(live, big=False)
    seats_ui(live)
    results_ui(live)
    st.button("End the class", key="class_end", on_click=end, width="stretch",
              help="Deletes the class and its votes (download the results first).")


def student(live: Live) -> None:
    """A student's side column: the class, its count while following, Follow and Leave."""
    st.caption(f"In class **{live.code}**.")
    if live.following and live.view is not None:
        count_ui(live.code, live.sid, live.view)
    st.toggle("Follow the teacher", key=FOLLOW,
              help="Off: explore the Lesson on your own; on again: back to the teacher's step.")
    st.button("Leave the class", key="class_leave", on_click=leave, width="stretch",
              help="Joining again from this browser gives you back your seat and your votes.")
    keep_seat()
