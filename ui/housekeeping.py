"""Give memory back once a class has left: reap closed sessions, collect, and trim the heap when idle.

Three things kept a server's memory up long after its tabs had closed (benchmarks/class_memory.py):
- Streamlit keeps a closed tab's session for `server.disconnectedSessionTTL` (120 s) so a reconnect
  finds it, but its store drops expired sessions only when another session is stored: after the
  last student leaves, nothing is ever stored again, so every session stays.
- A page run leaves its namespace as cyclic garbage (page functions refer to their globals), and
  `.streamlit/config.toml` turns Streamlit's collection after every run off (it cost most of the
  GIL under a class); Python's own full collections are rare in a heap this size.
- glibc keeps freed small blocks in its arenas unless asked to trim.
So one daemon thread per process, every `period` s: reap expired sessions; and once the app has
been idle (no page run started) for `idle` s after some run, one `gc.collect()` and one
`malloc_trim(0)`. It does nothing while a class is working.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import threading
import time
import urllib.parse

log = logging.getLogger("bert_explorer.housekeeping")

PERIOD_S = 15.0
IDLE_S = 20.0

_last_run = 0.0  # time.monotonic() of the latest page run
_dirty = False  # a run happened (or closed sessions were dropped) since the last collection
_stored = 0  # closed sessions Streamlit still kept at the last pass


def note_run() -> None:
    """Called at the top of every app run (cheap): the idle collector waits until these stop."""
    global _last_run, _dirty
    _last_run, _dirty = time.monotonic(), True


def reap_closed_sessions() -> int | None:
    """Drop the sessions whose tabs closed more than `server.disconnectedSessionTTL` ago; how many remain stored.

    None when this Streamlit has no such store (then there is nothing to do here).
    """
    try:
        from streamlit.runtime import Runtime

        if not Runtime.exists():
            return None
        cache = Runtime.instance()._session_mgr._session_storage._cache  # a TTLCache of stored sessions
        cache.expire()
        return len(cache)
    except AttributeError:  # another Streamlit: its storage is laid out differently
        return None


def _malloc_trim() -> bool:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.malloc_trim(0))
    except (OSError, AttributeError):  # not glibc
        return False


def tidy(now: float | None = None, idle: float = IDLE_S) -> bool:
    """One housekeeping pass; True when it collected (idle `idle` s since a run, after runs or dropped sessions)."""
    global _dirty, _stored
    stored = reap_closed_sessions()
    if stored is not None and stored < _stored:  # sessions were dropped: their objects are garbage now
        _dirty = True
    _stored = stored if stored is not None else 0
    now = time.monotonic() if now is None else now
    if not _dirty or now - _last_run < idle:
        return False
    _dirty = False
    t = time.perf_counter()
    urllib.parse.urlsplit.cache_clear()  # it keeps its last 128 arguments: ui.widgets.html_document says why
    found = gc.collect()
    trimmed = _malloc_trim()
    log.info("housekeeping: idle %.0f s: collected %d objects, heap trimmed: %s (%.0f ms)",
             now - _last_run, found, trimmed, 1000 * (time.perf_counter() - t))
    return True


def _loop(period: float) -> None:
    while True:
        time.sleep(period)
        try:
            tidy()
        except Exception:  # never let housekeeping take the server down
            log.exception("housekeeping failed")


_started = False
_lock = threading.Lock()


def start(period: float = PERIOD_S) -> bool:
    """Start the process's housekeeping thread once; True the first time."""
    global _started
    with _lock:
        if _started:
            return False
        _started = True
    threading.Thread(target=_loop, args=(period,), name="bert-explorer-housekeeping", daemon=True).start()
    return True
