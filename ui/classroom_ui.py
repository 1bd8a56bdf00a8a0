"""A live class on the Lesson page: the teacher starts it, students join from their own devices and vote.

The Lesson page (views/lesson.py) calls three functions, in this order:

    live = classroom_ui.follow()                       # after the step is read: join links, follow the teacher
    revealed = classroom_ui.question_ui(live, ...)     # the class's question instead of the lone guess
    classroom_ui.panel(live, present, side)            # start / join / the join code, QR, results

Roles live in the session: the teacher's session holds the class's secret (and its URL, ?class=CODE&teacher=...,
so a reload keeps the class); a student's holds their id (?class=CODE&me=..., so a closed laptop reopened keeps
its vote). What changes while nobody clicks (students joining, votes, the teacher's next step) is read by
fragments on a timer (`st.fragment(run_every=...)`): only they rerun. A following student's Lesson runs as one
fragment, which reruns when the teacher's step, sentence, question or reveal has changed, at once: the server
requests it (ui/classroom_push.py; app.py and the sidebar do not run again); the student's own timer is a slower
fallback. A vote reruns the teacher's count at once (the teacher's timer is the fallback). The store is classroom's
(`BERT_EXPLORER_CLASS_STORE`: in this process, or Redis for several processes).

A student's seat is also kept in the browser (a seat token in the session and a cookie): Leave/Join, a reload or
a second tab is the same seat. A store that does not answer drops nothing (the page says it is reconnecting);
a class gone from the store tells the teacher (a new class in one click) and its students. Every follower of a
class draws the same step view: `draw_step` draws it once and replays it (Streamlit's cached-element replay).
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import socket
import urllib.parse
import zlib
from dataclasses import dataclass

import plotly.graph_objects as go
import segno
import streamlit as st

import classroom
from bert_core.figures.style import projector
from classroom import ClassError, Question, View
from ui import classroom_push, handout, lesson, state
from ui.widgets import chart

TICK = 0.5  # seconds between the projector's reads of the class: a vote reaches it within about this
# A student's vote box re-reads the class this often: the count of answers, and a fallback for a step change the
# server's push missed (one timer per student, so 30 students make 15 fragment runs a second, not 30).
STUDENT_TICK = 2.0
# ... and no faster than this many students' ticks a second in all: 120 students tick every 8 s, not 2 (a lecture
# hall's timers alone took a third of a core at 30 a second, and a step change's pushed runs queued behind them:
# at 15, 120 students' step change p95 2.7 s instead of 4.1 s, votes 0.6 s instead of 2.0, load 8-10; the count of
# answers on a student's page is what waits: a step change and a reveal are pushed, a vote redraws the student's own).
TICKS_PER_SECOND = 15


def student_tick(students: int) -> float:
    """Seconds between a student's timer reads in a class of `students`: STUDENT_TICK, doubled until the class's
    timers make at most TICKS_PER_SECOND reads a second (steps of two: a growing class's pages set their timers
    again a few times, not at every join)."""
    tick = STUDENT_TICK
    while students / tick > TICKS_PER_SECOND:
        tick *= 2
    return tick


def spread_tick(tick: float, sid: str) -> float:
    """A student's own timer interval: `tick` stretched by a factor in [1, 1.5) fixed by the seat's id. Students who
    join together (a room scanning the code at once) would otherwise tick together all lesson long: a burst of the
    whole class's reruns every `tick` seconds, which a step change or a vote meets or not (benchmarks/class_load.py,
    200 students: a tick took 0.13-0.36 s (median) in the bursts, 0.02 s spread)."""
    return tick * (1.0 + 0.5 * (zlib.crc32(sid.encode()) % 1024) / 1024)


CODE, SECRET, SID, FOLLOW = "class_code", "class_secret", "class_sid", "class_follow"
SEEN, MSG, STALE = "class_seen", "class_msg", "class_stale"
COUNT_FRAGMENT = "class_count_fragment"  # the id of a following student's count fragment (its vote reruns it)
RECONNECT, LOST = "class_reconnect", "class_lost"  # this run could not reach the store / the teacher's class is gone
RETRY = 1.0  # seconds between tries of a store that does not answer
PUBLISHED = "class_published"  # (code, step, text, pair, question id, model) this tab last published
MODEL_TRIED = "class_model_tried"  # the teacher's model this student's page was last switched to
SEAT, SEAT_KEPT, SEAT_COOKIE = "class_seat", "class_seat_kept", "bx_seat"
# Drawings shared by the screens of a class (Streamlit's cached-element replay keeps each drawing's element
# messages), bounded in bytes as every cache here: st.cache_data's max_size counts the pickled entry, messages
# included, and drops the least recently used. On the bundled model a step's drawing pickles to 0.6-13 KB (steps
# 1-13, the Lesson's sentences), more on bert-base and long sentences; a split a few KB. One drawing larger than
# the whole budget is kept alone until the next one (Streamlit's rule): the bound is the budget or that one drawing.
VIEWS_MB = "BERT_EXPLORER_CLASS_VIEWS_MB"


def _mb(name: str, default: float) -> float:
    """A size setting in MB from the environment; unset or not a positive number: the default."""
    try:
        v = float(os.environ.get(name, "") or default)
    except ValueError:
        return default
    return v if v > 0 else default


SHARED_VIEWS_MB = _mb(VIEWS_MB, 32.0)
SHARED_SPLITS_MB = 1.0
# Views with a widget of their own (a drawing with a widget cannot be replayed): step key -> (its drawing, shared and
# keyed also by the session's draw and seed, which it reads; its widgets, drawn after it by each session).
SPLIT_VIEWS = {"masking": (lesson.masking_drawing, lesson.masking_widgets)}
NICK_BOX = 200  # characters the nickname box takes (the store keeps 24)
SEATS_TICK = 5.0  # seconds between reads of the teacher's list of seats
PUBLIC_URL = "BERT_EXPLORER_PUBLIC_URL"  # the address students open (e.g. https://bert.school.example)
LOCAL_HOSTS = {"localhost", "::1", "0.0.0.0", ""}
CARD_QR = 150  # px: the projector's QR code (a phone reads it from the back of a room at this size on a screen)
# Presenter mode's join card: a strip fixed at the top right, as wide as the QR code, holding what is the class's
# (the QR code, the code and link, who is there, how they voted); the page is kept clear of it. At 1280 x 720 the
# step gets 1280 - 185 px (its formulas fit: step 2's is 465 px in the right column), the strip ends above the model
# corner. Every text in it at least 18 px, as on the slide.
CARD_CSS = """<style>
.st-key-class_card {position: fixed; top: 0.3rem; right: 0.5rem; width: 166px !important; z-index: 101;
  background: #ffffff; border: 1px solid #d0d7de; border-radius: 0.5rem; padding: 0.3rem 0.3rem;
  gap: 0.25rem !important; max-height: calc(100vh - 3.4rem); overflow: hidden;}
