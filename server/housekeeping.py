"""Give memory back once a class has left: reap closed sessions, collect, and trim the heap when idle.

Three things kept a server's memory up long after its tabs had closed (benchmarks/class_memory.py):
- Streamlit keeps a closed tab's session for `server.disconnectedSessionTTL` (120 s) so a reconnect
  finds it, but its store drops expired sessions only when another session is stored: after the
  last student leaves, nothing is ever stored again, so every session stays.
- A page run leaves its namespace as cyclic garbage (page functions refer to their globals), and
  `.streamlit/config.toml` turns Streamlit's collection after every run off (it cost most of the
  GIL under a class); Python's own full collections are rare while the app is idle.
- glibc keeps freed small blocks in its arenas unless asked to trim.
So one daemon thread per process, every `period` s: reap expired sessions; and once the app has
been idle (no page run started) for `idle` s after some run, one full collection and one
`malloc_trim(0)`. It does nothing while a class is working, but one thing:

Python's own full collections walk the whole heap, and a server's heap is mostly what stays (torch,
transformers, plotly and Streamlit's modules, the model), under the interpreter lock, so a step change that
meets one reaches every student late (docs/benchmarks.md). So the heap that has settled is frozen
(`gc.freeze()`: Python's collections skip it): whenever modules were imported since the
last freeze (looked for every SETTLE_S s, so that a class started with the server meets a frozen heap; what is
not frozen yet is collected first, and what lives of it frozen), and at each idle collection. A frozen object
that becomes cyclic garbage waits for the next idle collection or for one of the app's own collections, which
reach the frozen heap too (`server.heap.collect_garbage`: the caches' and the memory ledger's). Only in a
Streamlit server: the thread is started by the server's lifespan (server/app.py), never by a page run, so AppTest and
a plain import keep Python's plain collector.

The state (the last run, whether there is garbage, how many closed sessions were stored) is a `Housekeeper`'s,
not the module's: the app uses the process's `HOUSEKEEPER`, a test makes its own and no thread touches it.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable

from server.heap import collect_garbage, freeze_heap
from server.streamlit_private import reap_closed_sessions

log = logging.getLogger("bert_explorer.housekeeping")

PERIOD_S = 15.0
IDLE_S = 20.0
SETTLE_S = 2.0  # how often the thread looks for new modules to freeze (a class may start 20 s after the server)
# A pass that finds the process used more than this share of one core since the last pass counts as a run, because a
# class's step changes, votes and timers are fragment runs that never call app.py's note_run, and an idle
# collection must not land inside them.
BUSY_SHARE = 0.10


def _malloc_trim() -> bool:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.malloc_trim(0))
    except (OSError, AttributeError):  # not glibc
        return False


class Housekeeper:
    """One process's housekeeping state and its thread: `note_run` at every page run, `tidy` every `period` s.

    reap: what reaps closed sessions and says how many stay stored (`reap_closed_sessions`; a test gives its own).
    freeze: whether to freeze the settled heap (the server's housekeeper: always; a test gives its own).
    cpu: the process's CPU seconds so far (`time.process_time` for the app's); None: runs are only `note_run`'s.
    """

    def __init__(self, reap: Callable[[], int | None] | None = None, freeze: Callable[[], bool] | None = None,
                 cpu: Callable[[], float] | None = None):
        self.reap = reap or reap_closed_sessions
        self.freeze = freeze or (lambda: False)
        self.cpu = cpu
        self._cpu_seen: tuple[float, float] | None = None  # (CPU seconds, time.monotonic()) at the last pass
        self.frozen_modules = 0  # len(sys.modules) at the last freeze (0: none yet)
        self.last_run = 0.0  # time.monotonic() of the latest page run
        self.dirty = False  # a run happened (or closed sessions were dropped) since the last collection
        self.stored = 0  # closed sessions Streamlit still kept at the last pass
        self._lock = threading.Lock()  # page runs (script threads) and the housekeeping thread share the state
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()  # the running thread's own: a restarted thread gets a fresh one

    def note_run(self) -> None:
        """Called at the top of every app run (cheap): the idle collector waits until these stop."""
        with self._lock:
            self.last_run, self.dirty = time.monotonic(), True

    def tidy(self, now: float | None = None, idle: float = IDLE_S) -> bool:
        """One pass; True when it collected (idle `idle` s since a run, after runs or dropped sessions)."""
        stored = self.reap()
        with self._lock:
            if stored is not None and stored < self.stored:  # sessions were dropped: their objects are garbage now
                self.dirty = True
            self.stored = stored if stored is not None else 0
            now = time.monotonic() if now is None else now
            if self.cpu is not None:  # busy without a whole run (fragments: a class's pushes, votes, timers)
                used, seen = self.cpu(), self._cpu_seen
                self._cpu_seen = (used, now)
                if seen is not None and used - seen[0] > BUSY_SHARE * max(now - seen[1], 0.0):
                    self.last_run = max(self.last_run, now)
            if not self.dirty or now - self.last_run < idle:
                return False
            self.dirty = False
            quiet = now - self.last_run
        t = time.perf_counter()
        urllib.parse.urlsplit.cache_clear()  # it keeps its last 128 arguments: ui.widgets.html_document says why
        freeze = self.freeze()  # what lives on after a class is what stays
        found = collect_garbage(freeze=freeze)  # the frozen heap too: what the class left is garbage now
        if freeze:
            self.frozen_modules = len(sys.modules)
        trimmed = _malloc_trim()
        log.info("housekeeping: idle %.0f s: collected %d objects, heap trimmed: %s, %d frozen (%.0f ms)",
                 quiet, found, trimmed, gc.get_freeze_count(), 1000 * (time.perf_counter() - t))
        return True

    def settle(self) -> bool:
        """Freeze the heap when modules were imported since the last freeze (collected first: only what lives is
        frozen); True when it froze. Python's full collections then skip it (the module docstring says why)."""
        modules = len(sys.modules)
        if modules == self.frozen_modules or not self.freeze():
            return False
        t = time.perf_counter()
        found = freeze_heap()  # the part not frozen yet, collected first: a freeze must not keep today's garbage
        self.frozen_modules = modules
        log.info("housekeeping: %d modules: collected %d objects, %d frozen (%.0f ms)", modules, found,
                 gc.get_freeze_count(), 1000 * (time.perf_counter() - t))
        return True

    def _loop(self, period: float, stopping: threading.Event) -> None:
        last = time.monotonic()
        while not stopping.wait(min(period, SETTLE_S)):
            try:
                if time.monotonic() - last >= period:
                    last = time.monotonic()
                    self.tidy()
                self.settle()  # every SETTLE_S s: a class that starts with the server meets a frozen heap
            except Exception:  # never let housekeeping take the server down
                log.exception("housekeeping failed")

    def start(self, period: float = PERIOD_S) -> bool:
        """Start this housekeeper's thread unless it runs; True when this call started it."""
        with self._lock:
            if self._thread is not None:
                return False
            self._stopping = threading.Event()
            self._thread = threading.Thread(target=self._loop, args=(period, self._stopping),
                                            name="bert-explorer-housekeeping", daemon=True)
            self._thread.start()
        return True

    def stop(self, timeout: float = 10.0) -> bool:
        """Stop the thread and wait for it (a pass under way finishes first); True when one was running."""
        with self._lock:
            thread, self._thread = self._thread, None
            self._stopping.set()
        if thread is None:
            return False
        thread.join(timeout)
        return True


HOUSEKEEPER = Housekeeper(freeze=lambda: True, cpu=time.process_time)  # the server's: page runs note into it


def note_run() -> None:
    """At the top of every app run: the process's housekeeper waits until these stop."""
    HOUSEKEEPER.note_run()


def start(period: float = PERIOD_S) -> bool:
    """Start the process's housekeeping thread once (the server's lifespan); True the first time."""
    return HOUSEKEEPER.start(period)


def stop() -> bool:
    """Stop the process's housekeeping thread (the server's lifespan, at shutdown)."""
    return HOUSEKEEPER.stop()
