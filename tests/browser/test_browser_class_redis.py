"""A live class on the real Redis store, Redis killed for about 10 s mid-class, in chromium.

One app process whose class store is a redis-server this test starts (append-only, as deploy/serve.sh starts it):
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


def test_redis_killed_mid_class_and_restarted_with_its_data(browser):
    d, port = OUT / f"redis-class-kill{worker_suffix()}", free_port()
    shutil.rmtree(d, ignore_errors=True)
    try:
        with contextlib.ExitStack() as stack:
            url, redis = stack.enter_context(redis_server(d, port=port, appendonly=True))
            log = stack.enter_context(open(OUT / f"server-class-redis{worker_suffix()}.log", "w"))
            server, _ = stack.enter_context(app_server(
                {**os.environ, "HF_HUB_OFFLINE": "1", "BERT_EXPLORER_CLASS_STORE": url,
                 "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"},
                log=log, args=("--global.developmentMode", "false"), timeout=300))
            t = tab(browser, server)
            code = _start_class(t, server)
            secret = urllib.parse.parse_qs(urllib.parse.urlparse(t.url).query)["teacher"][0]
            s = joined_by_link(browser, server, code)
            stack.enter_context(explained({"teacher": t, "student": s}, log=pathlib.Path(log.name)))
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
            t.screenshot(path=str(OUT / "class_redis_down_teacher.png"))
            # A wall-clock wait on purpose: the store stays down for OUTAGE seconds whatever the pages do.
            time.sleep(max(0.0, OUTAGE - (time.time() - down)))

            stack.enter_context(redis_server(d, port=port, appendonly=True))  # again, on its files and port
            t.wait_for_selector("text=Reconnecting to the class", state="detached", timeout=180_000)
            t.wait_for_selector("text=Code:", timeout=120_000)  # the class's card is back on the teacher's page
            header_is(s, 2, timeout=180_000)  # the student follows the teacher's step again
            t.get_by_role("button", name="← Back").click()
            settle(t)
            header_is(s, 1, timeout=180_000)  # the teacher keeps control of the class
            t.wait_for_selector("text=1 of 1 students have answered.", timeout=120_000)  # with its vote
            s.wait_for_selector("text=Your vote:", timeout=120_000)
            t.screenshot(path=str(OUT / "class_redis_back_teacher.png"))
            for pg in (t, s):
                assert pg.locator('[data-testid="stException"]').count() == 0 and not pg.errors, pg.errors
    finally:
        shutil.rmtree(d, ignore_errors=True)
