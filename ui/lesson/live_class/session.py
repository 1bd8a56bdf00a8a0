"""This session's place in a live class: the teacher (the class's secret) or a student (a seat id), read from the
session and the address, and the class as last read from the store (`follow`).

The teacher's session holds the class's secret (and its URL, ?class=CODE&teacher=..., so a reload keeps the class); a
student's holds their id (?class=CODE&me=..., so a closed laptop reopened keeps its vote). A store that does not
answer drops nothing: the page says it is reconnecting and the next run after the store answers resumes the class."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import streamlit as st

import classroom
from classroom import ClassError, View
from ui import state
from ui.lesson.content import STEPS
from ui.lesson.live_class import push, reads
from ui.lesson.state import pair_key, text_key

TICK = 0.5  # seconds between the projector's reads of the class: a vote reaches it within about this


# A student's vote box re-reads the class this often: the count of answers, and a fallback for a step change the
# server's push missed (one timer per student).
STUDENT_TICK = 2.0


# ... and no faster than this many students' ticks a second in all, so that a large class's timers do not hold up
# the pushed runs of a step change (docs/benchmarks.md, "A lecture hall"). What waits is only the count of answers
# on a student's page: a step change and a reveal are pushed, and a vote redraws the student's own page.
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
    whole class's reruns every `tick` seconds, which a step change or a vote meets or not."""
    return tick * (1.0 + 0.5 * (zlib.crc32(sid.encode()) % 1024) / 1024)


CODE, SECRET, SID, FOLLOW = "class_code", "class_secret", "class_sid", "class_follow"


SEEN, MSG, STALE = "class_seen", "class_msg", "class_stale"


# Session-state key: the key of the count fragment this page drew, stored by that fragment so that a vote's
# callback (which runs outside it) can rerun it, and absent where the page has no count (presenter mode).
COUNT_SHOWN = "class_count_shown"


RECONNECT, LOST = "class_reconnect", "class_lost"  # this run could not reach the store / the teacher's class is gone


RETRY = 1.0  # seconds between tries of a store that does not answer


PUBLISHED = "class_published"  # (code, step, text, pair, question id, model) this tab last published


MODEL_TRIED = "class_model_tried"  # the teacher's model this student's page was last switched to


SEAT, SEAT_KEPT, SEAT_COOKIE = "class_seat", "class_seat_kept", "bx_seat"


JOIN_FIRST = "class_join_first"  # a join link opened here, not joined yet: the join box above the step
NICK_KEPT = "class_nick_kept"  # the nickname last joined with: the join box shows it again after Leave


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


def client() -> str | None:
    """This browser's address as the class's limits count it (an IPv6 address by its /64; X-Forwarded-For believed
    only from a loopback or trusted proxy); None for this machine, which is not limited."""
    return classroom.client_address(st.context.ip_address, st.context.headers.get("X-Forwarded-For"))


def seat() -> str:
    """This browser's seat token: kept in the session, and in a cookie (a reload, a second tab, a new session). The
    store gives one seat per token in a class, and limits class starts per token."""
    token = st.session_state.get(SEAT) or classroom.clean_id(st.context.cookies.get(SEAT_COOKIE))
    if token is None:
        token = classroom.codes.new_id()
    st.session_state[SEAT] = token
    return token


def say(e: Exception) -> None:
    """A refusal, said once by the panel's next whole run. A store that does not answer, in a class: the panel
    says it is reconnecting and reruns the page once the store answers (`reconnecting`): a message would stay on
    screen after the store is back, as only a whole run redraws the panel."""
    if isinstance(e, classroom.StoreUnavailable) and st.session_state.get(CODE):
        st.session_state[RECONNECT] = st.session_state[CODE]
        return
    st.session_state[MSG] = str(e)


LEFT = "class_left"  # what to say once the page is drawn without the class (ui/lesson/roles.py moves focus)


