"""Rollout, head statistics, salience, several masks and PLL in a real chromium, offline (screenshots in tests/output).

Uses tests/browser/conftest.py's server, browser and offline page watch (every off-machine request aborted).
"""

from __future__ import annotations

import urllib.parse

import pytest
from support.page_checks import drawn
from support.paths import OUT
from support.wait import until

pytestmark = pytest.mark.browser


def plots(page) -> int:
    return page.locator(".js-plotly-plot .main-svg").count()


def wait_plots(page, n: int, timeout: float = 180):
    until(lambda: plots(page) >= n, timeout, f"{n} charts drawn", every=0.5)


def shoot(page, heading: str, name: str):
    """Scroll `heading` to the top of the window and save the window to tests/output (for scripts/screenshots.py)."""
    page.get_by_role("heading", name=heading).first.scroll_into_view_if_needed()
    page.evaluate("window.scrollBy(0, 0)")
    page.get_by_role("heading", name=heading).first.evaluate("el => el.scrollIntoView({block: 'start'})")
    drawn(page, still=0.5)  # plotly's resize after scrolling, done and kept still
    OUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUT / name))


def test_attention_rollout_and_head_statistics(watch):  # noqa: F811
    q = urllib.parse.urlencode({"text": "The cat sat on the mat because it was [MASK]."})
    page = watch.open(f"/attention?{q}")
    wait_plots(page, 6)  # heatmap, head grid, [CLS]/[SEP] share, statistics grid, rollout map, rollout row
    watch.assert_clean()
    body = page.locator('[data-testid="stMain"]').text_content()  # a hidden tab's text too (inner_text skips it)
    assert "Heads that look at the previous token" in body and "Sink heads on [CLS], [SEP] or punctuation" in body
    assert "draws most from" in body
    page.get_by_role("button", name="Open this head").click()
    watch.settle()
    watch.assert_clean()
    shoot(page, "Attention rollout: where information can have come from", "attention_rollout.png")
    watch.assert_clean()


def test_predictions_salience_fill_and_pll(watch):  # noqa: F811
    q = urllib.parse.urlencode({"text": "The [MASK] sat on the [MASK] because it was tired."})
    page = watch.open(f"/predictions?{q}")
    wait_plots(page, 2)
    for label in ("Compute salience", "Compare the three strategies", "Compare sentences"):
        page.get_by_text(label, exact=True).click()
        watch.settle()
        watch.assert_clean()
    wait_plots(page, 5)  # 2 candidates, occlusion, gradient, PLL
    body = page.locator('[data-testid="stMain"]').inner_text()
    assert "Gradient × input estimates it" in body
    assert "left to right" in body and "confident first" in body
    assert "the most natural" in body
    shoot(page, "Which words did the prediction rely on? (salience)", "predictions_salience.png")
    watch.assert_clean()
