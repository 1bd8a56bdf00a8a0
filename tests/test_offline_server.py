"""With the server process's sockets limited to loopback, the app starts and renders every page,
and a hub model fails with a plain message while the bundled model keeps working."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request

import pytest
from test_browser import CHROMIUM_ARGS, OUT, PAGES, ROOT, PageWatch, free_port

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def offline_server():
    port = free_port()
    OUT.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_HUB_OFFLINE")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests" / "offline_site"), env.get("PYTHONPATH", "")])
    env["HF_HOME"] = str(OUT / "empty-hf-home")  # no cached hub files to fall back on
    log = open(OUT / "offline_server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"), "--server.headless",
                             "true", "--server.port", str(port), "--server.address", "127.0.0.1"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 90
        while True:
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError("offline streamlit did not start") from None
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        log.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def test_offline_server_renders_every_page_and_refuses_hub_plainly(browser, offline_server):
    w = PageWatch(browser, offline_server)
    try:
        for name in PAGES:
            w.open("/" if name == PAGES[0] else f"/{name}")
            w.assert_clean()
        page = w.open("/predictions?model=bert-base-uncased")
        w.assert_clean()
        side = page.locator('[data-testid="stSidebar"]').inner_text()
        assert "Could not load bert-base-uncased" in side and "hub" in side, side
        assert "Still showing: bundled" in side
        assert page.locator(".js-plotly-plot").count() >= 1  # the bundled model still answers
    finally:
        w.close()
