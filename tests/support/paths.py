"""Where the repository and the tests' output are, and the per-worker suffix for files under tests/output."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "output"


def worker_suffix() -> str:
    """"" in a plain run, "-gw0", "-gw1"... in a pytest-xdist worker: per-worker names for files under tests/output."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    return f"-{worker}" if worker else ""
