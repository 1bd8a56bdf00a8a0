"""The test tiers: `browser` (drives chromium) and `server` (starts a Streamlit, HAProxy, redis-server or Jupyter kernel
process outside AppTest). The default run (`python -m pytest`) deselects both; scripts/test runs every tier.

Whatever starts a server or a kernel here (support/appserver.py, support/nb_run.py) calls `require_server_tier`: a
test that starts one without either marker fails at once, so no such test hides in the fast tier."""

from __future__ import annotations

CURRENT = None  # the pytest item being set up, run or torn down (tests/conftest.py sets it); None outside pytest


def require_server_tier(what: str) -> None:
    item = CURRENT
    if item is None:  # a benchmark, not a test
        return
    if not (item.get_closest_marker("server") or item.get_closest_marker("browser")):
        raise AssertionError(f"{item.nodeid} starts {what} but is not marked `server` (or `browser`): mark it, or "
                             "use a fixture tests/conftest.py's SERVER_FIXTURES names")
