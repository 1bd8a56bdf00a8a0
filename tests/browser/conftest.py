"""The browser tier's fixtures: the server a file's pages open (the session's shared one), one chromium per test
file, a watched page per test (every test gets its own browser context, hence its own Streamlit session). Every test
here is marked `browser` (tests/conftest.py's collection hook)."""

from __future__ import annotations

import pytest
from support.browser import PageWatch, launch, offline
from support.nb_run import kernel  # noqa: F401  (pytest fixture: test_browser_notebook.py's kernel)


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
    ctx = chromium.new_context(viewport={"width": 1280, "height": 720})
    offline(ctx, server)
    pg = ctx.new_page()
    pg.base, pg.errors = server, []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    ctx.close()