.st-key-class_card p, .st-key-class_card [data-testid="stCaptionContainer"] p, .st-key-class_card button p
  {font-size: 18px !important; line-height: 1.2 !important; overflow-wrap: anywhere;}
.st-key-class_card [data-testid="stMarkdownContainer"] strong {font-size: 22px !important;}
.st-key-class_card [data-testid="stPopover"] button {padding: 0.2rem 0.3rem; min-height: 0;}
div[data-testid="stMainBlockContainer"], .block-container {padding-right: 185px !important;}
[data-testid="stMain"] [data-testid="stHorizontalBlock"] {gap: 1rem !important;}
.st-key-class_controls button p {font-size: 20px !important;}
[data-testid="stMain"] [data-testid="stAlertContainer"] {padding: 0.45rem 0.9rem !important;}
[data-testid="stMain"] h2 {font-size: 30px !important;}  /* the longest step title on one line beside the card */
/* Formulas at 20 px in the narrower column (step 9's is 527 px at 23 px); scripts at 0.9 of it stay at 18 px. */
[data-testid="stMain"] .katex {font-size: 20px !important;}
[data-testid="stMain"] .katex .reset-size6.size3, [data-testid="stMain"] .katex .reset-size6.size1
  {font-size: 0.9em !important;}
</style>"""


@dataclass
class Live:
    """This session's place in a class: the teacher (secret) or a student (sid), and the class as last read."""

    code: str
    secret: str | None
    sid: str | None
    view: View | None

    @property
    def teacher(self) -> bool:
        return self.secret is not None

    @property
    def following(self) -> bool:
        return self.teacher or bool(st.session_state.get(FOLLOW, True))


def store() -> classroom.ClassStore:
    return classroom.open_store()


def _say(e: Exception) -> None:
    """A refusal, said once by the panel's next whole run. A store that does not answer, in a class: the panel
    says it is reconnecting and reruns the page once the store answers (`_reconnecting`); its message would have
    stayed on screen after the store was back, as only a whole run redraws the panel (the teacher's lock toggle,
    whose callback Streamlit ran with no click while Redis was down: tests/browser/test_browser_class_redis.py)."""
    if isinstance(e, classroom.StoreUnavailable) and st.session_state.get(CODE):
        st.session_state[RECONNECT] = st.session_state[CODE]
        return
    st.session_state[MSG] = str(e)


def _leave() -> None:
    """Forget the class in this session and in the URL."""
    classroom_push.forget_here()
    for k in (CODE, SECRET, SID, SEEN, PUBLISHED):
        st.session_state.pop(k, None)
    for k in ("class", "teacher", "me"):
        st.query_params.pop(k, None)


# ------------------------------------------------------------------------------------------ hook 1
ENDED = "The class has ended: ask your teacher for the new code."
ENDED_NOTE = "class_ended_note"


