"""The server redraws a following student's Lesson the moment the teacher moves: no student asks every second.

A following student's Lesson runs as one fragment (`run_page`): the page's body, from its header to its class
panel, everything that changes with the teacher's step. Its run records where it is (`follow_here(code)`, with
that fragment's id). When the class's step, sentence, question or reveal changes, the store tells this process
(`ClassStore.watch`: the in-process store directly, Redis over pub/sub, so every process behind the proxy hears
it) and each of this process's students of that class gets a rerun of that fragment requested by the server, as
a browser requests a fragment's rerun (`AppSession.request_rerun` with the fragment's id, from a thread that is
not the session's): app.py, the navigation and the sidebar do not run again for a step change (a quarter of a
whole rerun, in a profile of a class of 60). A page not run as a fragment (no server) is rerun whole. The
students' fragment timers are then only for the vote count and a fallback; a student who leaves the Lesson,
stops following or closes the tab is dropped.
"""

from __future__ import annotations

import threading
from pathlib import Path

import streamlit as st
from streamlit import runtime
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime.scriptrunner import get_script_run_ctx
from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

import classroom

LESSON = Path(__file__).resolve().parent.parent / "views" / "lesson.py"  # the page st.Page("views/lesson.py") runs
LESSON_PATHS = ("", "start", "lesson")  # its url paths (the landing page, and /lesson)
# A following student (the keys ui/classroom_ui.py keeps in the session): a class's code and a student's id, and
# "Follow the teacher" not switched off.
CODE, SID, SECRET, FOLLOW = "class_code", "class_sid", "class_secret", "class_follow"

_lock = threading.Lock()
# class code -> session id -> (query string, page hash, id of the fragment the Lesson runs in, "" for none)
_followers: dict[str, dict[str, tuple[str, str, str]]] = {}
_watched: set[int] = set()  # id() of the stores whose changes reach push()


def _session() -> tuple[str, str, str, str] | None:
    """(session id, query string, page hash, running fragment's id or "") of this run; None outside a server."""
    ctx = get_script_run_ctx()
    if ctx is None or not runtime.exists():
        return None
    return ctx.session_id, ctx.query_string, ctx.page_script_hash, ThreadState.get().fragment_id or ""


def following_student() -> bool:
    """This session is a student of a class who follows the teacher (as it stood before this run)."""
    s = st.session_state
    return bool(s.get(CODE)) and bool(s.get(SID)) and not s.get(SECRET) and s.get(FOLLOW, True) is not False


def run_page(nav) -> None:
    """`nav.run()`; a following student's Lesson as one fragment, which the class's push reruns alone.

    The fragment runs the page's file as `nav.run()` does (same code, the page's script hash, so its widgets keep
    their ids and values); a widget of the page then reruns that fragment too, and anything that needs the whole
    app (another model, a page switch) calls st.rerun(), which reruns it whole."""
    ctx = get_script_run_ctx()
    if ctx is None or nav.url_path not in LESSON_PATHS or not following_student():
        nav.run()
        return
    with ctx.run_with_active_hash(nav._script_hash):  # what nav.run() sets: widgets' ids hash the page's
        _lesson(str(LESSON))


@st.fragment
def _lesson(path: str) -> None:
    """The Lesson page's file, run in this fragment (the class's push reruns it)."""
    ctx = get_script_run_ctx()
    code = ctx.pages_manager.get_page_script_byte_code(path)  # compiled once per process (Streamlit's cache)
    page = {"__name__": "__main__", "__file__": path}  # a fresh module namespace, as nav.run() gives the page
    exec(code, page)  # noqa: S102 - our own page, as Streamlit's nav.run() executes it


def _drop(sid: str, keep: str | None = None) -> None:
    """Take session `sid` out of every class but `keep` (a class left with nobody goes). Hold _lock."""
    for c, members in list(_followers.items()):
        if c != keep and members.pop(sid, None) is not None and not members:
            del _followers[c]


def follow_here(store: classroom.ClassStore, code: str) -> None:
    """This session shows class `code`'s step: redraw it when the class changes."""
    me = _session()
    if me is None:
        return
    with _lock:
        if id(store) not in _watched:
            store.watch(push)
            _watched.add(id(store))
        _drop(me[0], keep=code)  # one class per session
        _followers.setdefault(code, {})[me[0]] = me[1:]  # the fragment this run is in: the Lesson's, or none


def forget_here() -> None:
    """This session no longer follows a class here (left, explores on its own, or opened another page)."""
    me = _session()
    if me is None:
        return
    with _lock:
        _drop(me[0])


def push(code: str) -> int:
    """Request a rerun of every session of this process that follows `code`; returns how many were asked."""
    with _lock:
        targets = list(_followers.get(code, {}).items())
    if not targets or not runtime.exists():
        return 0
    rt, asked = runtime.get_instance(), 0
    for sid, (query, page, fragment) in targets:
        session = rt.get_app_session(sid)
        if session is None:  # the tab was closed
            with _lock:
                _drop(sid)
            continue
        # No widget states: the session keeps its own (as st.rerun does). A fragment id: only the Lesson's
        # fragment reruns (a session that no longer has it, after a whole run, ignores the request; that run
        # recorded the fragment again or forgot the class). No fragment id: the whole page.
        session.request_rerun(ClientState(query_string=query, page_script_hash=page, fragment_id=fragment))
        asked += 1
    return asked
