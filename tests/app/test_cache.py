"""ui/cache.py: the process-wide result cache stays under its byte budget."""

import numpy as np
import pytest

import bert_core
from ui.cache import ByteLRU, nbytes


def test_nbytes_counts_arrays_inside_containers_once():
    a = np.zeros((100, 100), np.float32)  # 40,000 bytes
    assert 40_000 <= nbytes(a) < 41_000
    assert 40_000 <= nbytes({"x": a, "y": [a, a[:10]]}) < 42_000  # a view and repeats count once


def test_nbytes_counts_the_memory_behind_torch_backed_arrays():
    """`tensor.numpy()` owns no data (its base is the tensor): the storage must still be counted, once."""
    import torch

    t = torch.zeros(3, 100, 100)  # 120,000 bytes
    view = t[:, 0].numpy()  # (3, 100), a view that keeps all 120 KB alive
    assert 120_000 <= nbytes(view) < 121_000
    assert 120_000 <= nbytes({"a": t.numpy(), "b": view, "c": t}) < 121_000


def test_cache_evicts_least_recent_to_stay_under_budget():
    c = ByteLRU(max_bytes=100_000)
    calls = []

    def make(i):
        calls.append(i)
        return np.full(10_000, i, np.float32)  # ~40 KB each

    for i in range(5):
        c.get_or_compute(i, lambda i=i: make(i))
        assert c.total <= c.max_bytes
    assert len(c) == 2 and calls == [0, 1, 2, 3, 4]
    c.get_or_compute(3, lambda: make(99))  # a hit: not recomputed
    assert calls == [0, 1, 2, 3, 4] and c.hits == 1
    c.get_or_compute(5, lambda: make(5))  # evicts 4 (least recent), keeps 3
    c.get_or_compute(3, lambda: make(99))
    assert calls == [0, 1, 2, 3, 4, 5]


def test_value_larger_than_budget_is_served_uncached_and_frozen():
    c = ByteLRU(max_bytes=1_000)
    v = c.get_or_compute("big", lambda: np.zeros(10_000))
    assert v.shape == (10_000,) and len(c) == 0 and c.too_big == 1 and c.total == 0
    with pytest.raises(ValueError):
        v[0] = 1  # read-only: a cached value is shared between sessions


def test_results_dropped_while_a_dead_page_namespace_still_holds_them_are_collected():
    """A page that defines a function keeps its namespace alive in a cycle: the cache collects it."""
    import gc
    import weakref

    mb = 2**20
    c = ByteLRU(max_bytes=3 * mb, collect_bytes=4 * mb)
    refs = []
    gc.disable()  # only the cache's own collection may free cycles here
    try:
        for i in range(12):
            v = c.get_or_compute(i, lambda: np.ones(mb // 8))  # 1 MB
            namespace = {"trace": v}
            namespace["draw"] = namespace  # like def draw(): ... in a page (function -> globals -> function)
            refs.append(weakref.ref(v))
            del v, namespace
            alive = sum(r() is not None for r in refs)
            assert alive <= 3 + 4 + 1, alive  # the cache's 3 MB + at most 4 MB dropped since a collection + this one
        assert c.collections >= 2
        before = c.collections
        c.get_or_compute("big", lambda: np.ones(5 * mb // 8))  # too big: served uncached, counted as dropped
        assert c.too_big == 1 and c.collections == before + 1 and c.dropped == 0
    finally:
        gc.enable()
    c2 = ByteLRU(max_bytes=3 * mb, collect_bytes=10**12)  # never collects: the dead namespaces pile up
    gc.disable()
    try:
        refs = []
        for i in range(12):
            v = c2.get_or_compute(i, lambda: np.ones(mb // 8))
            namespace = {"trace": v}
            namespace["draw"] = namespace
            refs.append(weakref.ref(v))
            del v, namespace
        assert sum(r() is not None for r in refs) == 12  # the peer: without the collection nothing is freed
    finally:
        gc.enable()
        gc.collect()


def test_shared_models_stay_under_their_byte_budget_and_load_once_when_many_ask():
    """ModelCache: least recently used models go past the budget (the newest stays even alone over it), and
    eight sessions asking for one model at once load it once."""
    import threading
    import time

    from ui.cache import ModelCache

    loads = []

    def load(name, mb):
        def go():
            loads.append(name)
            time.sleep(0.05)  # a load that takes time, so concurrent callers overlap it (the point of the test)
            return (name, mb)
        return go

    c = ModelCache(100 * 2**20, lambda m: m[1] * 2**20)
    c.get("a", load("a", 40))
    c.get("b", load("b", 40))
    c.get("a", load("a", 40))  # a is now the most recent
    c.get("c", load("c", 40))  # 120 MB: b, the least recently used, goes
    assert "a" in c and "c" in c and "b" not in c and c.total == 80 * 2**20
    c.get("big", load("big", 150))  # alone over the budget: kept, everything else goes
    assert "big" in c and "a" not in c and c.total == 150 * 2**20
    loads.clear()
    got = []
    threads = [threading.Thread(target=lambda: got.append(c.get("d", load("d", 10)))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert loads == ["d"] and len(got) == 8 and all(g is got[0] for g in got)


def test_shared_models_size_is_their_weights(tiny_dirs):
    from ui.cache import module_bytes

    m = bert_core.load_model(str(tiny_dirs["pretraining"][0]))
    n = sum(p.numel() * p.element_size() for p in m.model.parameters())
    assert n <= module_bytes(m.model) <= n + sum(b.numel() * b.element_size() for b in m.model.buffers())
