"""How many threads torch may use for one script run: all cores when the machine is free, fewer when busy.

Why (benchmarks/bench_contention.py): torch splits each operation (a matmul, a softmax) over its
intra-op OpenMP pool, sized to the cores, and every operation ends when its slowest thread ends. When
other work holds the cores (a class's other sessions, another process), the kernel deschedules one of
those threads and the whole operation waits for it (docs/benchmarks.md, "Contention"). The waiting is
per operation, not per FLOP, so it also erases what `analyze` saves over transformers (fewer FLOPs,
about as many operations): the ours/HF ratio drifts towards 1 under load. One thread per busy core avoids the wait.

torch's thread count is per thread (set in a Streamlit script thread, it holds for that run; new
threads start from the last value set), so each run sets its own. The runs of this process are the live threads that
have called `fit_torch_threads` (each script run calls it at the top of app.py): Streamlit's script threads, counted
without reading its internals (a script thread ends when its session has no run left to do).
"""

from __future__ import annotations

import os
import statistics
import threading
import weakref

import torch

_runners: weakref.WeakSet[threading.Thread] = weakref.WeakSet()  # threads that ran a script (app.py) in this process
_lock = threading.Lock()


def runnable_tasks() -> int:
    """Tasks running or ready to run on the machine right now, this one included (/proc/loadavg)."""
    samples = []
    for _ in range(3):  # the count moves from moment to moment: the median of three reads
        with open("/proc/loadavg") as f:
            samples.append(int(f.read().split()[3].split("/")[0]))
    return int(statistics.median(samples))


def threads_for(cores: int, runnable: int, runs: int) -> int:
    """Intra-op threads for one run: the cores nobody else wants, shared among this process's runs.

    `runnable` counts this thread; `runs` counts script runs in this process, this one included.
    Example: 2 cores, nothing else runnable, one run -> 2; one other task runnable -> 1; 2 runs -> 1.
    """
    free = cores - max(0, runnable - 1)
    return max(1, min(free, cores // max(1, runs)))


def fit_torch_threads() -> int:
    """Set this thread's torch intra-op threads from the machine's load; return the number set."""
    cores = os.cpu_count() or 1
    try:
        runnable = runnable_tasks()
    except (OSError, ValueError, IndexError):  # no /proc (not Linux): keep torch's own choice
        return torch.get_num_threads()
    with _lock:
        _runners.add(threading.current_thread())
        runs = sum(t.is_alive() for t in _runners)
    n = threads_for(cores, runnable, runs)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n
