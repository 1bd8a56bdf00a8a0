"""Loaded by benchmarks/load.py's server (PYTHONPATH): watches the training cap from inside the process.

Only active when BERT_EXPLORER_LOAD_MONITOR names a file. A daemon thread waits for the app to
import `bert_core.runs.training_run` and `server.slots`, then wraps their methods to record, without changing
what they do:
- `TrainingSession._steps`: how many sessions are inside a training step loop at the same moment
  (the CPU the cap is meant to bound);
- `SlotManager.request` / `release`: slot holders and queue length after every call;
- `SlotManager._expire`: holders whose lease lapsed (a browser that left without pausing).
Every half second it writes what it saw as JSON to that file.
"""

import json
import os
import sys
import threading
import time

_PATH = os.environ.get("BERT_EXPLORER_LOAD_MONITOR")


def _watch(path: str) -> None:
    try:
        _watch_training(path)
    except Exception as e:  # say so in the file: the load script reports a monitor it did not see
        with open(path, "w") as f:
            json.dump({"monitor_error": f"{type(e).__name__}: {e}"}, f)


def _loaded(name: str):
    """The module once it is imported and has finished executing (importlib clears _initializing)."""
    while True:
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod.__spec__, "_initializing", True) is False:
            return mod
        time.sleep(0.05)


def _watch_training(path: str) -> None:
    st, slots = _loaded("bert_core.runs.training_run"), _loaded("server.slots")
    lock = threading.Lock()
    seen = {"in_steps": 0, "max_in_steps": 0, "max_holders": 0, "max_waiting": 0, "capacity": slots.SLOTS.capacity,
            "lease_seconds": slots.SLOTS.lease_seconds, "lapsed": []}

    steps, request, release, expire = (st.TrainingSession._steps, slots.SlotManager.request,
                                       slots.SlotManager.release, slots.SlotManager._expire)

    def counted_steps(self, *a, **kw):
        with lock:
            seen["in_steps"] += 1
            seen["max_in_steps"] = max(seen["max_in_steps"], seen["in_steps"])
        try:
            return steps(self, *a, **kw)
        finally:
            with lock:
                seen["in_steps"] -= 1

    def note_counts(self):
        # Called right after the manager's own lock was released: a fresh read under it.
        held, waiting = self.counts()
        with lock:
            seen["max_holders"] = max(seen["max_holders"], held)
            seen["max_waiting"] = max(seen["max_waiting"], waiting)

    def counted_request(self, sid):
        out = request(self, sid)
        with lock:
            seen["last_request"] = time.time()
        note_counts(self)
        return out

    def counted_release(self, sid):
        release(self, sid)
        note_counts(self)

    def noted_expire(self, now):
        before = set(self._holders)
        expire(self, now)
        gone = before - set(self._holders)
        if gone:
            with lock:
                seen["lapsed"].extend({"t": time.time(), "sid": s} for s in gone)

    st.TrainingSession._steps = counted_steps
    slots.SlotManager.request = counted_request
    slots.SlotManager.release = counted_release
    slots.SlotManager._expire = noted_expire
    while True:
        with lock:
            data = json.dumps(seen)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            f.write(data)
        os.replace(tmp, path)
        time.sleep(0.5)


if _PATH:
    threading.Thread(target=_watch, args=(_PATH,), daemon=True, name="load-monitor").start()
