"""Waiting on a condition, never on time: `until(predicate, timeout, what)`."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def until(predicate: Callable[[], T], timeout: float = 60, what: str = "the condition", every: float = 0.1) -> T:
    """Return the predicate's first truthy value; raise AssertionError naming `what` once `timeout` s have passed.

    The predicate is checked at once and then every `every` s (a poll, not a guess: a passing test waits only as long
    as the condition takes). Timeouts are generous because a loaded 2-core machine is slow, not wrong."""
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)