def leave(said: str | None = "You left the class.") -> None:
    """Forget the class in this session and in the URL; `said`: the page's next run announces it and moves focus (an
    action of this tab's; None where the class went away, which the page's note says)."""
    if said:
        st.session_state[LEFT] = said
    reads.forget_here()
    for k in (CODE, SECRET, SID, SEEN, PUBLISHED):
        st.session_state.pop(k, None)
    for k in ("class", "teacher", "me"):
        st.query_params.pop(k, None)


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
                st.session_state[JOIN_FIRST] = True  # at the top of the page, above the step (a phone)
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
            elif sid and isinstance(e, classroom.NoSuchClass):
                _ended()
            else:
                say(e)
                if not secret and not sid:  # a join link: said in its join box at the top, where a phone looks
                    st.session_state["class_link_code"] = url_code
                    st.session_state[JOIN_FIRST] = True
            for k in ("class", "teacher", "me"):
                q.pop(k, None)
    elif q.get("class") is not None and not url_code:
        say(classroom.NoSuchClass())
        q.pop("class", None)
    code = st.session_state.get(CODE)
    if not code:
        reads.forget_here()
        return None
    live = Live(code, st.session_state.get(SECRET), st.session_state.get(SID), None)
    try:
        if live.teacher:
            live.view = store().view(code, secret=live.secret)
        else:  # a pushed run takes the read its process made for all its students at the class's change
            live.view = reads.read_at_push(code, live.sid) or store().view(code, sid=live.sid)
    except classroom.StoreUnavailable:
        st.session_state[RECONNECT] = code  # nothing dropped: session and address keep the class and its key
        st.session_state.pop(PUBLISHED, None)  # back, this tab publishes its step again
        return None
    except ClassError as e:
        if live.teacher:
            st.session_state[LOST] = code
        else:
            _ended() if isinstance(e, classroom.NoSuchClass) else say(e)
        leave(None)
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
            _ended(str(classroom.SeatRemoved()) if live.view.removed else
                   "This class no longer knows you: join it again.")
            leave(None)
            return None
        if live.following:
            _take_model(live.view)
            _take_step(live.view)
            reads.follow_here(store(), code, live.sid)  # the next change of step redraws this page at once
        else:
            reads.forget_here()
    return live


EXPLORING_WITHHELD = ("In a class, the model's answer comes when your teacher reveals it: switch “Follow the "
                      "teacher” back on to vote and see it with the class.")
AWAY_WITHHELD = ("The class is reconnecting: this guess stays on your page, and the model's answer comes when your "
                 "teacher reveals it.")


def answer_withheld(live: Live | None) -> str | None:
    """Why this session's own Reveal is not offered, or None: a student of a class sees the model's answers with the
    class, when the teacher reveals them, also while exploring on their own or while the class's store is away (a
    class code and a seat kept with no class read: `follow` drops them when the class ends or the seat goes)."""
    if live is not None:
        return None if live.following else EXPLORING_WITHHELD
    if st.session_state.get(CODE) and st.session_state.get(SID) and not st.session_state.get(SECRET):
        return AWAY_WITHHELD
    return None


def _ended(why: str = "") -> None:
    """A student's class is gone, or their seat: said where the vote box was (the main column, seen on a phone
    without scrolling to the class's panel) and in a toast (wherever the page is scrolled), on this run."""
    st.session_state[ENDED_NOTE] = why or ENDED


def _keep_param(k: str, v: str) -> None:
    if st.query_params.get(k) != v:
        st.query_params[k] = v


def reconnecting(code: str, present: bool = False) -> None:
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


def _take_step(v: View) -> None:
    """A following student's Lesson shows the teacher's step and sentence(s)."""
    k = min(max(v.step, 1), len(STEPS))
    st.session_state["lesson_step"] = k
    st.session_state[text_key(k)] = v.text or STEPS[k - 1].text
    if STEPS[k - 1].pair is not None:
        st.session_state[pair_key(k)] = v.pair if v.pair is not None else STEPS[k - 1].pair
    st.session_state[SEEN] = v.following


def current_model() -> str:
    """This session's model key ("" before the sidebar has chosen one)."""
    cur = st.session_state.get("current")
    return cur.model_key if cur is not None else ""


def _take_model(v: View) -> None:
    """A following student's page runs the teacher's model: the sidebar loads it on a rerun now.

    Not a model only the teacher's session has ("session:..."): the student stays on their own (the vote box says
    so). A model tried once that did not come (it failed to load here) is not tried again on every run."""
    mine = current_model()
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


def read_class(code: str, sid: str | None = None, secret: str | None = None) -> View | None:
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


def following_student(live: Live | None) -> bool:
    """A student whose page shows the teacher's step and sentence."""
    return live is not None and not live.teacher and live.following


def redraw_here(live: Live, move: dict | None = None) -> None:
    """The class's next change reruns this run's fragment (a following student's step) in this session; `move`: the
    run's focus and announcement, carried by the same listener."""
    push.redraw_here(store(), live.code, live.sid, move)
