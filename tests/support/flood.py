"""A scripted flood of a live class over Streamlit's websocket: joins and class starts from one address, and four
seats flipping their votes (tests/browser/test_browser_class_phone.py; benchmarks/class_flood.py at the issue's size).

The attacker is one client address (X-Forwarded-For from a loopback peer, as HAProxy sends it) with a new browser
token per session, as a script that drops its cookies is.
"""

from __future__ import annotations

import asyncio
import threading
import time

FLOOD_ADDRESS, FLIPPERS_ADDRESS, STUDENT_ADDRESS = "203.0.113.9", "192.0.2.50", "198.51.100.7"
AT_ONCE = 6  # the flood's sessions in flight at once
SEAT_COOKIE = "bx_seat"  # ui/lesson/live_class/session.py's
ONE_TOKEN = "floodfloodfloodflood00"  # the browser token half of the starts send (22 URL-safe characters)


def _client(base: str, address: str, token: str | None = None):
    """A load.Client whose websocket comes through a proxy from `address` (X-Forwarded-For, believed from a loopback
    peer, as from HAProxy), with browser token `token` in its cookie (None: no cookie, a new token per session)."""
    from support.wsclient import Client

    class Forwarded(Client):
        async def connect(self) -> None:
            import websockets

            headers = {"X-Forwarded-For": address}
            if token:
                headers["Cookie"] = f"{SEAT_COOKIE}={token}"
            self.ws = await websockets.connect(self.url, subprotocols=["streamlit"], max_size=None,
                                              ping_timeout=None, additional_headers=headers)
            self.backend_ws = None
            self._reader = asyncio.create_task(self._read())

    return Forwarded(base, ping_timeout=None)


def said(run) -> str:
    """The alerts and text a run drew (a refusal's words)."""
    return " ".join([e.body for e in run.of("alert")] + [e.body for e in run.of("markdown")])


async def join(base: str, code: str, address: str, nick: str):
    """A scripted browser opening the class's link and pressing Join: (client, its join run)."""
    c = _client(base, address)
    await c.connect()
    await c.rerun("lesson", query=f"class={code}")
    run = await c.rerun(widgets={"class_join_code": code, "class_nick": nick, "class_join": True})
    return c, run


