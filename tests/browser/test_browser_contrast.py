"""WCAG AA colour contrast on every page, in normal mode and (the Lesson) presenter mode, checked by axe-core's
`color-contrast` rule in a real chromium; and the Lesson's attention step opens the Attention page on the layer and
head it names."""

from __future__ import annotations

import re
import urllib.parse

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from support.browser import POLL_MS, press, settle
from support.page_checks import AXE, contrast_failures, drawn

import bert_core
from bert_core.lesson.questions import attention_head
from ui.lesson import content as lesson

pytestmark = pytest.mark.browser


# The Lesson in both modes, at a step with a chart and a caption. Every other page is checked where
# test_browser_a11y.py renders it (test_page_renders_offline_and_is_accessible): one visit per page, not two.
PAGES = ["lesson?step=2", "lesson?present=1&step=6"]


def test_axe_core_is_the_pinned_release():
    assert AXE.startswith("/*! axe v4.14.1")


@pytest.mark.parametrize("path", PAGES)
def test_no_colour_contrast_failure(page, path):  # noqa: F811
    page.goto(f"{page.base}/{path}", wait_until="domcontentloaded")
    settle(page, timeout=240)
    drawn(page)  # charts draw after the script (axe is not injected into iframes: it checks the page itself)
    bad = contrast_failures(page)
    if "present=1" in path:  # and once more with the answer shown (alerts, tables, charts)
        press(page, " ")
        drawn(page)
        bad += contrast_failures(page)
    assert not bad, "\n".join(bad)


def test_lesson_attention_link_opens_the_same_layer_and_head(page):  # noqa: F811
    """Step 6 names layer l, head h; its link opens the Attention page on layer l, head h (titles, selectors)."""
    k = next(i for i, s in enumerate(lesson.STEPS, 1) if s.question == "attention_target")
    layer, head = (i + 1 for i in attention_head(bert_core.load_model(), lesson.STEPS[k - 1].text))
    page.goto(f"{page.base}/lesson?step={k}", wait_until="domcontentloaded")
    settle(page)
    main = page.locator('[data-testid="stMain"]')
    assert f"layer {layer}, head {head}" in main.inner_text()  # the step's own words
    link = main.locator("a", has_text="Open the full Attention page")
    assert f"at layer {layer}, head {head}" in link.inner_text()
    href = link.get_attribute("href")
    q = urllib.parse.parse_qs(urllib.parse.urlparse(href).query)
    assert q["layer"] == [str(layer)] and q["head"] == [str(head)], href
    page.goto(urllib.parse.urljoin(page.base + "/", href), wait_until="domcontentloaded")  # as the link opens it
    settle(page, timeout=240)
    try:  # the charts draw after the script has run: on a busy machine well over a second later
        page.wait_for_function("""([one, all]) => { const ts = Array.from(
            document.querySelectorAll('.js-plotly-plot .gtitle'), t => t.textContent);
            return ts.includes(one) && ts.some(t => t.startsWith(all)); }""",
                               arg=[f"Layer {layer}, head {head}", f"Layer {layer}: all"], timeout=120_000,
                               polling=POLL_MS)
    except PlaywrightTimeout:
        pass  # the assertions below say what was drawn instead
    assert page.locator("h2").first.inner_text().startswith("Attention")
    picked = [page.locator(f".st-key-{key} input").input_value() for key in ("attn_layer", "attn_head")]
    assert picked == [str(layer), str(head)], picked
    titles = page.locator(".js-plotly-plot .gtitle").evaluate_all("ts => ts.map(t => t.textContent)")
    assert f"Layer {layer}, head {head}" in titles, titles
    assert any(t.startswith(f"Layer {layer}: all") for t in titles), titles
    assert re.search(r"Layers are numbered 1–\d+ \(layer 0 = the embeddings' output\); heads 1–\d+",
                     page.locator('[data-testid="stMain"]').inner_text())
    assert f"layer={layer}" in page.url and f"head={head}" in page.url
    assert not page.errors, page.errors
