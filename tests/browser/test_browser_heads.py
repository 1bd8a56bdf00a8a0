"""Heads & patching in a real chromium, offline: rank the heads, click a cell of the importance map, and the
predictions below are the model's without that head (screenshot in tests/output).

Uses test_browser.py's server, browser and offline page watch (every off-machine request aborted).
"""

from __future__ import annotations

import time
import urllib.parse

import pytest
from support.paths import OUT

pytestmark = pytest.mark.browser


def plots(page) -> int:
    return page.locator(".js-plotly-plot .main-svg").count()


def wait_plots(page, n: int, timeout: float = 120):
    deadline = time.time() + timeout
    while plots(page) < n and time.time() < deadline:
        time.sleep(0.5)
    assert plots(page) >= n, plots(page)


def cell_xy(page, plot_index: int, head: int, layer: int) -> tuple[float, float]:
    """Page coordinates of the centre of cell (layer, head), 0-based category indices, of a plotly heatmap."""
    return page.evaluate(
        """([i, h, l]) => {
            const gd = document.querySelectorAll('.js-plotly-plot')[i];
            const fl = gd._fullLayout, box = gd.getBoundingClientRect();
            return [box.left + fl._size.l + fl.xaxis.l2p(h), box.top + fl._size.t + fl.yaxis.l2p(l)];
        }""", [plot_index, head, layer])


def test_click_a_head_and_see_the_guess_without_it(watch):  # noqa: F811
    q = urllib.parse.urlencode({"text": "She [MASK] the letter to her mother."})
    page = watch.open(f"/heads?{q}")
    wait_plots(page, 2)  # the guesses with and without the chosen head, the patching grid
    watch.assert_clean()
    page.get_by_text("Rank all 72 heads", exact=False).first.click()
    watch.settle()
    wait_plots(page, 4)  # + the importance map and the pruning curve
    watch.assert_clean()
    body = page.locator('[data-testid="stMain"]').inner_text()
    assert "without layer 6, head 1" in body  # the default head before any click
    page.get_by_text("Head importance", exact=False).first.scroll_into_view_if_needed()
    time.sleep(1.0)
    x, y = cell_xy(page, 0, 2, 1)  # head 3 of layer 2
    page.mouse.click(x, y)
    watch.settle()
    watch.assert_clean()
    deadline = time.time() + 60
    while "without layer 2, head 3" not in page.locator('[data-testid="stMain"]').inner_text() \
            and time.time() < deadline:
        time.sleep(0.5)
    assert "without layer 2, head 3" in page.locator('[data-testid="stMain"]').inner_text()
    OUT.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 2400})
    page.wait_for_timeout(1500)
    page.screenshot(path=str(OUT / "heads.png"), full_page=True)
    watch.assert_clean()