def follow() -> Live | None:
    """Join or resume from the URL; a following student's step and sentence become the teacher's. None: no class.

    A store that does not answer (StoreUnavailable, after the store's own retries) drops nothing: the class's code
    and keys stay in the session and the address, the page runs on without the class and says it is reconnecting
    (panel), and the next run after the store answers resumes the class. A store that answers without the class
    (it restarted empty, or the class ended or expired) tells the teacher, who can start a new class in one
    click, and tells a student to ask for the new code."""
    q = st.query_params
    url_code = classroom.clean_code(q.get("class"))
    if url_code and st.session_state.get(CODE) != url_code:
        secret, sid = classroom.clean_id(q.get("teacher")), classroom.clean_id(q.get("me"))
        try:
            if secret and store().is_teacher(url_code, secret):  # the teacher's link, after a reload
                st.session_state.update({CODE: url_code, SECRET: secret})
                st.session_state.pop(SID, None)
            elif sid and store().view(url_code, sid=sid).joined:  # a student's own link: the same student again
                st.session_state.update({CODE: url_code, SID: sid, FOLLOW: True})
                st.session_state.pop(SECRET, None)
            else:
                store().view(url_code)  # a plain join link: the class must exist; the panel asks for a nickname
                st.session_state["class_link_code"] = url_code  # the join box shows it
                st.session_state["lesson_present"] = False  # a projector's link (present=1): the join box first
                q.pop("present", None)
                q.pop("teacher", None)
                q.pop("me", None)
        except classroom.StoreUnavailable:
            st.session_state[RECONNECT] = url_code  # the address keeps its keys: the next run tries again
            return None
        except ClassError as e:
            if secret and isinstance(e, classroom.NoSuchClass):
                st.session_state[LOST] = url_code
            else:
                _ended() if sid and isinstance(e, classroom.NoSuchClass) else _say(e)
            for k in ("class", "teacher", "me"):
                q.pop(k, None)
    elif q.get("class") is not None and not url_code:
        _say(classroom.NoSuchClass())
        q.pop("class", None)
    code = st.session_state.get(CODE)
    if not code:
        classroom_push.forget_here()
        return None
    live = Live(code, st.session_state.get(SECRET), st.session_state.get(SID), None)
    try:
        if live.teacher:
            live.view = store().view(code, secret=live.secret)
        else:  # a pushed run takes the read its process made for all its students at the class's change
            live.view = classroom_push.read_at_push(code, live.sid) or store().view(code, sid=live.sid)
    except classroom.StoreUnavailable:
        st.session_state[RECONNECT] = code  # nothing dropped: session and address keep the class and its key
        st.session_state.pop(PUBLISHED, None)  # back, this tab publishes its step again
        return None
    except ClassError as e:
        if live.teacher:
            st.session_state[LOST] = code
        else:
            _ended() if isinstance(e, classroom.NoSuchClass) else _say(e)
        _leave()
        return None
    st.session_state.pop(LOST, None)
    # A query parameter set is a message to the browser even when unchanged: only what changed is sent (a class's
    # step change is one rerun per student).
    _keep_param("class", code)
    st.session_state.setdefault(FOLLOW, True)
    if live.teacher:
        _keep_param("teacher", live.secret)
    else:
        _keep_param("me", live.sid)
        if not live.view.joined:
            _say(ClassError("This class no longer knows you; join it again."))
            _leave()
            return None
        if live.following:
            _take_model(live.view)
            _take_step(live.view)
            classroom_push.follow_here(store(), code, live.sid)  # the next change of step redraws this page at once
        else:
            classroom_push.forget_here()
    return live


def _ended() -> None:
    """A student's class is gone: said where the vote box was (the main column, seen on a phone without
    scrolling to the class's panel), on this run."""
    st.session_state[ENDED_NOTE] = True


def _keep_param(k: str, v: str) -> None:
    if st.query_params.get(k) != v:
        st.query_params[k] = v


def _reconnecting(code: str, present: bool = False) -> None:
    """The class's store does not answer: say so, and rerun the page as soon as it answers again."""
    if present:  # in the join card's place, beside the slide: short
        st.info(f"Reconnecting to class {code}… The slides work on; its votes come back with its store.")
    else:
        st.info("Reconnecting to the class… The Lesson works on meanwhile; your class and its votes come back when "
                "the class's store answers.", icon=":material/sync:")

    @st.fragment(run_every=RETRY)
    def wait_for_store() -> None:
        try:
            store().view(code)
        except classroom.StoreUnavailable:
            return
        except ClassError:
            pass  # it answers without the class: the page's run says so
        st.rerun()

    wait_for_store()


def _lost(code: str, present: bool) -> None:
    """The teacher's class is gone from a store that answers: say so, and offer a new class in one click."""
    if present:  # in the join card's place, beside the slide: short
        st.error(f"Class {code} was lost (its store restarted without it); its votes are gone.")
    else:
        st.error(f"Your class {code} was lost: the class's store restarted without it (or it expired). Its votes "
                 "are gone; start a new class and give your students its code.")
    st.button("Start a new class", key="class_restart", on_click=start, type="primary",
              width="content" if present else "stretch")


def _take_step(v: View) -> None:
    """A following student's Lesson shows the teacher's step and sentence(s)."""
    k = min(max(v.step, 1), len(lesson.STEPS))
    st.session_state["lesson_step"] = k
    st.session_state[lesson.text_key(k)] = v.text or lesson.STEPS[k - 1].text
    if lesson.STEPS[k - 1].pair is not None:
        st.session_state[lesson.pair_key(k)] = v.pair if v.pair is not None else lesson.STEPS[k - 1].pair
    st.session_state[SEEN] = v.following


def _current_model() -> str:
    """This session's model key ("" before the sidebar has chosen one)."""
    cur = st.session_state.get("current")
    return cur.model_key if cur is not None else ""


def _take_model(v: View) -> None:
    """A following student's page runs the teacher's model: the sidebar loads it on a rerun now.

    Not a model only the teacher's session has ("session:..."): the student stays on their own (the vote box says
    so). A model tried once that did not come (it failed to load here) is not tried again on every run."""
    mine = _current_model()
    if not v.model or not mine or v.model.startswith("session:"):
        return
    if mine == v.model:
        st.session_state.pop(MODEL_TRIED, None)
        return
    if st.session_state.get(MODEL_TRIED) == v.model:
        return
    st.session_state[MODEL_TRIED] = v.model
    st.session_state[state.PENDING_MODEL] = v.model
    st.rerun()


def _model_note(v: View) -> None:
    """Say so when this student's charts are not drawn with the teacher's model."""
    mine = _current_model()
    if not v.model or not mine or mine == v.model:
        return
    why = ("it was trained in the teacher's own session, so it is not on this server for you" if
           v.model.startswith("session:") else "it could not be loaded here")
    st.warning(f"The teacher's model is {lesson.plain(v.model[:80])}, and {why}: your page shows "
               f"{lesson.plain(mine[:80])}. The class's question and its answer are the teacher's model's; your "
               "charts are your model's and may differ.", icon=":material/info:")


