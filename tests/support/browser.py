"""The browser tests' page helpers: a watched page (errors, dialogs, off-machine requests), waiting for the app to
settle, and reading the main area. Debian's chromium via Playwright (support/appserver.py's CHROMIUM)."""

from __future__ import annotations

import re
import time
import urllib.parse

from support.appserver import CHROMIUM, CHROMIUM_ARGS
from support.paths import OUT
from support.wait import until

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "OUT", "DONE", "SLOW", "POLL_MS", "PageWatch", "offline",
           "assert_nothing_injected", "settle", "main_scrolls", "after_rerun", "press", "main_text", "wait_for_text",
           "open_slow", "launch"]

# How often a wait on the page's state polls it, ms: Playwright's default polls on every animation frame, which keeps
# chromium drawing frames for as long as the wait lasts; a wait ending a poll late costs nothing.
POLL_MS = 100


def launch():
    """A context manager yielding one headless Debian chromium (the caller's fixture decides its scope)."""
    import contextlib
    from pathlib import Path

    from playwright.sync_api import sync_playwright

    @contextlib.contextmanager
    def run():
        assert Path(CHROMIUM).exists(), "Debian's chromium is required (apt-get install chromium)"
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            try:
                yield b
            finally:
                b.close()
    return run()


def offline(ctx, base: str, blocked: list[str] | None = None) -> None:
    """No network in `ctx`: a request off `base`'s host fails, as it would offline (kept in `blocked`). The pattern
    is matched in Playwright's driver, so the app's own requests never wait on a round trip to this process (a
    Python handler that let them through held up every asset of every page load)."""
    host = urllib.parse.urlparse(base).netloc
    off = re.compile(rf"^(?!(?:https?|wss?)://{re.escape(host)}(?:/|$)|data:|blob:|about:)")

    def block(r):
        if blocked is not None:
            blocked.append(r.request.url)
        r.abort()

    ctx.route(off, block)


class PageWatch:
    """A page whose console errors, page errors, dialogs and off-machine requests are recorded."""

    def __init__(self, browser, base: str):
        self.ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.base = base
        self.errors: list[str] = []
        self.blocked: list[str] = []
        self.dialogs: list[str] = []
        offline(self.ctx, base, self.blocked)
        self.page = self.ctx.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def dialog(d):
            self.dialogs.append(d.message)
            d.dismiss()

        self.page.on("dialog", dialog)

    def open(self, path: str):
        self.page.goto(self.base + path, wait_until="domcontentloaded")
        self.settle()
        return self.page

    def settle(self, timeout: float = 300):
        """Wait until the app is connected and its script has run and stopped (no time-based guess).

        Streamlit's root element says both: data-test-connection-state and data-test-script-state
        ("initial" before the first run, "running", "notRunning" once a run ended). A page may rerun
        itself right after a run, so "not running" must hold twice, half a second apart. The timeout is
        generous: a cold server's first page imports torch and loads the model, which takes minutes on a
        busy 2-core machine; a passing test never waits for it.
        """
        p = self.page
        deadline = time.time() + timeout
        while time.time() < deadline:
            p.wait_for_function(IDLE_JS, timeout=max(1.0, deadline - time.time()) * 1000, polling=POLL_MS)
            p.wait_for_selector('[data-testid="stSidebar"]', timeout=max(1.0, deadline - time.time()) * 1000)
            time.sleep(0.5)
            if p.evaluate(IDLE_JS) and p.locator('[data-testid="stStatusWidget"]').count() == 0:
                return
        raise AssertionError(f"the app was still running or drawing after the timeout: {p.evaluate(IDLE_WHY_JS)}")

    def assert_clean(self):
        p = self.page
        assert p.locator('[data-testid="stException"]').count() == 0, p.locator('[data-testid="stException"]')\
            .first.inner_text()
        # The only console errors tolerated are the ones our blocked off-machine requests cause.
        real = [e for e in self.errors if "net::ERR_FAILED" not in e and "Failed to load resource" not in e]
        assert not real, real
        assert not self.dialogs, self.dialogs

    def close(self):
        self.ctx.close()


INJECTED_JS = """() => [...document.querySelectorAll('script')].filter(s => s.textContent.includes('alert(')).length
    + document.querySelectorAll('img[src="x"], [onerror]').length"""


def assert_nothing_injected(page):
    """No <img src=x>, onerror attribute or script holding an alert in the page or any of its frames."""
    for f in page.frames:
        assert f.evaluate(INJECTED_JS) == 0, f.url


DONE = '[data-testid="stApp"][data-test-connection-state="CONNECTED"][data-test-script-state="notRunning"]'

# The app is idle: its script has run and stopped (DONE) and the frontend has drawn every element it was sent.
# Streamlit 1.67 loads most element kinds' code on first use (st.html, buttons, alerts, charts: React.lazy chunks)
# and draws the element as a placeholder, data-testid="stSkeleton", until its chunk has arrived: the script state
# says "notRunning" long before that on a loaded machine, and a check made then sees a page without its styles
# (presenter mode's CSS is an st.html: until it is drawn, the sidebar and its h1 show beside the Lesson's own).
IDLE_JS = """() => { const app = document.querySelector('[data-testid="stApp"]');
  return !!app && app.dataset.testConnectionState === 'CONNECTED' && app.dataset.testScriptState === 'notRunning'
    && document.querySelector('[data-testid="stSkeleton"]') === null; }"""
