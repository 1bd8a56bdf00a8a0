"""The live class on the Lesson page: the class's question in the step's column (`question_ui`) and the class's
panel (`panel`: start or join a class; the code, QR, seats and results; a student's count)."""

from __future__ import annotations

import streamlit as st

import classroom
from ui.lesson.live_class.join import CARD_CSS, join_card, presenter_tools
from ui.lesson.live_class.results import results_ui
from ui.lesson.live_class.session import ENDED, ENDED_NOTE, FOLLOW, LOST, MSG, RECONNECT, Live, leave, reconnecting
from ui.lesson.live_class.student import count_ui, join, keep_seat, student_question
from ui.lesson.live_class.teacher import end, lost_class, seats_ui, start, teacher_question

NICK_BOX = 200  # characters the nickname box takes (the store keeps 24)


def question_ui(live: Live | None, col, q, token: str, k: int, text: str, pair: str | None, revealed: bool) -> bool:
    """The class's question in `col` (the teacher's controls, or a student's vote); returns whether it is revealed."""
    if live is None:
        if st.session_state.pop(ENDED_NOTE, None):
            col.warning(ENDED)
        return revealed
    if live.teacher:
        return teacher_question(live, col, q, token, k, text, pair)
    return student_question(live, col, q, revealed)


def panel(live: Live | None, present: bool, side) -> None:
    """Start or join a class (side column), or the class's code, link, QR, count and results."""
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
        elif live is not None and live.teacher:
            join_card(live, big=True)  # with the presenter's tools in it
        else:
            presenter_tools(live)
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
        if live is None:
            st.button("Start a class", key="class_start", on_click=start, width="stretch",
                      help="Students join from their own devices with a code; they follow your step and sentence, "
                           "vote on each question, and see the model's answer when you reveal it.")
            st.text_input("Class code", value=st.session_state.get("class_link_code", ""), key="class_join_code",
                          max_chars=12, placeholder="e.g. K7QM2X")
            # A longer box than a nickname: a pasted long name is cut to 24 characters, not refused whole.
            st.text_input("Nickname (optional)", key="class_nick", max_chars=NICK_BOX,
                          help=f"Shown only to the teacher, in the class's seats and the end-of-lesson table (at most "
                               f"{classroom.codes.MAX_NICKNAME} characters). Leave it empty to be “Student 7”.")
            st.button("Join the class", key="class_join", on_click=join, width="stretch")
        elif live.teacher:
            join_card(live, big=False)
            seats_ui(live)
            results_ui(live)
            st.button("End the class", key="class_end", on_click=end, width="stretch",
                      help="Deletes the class and its votes (download the results first).")
        else:
            st.caption(f"In class **{live.code}**.")
            if live.following and live.view is not None:
                count_ui(live.code, live.sid, live.view)
            st.toggle("Follow the teacher", key=FOLLOW,
                      help="Off: explore the Lesson on your own; on again: back to the teacher's step.")
            st.button("Leave the class", key="class_leave", on_click=leave, width="stretch",
                      help="Joining again from this browser gives you back your seat and your votes.")
            keep_seat()