# ------------------------------------------------------------------------------------------ hook 2
def question_id(token: str) -> str:
    """A short id of the Lesson's question token (model, step, sentence(s), prompt, choices)."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def question_ui(live: Live | None, col, q, token: str, k: int, text: str, pair: str | None, revealed: bool) -> bool:
    """The class's question in `col` (the teacher's controls, or a student's vote); returns whether it is revealed."""
    if live is None:
        if st.session_state.pop(ENDED_NOTE, None):
            col.warning(ENDED)
        return revealed
    if live.teacher:
        return _teacher_question(live, col, q, token, k, text, pair)
    return _student_question(live, col, q, revealed)


def _teacher_question(live: Live, col, q, token, k, text, pair) -> bool:
    question = Question(question_id(token), q.prompt, tuple(q.choices)) if q is not None else None
    # Publish only what this tab changed: a teacher's second tab (a laptop beside the projector) that reruns on
    # an old step must not take the class back to it (its students would find that question's votes closed).
    model = _current_model()  # the class follows it (a student's page switches to it)
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
    present = lesson.presenting()
    with col:
        st.markdown(f"**The class's question.** {lesson.plain(q.prompt)}")
        if present:  # one line, numbered as the split's bars in the join card (a projector has no room for a list)
            st.markdown(" · ".join(f"**{i}.** {lesson.plain(c)}" for i, c in enumerate(q.choices, 1)))
        else:
            st.markdown("\n".join(f"{i}. {lesson.plain(c)}" for i, c in enumerate(q.choices, 1)))
        if not v.revealed:
            split_label = "Hide the split" if v.split_shown else "Show the class's split"
            split_help = "The projector shows how the class's guesses split, before the answer."
            reveal_help = "The answer, computed by the model from this sentence, goes to every device."
            reveal_args = (question.qid, q.answer, token, lesson.STEPS[k - 1].key)
            if present:  # side by side, each as wide as its words (halves would cut "Reveal the tokenizer's...")
                with st.container(key="class_controls", horizontal=True, gap="small"):
                    st.button(split_label, key="class_split", on_click=show_split, args=(not v.split_shown,),
                              help=split_help)
                    st.button(f"Reveal {lesson.answer_label(q)}", key="lesson_reveal", type="primary",
                              on_click=reveal, args=reveal_args, shortcut="Space",  # as for one laptop
                              help=reveal_help)
            else:
                c1, c2 = st.columns(2)
                c1.button(split_label, key="class_split", on_click=show_split, args=(not v.split_shown,),
                          width="stretch", help=split_help)
                c2.button(f"Reveal {lesson.answer_label(q)}", key="lesson_reveal", type="primary", on_click=reveal,
                          args=reveal_args, width="stretch", help=reveal_help)
        elif present:  # the answer and why in one box (a projector has no line to spare)
            st.info(f"{lesson.answer_label(q, capital=True)}: **{lesson.plain(q.choices[q.answer])}**. "
                    f"{lesson.plain(q.reveal)}")
        else:
            st.info(f"{lesson.answer_label(q, capital=True)}: **{lesson.plain(q.choices[q.answer])}**")
            st.markdown(lesson.plain(q.reveal))
        if not present:  # on a projector the count and the split are in the join card
            _teacher_live(live.code, live.secret, question.qid)
    return v.revealed


def _read(code: str, sid: str | None = None, secret: str | None = None) -> View | None:
    """A fragment's read of the class; None after saying why. A class gone from the store reruns the whole page
    (follow() says what happened); a store that does not answer says the class is reconnecting, nothing dropped."""
    try:
        return store().view(code, sid=sid, secret=secret)
    except classroom.StoreUnavailable:
        st.caption("Reconnecting to the class…")
        return None
    except classroom.NoSuchClass:
        st.rerun()
    except ClassError as e:
        st.warning(str(e))
        return None


def _teacher_live(code: str, secret: str, qid: str) -> None:
    @st.fragment(run_every=TICK)
    def live_count() -> None:
        classroom_push.count_here(code)  # a vote in this process redraws the count at once; the timer otherwise
        v = _read(code, secret=secret)
        if v is None:
            return
        if v.question is None or v.question.qid != qid:
            return
        st.markdown(f"**{v.answered} of {v.students}** students have answered.")
        if (v.split_shown or v.revealed) and v.tally is not None:
            split_chart(v.question.choices, v.tally, v.answer, "class-split-chart", large=lesson.presenting())

    live_count()


def _student_question(live: Live, col, q, revealed: bool) -> bool:
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
            shown = lesson.plain(v.question.choices[v.answer])
            label = lesson.answer_label(q) if q is not None else "the answer"
            if v.my_vote is None:
                st.info(f"{label[0].upper()}{label[1:]}: **{shown}**")
            elif v.my_vote == v.answer:
                st.success(f"Right: **{shown}**")
            else:
                st.error(f"Not this time: {label} is **{shown}**")
            if q is not None and tuple(q.choices) == v.question.choices:
                st.markdown(lesson.plain(q.reveal))
            if v.tally is not None:
                split_chart(v.question.choices, v.tally, v.answer, "class-split-student")
        else:
            _vote_box(live.code, live.sid, v)
    return v.revealed


