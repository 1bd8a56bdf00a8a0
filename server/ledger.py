"""The process-wide byte budget for what users' runs hold: the models they train, Adam's moments, their copies.

No streamlit here. The app gives every training or fine-tuning run `MEMORY` as its ledger (bert_core's
`runs.sharing.Ledger`), and the run reserves its bytes there before it is built, as does every "Use this model"
copy. What does not fit is refused with a plain message, after first dropping runs
nobody has touched for `IDLE_EVICT_SECONDS` (their owners are told why on their next visit). An entry frees
itself when its owner is garbage-collected, so a closed tab's session gives its bytes back. A run that does not fit
waits in a first-come queue instead (`request`), with its place shown, and starts when bytes come free.

Why a ledger and not RSS: a class of 30 each pausing a medium run (76 MB of weights and Adam moments) and
keeping a copy (25 MB) holds about 3 GB, more than a 2.7 GB Streamlit Cloud container; the ledger stops the
31st run before it is allocated, where RSS would only tell us afterwards.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from bert_core.errors import BertCoreError
from bert_core.runs.memory import MB, format_mb
from server.heap import collect_garbage

# Beside bert-base (~0.5 GB), the analysis cache (400 MB) and the server: docs/benchmarks.md. 1,000 MB holds three runs
# fine-tuning the bundled MiniLM's weights (~0.29 GB each: weights, gradients, AdamW, activations); a fourth waits.
DEFAULT_SESSION_MB = 1000
IDLE_EVICT_SECONDS = 600.0  # a run untouched this long may be dropped to make room for someone else
WAIT_LEASE_SECONDS = 30.0  # a place in the memory queue lapses after this long without a call (a closed tab)


def budget_bytes() -> int:
    """The budget from `BERT_EXPLORER_SESSION_MB` (default DEFAULT_SESSION_MB)."""
    raw = os.environ.get("BERT_EXPLORER_SESSION_MB", "").strip()
    try:
        mb = float(raw) if raw else DEFAULT_SESSION_MB
    except ValueError:
        mb = DEFAULT_SESSION_MB
    return int(max(mb, 0) * MB)


class MemoryFull(BertCoreError):
    """The request would fit the budget, but not beside what users' runs and copies hold now."""


@dataclass
class _Entry:
    nbytes: int
    what: str  # "a training run", "a copy of your model", ...
    last: float  # last touch (clock)
    evict: Callable[[], bool] | None  # drops the owner's state; False when it cannot now (busy)
    token: str | None = None  # which holder of the key: release(key, token) frees only its own