IDLE_WHY_JS = """() => { const app = document.querySelector('[data-testid="stApp"]');
  return {connection: app && app.dataset.testConnectionState, script: app && app.dataset.testScriptState,
          skeletons: document.querySelectorAll('[data-testid="stSkeleton"]').length}; }"""


def settle(pg, timeout: float = 120) -> None:
    """The script has run and stopped and every element is drawn (IDLE_JS), twice half a second apart (a page may
    rerun right after a run)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        pg.wait_for_function(IDLE_JS, timeout=max(1.0, deadline - time.time()) * 1000, polling=POLL_MS)
        time.sleep(0.5)
        if pg.evaluate(IDLE_JS):
            return
    raise AssertionError(f"the app was still running or drawing after the timeout: {pg.evaluate(IDLE_WHY_JS)}")


def main_scrolls(pg) -> tuple[int, int]:
    """(scrollHeight, clientHeight) of the main area, the element that scrolls in Streamlit."""
    return tuple(pg.evaluate("""() => { const e = document.querySelector('[data-testid="stMain"]');
                                        return [e.scrollHeight, e.clientHeight]; }"""))


# Records, from now on, whether the app ran. Two signs, either enough:
# - the script state on Streamlit's root changed (data-test-script-state: a rerun requested, running, not running;
#   a run that starts and ends between two polls is still seen, as mutations);
# - two or more messages came from the server after the page sent one (the action's rerun request; a run sends at
#   least its start and its end). The first sign alone missed runs: React commits only the last of the state
#   changes it batches, and a browser starved of CPU handles a short run's messages (started, deltas, finished) in
#   one batch, so the attribute goes from "notRunning" to "notRunning" and changes never (seen under 4 busy loops:
#   PageDown moved the slide to step 6, focus on its heading, and no mutation came; test_browser_lesson.py's
#   presenter keys timed out after 120 s so in CI). The page's socket is reached through WebSocket.prototype.send,
#   as Streamlit's frontend keeps it private: the first message the page sends after this adds a listener to it.
WATCH_RUNS_JS = """() => {
  window.__bxRan = false;
  window.__bxGot = 0;
  if (!window.__bxRuns) {
    window.__bxRuns = new MutationObserver(ms => { if (ms.length) window.__bxRan = true; });
    window.__bxRuns.observe(document.body, {attributes: true, subtree: true, attributeOldValue: true,
                                            attributeFilter: ['data-test-script-state']});
  }
  if (!window.__bxSend) {
    window.__bxSend = WebSocket.prototype.send;
    WebSocket.prototype.send = function (data) {
      if (!this.__bxHeard) {
        this.__bxHeard = true;
        this.addEventListener('message', () => { window.__bxGot += 1; });
      }
      return window.__bxSend.call(this, data);
    };
  }
}"""
RAN_JS = """() => window.__bxRan === true || (window.__bxGot >= 2
  && document.querySelector('[data-testid="stApp"]').dataset.testScriptState === 'notRunning')"""


# What the page was doing when an action started no rerun: the focused element (a text field or a radio keeps a
# shortcut from Streamlit), the keys Streamlit's shortcut library (hotkeys-js, window.hotkeys) holds as pressed (a
# key it saw go down but never up spoils every later shortcut), the shortcuts bound, the script state, skeletons.
NO_RUN_JS = """() => { const a = document.activeElement, h = window.hotkeys,
    app = document.querySelector('[data-testid="stApp"]');
  return {focused: a ? a.tagName + (a.type ? '[' + a.type + ']' : '') + ' ' + String(a.className).slice(0, 60) : null,
          pressed: h ? h.getPressedKeyString() : null,
          bound: h ? [...new Set(h.getAllKeyCodes().map(k => k.shortcut))].join(' ') : null,
          script: app && app.dataset.testScriptState, connection: app && app.dataset.testConnectionState,
          skeletons: document.querySelectorAll('[data-testid="stSkeleton"]').length}; }"""


def after_rerun(pg, act, timeout: float = 120) -> None:
    """`act()` (a click, a key), then wait for the rerun it starts to start and end: no guess at how long the
    rerun takes to begin. An action that starts none fails with what the page was doing (NO_RUN_JS)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    pg.evaluate(WATCH_RUNS_JS)
    act()
    try:
        pg.wait_for_function(RAN_JS, timeout=timeout * 1000, polling=POLL_MS)
    except PlaywrightTimeout:
        raise AssertionError(f"no rerun in {timeout:g} s after the action: {pg.evaluate(NO_RUN_JS)}") from None
    settle(pg, timeout)


def press(pg, key: str) -> None:
    """A key, then the rerun it starts."""
    after_rerun(pg, lambda: pg.keyboard.press(key))


def main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def wait_for_text(page, needle: str, timeout: float = 120):
    """Wait until the main area shows `needle` (the page may still be drawing its tables)."""
    try:
        until(lambda: needle in main_text(page), timeout, f"{needle!r} on the page", every=0.5)
    except AssertionError as e:
        raise AssertionError(f"{e}; the page: {main_text(page)[:2000]}") from None


SLOW = 300  # s: on a shared, busy 2-core machine a rerun can take minutes


def open_slow(watch, path: str):
    """`watch.open` with a longer wait for the app to settle."""
    watch.page.goto(watch.base + path, wait_until="domcontentloaded")
    watch.settle(timeout=SLOW)
    return watch.page
