"""The server redraws a following student's Lesson the moment the teacher moves: no student asks every second.

A following student's Lesson run records where it is (`follow_here(code)`). When the class's step, sentence,
question or reveal changes, the store tells this process (`ClassStore.watch`: the in-process store directly,
Redis over pub/sub, so every process behind the proxy hears it) and each of this process's students of that
class gets a rerun requested by the server, the way Streamlit's own run-on-save reruns an open page
(`AppSession.request_rerun`, from a thread that is not the session's). The students' fragment timers are then
only for the vote count and a fallback; a student who leaves the Lesson, stops following or closes the tab is
dropped.
"""

from __future__ import annotations

import threading

from streamlit import runtime
from streamlit.proto.ClientState_pb2 import ClientState
from streamlit.runtime.scriptrunner import get_script_run_ctx

import classroom

_lock = threading.Lock()
_followers: dict[str, dict[str, tuple[str, str]]] = {}  # class code -> session id -> (query string, page hash)
_watched: set[int] = set()  # id() of the stores whose changes reach push()


def _session() -> tuple[str, str, str] | None:
    """(session id, query string, page hash) of this run; None outside a server (AppTest, a bare script)."""
    ctx = get_script_run_ctx()
    if ctx is None or not runtime.exists():
        return None
    return ctx.session_id, ctx.query_string, ctx.page_script_hash


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
        _followers.setdefault(code, {})[me[0]] = me[1:]


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
    for sid, (query, page) in targets:
        session = rt.get_app_session(sid)
        if session is None:  # the tab was closed
            with _lock:
                _drop(sid)
            continue
        # No widget states: the session keeps its own (as st.rerun does); no fragment id: the whole page.
        session.request_rerun(ClientState(query_string=query, page_script_hash=page))
        asked += 1
    return asked
