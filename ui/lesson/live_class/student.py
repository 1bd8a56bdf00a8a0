"""A student's side of a live class: the vote on the teacher's question, the count of answers, the exploring note,
and the seat kept in the browser (a seat token in the session and a cookie: Leave/Join, a reload or a second tab is
the same seat)."""

from __future__ import annotations

import streamlit as st

import classroom
from classroom import ClassError, View
from ui.lesson.content import answer_label
from ui.lesson.live_class import push, reads
from ui.lesson.live_class.results import split_chart
from ui.lesson.live_class.session import (
    CODE,
    COUNT_SHOWN,
    FOLLOW,
    JOIN_FIRST,
    NICK_KEPT,
    SEAT,
    SEAT_COOKIE,
    SEAT_KEPT,
    SECRET,
    SEEN,
    SID,
    STALE,
    Live,
    client,
    current_model,
    read_class,
    say,
    seat,
    spread_tick,
    store,
    student_tick,
)
from ui.markdown import escape_markdown


def _model_note(v: View) -> None:
    """Say so when this student's charts are not drawn with the teacher's model."""
    mine = current_model()
    if not v.model or not mine or mine == v.model:
        return
    why = ("it was trained in the teacher's own session, so it is not on this server for you" if
           v.model.startswith("session:") else "it could not be loaded here")
    st.warning(f"The teacher's model is {escape_markdown(v.model[:80])}, and {why}: your page shows "
               f"{escape_markdown(mine[:80])}. The class's question and its answer are the teacher's model's; your "
               "charts are your model's and may differ.", icon=":material/info:")


def student_question(live: Live, col, q, revealed: bool) -> bool:
    v = live.view
    with col:
        if not live.following:
            _exploring(live.code, live.sid, v)
            return revealed
        _model_note(v)
        if v.question is None:
            st.caption("The teacher's step has no question to vote on.")
            return False
        if v.revealed:
            shown = escape_markdown(v.question.choices[v.answer])
            label = answer_label(q) if q is not None else "the answer"
            with st.container(key="lesson_answer"):  # focused after the reveal (roles._focus_and_say)
                if v.my_vote is None:
                    st.info(f"{label[0].upper()}{label[1:]}: **{shown}**")
                elif v.my_vote == v.answer:
                    st.success(f"Right: **{shown}**")
                else:
                    st.error(f"Not this time: {label} is **{shown}**")
            if q is not None and tuple(q.choices) == v.question.choices:
                st.markdown(escape_markdown(q.reveal))
            if v.tally is not None:
                split_chart(v.question.choices, v.tally, v.answer, "class-split-student")
        else:
            _vote_box(live.code, live.sid, v)
    return v.revealed


def _vote_box(code: str, sid: str, v: View) -> None:
    """A following student's vote: part of the step the class's push redraws (a fragment of its own would cost each
    student's step change more than the rest of it); the count is the side column's (`count_ui`). A refused vote
    is said here, on the run that refused it, with the radio back on the vote the class counts."""
    key = f"class_vote_{v.question.qid}"
    if v.my_vote is not None and st.session_state.get(key) is None:
        st.session_state[key] = v.my_vote  # the vote this student already sent (a reload, a reopened laptop)
    st.markdown(f"**Your guess.** {escape_markdown(v.question.prompt)}")  # a radio's label is its name, unrendered
    st.radio("Your guess", range(len(v.question.choices)), key=key, label_visibility="collapsed",
             horizontal=True, index=None, format_func=lesson_labels(v.question.choices), on_change=vote,
             args=(code, sid, v.question.qid, key, v.my_vote, tuple(v.question.choices)))  # said as text, unescaped
    refused = st.session_state.get(REFUSED)
    if refused is not None and refused[0] == v.question.qid:
        st.error(refused[1], icon=":material/block:")
    if v.my_vote is not None:  # what the class counts for this student (not drawn at a step change: no vote yet)
        st.caption(f"Your vote: **{escape_markdown(v.question.choices[v.my_vote])}**. You can change it until the "
                   "teacher reveals the model's answer.")


def _exploring(code: str, sid: str, first: View) -> None:
    """An exploring student's note of the teacher's step, read again on the student's timer (this page is not
    redrawn when the teacher moves: it is the student's own); the reads also keep the seat present."""
    first_read = [first]

    @st.fragment(run_every=spread_tick(student_tick(first.students), sid))
    def where_is_the_teacher() -> None:
        v = first_read.pop() if first_read else read_class(code, sid=sid)
        if v is not None:
            st.info(f"You are exploring on your own; the teacher is on step {v.step}. Switch “Follow the "
                    "teacher” back on to return to the class and vote.")

    where_is_the_teacher()


def count_ui(code: str, sid: str, first: View) -> None:
    """A following student's count of answers, read on the student's timer (which also keeps the seat present), in
    the side column the class's push does not redraw; and the fallback for a step change no push brought."""
    first_read, tick = [first], [student_tick(first.students)]  # this page's timer, until its next whole run

    @st.fragment(key=push.COUNT_FRAGMENT)
    def class_count() -> None:  # on the timer of its listener; the student's vote reruns it at once
        st.session_state[COUNT_SHOWN] = push.fragment_here(code, sid, spread_tick(tick[0], sid))
        try:
            v = first_read.pop() if first_read else store().view(code, sid=sid)
        except classroom.StoreUnavailable:
            away_banner()  # pinned to the screen: a phone scrolled to the vote sees it
            return
        except ClassError:
            st.rerun()  # the class ended: the whole page says so (follow)
        if not v.joined:
            st.rerun()  # the teacher removed this seat: told now, without acting (follow says so at the top)
        grown = student_tick(v.students)
        if grown > tick[0]:  # the class has grown: this timer slower, from the listener's next drawing
            tick[0] = grown
        if v.following != st.session_state.get(SEEN):
            # The teacher moved on. The server's push redraws the step within a moment; only when a second tick
            # still sees the old step (no push: another process lost its Redis) does the page rerun itself, so
            # a push and a tick never draw the same page twice at the busiest moment of the class.
            if st.session_state.get(STALE) == v.following:
                st.rerun()
            st.session_state[STALE] = v.following
        if v.question is None or v.revealed:
            st.caption(f"{v.students} in the class.")
        else:
            st.caption(f"**{v.answered} of {v.students}** have answered this step's question.")

    class_count()


