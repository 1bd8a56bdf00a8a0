"""The teacher's side of a live class: publishing the step and its question, the count and split, the reveal, the
seats, and the class's start and end."""

from __future__ import annotations

import hashlib
import time

import streamlit as st

import classroom
from classroom import ClassError, Question
from ui.lesson.content import STEPS, answer_label
from ui.lesson.live_class import push
from ui.lesson.live_class.results import split_chart
from ui.lesson.live_class.session import (
    CODE,
    LOST,
    PUBLISHED,
    RECONNECT,
    SECRET,
    SID,
    TICK,
    Live,
    client,
    current_model,
    leave,
    read_class,
    say,
    seat,
    store,
)
from ui.lesson.state import MOVED_AT
from ui.markdown import escape_markdown

SEATS_TICK = 5.0  # seconds between reads of the teacher's list of seats
REVEAL_AFTER_MOVE_S = 2.0  # a projector's Reveal this soon after the teacher's move is taken for a slip (reveal)
REMOVE_NOTE = "class_remove_note"  # why the teacher's last Remove press removed nothing (said in Seats)


def lost_class(code: str, projector: bool) -> None:
    """The teacher's class is gone from a store that answers: say so, and offer a new class in one click (`projector`:
    the role's, a presenting teacher)."""
    if projector:  # in the join card's place, beside the slide: short
        st.error(f"Class {code} was lost (its store restarted without it); its votes are gone.")
    else:
        st.error(f"Your class {code} was lost: the class's store restarted without it (or it expired). Its votes "
                 "are gone; start a new class and give your students its code.")
    st.button("Start a new class", key="class_restart", on_click=start, type="primary",
              width="content" if projector else "stretch")


def question_id(token: str) -> str:
    """A short id of the Lesson's question token (model, step, sentence(s), prompt, choices)."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def teacher_question(live: Live, col, q, token, k, text, pair, projector: bool) -> bool:
    """The class's question in `col`, published when this tab changed it; returns whether it is revealed.
    `projector` (the role's: a presenting teacher): one line of choices, the answer and why in one box, Reveal
    guarded against a slip just after Next, and the count and the split left to the join card."""
    question = Question(question_id(token), q.prompt, tuple(q.choices)) if q is not None else None
    # Publish only what this tab changed: a teacher's second tab (a laptop beside the projector) that reruns on
    # an old step must not take the class back to it (its students would find that question's votes closed).
    model = current_model()  # the class follows it (a student's page switches to it)
    mine = (live.code, k, text, pair, question.qid if question else "", model)
    try:
        if st.session_state.get(PUBLISHED) != mine or live.view is None:
            store().publish(live.code, live.secret, k, text, pair, question, model=model)
            st.session_state[PUBLISHED] = mine
            live.view = store().view(live.code, secret=live.secret)
        v = live.view
    except classroom.StoreUnavailable:  # e.g. a restarted Redis still loading its file: the panel says it is
        st.session_state.pop(PUBLISHED, None)  # reconnecting, and reruns the page (publishing) once it answers
        st.session_state[RECONNECT] = live.code
        return False
    except ClassError as e:
        st.session_state.pop(PUBLISHED, None)
        col.warning(str(e))
        return False
    if (v.step, v.question.qid if v.question else "") != (k, mine[4]):
        col.info(f"Another tab of yours has the class on step {v.step}: the students see that one. Change the step "
                 "or the sentence here to take the class with you.")
        return v.revealed if question is not None and v.question == question else False
    if q is None:
        return False
    with col:
        st.markdown(f"**The class's question.** {escape_markdown(q.prompt)}")
        if projector:  # one line, numbered as the split's bars in the join card (a projector has no room for a list)
            st.markdown(" · ".join(f"**{i}.** {escape_markdown(c)}" for i, c in enumerate(q.choices, 1)))
        else:
            st.markdown("\n".join(f"{i}. {escape_markdown(c)}" for i, c in enumerate(q.choices, 1)))
        if not v.revealed:
            split_label = "Hide the split" if v.split_shown else "Show the class's split"
            split_help = "The projector shows how the class's guesses split, before the answer."
            reveal_help = "The answer, computed by the model from this sentence, goes to every device."
            reveal_args = (question.qid, q.answer, token, STEPS[k - 1].key, projector)
            if projector:  # side by side, each as wide as its words (halves would cut "Reveal the tokenizer's...")
                with st.container(key="class_controls", horizontal=True, gap="small"):
                    st.button(split_label, key="class_split", on_click=show_split, args=(not v.split_shown,),
                              help=split_help)
                    st.button(f"Reveal {answer_label(q)}", key="lesson_reveal", type="primary",
                              on_click=reveal, args=reveal_args, shortcut="Space",  # as for one laptop
                              help=reveal_help)
            else:
                c1, c2 = st.columns(2)
                c1.button(split_label, key="class_split", on_click=show_split, args=(not v.split_shown,),
                          width="stretch", help=split_help)
                c2.button(f"Reveal {answer_label(q)}", key="lesson_reveal", type="primary", on_click=reveal,
                          args=reveal_args, width="stretch", help=reveal_help)
        else:
            with st.container(key="lesson_answer"):  # focused after the teacher's reveal (roles._focus_and_say)
                if projector:  # the answer and why in one box (a projector has no line to spare)
                    st.info(f"{answer_label(q, capital=True)}: **{escape_markdown(q.choices[q.answer])}**. "
                            f"{escape_markdown(q.reveal)}")
                else:
                    st.info(f"{answer_label(q, capital=True)}: **{escape_markdown(q.choices[q.answer])}**")
            if not projector:
                st.markdown(escape_markdown(q.reveal))
        if not projector:  # on a projector the count and the split are in the join card
            _teacher_live(live.code, live.secret, question.qid)
    return v.revealed


def _teacher_live(code: str, secret: str, qid: str) -> None:
    """The count of answers and, once shown, the split, on the teacher's laptop (a projector's are in the join
    card), read on the class's timer."""
    @st.fragment(run_every=TICK)
    def live_count() -> None:
        push.count_here(code)  # a vote in this process redraws the count at once; the timer otherwise
        v = read_class(code, secret=secret)
        if v is None:
            return
        if v.question is None or v.question.qid != qid:
            return
        st.markdown(f"**{v.answered} of {v.students}** students have answered.")
        if (v.split_shown or v.revealed) and v.tally is not None:
            split_chart(v.question.choices, v.tally, v.answer, "class-split-chart")

    live_count()


