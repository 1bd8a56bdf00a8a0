"""ui/cache.py: the process-wide result cache stays under its byte budget."""

import numpy as np
import pytest

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