def _vote_box(code: str, sid: str, v: View) -> None:
    """A following student's vote: part of the step the class's push redraws (a fragment of its own here cost
    more than the rest of a student's step change: 2-4 ms of each student's run at 120); the count is the side
    column's (`_class_count`)."""
    key = f"class_vote_{v.question.qid}"
    if v.my_vote is not None and st.session_state.get(key) is None:
        st.session_state[key] = v.my_vote  # the vote this student already sent (a reload, a reopened laptop)
    st.radio(f"**Your guess.** {lesson.plain(v.question.prompt)}", range(len(v.question.choices)), key=key,
             horizontal=True, index=None, format_func=lesson_labels(v.question.choices), on_change=vote,
             args=(code, sid, v.question.qid, key))
    if v.my_vote is not None:  # what the class counts for this student (not drawn at a step change: no vote yet)
        st.caption(f"Your vote: **{lesson.plain(v.question.choices[v.my_vote])}**. You can change it until the "
                   "teacher reveals the model's answer.")


def _exploring(code: str, sid: str, first: View) -> None:
    """An exploring student's note of the teacher's step, read again on the student's timer (this page is not
    redrawn when the teacher moves: it is the student's own); the reads also keep the seat present."""
    first_read = [first]

    @st.fragment(run_every=spread_tick(student_tick(first.students), sid))
    def where_is_the_teacher() -> None:
        v = first_read.pop() if first_read else _read(code, sid=sid)
        if v is not None:
            st.info(f"You are exploring on your own; the teacher is on step {v.step}. Switch “Follow the "
                    "teacher” back on to return to the class and vote.")

    where_is_the_teacher()


def _class_count(code: str, sid: str, first: View) -> None:
    """A following student's count of answers, read on the student's timer (which also keeps the seat present), in
    the side column the class's push does not redraw; and the fallback for a step change no push brought."""
    first_read, tick = [first], [student_tick(first.students)]  # this page's timer, until its next whole run

    @st.fragment(key=classroom_push.COUNT_FRAGMENT)
    def class_count() -> None:  # on the timer of its listener; the student's vote reruns it at once
        st.session_state[COUNT_FRAGMENT] = classroom_push.fragment_here(spread_tick(tick[0], sid))
        v = first_read.pop() if first_read else _read(code, sid=sid)
        if v is None:
            return
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


def lesson_labels(choices):
    return [lesson.plain(c) for c in choices].__getitem__


# ------------------------------------------------------------------------------------------ the step's view
def following_student(live: Live | None) -> bool:
    """A student whose page shows the teacher's step and sentence."""
    return live is not None and not live.teacher and live.following


def draw_step(live: Live | None, step, cur, text: str, pair: str | None, revealed: bool) -> None:
    """`step.view(cur, text, pair, revealed)`; for a following student, the class's shared drawing of it.

    Every follower of a class draws the same view (the teacher's model, step, sentence(s) and reveal): the first
    draws it, the others replay its elements (their figures are not built, serialised and hashed again), so a
    step change costs the server one drawing, not one per student. Not shared: a model a session trains. A view
    with a widget of its own (SPLIT_VIEWS) shares its drawing, and each session draws the widget after it."""
    if not following_student(live) or cur.model_key.startswith("session:"):
        step.view(cur, text, pair, revealed)
        return
    split = SPLIT_VIEWS.get(step.key)
    own = (int(st.session_state.get("lesson_draw", 1)), cur.seed) if split else None  # "Draw again" is the session's
    # Everything the drawing reads, as one string: Streamlit's cache hashes each argument it is given (name and value,
    # a few microseconds each: nine arguments were 5% of a class's step change in a py-spy profile); the drawing's
    # own arguments start with "_" (not hashed). Keywords: a positional argument's name is looked up every call.
    drawing = repr((cur.model_key, step.key, text, pair, bool(revealed), lesson.presenting(),
                    bool(st.session_state.get("lesson_large")), st.session_state.get(lesson.QUESTION_ERROR), own))
    _shared_view(drawing=drawing, _step_key=step.key, _text=text, _pair=pair, _revealed=bool(revealed), _cur=cur)
    if split:
        split[1]()


@st.cache_data(max_size=int(SHARED_VIEWS_MB * 2**20), show_spinner=False)
def _shared_view(drawing: str, _step_key: str, _text: str, _pair: str | None, _revealed: bool, _cur) -> None:
    """One drawing of a step's view, keyed by `drawing`: everything the view reads (the model by its key, the
    session's presenter mode, large type, question error and own draw), written out."""
    split = SPLIT_VIEWS.get(_step_key)
    draw = split[0] if split else lesson.STEPS[lesson.KEYS.index(_step_key)].view
    draw(_cur, _text, _pair, _revealed)


def sentence_note(text: str, pair: str | None, explain: str = "", formula: str | None = None) -> None:
    """A following student's step words, formula and sentence: the teacher's sentence as text (not a box to type
    in), and why it cannot be changed here. One element (st.latex is markdown's $$ block): it is redrawn for every
    student at each of the teacher's steps."""
    lines = [f"**This step's sentence:** {lesson.plain(text)}"]
    if pair is not None:
        lines.append(f"**Sentence B:** {lesson.plain(pair)}")
    st.markdown("".join(part + "\n\n" for part in (explain, f"$$\n{formula}\n$$" if formula else "") if part)
                + "  \n".join(lines) + f"\n\n*{FOLLOWING_NOTE}*")


def redraw_here(live: Live) -> None:
    """The class's next change reruns this run's fragment (a following student's step) in this session."""
    classroom_push.redraw_here(store(), live.code, live.sid)


FOLLOWING_NOTE = ("You follow the teacher: this is the teacher's sentence, and the teacher moves the steps. Switch "
                  "“Follow the teacher” off to try your own.")


