"""The idle housekeeping (server/housekeeping.py): collects only after the app went quiet, reaps closed sessions from
Streamlit's store (server/streamlit_private.py, with its canary), and runs only where the server's lifespan starts it.

Each test owns its state: a `Housekeeper` of its own (the process's `HOUSEKEEPER` is the app's, and its thread,
started by any page test that ran app.py in this worker, would share the state), and the process's thread is
stopped where a test looks at what a collection or a reap by anyone would change."""

from __future__ import annotations

import asyncio
import gc
import sys
import time
import types
import weakref

import pytest
from streamlit.runtime import Runtime
from streamlit.runtime.memory_session_storage import MemorySessionStorage
from support.wait import until

from server import app as server_app
from server import events, heap, streamlit_private
from server import housekeeping as hk


class Node:
    pass


def cyclic_garbage() -> weakref.ref:
    """An object kept alive only by a reference cycle (as a page namespace is): only gc frees it."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


@pytest.fixture
def no_process_thread():
    """The process's housekeeping thread stopped (and joined) for the test, started again after if it ran: its
    `gc.collect()` and its reaps would free what the test means to see freed only by its own calls."""
    was_running = hk.HOUSEKEEPER.stop()
    yield
    if was_running:
        hk.HOUSEKEEPER.start()


def test_collects_only_when_idle_after_a_run(no_process_thread):
    h = hk.Housekeeper(reap=lambda: None)
    h.note_run()
    gc.disable()  # make the collection below ours, not Python's
    try:
        ref = cyclic_garbage()
        assert not h.tidy(now=h.last_run + 1, idle=20)  # the class is still working
        assert ref() is not None
        assert h.tidy(now=h.last_run + 21, idle=20)  # idle long enough: one collection
        assert ref() is None
        ref = cyclic_garbage()
        assert not h.tidy(now=h.last_run + 60, idle=20)  # no run since: nothing to do
        assert ref() is not None
    finally:
        gc.enable()


class FakeSession:
    def __init__(self, sid):
        self.id = sid


def test_reaps_expired_sessions_from_streamlits_store(monkeypatch, no_process_thread):
    """Streamlit's store drops an expired session only on a later write; the reaper drops it without one."""
    storage = MemorySessionStorage(ttl_seconds=0.05)
    info = types.SimpleNamespace(session=FakeSession("a"))
    storage.save(info)
    ref = weakref.ref(info.session)
    del info
    runtime = types.SimpleNamespace(_session_mgr=types.SimpleNamespace(_session_storage=storage))
    monkeypatch.setattr(Runtime, "exists", classmethod(lambda cls: True))
    monkeypatch.setattr(Runtime, "instance", classmethod(lambda cls: runtime))
    assert streamlit_private.reap_closed_sessions() == 1  # not expired yet
    time.sleep(0.1)  # wall-clock time, on purpose: the storage's 0.05 s TTL must pass
    assert ref() is not None  # expired but still held: Streamlit waits for the next save
    assert streamlit_private.reap_closed_sessions() == 0
    assert ref() is None


def test_canary_streamlits_session_store_is_where_the_reaper_looks():
    """Streamlit 1.67 keeps closed sessions in Runtime._session_mgr._session_storage._cache, a TTLCache: a release
    that moves any of these fails here (and the reaper returns None instead of reaping)."""
    import inspect

    from streamlit.runtime import runtime, websocket_session_manager

    assert "self._session_mgr" in inspect.getsource(runtime.Runtime.__init__)
    assert "self._session_storage" in inspect.getsource(websocket_session_manager.WebsocketSessionManager.__init__)
    cache = MemorySessionStorage()._cache
    assert callable(cache.expire) and len(cache) == 0


def test_no_runtime_no_reaping():
    assert streamlit_private.reap_closed_sessions() is None  # pytest has no Streamlit server


def test_a_busy_process_without_whole_runs_is_not_idle(no_process_thread):
    """A class's step changes, votes and timers are fragment runs (no note_run): a pass that finds the process used
    more than BUSY_SHARE of a core since the last one counts as a run; quiet CPU for `idle` s is idle again."""
    cpu = [0.0]
    h = hk.Housekeeper(reap=lambda: None, cpu=lambda: cpu[0])
    h.note_run()
    t0 = h.last_run
    assert not h.tidy(now=t0 + 5, idle=20)  # the first pass reads the CPU
    cpu[0] += 5.0  # 5 s of CPU in 16 s: a class at work
    assert not h.tidy(now=t0 + 21, idle=20)
    cpu[0] += 0.2  # quiet: open tabs' timers
    assert not h.tidy(now=t0 + 36, idle=20)  # 15 s since the busy pass
    assert h.tidy(now=t0 + 42, idle=20)
    assert not hk.Housekeeper(reap=lambda: None).cpu  # a test's housekeeper: whole runs only


