"""One process-wide cache of computed results, bounded in bytes (not entries).

Streamlit's `st.cache_data(max_entries=N)` bounds the number of entries, but one bert-base
analysis of 512 tokens is ~180 MB and one of 8 tokens is ~1 MB: N entries can be anything from a
few MB to many GB. Here every entry is measured (the numpy arrays it holds, plus small objects)
and the least recently used entries are dropped until the total fits `BERT_EXPLORER_CACHE_MB`.

Values are returned as they are stored (not copied): callers must treat them as read-only.

Memory freed is only memory saved if the allocator gives it back: `server.allocator.tune_allocator` (called
when the server starts) makes glibc serve every block of 1 MB or more with its own mmap, returned to the system on
free, instead of keeping it in per-thread heaps (see docs/benchmarks.md, "Memory").

Memory dropped is only memory freed if nothing else holds it: a page script that defines a function
runs in a namespace that refers to itself (function -> globals -> function), so the result it drew
lives on after the run until Python's cyclic collector runs, and `.streamlit/config.toml` turns off
Streamlit's collection after every run (docs/benchmarks.md, "One user, 20 long texts"). So once
`collect_bytes` of results have been dropped or served uncached, the cache runs one full `gc.collect()`,
which bounds what dropped results can hold to about `collect_bytes`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import numpy as np

from server.heap import collect_garbage

log = logging.getLogger("bert_explorer.cache")

DEFAULT_CACHE_MB = 400  # fits a 2.7 GB Streamlit Cloud container beside bert-base (docs/benchmarks.md)
COLLECT_BYTES = 100 * 2**20  # dropped results that trigger one gc.collect() (module docstring)


def nbytes(obj: Any, _seen: set | None = None) -> int:
    """Approximate memory held by `obj`: numpy/torch buffers exactly, containers and strings roughly.

    Example: nbytes(np.zeros((10, 10), np.float32)) -> 400 + the array header (~112).
    """
    seen = set() if _seen is None else _seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        # A view holds its base's memory alive: count the base once. The base of `tensor.numpy()` is the torch
        # tensor, whose storage is the memory (sys.getsizeof sees only its header, which would leave the cache
        # unbounded).
        if obj.base is None:
            return sys.getsizeof(obj)
        if isinstance(obj.base, np.ndarray) or hasattr(obj.base, "untyped_storage"):
            return sys.getsizeof(obj) + nbytes(obj.base, seen)
        return sys.getsizeof(obj) + obj.nbytes  # another buffer (bytes, mmap): at least the view's own bytes
    if hasattr(obj, "untyped_storage"):  # a torch tensor, without importing torch here
        storage = obj.untyped_storage()
        key = ("storage", storage.data_ptr())  # views of one storage (several tensors) count it once
        if key in seen:
            return 64
        seen.add(key)
        return storage.nbytes() + 64
    if isinstance(obj, (str, bytes, int, float, bool, type(None))):
        return sys.getsizeof(obj)
    if isinstance(obj, dict):
        return sys.getsizeof(obj) + sum(nbytes(k, seen) + nbytes(v, seen) for k, v in obj.items())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return sys.getsizeof(obj) + sum(nbytes(x, seen) for x in obj)
    if dataclasses.is_dataclass(obj):
        return sys.getsizeof(obj) + sum(nbytes(getattr(obj, f.name), seen) for f in dataclasses.fields(obj))
    if hasattr(obj, "__dict__"):
        return sys.getsizeof(obj) + nbytes(vars(obj), seen)
    return sys.getsizeof(obj)


def freeze(obj: Any, _seen: set[int] | None = None) -> None:
    """Make every numpy array inside `obj` read-only: a cached value is shared by every session."""
    seen = set() if _seen is None else _seen
    if id(obj) in seen or isinstance(obj, (str, bytes, int, float, bool, type(None))):
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        obj.flags.writeable = False
    elif isinstance(obj, dict):
        for v in obj.values():
            freeze(v, seen)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        for x in obj:
            freeze(x, seen)
    elif dataclasses.is_dataclass(obj) or hasattr(obj, "__dict__"):
        for v in vars(obj).values():
            freeze(v, seen)


class ByteLRU:
    """A thread-safe least-recently-used cache whose entries together stay under `max_bytes`."""

    def __init__(self, max_bytes: int, collect_bytes: int = COLLECT_BYTES):
        self.max_bytes = int(max_bytes)
        self.collect_bytes = int(collect_bytes)  # dropped this much: run the cyclic collector (module docstring)
        self._items: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.total = 0  # bytes held now
        self.dropped = 0  # bytes evicted or served uncached since the last collection
        self.hits = self.misses = self.too_big = self.collections = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        """Is `key` held now (counts as a use: it moves to the most recent end)?"""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return True
            return False

    def get_or_compute(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The cached value for `key`, or `compute()` stored (when it fits) and returned."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                self.hits += 1
                return self._items[key][0]
            self.misses += 1
        # Computed outside the lock: other sessions' cache hits need not wait for this analysis.
        value = compute()
        freeze(value)
        size = nbytes(value)
        with self._lock:
            if size > self.max_bytes:
                self.too_big += 1
                self.dropped += size
                log.warning("cache: a result of %.1f MB is larger than the whole cache budget (%.1f MB); "
                            "served uncached", size / 2**20, self.max_bytes / 2**20)
            else:
                if key in self._items:  # another session computed the same thing meanwhile
                    old = self._items.pop(key)[1]
                    self.total -= old
                    self.dropped += old
                self._items[key] = (value, size)
                self.total += size
                while self.total > self.max_bytes:
                    _, (_, old) = self._items.popitem(last=False)
                    self.total -= old
                    self.dropped += old
            collect = self.dropped >= self.collect_bytes
            if collect:
                self.dropped = 0
                self.collections += 1
        if collect:  # outside the lock: other sessions' hits need not wait
            collect_garbage()
        return value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.total = self.dropped = 0


def budget_bytes(setting: str = "BERT_EXPLORER_CACHE_MB", default_mb: float = DEFAULT_CACHE_MB) -> int:
    """A budget in bytes from the environment's `setting`, in MB (default `default_mb`; negative counts as 0)."""
    raw = os.environ.get(setting, "")
    try:
        mb = float(raw) if raw.strip() else default_mb
    except ValueError:
        log.warning("cache: %s=%r is not a number; using %d", setting, raw, default_mb)
        mb = default_mb
    return int(max(mb, 0) * 2**20)