class Attack:
    """The scripted side, in its own thread and event loop: `joins` joins and `starts` class starts from one address,
    AT_ONCE at a time, and four seats (joined from another address) changing their votes as fast as the server
    answers; all until `stop` is set (the flood ends sooner when every join and start was sent: `flood_done`)."""

    def __init__(self, base: str, code: str, joins: int = 60, starts: int = 0):
        self.base, self.code, self.joins, self.starts = base, code, joins, starts
        self.stop = threading.Event()
        self.flippers_ready = threading.Event()
        self.flood_done = threading.Event()  # every join and start sent (the seats flip on until `stop`)
        self.joined = self.refused = self.flips = self.flips_refused = 0
        self.started = self.starts_refused = 0
        self.answered = 0  # the flood's joins and starts the server has answered so far
        self.flips_counted_during = self.flips_counted_after = 0  # the seats' vote changes counted (not refused)
        self.began = self.ended = 0.0
        self.progress = False  # a line every 50 joins (the benchmark's)
        self.errors: list[str] = []
        self.thread = threading.Thread(target=lambda: asyncio.run(self._main()), daemon=True)

    @property
    def seconds(self) -> float:
        return (self.ended or time.monotonic()) - self.began

    async def _main(self) -> None:
        from support.wsclient import problems_of

        clients = []
        try:
            flippers = [await join(self.base, self.code, FLIPPERS_ADDRESS, f"flip {i}") for i in range(4)]
            clients += [c for c, _ in flippers]
            self.flippers_ready.set()
            sem = asyncio.Semaphore(AT_ONCE)
            self.began = time.monotonic()

            async def one_join(i: int) -> None:
                async with sem:
                    if self.stop.is_set():
                        return
                    c, run = await join(self.base, self.code, FLOOD_ADDRESS, f"bot {i}")
                    clients.append(c)
                    self.errors += problems_of(run)
                    if "me=" in c.page_query:
                        self.joined += 1
                    elif "from your network" in said(run):
                        self.refused += 1
                    self.answered += 1
                    if self.progress and (self.joined + self.refused) % 50 == 0:  # counted and said at once
                        print(f"{self.seconds:.0f} s: {self.joined} joined, {self.refused} refused", flush=True)
                    await c.close()

            async def one_start(i: int) -> None:
                async with sem:
                    if self.stop.is_set():
                        return
                    c = _client(self.base, FLOOD_ADDRESS, ONE_TOKEN if i % 2 else None)
                    clients.append(c)
                    await c.connect()
                    await c.rerun("lesson")
                    run = await c.rerun(widgets={"class_start": True})
                    self.errors += problems_of(run)
                    if "teacher=" in c.page_query:
                        self.started += 1
                    elif "started very often" in said(run):
                        self.starts_refused += 1
                    self.answered += 1
                    if self.progress and (self.started + self.starts_refused) % 100 == 0:
                        print(f"{self.seconds:.0f} s: {self.started} classes started, {self.starts_refused} refused",
                              flush=True)
                    await c.close()

            flood = []  # joins and starts interleaved: both at once
            for i in range(max(self.joins, self.starts)):
                flood += ([one_join(i)] if i < self.joins else []) + ([one_start(i)] if i < self.starts else [])
            flips = [asyncio.create_task(self._flip(c, run)) for c, run in flippers]
            await asyncio.gather(*flood)
            self.ended = time.monotonic()
            self.flood_done.set()
            await asyncio.gather(*flips)  # the seats flip on until the caller stops them
        except Exception as e:  # said by the caller, not lost in this thread
            self.errors.append(f"{type(e).__name__}: {e}")
        finally:
            self.ended = self.ended or time.monotonic()
            self.stop.set()
            for c in clients:
                await c.close()

    async def _flip(self, c, joined) -> None:
        radio = next(e for e in joined.of("radio") if "class_vote_" in e.id)
        key, labels = radio.id.split("-", 2)[-1], list(radio.options)
        fragment = c.widget_fragments.get(key) or None
        i = 0
        while not self.stop.is_set():
            run = await c.rerun(widgets={key: labels[i % 2]}, fragment=fragment, auto=False)
            i += 1
            self.flips += 1
            refused = "Your vote was not counted" in said(run)
            self.flips_refused += "changing your vote very fast" in said(run)
            if not refused:
                if self.flood_done.is_set():
                    self.flips_counted_after += 1
                else:
                    self.flips_counted_during += 1

    def wait_answered(self, n: int, timeout: float) -> bool:
        """Until the server has answered `n` of the flood's joins and starts (True), or the flood ended or
        `timeout` passed (False): a fixed point of the flood, whether or not it was refused yet."""
        deadline = time.monotonic() + timeout
        while self.answered < n and not self.flood_done.is_set() and not self.stop.is_set():
            if time.monotonic() > deadline:
                return False
            self.stop.wait(0.05)  # a condition polled (set by the flood's thread)
        return self.answered >= n and not self.flood_done.is_set()

    def bounds_hold(self) -> list[str]:
        """What the limits promise of this flood (classroom/limits.py's defaults): the address's joins 20 at once
        then one a second, its starts 5 at once then one a minute, and the seats' flips mostly refused."""
        from classroom.limits import JOIN_ADDRESS, STARTS

        out = []
        if self.joined > JOIN_ADDRESS.burst + JOIN_ADDRESS.per_second * self.seconds + 1:
            out.append(f"{self.joined} seats from one address in {self.seconds:.0f} s")
        if self.started > STARTS.burst + STARTS.per_second * self.seconds + 1:
            out.append(f"{self.started} classes started from one address in {self.seconds:.0f} s")
        if self.starts and not self.starts_refused:
            out.append("no start refused")
        if not (self.flips > 10 and self.flips_refused > 0):
            out.append(f"flips {self.flips}, refused {self.flips_refused}")
        return out