AWAY_CSS = """<style>
.st-key-class_away {position: fixed; left: 0.5rem; right: 0.5rem; bottom: 0.5rem; z-index: 1000; width: auto !important;
  max-width: 40rem; margin: 0 auto;}
</style>"""


def away_banner() -> None:
    """The class's store does not answer: a note pinned to the bottom of the screen (wherever the student has
    scrolled; its alert is announced), gone at the next tick that reads the class."""
    st.html(AWAY_CSS)
    with st.container(key="class_away"):
        st.warning("Reconnecting to the class… Your votes are kept; a vote sent now is not counted, so vote again "
                   "once this note is gone.", icon=":material/sync:")


def lesson_labels(choices):
    return [escape_markdown(c) for c in choices].__getitem__


def sentence_note(text: str, pair: str | None, explain: str = "", formula: str | None = None) -> None:
    """A following student's step words, formula and sentence: the teacher's sentence as text (not a box to type
    in), and why it cannot be changed here. One element (st.latex is markdown's $$ block): it is redrawn for every
    student at each of the teacher's steps."""
    lines = [f"**This step's sentence:** {escape_markdown(text)}"]
    if pair is not None:
        lines.append(f"**Sentence B:** {escape_markdown(pair)}")
    st.markdown("".join(part + "\n\n" for part in (explain, f"$$\n{formula}\n$$" if formula else "") if part)
                + "  \n".join(lines) + f"\n\n*{FOLLOWING_NOTE}*")


FOLLOWING_NOTE = ("You follow the teacher: this is the teacher's sentence, and the teacher moves the steps. Switch "
                  "“Follow the teacher” off to try your own.")


def keep_seat() -> None:
    """Write the seat token into the browser's cookie once (it has the shape of an id: nothing to escape)."""
    token = st.session_state.get(SEAT)
    if token and classroom.clean_id(token) and st.context.cookies.get(SEAT_COOKIE) != token \
            and not st.session_state.get(SEAT_KEPT):
        st.html(f"<script>document.cookie = '{SEAT_COOKIE}={token}; path=/; max-age=31536000; samesite=lax';</script>",
                unsafe_allow_javascript=True, width=1)
        st.session_state[SEAT_KEPT] = True


def join() -> None:
    """Join the class whose code was typed (or came in the link)."""
    code = classroom.clean_code(st.session_state.get("class_join_code", ""))
    try:
        if code is None:
            raise classroom.NoSuchClass()
        sid = store().join(code, st.session_state.get("class_nick", ""), seat=seat(), client=client())
    except ClassError as e:
        say(e)
        return
    st.session_state.update({CODE: code, SID: sid, FOLLOW: True, NICK_KEPT: st.session_state.get("class_nick", "")})
    st.session_state.pop(SECRET, None)
    st.session_state.pop(JOIN_FIRST, None)
    st.query_params.update({"class": code, "me": sid})
    st.query_params.pop("teacher", None)


REFUSED = "class_vote_refused"  # (question id, why): this student's last vote was refused, said beside the vote


def refusal(e: ClassError) -> str:
    """Why a vote was not counted, in the student's words (the store's own message, but for a store away)."""
    if isinstance(e, classroom.StoreUnavailable):
        return ("Your vote was not sent: the class's server is not answering. Choose again in a moment; your "
                "earlier votes are kept.")
    return f"Your vote was not counted. {e}"


VOTE_SAID = "class_vote_said"  # a vote just counted, in words, for the step's live region (roles._focus_and_say)


def vote(code: str, sid: str, qid: str, key: str, before: int | None = None, choices: tuple[str, ...] = ()) -> None:
    """Send the radio's choice; refused, the radio goes back to `before` (the vote the class counts) and the reason
    waits beside it for this same run; counted, it is said in the live region too (WCAG 4.1.3: the caption under
    the vote is not a status message a screen reader hears)."""
    choice = st.session_state.get(key)
    if not isinstance(choice, int):  # no vote, or a value none of the options has (a forged websocket message)
        return
    reads.forget_read()  # this run reads the class with the vote in it
    try:
        store().vote(code, sid, qid, choice)
    except ClassError as e:
        st.session_state[key] = before  # no tick on what the class did not count
        st.session_state[REFUSED] = (qid, refusal(e))
        return
    st.session_state.pop(REFUSED, None)
    if 0 <= choice < len(choices):
        st.session_state[VOTE_SAID] = (f"Your vote: {choices[choice]}. You can change it until the teacher reveals "
                                       "the model's answer.")
    push.poke(code)  # the teacher's count, if the teacher is on this process
    # The student's own count ("1 of 30 have answered") is in the side column, outside the step this vote redraws:
    # redrawn now, it agrees with "Your vote: ..." at once, not at the student's next timer tick.
    push.redraw(st.session_state.get(COUNT_SHOWN))
