"""A live class on the real Redis store, Redis killed for about 10 s mid-class, in chromium.

One app process whose class store is a redis-server this file starts (append-only, as deploy/serve.sh starts it),
for both tests (each has its own class; the kill test leaves the store running again, on its files):
a teacher and a student in their own browser contexts; the student votes; redis-server is killed (SIGKILL). The
teacher moves on: the Lesson runs on, both pages say they are reconnecting, the teacher's address keeps the class
and its key. redis-server is started again on its files: the class resumes with its vote, the student follows the
teacher's step, and the teacher keeps control (the next step reaches the student).
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import signal
import time
import types
import urllib.parse

import pytest
from support.appserver import app_server, free_port, redis_server
from support.browser import settle
from support.class_pages import explained, header_is, joined_by_link, tab
from support.class_pages import start_class as _start_class
from support.paths import OUT, worker_suffix
from support.wait import until

pytestmark = pytest.mark.browser

OUTAGE = 10.0  # seconds without the class store


def _aof_written(url: str) -> bool:
    import redis

    r = redis.Redis.from_url(url)
    try:
        return int(r.info("persistence")["aof_buffer_length"]) == 0
    finally:
        r.close()


@pytest.fixture(scope="module")
def class_app():
    """One app process (offline) whose class store is a redis-server (append-only) on a port of its own: the file's
    tests share it (a server's start, torch and the model, costs more than either test's class). `restart()` starts
    the redis-server again on its files and port, kept until the file ends."""
    d, port = OUT / f"redis-class{worker_suffix()}", free_port()
    shutil.rmtree(d, ignore_errors=True)
    try:
        with contextlib.ExitStack() as stack:
            url, redis = stack.enter_context(redis_server(d, port=port, appendonly=True))
            log = stack.enter_context(open(OUT / f"server-class-redis{worker_suffix()}.log", "w"))
            server, _ = stack.enter_context(app_server(
                {**os.environ, "HF_HUB_OFFLINE": "1", "BERT_EXPLORER_CLASS_STORE": url,
                 "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"},
                log=log, args=("--global.developmentMode", "false"), timeout=300))
            yield types.SimpleNamespace(
                url=url, redis=redis, server=server, log=pathlib.Path(log.name),
                restart=lambda: stack.enter_context(redis_server(d, port=port, appendonly=True)))
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def browser(browser):
    """The file's chromium, each test's contexts closed after it (no page of one test's class left on its timers)."""
    yield browser
    for ctx in browser.contexts:
        ctx.close()


def test_redis_killed_mid_class_and_restarted_with_its_data(browser, class_app):
    url, redis, server = class_app.url, class_app.redis, class_app.server
    with contextlib.ExitStack() as stack:
        t = tab(browser, server)
        code = _start_class(t, server)
        secret = urllib.parse.parse_qs(urllib.parse.urlparse(t.url).query)["teacher"][0]
        s = joined_by_link(browser, server, code)
        stack.enter_context(explained({"teacher": t, "student": s}, log=class_app.log))
        s.locator('[data-testid="stRadio"] [role="radiogroup"] label').nth(1).click()
        s.wait_for_selector("text=Your vote:", timeout=120_000)
        t.wait_for_selector("text=1 of 1 students have answered.", timeout=120_000)
        # The vote is in the append-only file once redis-server's AOF buffer is empty (written out; a SIGKILL
        # loses no written byte, only what is still in the buffer).
        until(lambda: _aof_written(url), 60, "redis-server to write its append-only file")

        redis.send_signal(signal.SIGKILL)  # no shutdown, no last write
        redis.wait()
        down = time.time()
        t.get_by_role("button", name="Next →").click()
        settle(t)
        header_is(t, 2)  # the Lesson runs on without its class
        t.wait_for_selector("text=Reconnecting to the class", timeout=120_000)
        q = urllib.parse.parse_qs(urllib.parse.urlparse(t.url).query)
        assert (q["class"][0], q["teacher"][0]) == (code, secret)  # the teacher's key is kept
        s.wait_for_selector("text=Reconnecting to the class", timeout=120_000)  # the student's vote box says so
        # A wall-clock wait on purpose: the store stays down for OUTAGE seconds whatever the pages do.
        time.sleep(max(0.0, OUTAGE - (time.time() - down)))

        class_app.restart()  # again, on its files and port
        t.wait_for_selector("text=Reconnecting to the class", state="detached", timeout=180_000)
        t.wait_for_selector("text=Code:", timeout=120_000)  # the class's card is back on the teacher's page
        header_is(s, 2, timeout=180_000)  # the student follows the teacher's step again
        t.get_by_role("button", name="← Back").click()
        settle(t)
        header_is(s, 1, timeout=180_000)  # the teacher keeps control of the class
        t.wait_for_selector("text=1 of 1 students have answered.", timeout=120_000)  # with its vote
        s.wait_for_selector("text=Your vote:", timeout=120_000)
        for pg in (t, s):
            assert pg.locator('[data-testid="stException"]').count() == 0 and not pg.errors, pg.errors


def test_a_removed_student_in_a_big_class_is_told_within_5_s(browser, class_app):
    """A phone in a class of 88 (its count's timer 8-12 s, session.student_tick) is told of its removal within 5 s:
    the removal is the seat's own event (server/events.py's seat:CODE:SID), not the timer's next read. The other
    seats join through the class's Redis as the store's API (their own bucket: the class's join limit is not what
    this test is about); the removal is the teacher's, by the store with the teacher's key, just after the phone's
    count has drawn with the slow timer."""
    import re

    from playwright.sync_api import expect
    from support.class_pages import REMOVED, phone

    from classroom.limits import Rate
    from classroom.redis_store import RedisStore

    url, server = class_app.url, class_app.server
    with contextlib.ExitStack() as stack:
        t = tab(browser, server)
        code = _start_class(t, server)
        secret = urllib.parse.parse_qs(urllib.parse.urlparse(t.url).query)["teacher"][0]
        ph = phone(browser, server)
        pages = {"teacher": t, "phone": ph}
        stack.enter_context(explained(pages, log=class_app.log))
        ph.goto(f"{server}/lesson?class={code}", wait_until="domcontentloaded")
        settle(ph)
        ph.get_by_role("button", name="Join the class").tap()
        ph.wait_for_url(re.compile(r"me="))
        sid = urllib.parse.parse_qs(urllib.parse.urlparse(ph.url).query)["me"][0]
        store = RedisStore(url)
        store.join_class = Rate(10_000, 10_000)
        stack.callback(store.r.close)

        def count_is(n: int) -> None:
            ph.get_by_text(re.compile(rf"\b{n}\b( have answered|\s+in the class)")).first.wait_for(timeout=60_000)

        for i in range(86):
            store.join(code, f"seat {i}", client=f"10.1.{i}.1")
        count_is(87)  # the phone's count read the big class: its next drawing sets the slow timer
        store.join(code, "seat 86", client="10.1.86.1")
        count_is(88)  # drawn with the slow timer: its next read is 8-12 s away
        t0 = time.monotonic()
        store.remove(code, secret, sid)
        told = ph.get_by_text(REMOVED).first
        told.wait_for(state="attached", timeout=30_000)
        took = time.monotonic() - t0
        assert took <= 5.0, f"the removed student was told after {took:.1f} s"
        expect(told).to_be_in_viewport(timeout=5_000)
        assert ph.locator('[class*="st-key-class_vote_"]').count() == 0 and not ph.errors, ph.errors
        print(f"removed student told after {took:.1f} s in a class of 88")