# ------------------------------------------------------------------------------------------ hook 3
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
                _reconnecting(away, present) if away else _lost(lost, present)
                presenter_tools(live, in_card=True)
        elif live is not None and live.teacher:
            _join_card(live, big=True)  # with the presenter's tools in it
        else:
            presenter_tools(live)
        return
    with side:
        st.markdown("**A live class**")
        if msg:
            st.warning(msg)
        if away:
            _reconnecting(away)
            return
        if lost:
            _lost(lost, present)
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
            _join_card(live, big=False)
            _seats(live)
            _results(live)
            st.button("End the class", key="class_end", on_click=end, width="stretch",
                      help="Deletes the class and its votes (download the results first).")
        else:
            st.caption(f"In class **{live.code}**.")
            if live.following and live.view is not None:
                _class_count(live.code, live.sid, live.view)
            st.toggle("Follow the teacher", key=FOLLOW,
                      help="Off: explore the Lesson on your own; on again: back to the teacher's step.")
            st.button("Leave the class", key="class_leave", on_click=_leave, width="stretch",
                      help="Joining again from this browser gives you back your seat and your votes.")
            _keep_seat()


def _seat() -> str:
    """This browser's seat token: kept in the session, and in a cookie (a reload, a second tab, a new session)."""
    seat = st.session_state.get(SEAT) or classroom.clean_id(st.context.cookies.get(SEAT_COOKIE))
    if seat is None:
        seat = classroom.codes.new_id()
    st.session_state[SEAT] = seat
    return seat


def _keep_seat() -> None:
    """Write the seat token into the browser's cookie once (it has the shape of an id: nothing to escape)."""
    seat = st.session_state.get(SEAT)
    if seat and classroom.clean_id(seat) and st.context.cookies.get(SEAT_COOKIE) != seat \
            and not st.session_state.get(SEAT_KEPT):
        st.html(f"<script>document.cookie = '{SEAT_COOKIE}={seat}; path=/; max-age=31536000; samesite=lax';</script>",
                unsafe_allow_javascript=True, width=1)
        st.session_state[SEAT_KEPT] = True


def _seats(live: Live) -> None:
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
    with st.expander(f"Seats: {len(rows)}" + (" (locked)" if locked else ""), expanded=False):
        st.toggle("Lock the class (no new seats)", value=locked, key="class_lock", on_change=lock_class,
                  help="The students there keep their seats (and may come back); nobody new can join.")
        if not rows:
            st.caption("Nobody has joined yet.")
            return
        st.dataframe([{"nickname": r["nickname"], "present": "yes" if r["present"] else "no",
                       "answered": r["answered"]} for r in rows], hide_index=True)
        names = {r["sid"]: r["nickname"] for r in rows}
        st.multiselect("Remove seats", list(names), key="class_remove_pick", format_func=names.__getitem__,
                       placeholder="Pick a seat to remove")
        st.button("Remove the picked seats", key="class_remove", on_click=remove_seats, width="stretch",
                  disabled=not st.session_state.get("class_remove_pick"),
                  help="A removed seat can no longer vote; its vote on the open question is withdrawn.")


def join_url(code: str) -> str:
    """The link students open: /lesson?class=CODE on the public address, or on the address of this page."""
    return f"{public_base()[0]}/lesson?class={code}"


def public_base() -> tuple[str, str | None, str | None]:
    """(the address students open, without a trailing /; a note when the page's own address would not work; that
    note in a line, for the projector's card).

    BERT_EXPLORER_PUBLIC_URL when set (a proxy, a school's name for the server); else this page's address, except
    that a page opened as localhost / 127.0.0.1 is reached from this machine only: then this machine's network
    (LAN) address, with the same port, and a note saying so."""
    public = os.environ.get(PUBLIC_URL, "").strip().rstrip("/")
    if public.startswith(("http://", "https://")):
        return public, None, None
    parts = urllib.parse.urlsplit(st.context.url or "")
    path = parts.path.rstrip("/")
    for tail in ("/lesson", "/start"):
        if path.endswith(tail):
            path = path[: -len(tail)]
    host = (parts.hostname or "").lower()
    if host not in LOCAL_HOSTS and not host.startswith("127."):
        return f"{parts.scheme}://{parts.netloc}{path}", None, None
    lan = lan_address()
    where = f"This page is open as {host}, an address only this computer can reach"
    short = f"Only this computer can reach {host}; "
    if lan is None:
        return (f"{parts.scheme}://{parts.netloc}{path}", f"{where}, and it has no network address: students "
                f"cannot join from their devices. Set {PUBLIC_URL} to an address they can open.",
                short + "students cannot join (no network).")
    port = f":{parts.port}" if parts.port else ""
    return (f"{parts.scheme or 'http'}://{lan}{port}{path}", f"{where}: the link and QR code use its network address "
            f"{lan} instead (the server must listen on it, e.g. --server.address 0.0.0.0). Set {PUBLIC_URL} to "
            "choose the address.", short + "students open:")


