"""The Layers and Inside-a-layer pages in Debian's chromium, offline (screenshots in tests/output).

Uses tests/browser/conftest.py's server, browser and PageWatch (every off-machine request is aborted).
"""

from __future__ import annotations

import urllib.parse

import pytest
from support.browser import POLL_MS
from support.page_checks import drawn
from support.paths import OUT

pytestmark = pytest.mark.browser


# Layers opens with 3 charts (stream, token map, lens); "two contexts" and its other sections start closed.
@pytest.mark.parametrize("path,name,min_plots", [("layers", "layers", 3), ("inside-layer", "inside_layer", 10)])
def test_layer_pages_render_offline(watch, path, name, min_plots):  # noqa: F811
    q = urllib.parse.urlencode({"text": "The cat [MASK] on the mat because it was tired."})
    page = watch.open(f"/{path}?{q}")
    watch.assert_clean()
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)
    page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot').length >= {min_plots}", timeout=60_000,
                           polling=POLL_MS)
    assert page.locator("h1, h2, h3").count() > 0
    assert page.locator(".katex").count() >= 1  # the formulas render (KaTeX ships with streamlit)
    OUT.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 2400})  # Streamlit scrolls inside: a tall window shows more
    page.wait_for_function("() => window.innerHeight === 2400", polling=POLL_MS)
    drawn(page, still=0.5)  # the charts resized to the tall window
    page.screenshot(path=str(OUT / f"{name}.png"), full_page=True)
    watch.assert_clean()