RESULTS = ByteLRU(budget_bytes())  # shared by every session of this process


def module_bytes(module: Any) -> int:
    """Bytes of a torch module's parameters and buffers (each storage once): what a loaded model holds."""
    seen, total = set(), 0
    for t in (*module.parameters(), *module.buffers()):
        s = t.untyped_storage()
        if s.data_ptr() not in seen:
            seen.add(s.data_ptr())
            total += s.nbytes()
    return total


class ModelCache:
    """The process's shared models by name, together under `max_bytes` of weights: least recently used go first.

    Each name is loaded once even when many sessions ask at once (a class arriving on bert-base would otherwise
    load it once per student). The model just loaded is kept even alone over the budget (a page needs it); the
    server's memory check (`bert_core.model.loading.check_memory_for`) refuses what cannot fit at all. A model
    dropped here lives on while a run still holds it, and is loaded again when next asked for.
    """

    def __init__(self, max_bytes: int, size: Callable[[Any], int]):
        self.max_bytes, self.size = int(max_bytes), size
        self._items: OrderedDict[str, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}  # name -> held while that name loads
        self.total = 0

    def __contains__(self, name: str) -> bool:
        with self._lock:
            return name in self._items

    def get(self, name: str, load: Callable[[], Any]) -> Any:
        """The model `name`, loaded with `load()` the first time (one load at a time per name)."""
        with self._lock:
            if name in self._items:
                self._items.move_to_end(name)
                return self._items[name][0]
            gate = self._loading.setdefault(name, threading.Lock())
        with gate:
            with self._lock:  # another session may have loaded it while this one waited
                if name in self._items:
                    self._items.move_to_end(name)
                    return self._items[name][0]
            try:
                model = load()
            except BaseException:
                with self._lock:
                    self._loading.pop(name, None)
                raise
            size = self.size(model)
            dropped = False
            with self._lock:  # stored before its gate goes: a session arriving now finds it, never loads it twice
                self._loading.pop(name, None)
                self._items[name] = (model, size)
                self.total += size
                while self.total > self.max_bytes and len(self._items) > 1:
                    old, (_, n) = self._items.popitem(last=False)
                    self.total -= n
                    dropped = True
                    log.info("models: dropped %s (%.0f MB) to stay under %.0f MB", old, n / 2**20,
                             self.max_bytes / 2**20)
        if dropped:  # a model's modules refer to each other: free the dropped one now, not at a later collection
            collect_garbage()
        return model

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.total = 0