def lan_address() -> str | None:
    """This machine's address on its network (the interface a packet to the outside would leave by), or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # UDP: nothing is sent, the OS only picks the route
            ip = s.getsockname()[0]
    except OSError:
        return None
    return None if ip.startswith(("127.", "0.")) else ip


def qr_png(url: str, scale: int) -> bytes:
    buf = io.BytesIO()
    segno.make(url, error="m").save(buf, kind="png", scale=scale, border=2)
    return buf.getvalue()


def _join_card(live: Live, big: bool) -> None:
    base, note, short = public_base()
    url = f"{base}/lesson?class={live.code}"
    if big:  # the projector: a strip fixed at the top right, beside the step (CARD_CSS keeps the page clear of it)
        st.html(CARD_CSS)
        with st.container(key="class_card"):
            st.image(qr_png(url, 5), width=CARD_QR)
            st.markdown(f"Join: code **{live.code}**")
            if short:  # in full in the presenter's popover
                st.caption(short)
            st.caption(url)
            _card_live(live)
            presenter_tools(live, note)
    else:
        st.markdown(f"Code: **{live.code}**")
        st.image(qr_png(url, 5), caption=url, width=200)
        if note:
            st.warning(note)
        _count(live)
        with st.expander("Your teacher link"):
            st.caption("This link opens your class's teacher screen (a reload keeps it too). Do not share it, and "
                       "present full-screen (F11) so the class does not see the address bar.")
            st.code(f"{base}/lesson?class={live.code}&teacher={live.secret}", language=None)


def _card_live(live: Live) -> None:
    """The card's class, read on the projector's timer: who is there, who answered, and the split once shown."""
    code, secret = live.code, live.secret

    @st.fragment(run_every=TICK)
    def card_live() -> None:
        classroom_push.count_here(code)  # the projector's count, as the laptop's: a vote redraws it at once
        v = _read(code, secret=secret)
        if v is None:
            return
        st.markdown(f"Present: **{v.present}**", help=f"{v.students} seat(s) in the class; a tab gone for more "
                    "than a minute is not counted here (its votes are kept).")
        if v.question is None:
            return
        st.markdown(f"Answered: **{v.answered} of {v.students}**")
        if (v.split_shown or v.revealed) and v.tally is not None:
            card_split_chart(v.question.choices, v.tally, v.answer)

    card_live()


PRESENTER_KEYS = "Keys: → or Page Down next, ← or Page Up back, space reveals the class's question."


def presenter_tools(live: Live | None, note: str | None = None, in_card: bool = False) -> None:
    """Presenter mode's "Start a class" and sentence box (and the note on the join link), in a popover at the top
    right (not on the slide). `in_card`: in the box of a class reconnecting or lost (no "Start a class": that box
    has its own way on)."""
    if following_student(live):
        return
    k = int(st.session_state.get("lesson_step", 1))
    alone = live is None and not in_card
    if alone:  # no card: the popover alone at the top right
        st.html("<style>.st-key-class_tools {position: fixed; top: 0.4rem; right: 0.6rem; z-index: 101; "
                "width: max-content !important;}</style>")
    with st.container(key="class_tools"), st.popover("Class and sentence", icon=":material/tune:"):
        if alone:
            st.button("Start a class", key="class_start", on_click=start, type="primary",
                      help="Students join with the code the projector then shows beside the step.")
        if note:
            st.warning(note)
        if live is not None:  # the slide has no room for the keys beside Back and Next (views/lesson.py)
            st.caption(PRESENTER_KEYS)
        lesson.sentence_ui(k, lesson.STEPS[k - 1])


def _count(live: Live) -> None:
    code, secret = live.code, live.secret

    @st.fragment(run_every=TICK)
    def count() -> None:
        v = _read(code, secret=secret)
        if v is not None:
            st.metric("Students present", v.present, help=f"{v.students} seat(s) in the class; a tab gone for more "
                      f"than a minute is not counted here (its votes are kept).")

    count()


def _results(live: Live) -> None:
    """The end-of-lesson table (whole runs only). A store that does not answer here is tried again on a timer, in
    place: an error drawn by a whole run would stay on screen after the store is back, until the teacher's next
    click (scripts/class_outage.py saw it after Redis was frozen)."""
    if _results_table(live):
        return

    @st.fragment(run_every=RETRY)
    def results_later() -> None:  # until the page's next whole run
        if not _results_table(live):
            st.caption("Results: reconnecting to the class…")

    results_later()


def _results_table(live: Live) -> bool:
    """The table and its downloads; False, with nothing drawn, when the store does not answer."""
    try:
        rows = store().results(live.code, live.secret)
        named = store().students(live.code, live.secret)
    except classroom.StoreUnavailable:
        return False
    except ClassError as e:
        st.warning(str(e))
        return True
    if not rows:
        st.caption("The end-of-lesson table fills in as you reveal answers.")
        return True
    table = results_rows(rows)
    with st.expander(f"Results: {len(rows)} question(s)", expanded=False):
        st.dataframe(table, hide_index=True)
        st.download_button("Download the results (CSV)", results_csv(table, named), file_name="class_results.csv",
                           mime="text/csv", key="class_csv")
        handout.button(live, "class_handout")  # the Lesson's handout, with the class's split of each question
    return True


def results_rows(rows: list[classroom.Result]) -> list[dict]:
    """The end-of-lesson table: each revealed question (its step, model and sentence), the share of the class that
    guessed the model's answer."""
    return [{"step": r.step, "model": r.model, "sentence": r.text, "question": r.prompt,
             "model's answer": r.choices[r.answer], "answered": r.answered, "right": r.right,
             "share right": f"{r.right / r.answered:.0%}" if r.answered else "–"} for r in rows]


def results_csv(table: list[dict], named: list[dict]) -> str:
    """The table as CSV; then, if any student gave a nickname, one row per named student (no names otherwise)."""
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(table[0]))
    w.writeheader()
    w.writerows([{k: _cell(v) for k, v in r.items()} for r in table])
    if named:
        out.write("\n")
        w = csv.DictWriter(out, fieldnames=["nickname", "answered", "right"])
        w.writeheader()
        w.writerows([{k: _cell(v) for k, v in r.items()} for r in named])
    return out.getvalue()


def _cell(v):
    """A CSV cell a spreadsheet will not run as a formula (a nickname or sentence starting with = + - @)."""
    return "'" + v if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r") else v


