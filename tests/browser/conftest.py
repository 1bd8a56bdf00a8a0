"""The browser tier's fixtures: the session's one real app server, one chromium per test file, a watched page per
test (every test gets its own browser context, hence its own Streamlit session). Every test here is marked
`browser` (tests/conftest.py's collection hook)."""

from __future__ import annotations

import os
import urllib.parse

import pytest
from support.appserver import app_server
from support.browser import PageWatch, launch
from support.nb_run import kernel  # noqa: F401  (pytest fixture: test_browser_notebook.py's kernel)
from support.paths import OUT, worker_suffix


@pytest.fixture(scope="session")
def shared_app_server():
    """One `streamlit run app.py` for the whole session (offline, developmentMode off), shared by the browser tests
    that need no special environment; its log in tests/output/server[-gwN].log. Each test still opens its own
    browser context, hence its own Streamlit session; only the server's start (torch's import, the model's load,
    the caches) is paid once instead of once per test file."""
    OUT.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    with open(OUT / f"server{worker_suffix()}.log", "w") as log, \
            app_server(env, log=log, args=("--global.developmentMode", "false"), timeout=300) as (url, _):
        yield url


@pytest.fixture(scope="module")
def server(shared_app_server):
    """The real Streamlit server a test file's pages open (a file needing another environment overrides it)."""
    return shared_app_server


@pytest.fixture(scope="module")
def browser():
    """One Debian chromium for a test file's tests."""
    with launch() as b:
        yield b


@pytest.fixture(scope="module")
def chromium(browser):
    """The Lesson tests' name for the file's chromium."""
    return browser


@pytest.fixture
def watch(browser, server):
    """A 1400x1000 page whose errors, dialogs and off-machine requests are recorded (support/browser.py)."""
    w = PageWatch(browser, server)
    yield w
    w.close()


@pytest.fixture
def page(server, chromium):
    """A 1280x720 page (a projector), offline: anything off this machine fails; its page errors in `pg.errors`."""
    host = urllib.parse.urlparse(server).netloc
    ctx = chromium.new_context(viewport={"width": 1280, "height": 720})
    ctx.route("**/*", lambda r: r.continue_() if urllib.parse.urlparse(r.request.url).netloc in (host, "")
              else r.abort())
    pg = ctx.new_page()
    pg.base, pg.errors = server, []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    ctx.close()
