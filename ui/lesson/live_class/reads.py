"""What a class's change reads once per process for all its following students here.

The store tells each process of a class's change (`ClassStore.watch`: the in-process store directly, Redis over
pub/sub); the process first reads the class once for all of its students who follow it (one round trip to Redis,
not one per student's run), then publishes the event (push.py). Each run takes its seat's read if the read is fresh
(FRESH_S) and was not dropped by the seat's own vote. Bounded in bytes: a read counts its texts' length and RESERVE
bytes more.
"""

from __future__ import annotations

import threading
import time

import streamlit as st

import classroom
from server.events import HUB

FOLLOWING = "class_push_following"  # session state: (code, sid) this session's Lesson follows, for forget_here
SEEN = "class_push_seen"  # session state: (code, the class's event number when this run began to read the class)
FOLLOW_TTL = 600.0  # seconds a follower not seen in a run is still read for at a change
MAX_FOLLOWERS = 20_000  # seats read for at a change, per process (a few hundred bytes each)

_lock = threading.Lock()
_followers: dict[str, dict[str, float]] = {}  # class code -> seat id -> when a run of it last followed the class

# The reads made at a class's change: (code, seat id) -> (when, bytes, view)
FRESH_S, FRESH_BYTES, RESERVE = 2.0, 4 * 2**20, 1024
_fresh: dict[tuple[str, str], tuple[float, int, classroom.View]] = {}
_fresh_bytes = [0]


def _forget_read(key: tuple[str, str]) -> None:
    """Drop a seat's read of its class. Hold _lock."""
    entry = _fresh.pop(key, None)
    if entry is not None:
        _fresh_bytes[0] -= entry[1]


def _read_for(store: classroom.ClassStore, code: str) -> None:
    """Read class `code` for this process's followers of it in one call of the store (in the thread that heard the
    change, before the change's event goes out)."""
    now = time.monotonic()
    with _lock:
        seats = sorted(s for s, seen in _followers.get(code, {}).items() if now - seen <= FOLLOW_TTL)
    if not seats:
        return
    try:
        views = store.views(code, seats)
    except classroom.ClassError:
        return  # each run reads the class itself, and says what is wrong
    with _lock:
        for key in [k for k, e in _fresh.items() if now - e[0] > FRESH_S]:
            _forget_read(key)
        for sid in seats:
            _forget_read((code, sid))  # an older read must not serve this change's runs
            v = views.get(sid)
            if v is None:
                continue
            size = RESERVE + len(v.text) + len(v.pair or "") + (len(v.question.payload()) if v.question else 0)
            if _fresh_bytes[0] + size > FRESH_BYTES:
                continue  # that run reads the class itself
            _fresh[(code, sid)] = (now, size, v)
            _fresh_bytes[0] += size


def read_at_push(code: str, sid: str | None) -> classroom.View | None:
    """Student `sid`'s read of class `code` made at the class's last change, if fresh (taken: a later run reads).

    Called just before the run reads the class: the class's event number now is what the run's listener has seen (a
    change after it reruns the step again; one before it is in the read)."""
    st.session_state[SEEN] = (code, HUB.seq(f"step:{code}"))
    if not sid:
        return None
    with _lock:
        entry = _fresh.get((code, sid))
        _forget_read((code, sid))
    if entry is None or time.monotonic() - entry[0] > FRESH_S:
        return None
    return entry[2]


def forget_read() -> None:
    """This session's seat's read of its class is out of date (its student voted)."""
    mine = st.session_state.get(FOLLOWING)
    if mine is not None:
        with _lock:
            _forget_read(tuple(mine))


def follow_here(store: classroom.ClassStore, code: str, sid: str) -> None:
    """This session (student `sid` of class `code`) shows the class's step: read for it at the class's changes."""
    HUB.watch(store, before=lambda changed: _read_for(store, changed))
    now = time.monotonic()
    with _lock:
        old = st.session_state.get(FOLLOWING)
        if old is not None and tuple(old) != (code, sid):
            _drop(*old)
        seats = _followers.setdefault(code, {})
        if sid not in seats and sum(len(s) for s in _followers.values()) >= MAX_FOLLOWERS:
            for c, members in list(_followers.items()):  # the seats not seen longest are let go first
                for s, seen in list(members.items()):
                    if now - seen > FOLLOW_TTL:
                        _drop(c, s)
        seats[sid] = now
    st.session_state[FOLLOWING] = (code, sid)


def _drop(code: str, sid: str) -> None:
    """Seat `sid` no longer follows class `code` here. Hold _lock."""
    members = _followers.get(code)
    if members is not None and members.pop(sid, None) is not None and not members:
        del _followers[code]
    _forget_read((code, sid))


def forget_here() -> None:
    """This session no longer follows a class here (left, explores on its own, or opened another page)."""
    mine = st.session_state.pop(FOLLOWING, None)
    if mine is not None:
        with _lock:
            _drop(*mine)
