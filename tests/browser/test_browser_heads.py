"""Heads & patching in a real chromium, offline: rank the heads, click a cell of the importance map, and the
predictions below are the model's without that head (screenshot in tests/output).

Uses tests/browser/conftest.py's server, browser and offline page watch (every off-machine request aborted).
"""

from __future__ import annotations

import urllib.parse

import pytest
from support.browser import POLL_MS
from support.page_checks import drawn
from support.paths import OUT
from support.wait import until

pytestmark = pytest.mark.browser


def plots(page) -> int:
    return page.locator(".js-plotly-plot .main-svg").count()


def wait_plots(page, n: int, timeout: float = 180):
    until(lambda: plots(page) >= n, timeout, f"{n} charts drawn", every=0.5)


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
    drawn(page, still=0.5)  # scrolled, and the heatmap laid out where it will be clicked
    x, y = cell_xy(page, 0, 2, 1)  # head 3 of layer 2
    page.mouse.click(x, y)
    watch.settle()
    watch.assert_clean()
    until(lambda: "without layer 2, head 3" in page.locator('[data-testid="stMain"]').inner_text(), 120,
          "the guess without layer 2, head 3", every=0.5)
    OUT.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1400, "height": 2400})
    page.wait_for_function("() => window.innerHeight === 2400", polling=POLL_MS)
    drawn(page, still=0.5)  # the charts resized to the tall window
    page.screenshot(path=str(OUT / "heads.png"), full_page=True)
    watch.assert_clean()