def seats_ui(live: Live) -> None:
    """The teacher's seats: who is present, who answered; remove a seat; lock the class (read on a slow timer)."""
    code, secret = live.code, live.secret

    @st.fragment(run_every=SEATS_TICK)
    def seats() -> None:
        try:
            _seats_now(code, secret, store().seats(code, secret), store().view(code, secret=secret).locked)
        except ClassError as e:
            st.warning(str(e))

    seats()


def _seats_now(code: str, secret: str, rows: list[dict], locked: bool) -> None:
    # The label does not change as students join, because a new label is a new (closed) expander, which would
    # close under the teacher's hand while the class fills.
    with st.expander("Seats" + (" (locked)" if locked else ""), expanded=False):
        st.caption(f"{len(rows)} seat{'s' if len(rows) != 1 else ''} in the class.")
        st.toggle("Lock the class (no new seats)", value=locked, key="class_lock", on_change=lock_class,
                  help="The students there keep their seats (and may come back); nobody new can join.")
        note = st.session_state.pop(REMOVE_NOTE, None)
        if note:  # the press's answer, on the press's own run (the panel's messages wait for a whole run)
            st.warning(note)
        if not rows:
            st.caption("Nobody has joined yet.")
            return
        st.dataframe([{"nickname": r["nickname"], "present": "yes" if r["present"] else "no",
                       "answered": r["answered"]} for r in rows], hide_index=True)
        names = {r["sid"]: r["nickname"] for r in rows}
        # The pick and the press are one form's submit, one message: a pick that reran the seats by itself left a
        # press that could reach the server without it (after the pick's run, or the timer's), which then did
        # nothing visible. Never disabled: with nothing picked the press says so, here.
        with st.form("class_remove_form", clear_on_submit=True, border=False):
            st.multiselect("Remove seats", list(names), key="class_remove_pick", format_func=names.__getitem__,
                           placeholder="Pick a seat to remove")
            st.form_submit_button("Remove the picked seats", key="class_remove", on_click=remove_seats,
                                  width="stretch", help="A removed seat can no longer vote; its vote on the open "
                                  "question is withdrawn. Its student is told within seconds.")


def start() -> None:
    """Start a class: this session becomes its teacher."""
    try:
        code, secret = store().create(client=client(), device=seat())
    except ClassError as e:
        say(e)
        return
    st.session_state.update({CODE: code, SECRET: secret})
    st.session_state.pop(SID, None)
    st.session_state.pop(LOST, None)
    st.query_params.update({"class": code, "teacher": secret})
    st.query_params.pop("me", None)



def _mine() -> tuple[str, str | None] | None:
    """(code, secret) of the class this tab teaches, or None once it has left or ended it: a teacher's control
    pressed as the class ends (Streamlit runs a widget's callback in the rerun its change arrives with) acts on no
    class."""
    code = st.session_state.get(CODE)
    return (code, st.session_state.get(SECRET)) if code else None


def lock_class() -> None:
    if (mine := _mine()) is None:
        return
    try:
        store().lock(*mine, bool(st.session_state.get("class_lock")))
    except ClassError as e:
        say(e)


def remove_seats() -> None:
    """The Seats form's submit: remove the picked seats, or say in the Seats panel why not."""
    picked = st.session_state.get("class_remove_pick") or []
    if not picked:
        st.session_state[REMOVE_NOTE] = "Pick the seats to remove first."
        return
    if (mine := _mine()) is None:
        return
    try:
        for sid in picked:
            store().remove(*mine, sid)
    except classroom.StoreUnavailable as e:
        say(e)  # the panel says it is reconnecting
    except ClassError as e:
        st.session_state[REMOVE_NOTE] = str(e)


def show_split(on: bool) -> None:
    if (mine := _mine()) is None:
        return
    try:
        store().show_split(*mine, on)
    except ClassError as e:
        say(e)


def reveal(qid: str, answer: int, token: str, step_key: str, projector: bool) -> None:
    """The class's Reveal: the answer goes to every device. On a projector (`projector`, the role's) not within
    REVEAL_AFTER_MOVE_S of this tab's own move to the step: there Reveal can be drawn where Next was, so a second
    click on Next would reveal the new question before anyone voted; the teacher is told and presses again."""
    if projector and time.monotonic() - st.session_state.get(MOVED_AT, float("-inf")) < REVEAL_AFTER_MOVE_S:
        # Short: a longer toast is cut to three lines ("view more") over the projector's formula and QR code.
        st.toast("Not revealed: pressed just after Next. Press Reveal again to show the class.",
                 icon=":material/info:")
        return
    if (mine := _mine()) is None:
        return
    try:
        store().reveal(*mine, qid, int(answer))
    except ClassError as e:
        say(e)
        return
    st.session_state.setdefault("lesson_revealed", set()).add(token)


def end() -> None:
    if (mine := _mine()) is None:
        return
    try:
        store().end(*mine)
    except ClassError as e:
        say(e)
    leave("You ended the class.")
