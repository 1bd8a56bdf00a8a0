"""glibc's allocator set for a long-running server: every block of 1 MB or more is its own mmap, given back on free.

Set once per process when the server starts (server/app.py's lifespan), before any session allocates.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys

MMAP_THRESHOLD = 1 << 20  # bytes: blocks this large get their own mmap (glibc's M_MMAP_THRESHOLD)


def tune_allocator(threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold at `threshold` bytes; True when set (False off glibc, or when the env sets it).

    glibc raises its threshold each time a large mmapped block is freed (up to 32 MB), after which a long
    text's attention maps come from heaps that are rarely given back; fixing the threshold keeps every large
    block returnable (docs/benchmarks.md, "Memory"). `MALLOC_MMAP_THRESHOLD_` in the
    environment, when set, wins (glibc reads it itself).
    """
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(-3, int(threshold)))  # -3 is M_MMAP_THRESHOLD in <malloc.h>
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to tune
        return False
