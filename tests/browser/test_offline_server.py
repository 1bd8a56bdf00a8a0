"""With the server process's sockets limited to loopback, the app starts and renders every page,
and a hub model fails with a plain message while the bundled model keeps working."""

from __future__ import annotations

import os

import pytest
from support.appserver import app_server
from support.browser import OUT, PAGES, PageWatch
from support.paths import ROOT

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def offline_server():
    OUT.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_HUB_OFFLINE")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests" / "offline_site"), env.get("PYTHONPATH", "")])
    env["HF_HOME"] = str(OUT / "empty-hf-home")  # no cached hub files to fall back on
    with open(OUT / "offline_server.log", "w") as log, app_server(env, log=log, timeout=300) as (url, _):
        yield url


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
        # The bundled model still answers: its chart is drawn (plotly renders after the script has
        # finished, on its own schedule in the browser: wait for it, do not count at once).
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=180_000)
        assert page.locator(".js-plotly-plot").count() >= 1
    finally:
        w.close()
