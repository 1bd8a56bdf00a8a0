"""A class's changes as server-sent events: a browser that shows a class listens, and reruns its own fragment.

A topic names what a listener redraws: `step:CODE` (a following student's step), `votes:CODE` (the teacher's count of
answers), `seat:CODE:SID` (one student's own count: that seat removed by the teacher). `HUB.publish(topic)` numbers the
event and hands it to every stream of that topic in this process; the browser's listener
(ui/lesson/live_class/push.py, a components v2 component inside the fragment) sets a trigger value on each event,
which reruns that fragment alone.

Every process behind the proxy hears a class's changes and its removed seats through `ClassStore.watch` (the
in-process store directly, Redis over pub/sub) and publishes them to its own streams (`step`, `seat`); a browser's
stream and its websocket reach the same process (HAProxy's sticky cookie rides on both), so the in-process topic
(`votes`) reaches the right tabs.

The numbers are this process's (`EPOCH` names the process): a page draws the number it has seen, and a listener that
holds a later one (an event, or the number a stream starts with when it connects or reconnects) reruns at once, so a
change between a run's read of the class and its listener's connection is not missed.
"""

from __future__ import annotations

import asyncio
import logging
import re
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

log = logging.getLogger("bert_explorer.events")

PATH = "/api/class-events"
KEEP_ALIVE_S = 15.0  # a comment this often on an idle stream: HAProxy's 60 s server timeout never closes it
RETRY_MS = 2000  # how soon a browser reconnects a dropped stream
MAX_STREAMS = 4000  # per process (a class of 200 holds about 400: step and own count per student, plus the teacher)
POKE_GAP = 0.15  # seconds: a class voting at once is one event per gap per topic, not one per vote
EPOCH = secrets.token_hex(4)  # this process: its event numbers mean nothing to another process
TOPIC = re.compile(r"(?:step|votes):[A-Z0-9]{6}|seat:[A-Z0-9]{6}:[A-Za-z0-9_-]{22}")


class Hub:
    """Each topic's last event number and its open streams; streams live on the server's event loop, publishers
    may be any thread (a script run, Redis's listener)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._streams: dict[str, set[asyncio.Queue]] = {}  # topic -> one queue per open stream (on the loop)
        self._seq: dict[str, int] = {}  # topic -> its last event number (topics with a stream, or published to)
        self._due: set[str] = set()  # topics with a coalesced event scheduled
        self._last: dict[str, float] = {}  # topic -> when its last coalesced event went out
        self._watched: set[int] = set()  # id() of the stores this hub hears

    # -------------------------------------------------------------------------------- publishers (any thread)
    def seq(self, topic: str) -> int:
        """The topic's last event number (0 before the first)."""
        with self._lock:
            return self._seq.get(topic, 0)

    def listeners(self, topic: str) -> int:
        with self._lock:
            return len(self._streams.get(topic, ()))

    def publish(self, topic: str) -> int:
        """A new event on `topic` for every stream of it in this process; returns the event's number."""
        with self._lock:
            n = self._seq[topic] = self._seq.get(topic, 0) + 1
            loop = self._loop if self._streams.get(topic) else None
        if loop is not None:
            try:
                loop.call_soon_threadsafe(self._deliver, topic, n)
            except RuntimeError:  # the loop closed: the server is stopping
                pass
        return n

    def poke(self, topic: str) -> bool:
        """`publish(topic)` now, or at the end of its POKE_GAP; False when nobody listens to it here."""
        with self._lock:
            loop = self._loop
            if loop is None or not self._streams.get(topic) or topic in self._due:
                return bool(self._streams.get(topic))
            wait = self._last.get(topic, 0.0) + POKE_GAP - time.monotonic()
            self._due.add(topic)
        try:
            loop.call_soon_threadsafe(loop.call_later, max(wait, 0.0), self._poked, topic)
        except RuntimeError:
            return False
        return True

    def _poked(self, topic: str) -> None:
        with self._lock:
            self._due.discard(topic)
            self._last[topic] = time.monotonic()
        self.publish(topic)

    def watch(self, store, before: Callable[[str], None] | None = None) -> None:
        """Publish `step:CODE` whenever `store` says class CODE changed (once per store), `seat:CODE:SID` when it
        says seat SID was removed; `before(code)` runs first for a class's change, in the thread that heard it."""
        with self._lock:
            if id(store) in self._watched:
                return
            self._watched.add(id(store))

        def changed(code: str) -> None:
            if ":" in code:  # "CODE:SID": that seat was removed; its own count's listener hears it
                self.publish(f"seat:{code}")
                return
            if before is not None:
                before(code)
            self.publish(f"step:{code}")

        store.watch(changed)

    # -------------------------------------------------------------------------------- streams (the event loop)
    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """The server's event loop, where streams wait (set at startup, and by the first stream)."""
        with self._lock:
            self._loop = loop

    def _deliver(self, topic: str, n: int) -> None:
        for q in list(self._streams.get(topic, ())):
            if q.empty():  # a listener behind by one event reruns once: the newest number is what it needs
                q.put_nowait(n)
            else:
                q.get_nowait()
                q.put_nowait(n)

    def _open(self, topic: str) -> asyncio.Queue | None:
        with self._lock:
            if sum(len(s) for s in self._streams.values()) >= MAX_STREAMS:
                return None
            q: asyncio.Queue = asyncio.Queue(maxsize=1)
            self._streams.setdefault(topic, set()).add(q)
            return q

    def _close(self, topic: str, q: asyncio.Queue) -> None:
        with self._lock:
            streams = self._streams.get(topic)
            if streams is not None:
                streams.discard(q)
                if not streams:
                    del self._streams[topic]
                    if topic.startswith("seat:"):  # a seat's number is not worth keeping without its tab
                        self._seq.pop(topic, None)
                    self._last.pop(topic, None)

    async def events(self, topic: str, q: asyncio.Queue, keep_alive: float = KEEP_ALIVE_S) -> AsyncIterator[str]:
        """The stream's text: the retry time and this process's current number first (a listener that drew an older
        one reruns: it missed a change while it connected), then each event, with a comment whenever `keep_alive` s
        pass without one."""
        try:
            now = self.seq(topic)
            yield f"retry: {RETRY_MS}\nevent: hello\nid: {now}\ndata: {EPOCH} {now}\n\n"
            while True:
                try:
                    n = await asyncio.wait_for(q.get(), keep_alive)
                except TimeoutError:
                    yield ": keep-alive\n\n"
                    continue
                yield f"id: {n}\ndata: {n}\n\n"
        finally:
            self._close(topic, q)

    async def endpoint(self, request: Request) -> Response:
        """GET PATH?topic=...: the topic's events as text/event-stream (400 for a topic of another shape, 503 when
        this process holds MAX_STREAMS already: the browser's fragment keeps its own timer)."""
        topic = request.query_params.get("topic", "")
        if not TOPIC.fullmatch(topic):
            return PlainTextResponse("no such topic", status_code=400)
        self.bind(asyncio.get_running_loop())
        q = self._open(topic)
        if q is None:
            return PlainTextResponse("too many listeners", status_code=503)
        return StreamingResponse(self.events(topic, q), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


HUB = Hub()  # the process's


def routes() -> list[Route]:
    """The app's own routes beside Streamlit's (app.py's st.App)."""
    return [Route(PATH, HUB.endpoint, methods=["GET"])]
