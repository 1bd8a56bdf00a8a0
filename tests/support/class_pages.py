"""A live class in real browsers: a tab per person (its own context, so its own Streamlit session), starting and
joining a class, waiting for a step, and a failure that says what each page showed."""

from __future__ import annotations

import contextlib
import pathlib
import re
import time
import urllib.parse

from support.browser import offline, settle
from support.paths import OUT, worker_suffix


def tab(browser, base: str, size=(1280, 900), **context):
    """A page in its own context (its own cookies: its own Streamlit session), offline; `context`: more of
    browser.new_context's options (a phone's touch screen, headers)."""
    ctx = browser.new_context(viewport={"width": size[0], "height": size[1]}, **context)
    offline(ctx, base)
    pg = ctx.new_page()
    pg.set_default_timeout(120_000)  # a loaded 2-core machine: slow, not wrong; a passing wait never uses it all
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    return pg

PHONE = (390, 844)
REMOVED = "Your teacher removed your seat from this class"  # what a removed student reads (ui/lesson/live_class)


def phone(browser, base: str, headers: dict | None = None, size=PHONE):
    """A touch screen of `size` in its own context (its own session and seat cookie), offline."""
    return tab(browser, base, size, is_mobile=True, has_touch=True, extra_http_headers=headers or {})



def split_chart(pg):
    """The class's split (a plotly chart titled "The class's guesses", or "Guesses" in the projector's join card),
    beside the step's own charts."""
    return pg.locator('[data-testid="stPlotlyChart"]').filter(
        has=pg.locator(".gtitle", has_text=re.compile(r"^(The class's guesses|Guesses) \(")))


def header_is(pg, step: int, timeout: float = 120_000) -> None:
    # Polled every 100 ms, not on every animation frame: a frame-by-frame wait keeps chromium drawing all along.
    pg.wait_for_function(f"() => document.querySelector('h2')?.innerText.startsWith('Step {step} of')",
                         timeout=timeout, polling=100)


@contextlib.contextmanager
def explained(pages: dict, log: pathlib.Path | None = None):
    """A wait that fails inside says what each page showed then: a screenshot of each in tests/output, their text,
    their errors and the end of the server's log (a CI failure is then readable without running it again)."""
    try:
        yield
    except Exception as e:
        stamp, said = int(time.time()), []
        for name, pg in pages.items():
            try:
                pg.screenshot(path=str(OUT / f"failed_{name}_{stamp}.png"), full_page=True)
                text = pg.evaluate("() => document.body.innerText")  # the step's start and the side column's end
                said.append(f"{name} (errors {pg.errors}): {text[:1200]!r} ... {text[-1800:]!r}")
            except Exception as why:  # a closed page says so, and the others are still shown
                said.append(f"{name}: not readable ({type(why).__name__})")
        if log is None:
            log = OUT / f"server{worker_suffix()}.log"  # the shared server's (tests/conftest.py)
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
        raise AssertionError(f"{type(e).__name__}: {str(e)[:500]}\n" + "\n".join(said)
                             + f"\nscreenshots failed_*_{stamp}.png; the server's log ends: {tail!r}") from e


def start_class(pg, server: str, query: str = "") -> str:
    pg.goto(f"{server}/lesson{query}", wait_until="domcontentloaded")
    settle(pg)
    if "present=1" in query:  # presenter mode: "Start a class" is in the popover at the top right
        pg.get_by_role("button", name="Class and sentence").click()
    pg.get_by_role("button", name="Start a class").click()  # once: a click during a rerun still starts the class
    pg.wait_for_url(re.compile(r"class=[A-Z0-9]{6}"), timeout=120_000)
    settle(pg)
    return urllib.parse.parse_qs(urllib.parse.urlparse(pg.url).query)["class"][0]


def joined_by_link(browser, server: str, code: str):
    """A student's tab (900 x 900) that opened the class's link and joined."""
    s = tab(browser, server, (900, 900))
    s.goto(f"{server}/lesson?class={code}", wait_until="domcontentloaded")
    settle(s)
    s.get_by_role("button", name="Join the class").click()
    seat_of(s)
    settle(s)
    return s


def seat_of(pg) -> str:
    """The seat of a student's tab that joined (or came back), once its page is the class's: the address has the seat
    as soon as Join's run starts, while the page still shows the Lesson alone (its own guess, the same step heading),
    so a click before the run ends would land on the old page."""
    pg.wait_for_url(re.compile(r"[?&]me="))
    settle(pg)
    return urllib.parse.parse_qs(urllib.parse.urlparse(pg.url).query)["me"][0]


class ScriptedStudent:
    """A student without a browser: Streamlit's websocket (support/wsclient.py, as benchmarks/load.py's clients talk)
    in an event loop of its own thread. For a test whose checks are on the teacher's screen, where a chromium tab
    would only vote, at the cost of drawing every step's charts."""

    def __init__(self, server: str, code: str, nick: str = "scripted", address: str = "198.51.100.30"):
        import asyncio
        import threading

        from support.flood import join
        from support.wsclient import problems_of

        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client, run = self._do(join(server, code, address, nick))
        assert "me=" in self.client.page_query and not problems_of(run), (self.client.page_query, problems_of(run))

    def _do(self, coro, timeout: float = 300):
        import asyncio

        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def vote(self, step: int, choice: int = 0) -> str:
        """Rerun the page as a following student's (the class's step `step` drawn, its vote box there) and vote for
        choice `choice`; returns the choice voted for. Fails on a run with an exception, on another step's page, or
        on a vote not said."""
        from support.flood import said
        from support.wsclient import problems_of

        c = self.client

        async def go() -> str:
            run = await c.rerun(query=c.page_query)  # as a browser's rerun: its address (class, seat) with it
            assert not problems_of(run), problems_of(run)
            heads = [h.body for h in run.of("heading")]
            assert any(h.startswith(f"Step {step} of") for h in heads), (step, heads)
            radio = next(e for e in run.of("radio") if "class_vote_" in e.id)
            key = radio.id.split("-", 2)[-1]
            voted = await c.rerun(query=c.page_query, widgets={key: radio.options[choice]},
                                  fragment=c.widget_fragments.get(key) or None, auto=False)
            assert not problems_of(voted) and "Your vote:" in said(voted), (problems_of(voted), said(voted)[:500])
            return radio.options[choice]

        return self._do(go())

    def close(self) -> None:
        self._do(self.client.close(), 60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