@st.cache_data(max_size=int(SHARED_SPLITS_MB * 2**20), show_spinner=False)
def split_chart(choices: tuple[str, ...], tally: tuple[int, ...], answer: int | None, key: str,
                large: bool = False) -> None:
    """The class's split as a chart, drawn once per (choices, tally, answer) and replayed for every screen that
    shows the same split (Streamlit's cached-element replay): a reveal is one figure, not one per student.
    `large`: on the projector, every text at least 18 px (bert_core.figures.style.projector)."""
    fig = split_figure(choices, tally, answer)
    chart(projector(fig) if large else fig, "class split", key=key)


@st.cache_data(max_size=int(SHARED_SPLITS_MB * 2**20), show_spinner=False)
def card_split_chart(choices: tuple[str, ...], tally: tuple[int, ...], answer: int | None) -> None:
    """The split in the projector's join card: a column per choice, numbered as on the slide, every text >= 18 px."""
    chart(projector(card_split_figure(choices, tally, answer)), "class split", key="class-split-card")


def card_split_figure(choices: tuple[str, ...], tally: tuple[int, ...], answer: int | None) -> go.Figure:
    """The class's guesses as columns 1..n (the slide lists the choices by number), the model's answer in green."""
    colors = ["#2e7d32" if i == answer else "#90a4ae" for i in range(len(choices))]
    fig = go.Figure(go.Bar(x=[str(i) for i in range(1, len(choices) + 1)], y=list(tally), marker_color=colors,
                           text=[str(n) if n else "" for n in tally], textposition="outside", cliponaxis=False,
                           hovertext=list(choices)))
    fig.update_layout(height=140, margin=dict(l=4, r=4, t=30, b=30), title=f"Guesses ({sum(tally)})",
                      xaxis=dict(type="category"), showlegend=False,
                      yaxis=dict(visible=False, range=[0, max(tally or (0,)) * 1.35 + 0.5]))  # room for the counts
    return fig


def split_figure(choices: tuple[str, ...], tally: tuple[int, ...], answer: int | None) -> go.Figure:
    """The class's guesses as bars, the model's answer (once revealed) in green."""
    colors = ["#2e7d32" if i == answer else "#90a4ae" for i in range(len(choices))]
    fig = go.Figure(go.Bar(x=list(tally), y=[f"{i}. {c}" for i, c in enumerate(choices, 1)], orientation="h",
                           marker_color=colors, text=[str(n) if n else "" for n in tally],
                           textposition="auto"))  # no "0" beside an empty bar
    fig.update_layout(height=60 + 40 * len(choices), margin=dict(l=10, r=10, t=30, b=10),
                      title=f"The class's guesses ({sum(tally)})",
                      yaxis=dict(autorange="reversed", type="category"))  # "4. 4" is a label, not a number
    return fig


# ------------------------------------------------------------------------------------------ callbacks
def start() -> None:
    """Start a class: this session becomes its teacher."""
    try:
        code, secret = store().create()
    except ClassError as e:
        _say(e)
        return
    st.session_state.update({CODE: code, SECRET: secret})
    st.session_state.pop(SID, None)
    st.session_state.pop(LOST, None)
    st.query_params.update({"class": code, "teacher": secret})
    st.query_params.pop("me", None)


def join() -> None:
    """Join the class whose code was typed (or came in the link)."""
    code = classroom.clean_code(st.session_state.get("class_join_code", ""))
    try:
        if code is None:
            raise classroom.NoSuchClass()
        sid = store().join(code, st.session_state.get("class_nick", ""), seat=_seat())
    except ClassError as e:
        _say(e)
        return
    st.session_state.update({CODE: code, SID: sid, FOLLOW: True})
    st.session_state.pop(SECRET, None)
    st.query_params.update({"class": code, "me": sid})
    st.query_params.pop("teacher", None)


def lock_class() -> None:
    try:
        store().lock(st.session_state[CODE], st.session_state.get(SECRET), bool(st.session_state.get("class_lock")))
    except ClassError as e:
        _say(e)


def remove_seats() -> None:
    try:
        for sid in st.session_state.get("class_remove_pick") or []:
            store().remove(st.session_state[CODE], st.session_state.get(SECRET), sid)
    except ClassError as e:
        _say(e)
    st.session_state["class_remove_pick"] = []


def vote(code: str, sid: str, qid: str, key: str) -> None:
    choice = st.session_state.get(key)
    if not isinstance(choice, int):  # no vote, or a value none of the options has (a forged websocket message)
        return
    classroom_push.forget_read()  # this run reads the class with the vote in it
    try:
        store().vote(code, sid, qid, choice)
    except ClassError as e:
        _say(e)
        return
    classroom_push.poke(code)  # the teacher's count, if the teacher is on this process
    # The student's own count ("1 of 30 have answered") is in the side column, outside the step this vote redraws:
    # without this, it said "0 of 1" beside "Your vote: ..." until the student's timer (2-24 s by class size).
    classroom_push.redraw(st.session_state.get(COUNT_FRAGMENT))


def show_split(on: bool) -> None:
    try:
        store().show_split(st.session_state[CODE], st.session_state.get(SECRET), on)
    except ClassError as e:
        _say(e)


def reveal(qid: str, answer: int, token: str, step_key: str) -> None:
    try:
        store().reveal(st.session_state[CODE], st.session_state.get(SECRET), qid, int(answer))
    except ClassError as e:
        _say(e)
        return
    st.session_state.setdefault("lesson_revealed", set()).add(token)


def end() -> None:
    try:
        store().end(st.session_state[CODE], st.session_state.get(SECRET))
    except ClassError as e:
        _say(e)
    _leave()


# Plotly builds a trace type's validators the first time one is made: on a reveal 30 students' pages would all
# make their first Bar at once. Made once here, when the module is imported (a process's first Lesson run).
split_figure(("a", "b"), (1, 0), 0).to_json()