def test_dropping_closed_sessions_leads_to_a_collection():
    """A reaped session is cyclic garbage: the next idle pass collects even without a new run."""
    counts = iter([3, 3, 0, 0])
    h = hk.Housekeeper(reap=lambda: next(counts))
    h.note_run()
    assert h.tidy(now=h.last_run + 30, idle=20)  # after the runs
    assert not h.tidy(now=h.last_run + 60, idle=20)  # still 3 stored: nothing new
    assert h.tidy(now=h.last_run + 200, idle=20)  # 3 -> 0: dropped, collect
    assert not h.tidy(now=h.last_run + 300, idle=20)


def test_a_housekeepers_thread_stops_and_joins():
    """Started once; stop() ends the thread (no pass after it returns); it can start again."""
    passes = []
    h = hk.Housekeeper(reap=lambda: passes.append(time.monotonic()))
    assert h.start(period=0.005)
    assert not h.start(period=0.005)  # one thread per housekeeper
    until(lambda: len(passes) >= 3, 60, "three housekeeping passes", every=0.01)
    assert h.stop()
    done = len(passes)
    time.sleep(0.05)  # on purpose: ten periods in which a pass not joined would show
    assert len(passes) == done  # joined: nothing runs after stop()
    assert not h.stop()
    assert h.start(period=0.005) and h.stop()


def test_the_app_notes_runs_into_the_process_housekeeper():
    before = hk.HOUSEKEEPER.last_run
    hk.note_run()
    assert hk.HOUSEKEEPER.last_run > before and hk.HOUSEKEEPER.dirty


@pytest.fixture
def thawed(no_process_thread):
    """Nothing frozen before or after the test (the test process's collector as Python leaves it)."""
    gc.unfreeze()
    yield
    gc.unfreeze()


def test_a_server_freezes_its_settled_heap_once_per_set_of_modules(thawed, monkeypatch):
    """In a server, what lives once modules were imported is frozen (Python's collections skip it); its garbage is
    collected first; nothing is frozen again until another module is imported."""
    h = hk.Housekeeper(reap=lambda: None, freeze=lambda: True)
    gc.disable()
    try:
        dead = cyclic_garbage()
        a, b = Node(), Node()
        a.other, b.other = b, a
        alive = weakref.ref(a)
        del b
        assert h.settle()
        assert dead() is None  # collected before the freeze: a freeze does not keep garbage
        assert gc.get_freeze_count() > 0
        assert not h.settle()  # no new module: nothing to do
        del a  # frozen, and now cyclic garbage: Python's collector no longer sees it
        gc.collect()
        assert alive() is not None
        monkeypatch.setitem(sys.modules, "bert_explorer_test_module", types.ModuleType("bert_explorer_test_module"))
        assert h.settle()  # a module imported since: the new part is frozen too, the old stays frozen
        assert alive() is not None
    finally:
        gc.enable()


def test_the_apps_collections_reach_the_frozen_heap(thawed):
    """The caches' and the ledger's collection frees frozen cyclic garbage (a dropped model), and leaves the rest
    frozen; a plain gc.collect() does not."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    ref = weakref.ref(a)
    del b
    gc.freeze()
    del a
    gc.collect()
    assert ref() is not None
    assert heap.collect_garbage() >= 2
    assert ref() is None
    assert gc.get_freeze_count() > 0  # the live heap is frozen again


def test_the_idle_collection_frees_the_frozen_heaps_garbage_and_freezes_again(thawed):
    h = hk.Housekeeper(reap=lambda: None, freeze=lambda: True)
    a, b = Node(), Node()
    a.other, b.other = b, a
    ref = weakref.ref(a)
    del b
    assert h.settle()
    del a
    h.note_run()
    assert h.tidy(now=h.last_run + 21, idle=20)
    assert ref() is None
    assert gc.get_freeze_count() > 0
    assert not h.settle()  # the idle collection froze this set of modules


def test_outside_a_server_nothing_is_frozen(thawed):
    """A housekeeper of its own (a test's, AppTest's) keeps Python's plain collector: only the server's lifespan starts
    the process's, which freezes."""
    h = hk.Housekeeper(reap=lambda: None)
    assert not h.settle()
    h.note_run()
    assert h.tidy(now=h.last_run + 21, idle=20)
    assert gc.get_freeze_count() == 0


def test_the_servers_lifespan_starts_and_stops_the_housekeeping_and_binds_the_event_hub(monkeypatch):
    mine = hk.Housekeeper(reap=lambda: None)
    monkeypatch.setattr(hk, "HOUSEKEEPER", mine)
    monkeypatch.setattr(events.HUB, "_loop", None)

    async def serve():
        async with server_app.lifespan(None):
            assert mine._thread is not None and mine._thread.is_alive()
            assert events.HUB._loop is asyncio.get_running_loop()
        assert mine._thread is None

    asyncio.run(serve())
