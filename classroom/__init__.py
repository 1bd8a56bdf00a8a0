"""A live class: the shared state of a teacher's lesson and its students' votes (not about BERT).

    store = classroom.open_store()        # BERT_EXPLORER_CLASS_STORE: unset / "memory", or redis://host:port/db
    code, secret = store.create(client=address, device=token)   # limited per address and browser (limits.py)
    sid = store.join(code, "Ada", seat=token, client=address)     # a student; address = client_address(ip, xff)
    store.publish(code, secret, 4, "She [MASK] the letter.", None, Question("q1", "Top guess?", ("wrote", "sent")))
    store.vote(code, sid, "q1", 0); store.reveal(code, secret, "q1", 0)

The Lesson's widgets for it are in ui/lesson/live_class/. This package imports neither streamlit, ui nor
bert_core (pyproject.toml's contracts), and bert_core knows nothing of it.
"""

from __future__ import annotations

import os
import threading

from classroom.codes import clean_code, clean_id, clean_nickname
from classroom.limits import client_address
from classroom.memory import MemoryStore
from classroom.store import (
    ClassError,
    ClassFull,
    ClassLocked,
    ClassStore,
    NicknameTaken,
    NoSuchClass,
    NotInClass,
    NotTeacher,
    Question,
    RateLimited,
    Result,
    SeatRemoved,
    StoreFull,
    StoreUnavailable,
    View,
    VoteCap,
    VotingClosed,
)

ENV = "BERT_EXPLORER_CLASS_STORE"
_stores: dict[str, ClassStore] = {}
_lock = threading.Lock()


def open_store(spec: str | None = None) -> ClassStore:
    """The process's class store for `spec` (default: $BERT_EXPLORER_CLASS_STORE): one per spec, made once."""
    spec = (os.environ.get(ENV, "") if spec is None else spec).strip() or "memory"
    with _lock:
        if spec not in _stores:
            if spec == "memory":
                _stores[spec] = MemoryStore()
            elif spec.startswith(("redis://", "rediss://", "unix://")):
                from classroom.redis_store import RedisStore

                _stores[spec] = RedisStore(spec)
            else:
                raise ValueError(f"{ENV} must be 'memory' or a redis:// URL, not {spec[:80]!r}")
        return _stores[spec]


__all__ = ["ClassError", "ClassFull", "ClassLocked", "ClassStore", "MemoryStore", "NicknameTaken", "NoSuchClass",
           "NotInClass", "NotTeacher", "Question", "RateLimited", "Result", "SeatRemoved", "StoreFull",
           "StoreUnavailable", "View", "VoteCap", "VotingClosed", "clean_code", "clean_id", "clean_nickname",
           "client_address", "open_store"]
