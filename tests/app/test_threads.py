"""server/threads.py: torch's intra-op threads per script run, from the machine's load."""

from __future__ import annotations

import threading

import pytest
import torch

from server import threads


@pytest.mark.parametrize(("cores", "runnable", "runs", "expected"), [
    (2, 1, 1, 2),  # a free machine, one run: every core
    (2, 2, 1, 1),  # one other task wants a core
    (2, 9, 1, 1),  # a busy machine: never fewer than one
    (2, 1, 2, 1),  # two runs in this process share the cores
    (8, 1, 2, 4),
    (8, 4, 1, 5),
    (8, 1, 0, 8),  # called outside a script run (a benchmark, a notebook)
])
def test_threads_for(cores, runnable, runs, expected):
    assert threads.threads_for(cores, runnable, runs) == expected


def test_runnable_tasks_counts_at_least_this_one():
    assert threads.runnable_tasks() >= 1


def test_fit_sets_only_the_calling_threads_count(monkeypatch):
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)
    main_before = torch.get_num_threads()
    seen = {}

    def script_run(name, runnable):
        monkeypatch.setattr(threads, "runnable_tasks", lambda: runnable)
        seen[name] = (threads.fit_torch_threads(), torch.get_num_threads())

    for name, runnable in (("free", 1), ("busy", 5)):
        t = threading.Thread(target=script_run, args=(name, runnable))
        t.start()
        t.join()
    try:
        assert seen == {"free": (2, 2), "busy": (1, 1)}
        assert torch.get_num_threads() == main_before  # torch's count is per thread: the main thread kept its own
    finally:
        torch.set_num_threads(main_before)  # new threads start from the last value set anywhere


def test_the_runs_are_the_live_threads_that_ran_a_script(monkeypatch):
    """Two script runs at once share the cores; once one has ended, the other has them all (no thread names read)."""
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(threads, "runnable_tasks", lambda: 1)
    monkeypatch.setattr(threads, "_runners", threads.weakref.WeakSet())
    first_ran, second_done, seen = threading.Event(), threading.Event(), {}

    def first():
        seen["alone"] = threads.fit_torch_threads()
        first_ran.set()
        second_done.wait(30)

    def second(name="together"):
        seen[name] = threads.fit_torch_threads()

    a = threading.Thread(target=first)
    a.start()
    assert first_ran.wait(30)
    b = threading.Thread(target=second)
    b.start()
    b.join()
    second_done.set()
    a.join()
    c = threading.Thread(target=second, args=("alone again",))
    c.start()
    c.join()
    assert seen == {"alone": 2, "together": 1, "alone again": 2}  # a and b had ended: c has both cores