class SessionMemory:
    """A ledger of bytes per key (a run, a copy) under one budget, and a first-come queue for what does not fit.

    Example (budget 100 bytes): reserve("a", 60, "a run") fits; reserve("b", 60, "a run") raises, unless "a"
    is evictable and was idle for `idle_seconds`, in which case "a" is dropped and "b" fits. request("b", ...)
    instead returns b's place in the queue (1) and keeps it while b asks again at least every `wait_lease`
    seconds; once "a" is released, b's next request reserves (0).
    """

    def __init__(self, max_bytes: int | None = None, idle_seconds: float = IDLE_EVICT_SECONDS,
                 clock: Callable[[], float] = time.monotonic, wait_lease: float = WAIT_LEASE_SECONDS):
        self.max_bytes = budget_bytes() if max_bytes is None else max_bytes
        self.idle_seconds = idle_seconds
        self.wait_lease = wait_lease
        self.clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._waiting: dict[str, float] = {}  # key -> its last request (clock); insertion order is the queue

    def used(self) -> int:
        return self.usage()[0]

    def usage(self) -> tuple[int, int, int]:
        """(bytes held, the budget, entries)."""
        with self._lock:
            return sum(e.nbytes for e in self._entries.values()), self.max_bytes, len(self._entries)

    def held(self, key: str) -> int:
        with self._lock:
            e = self._entries.get(key)
            return e.nbytes if e else 0

    def _idle_victims(self, key: str) -> list[_Entry]:
        now = self.clock()
        idle = [e for k, e in self._entries.items()
                if k != key and e.evict is not None and now - e.last >= self.idle_seconds]
        return sorted(idle, key=lambda e: e.last)  # least recently touched first

    def reserve(self, key: str, nbytes: int, what: str, evict: Callable[[], bool] | None = None,
                token: str | None = None) -> None:
        """Hold `nbytes` under `key` (replacing what `key` held), or raise BertCoreError when they do not fit.

        Idle evictable entries are dropped, oldest first, until the request fits. The callbacks run
        outside the ledger's lock: an owner's callback takes the owner's lock, and owners call the ledger
        while holding theirs.
        """
        if nbytes > self.max_bytes:
            raise BertCoreError(
                f"{what} needs about {format_mb(nbytes)}, more than this server's {format_mb(self.max_bytes)} "
                "for users' models (BERT_EXPLORER_SESSION_MB): pick a smaller model"
            )
        collected = False
        for _ in range(4):  # an owner may be busy (not evicted) or others may reserve meanwhile
            with self._lock:
                others = sum(e.nbytes for k, e in self._entries.items() if k != key)
                if others + nbytes <= self.max_bytes:
                    self._entries[key] = _Entry(nbytes, what, self.clock(), evict, token)
                    return
                need, victims = others + nbytes - self.max_bytes, []
                for e in self._idle_victims(key):
                    if need <= 0:
                        break
                    victims.append(e.evict)
                    need -= e.nbytes
                if need > 0 and collected:
                    n = len(self._entries) - (key in self._entries)
                    raise MemoryFull(
                        f"this server's memory for users' models is full: their runs and copies ({n}) hold "
                        f"{format_mb(others)} of {format_mb(self.max_bytes)}, and {what} needs about "
                        f"{format_mb(nbytes)}. Try again in a few minutes (runs idle for "
                        f"{self.idle_seconds / 60:g} minutes make room), or reset a run you no longer need."
                    )
            if need > 0:
                # A closed tab's run sits in reference cycles (model, optimizer, hooks) and Streamlit's post-run
                # collection is off (.streamlit/config.toml): collect once, so finalizers give its bytes back.
                collect_garbage()
                collected = True
                continue
            for ev in victims:
                ev()  # calls release() for its own key when it drops its state
        raise MemoryFull(f"this server's memory for users' models is busy; try {what} again in a moment")

    def request(self, key: str, nbytes: int, what: str, evict: Callable[[], bool] | None = None,
                token: str | None = None) -> int:
        """Reserve as `reserve` does, or wait in line: 0 when reserved, else `key`'s place in the queue (1 = next).

        First come, first served: a request reserves only when nobody who asked earlier is still waiting, so a
        large run is not starved by smaller ones. Asking again renews the place; a place not renewed for
        `wait_lease` seconds lapses (its tab was closed). What can never fit (more than the whole budget) raises.
        """
        with self._lock:
            now = self.clock()
            for k in [k for k, t in self._waiting.items() if now - t > self.wait_lease and k != key]:
                del self._waiting[k]
            if key in self._waiting:
                self._waiting[key] = now
            ahead = next((i for i, k in enumerate(self._waiting) if k == key), len(self._waiting))
        if ahead == 0:
            try:
                self.reserve(key, nbytes, what, evict, token)
            except MemoryFull:
                pass
            else:
                self.cancel(key)
                return 0
        with self._lock:
            self._waiting.setdefault(key, self.clock())
            return list(self._waiting).index(key) + 1

    def position(self, key: str) -> int | None:
        """`key`'s place in the memory queue (1 = next), or None when it is not waiting."""
        with self._lock:
            return list(self._waiting).index(key) + 1 if key in self._waiting else None

    def waiting(self) -> int:
        with self._lock:
            return len(self._waiting)

    def cancel(self, key: str) -> None:
        """Leave the memory queue (no-op when not in it)."""
        with self._lock:
            self._waiting.pop(key, None)

    def resize(self, key: str, nbytes: int) -> bool:
        """Change what `key` holds without evicting anyone; False (unchanged) when growing would not fit."""
        with self._lock:
            e = self._entries.get(key)
            if e is None:
                return False
            others = sum(x.nbytes for k, x in self._entries.items() if k != key)
            if nbytes > e.nbytes and others + nbytes > self.max_bytes:
                return False
            e.nbytes, e.last = nbytes, self.clock()
            return True

    def touch(self, key: str) -> None:
        """Mark `key` as in use now (an idle entry may be evicted, a touched one not)."""
        with self._lock:
            e = self._entries.get(key)
            if e is not None:
                e.last = self.clock()

    def release(self, key: str, token: str | None = None) -> None:
        """Forget `key` (no-op when it holds nothing, or when `token` is given and another holder has it now)."""
        with self._lock:
            e = self._entries.get(key)
            if e is not None and (token is None or e.token == token):
                del self._entries[key]


MEMORY = SessionMemory()

__all__ = ["DEFAULT_SESSION_MB", "IDLE_EVICT_SECONDS", "MEMORY", "MemoryFull", "SessionMemory", "WAIT_LEASE_SECONDS",
           "budget_bytes"]
