"""The process-wide cap on how many users' runs train at once: slots on a lease, a first-come queue.

Every user of one server process shares `SLOTS` (the app gives it to every run as its bert_core
`runs.sharing.Slots`), so a few people training at once cannot starve everybody else of CPU. No streamlit here.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable


def _env_number(name: str, default: int | float, least: int | float):
    """The setting `name` as a number of `default`'s type, at least `least`; `default` when unset or not a number."""
    try:
        return max(least, type(default)(os.environ.get(name, default)))
    except ValueError:
        return default


MAX_CONCURRENT_TRAINING = _env_number("BERT_EXPLORER_MAX_TRAINING", 2, least=1)  # sessions stepping at the same time
# A slot (or a place in the queue) lapses after this long without a call. At least 10 s: a waiting page asks
# every 5 s, and must not lose its place between two asks.
LEASE_SECONDS = _env_number("BERT_EXPLORER_SLOT_LEASE", 30.0, least=10.0)


class SlotManager:
    """At most `capacity` sessions train at once; the others wait in a first-come, first-served queue.

    A session holds its slot (or its place in the queue) on a lease: every `request` renews it,
    and one not renewed for `lease_seconds` lapses, so a closed browser tab frees its slot.

    Example (capacity 1): request("a") -> 0 (training), request("b") -> 1 (first in line),
    release("a"), request("b") -> 0.
    """

    def __init__(self, capacity: int = MAX_CONCURRENT_TRAINING, lease_seconds: float = LEASE_SECONDS,
                 clock: Callable[[], float] = time.monotonic):
        self.capacity = capacity
        self.lease_seconds = lease_seconds
        self.clock = clock
        self._lock = threading.Lock()  # sessions run in different script threads
        self._holders: dict[str, float] = {}  # session id -> last call
        self._queue: dict[str, float] = {}  # session id -> last call, in arrival order

    def _expire(self, now: float) -> None:
        for d in (self._holders, self._queue):
            for sid in [s for s, t in d.items() if now - t > self.lease_seconds]:
                del d[sid]

    def request(self, sid: str) -> int:
        """Renew `sid`'s lease; 0 when it holds a slot, else its 1-based place in the queue."""
        with self._lock:
            now = self.clock()
            self._expire(now)
            if sid in self._holders:
                self._holders[sid] = now
                return 0
            self._queue[sid] = now  # keeps its place if it was already waiting
            free = self.capacity - len(self._holders)
            place = list(self._queue).index(sid)
            if place < free:  # only the first `free` in line may take a free slot
                del self._queue[sid]
                self._holders[sid] = now
                return 0
            return place + 1 - max(free, 0)

    def release(self, sid: str) -> None:
        """Give up `sid`'s slot or its place in the queue (no-op when it has neither)."""
        with self._lock:
            self._holders.pop(sid, None)
            self._queue.pop(sid, None)

    def position(self, sid: str) -> int | None:
        """0 holding a slot, n waiting n-th in line, None neither (without renewing the lease)."""
        with self._lock:
            self._expire(self.clock())
            if sid in self._holders:
                return 0
            if sid in self._queue:
                return list(self._queue).index(sid) + 1 - max(self.capacity - len(self._holders), 0)
            return None

    def counts(self) -> tuple[int, int]:
        """(sessions training, sessions waiting)."""
        with self._lock:
            self._expire(self.clock())
            return len(self._holders), len(self._queue)


SLOTS = SlotManager()
