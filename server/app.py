"""The server app.py's `st.App` runs: the class's event route beside Streamlit's, and what starts with the process.

`lifespan` runs once per process, around Streamlit's own startup and shutdown: the allocator set before any session
allocates, the event hub bound to the server's event loop, and the housekeeping thread (server/housekeeping.py)
started and stopped with the server.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from server import allocator, events, housekeeping


@asynccontextmanager
async def lifespan(_app) -> AsyncIterator[None]:
    """Start this process's runtime with the server, stop it with the server."""
    allocator.tune_allocator()
    events.HUB.bind(asyncio.get_running_loop())
    housekeeping.start()
    try:
        yield
    finally:
        housekeeping.stop()


def routes() -> list:
    """The app's routes beside Streamlit's."""
    return events.routes()
