"""What a run asks of whoever else runs in its process: a slot to step in, and a ledger for the bytes it holds.

A run is given both (`TrainingSession(slots=..., memory=...)`). The app's server passes its process-wide slot
cap and byte budget (server/slots.py, server/ledger.py), which bert_core never imports; a notebook has one user
and passes nothing, so a run gets `OwnSlots` (a slot whenever it asks) and `Unmetered` (its bytes counted, no
budget). No streamlit here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol


class Slots(Protocol):
    """Who may step now: `request` renews `sid`'s claim and answers 0 (step) or its place in line."""

    def request(self, sid: str) -> int: ...

    def release(self, sid: str) -> None: ...

    def position(self, sid: str) -> int | None:
        """0 holding a slot, n waiting n-th in line, None neither."""


class Ledger(Protocol):
    """Bytes held per key (a run, a copy) under a budget (`max_bytes`, None for none); what does not fit is refused
    (a BertCoreError from `reserve`) or waits in line (`request` answers its place, 0 when reserved)."""

    max_bytes: int | None
    idle_seconds: float  # an entry untouched this long may be evicted (its `evict` called) to make room

    def reserve(self, key: str, nbytes: int, what: str, evict: Callable[[], bool] | None = None,
                token: str | None = None) -> None: ...

    def request(self, key: str, nbytes: int, what: str, evict: Callable[[], bool] | None = None,
                token: str | None = None) -> int: ...

    def position(self, key: str) -> int | None: ...

    def cancel(self, key: str) -> None: ...

    def resize(self, key: str, nbytes: int) -> bool: ...

    def touch(self, key: str) -> None: ...

    def release(self, key: str, token: str | None = None) -> None: ...

    def held(self, key: str) -> int: ...

    def usage(self) -> tuple[int, int | None, int]:
        """(bytes held, the budget or None, entries)."""


class OwnSlots:
    """A slot whenever a run asks: nobody else shares the process (a notebook)."""

    def __init__(self) -> None:
        self._holders: set[str] = set()

    def request(self, sid: str) -> int:
        self._holders.add(sid)
        return 0

    def release(self, sid: str) -> None:
        self._holders.discard(sid)

    def position(self, sid: str) -> int | None:
        return 0 if sid in self._holders else None


class Unmetered:
    """Counts what each key holds, with no budget: nothing is refused, waits or is evicted (a notebook)."""

    max_bytes = None
    idle_seconds = math.inf

    def __init__(self) -> None:
        self._held: dict[str, tuple[int, str | None]] = {}  # key -> (bytes, the holder's token)

    def reserve(self, key: str, nbytes: int, what: str, evict: Callable[[], bool] | None = None,
                token: str | None = None) -> None:
        self._held[key] = (nbytes, token)

    def request(self, key: str, nbytes: int, what: str, evict: Callable[[], bool] | None = None,
                token: str | None = None) -> int:
        self.reserve(key, nbytes, what, evict, token)
        return 0

    def position(self, key: str) -> int | None:
        return None

    def cancel(self, key: str) -> None:
        pass

    def resize(self, key: str, nbytes: int) -> bool:
        if key not in self._held:
            return False
        self._held[key] = (nbytes, self._held[key][1])
        return True

    def touch(self, key: str) -> None:
        pass

    def release(self, key: str, token: str | None = None) -> None:
        if key in self._held and (token is None or self._held[key][1] == token):
            del self._held[key]

    def held(self, key: str) -> int:
        return self._held.get(key, (0, None))[0]

    def usage(self) -> tuple[int, int | None, int]:
        return sum(n for n, _ in self._held.values()), None, len(self._held)


__all__ = ["Ledger", "OwnSlots", "Slots", "Unmetered"]
