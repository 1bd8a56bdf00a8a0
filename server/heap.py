"""The process's heap: one full garbage collection that also reaches what `gc.freeze()` set aside.

No torch, no streamlit: the memory ledger (server/ledger.py), the app's caches and its housekeeping call it.
"""

from __future__ import annotations

import gc
import threading

_collecting = threading.Lock()  # one at a time: a collection's unfreeze and freeze are a pair


def collect_garbage(freeze: bool = False) -> int:
    """One full collection that also reaches what `gc.freeze()` set aside; how many objects it found. What lives
    on is frozen again if the heap was frozen, or if `freeze`.

    A server may freeze its settled heap (server/housekeeping.py) so that Python's own full collections skip it; a
    plain `gc.collect()` then never frees a frozen object that has since become cyclic garbage (a dropped model,
    a closed tab's run). Here the frozen objects are examined too."""
    with _collecting:
        frozen = gc.get_freeze_count() > 0
        if frozen:
            gc.unfreeze()
        try:
            return gc.collect()
        finally:
            if frozen or freeze:
                gc.freeze()


def freeze_heap() -> int:
    """Collect what is not frozen yet and freeze what of it lives (`gc.freeze()`: Python's own collections skip it
    from now on); how many objects the collection found. What was frozen before stays frozen, unexamined: the
    next `collect_garbage` reaches it."""
    with _collecting:
        found = gc.collect()
        gc.freeze()
        return found
