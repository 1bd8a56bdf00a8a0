"""The Tagging and Question answering pages in a real browser, offline: live fine-tuning, HTML labels inert."""

from __future__ import annotations

import pytest
from support.browser import OUT, assert_nothing_injected
from support.wait import until

pytestmark = pytest.mark.browser

CONLL = "\n\n".join(f"the\tDET\n{w}\t<img src=x onerror=alert(7)>NOUN\nsat\tVERB\n.\t." for w in
                    ("cat", "dog", "mat", "store", "milk", "cafe") * 3) + "\n"


def wait_finished(w, seconds: float = 180) -> None:
    page = w.page
    until(lambda: "Finished" in page.locator('[data-testid="stMain"]').inner_text(), seconds, "the run to finish",
          every=1)
    w.settle()


def test_live_tagging_in_the_browser(watch):  # noqa: F811  (the imported fixture)
    """No tagging head: the page says so; a pasted CoNLL file (one label is HTML) trains a head live; the
    sidebar's text comes back coloured word by word with the label under it, and nothing is injected."""
    page = watch.open("/tagging")
    assert "has no token-classification head" in page.locator('[data-testid="stMain"]').inner_text()
    page.get_by_text("Paste CoNLL", exact=True).click()
    watch.settle()
    page.get_by_label("CoNLL: word TAB label a line").fill(CONLL)
    page.keyboard.press("Control+Enter")
    watch.settle()
    page.get_by_text("Freeze the encoder").click()
    watch.settle()
    page.get_by_role("button", name="Start").click()
    wait_finished(watch)  # polled once a second while the head trains (a chart is drawn by then: checked below)
    watch.assert_clean()
    assert_nothing_injected(page)
    assert page.locator(".js-plotly-plot").count() >= 3  # curves, accuracy per label, confusion matrix
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "<img src=x onerror=alert(7)>NOUN" in main  # the label is shown as text
    assert page.locator('[data-testid="stMarkdownContainer"] span[style*="inline-block"]').count() >= 5
    page.screenshot(path=str(OUT / "page_tagging_live.png"), full_page=True)


def test_question_answering_in_the_browser(watch):  # noqa: F811  (the imported fixture)
    """No QA head: the page says so; ten steps of a head on the built-in task; spans and the start/end chart."""
    page = watch.open("/question-answering")
    assert "has no question-answering head" in page.locator('[data-testid="stMain"]').inner_text()
    page.get_by_text("Freeze the encoder").click()
    watch.settle()
    page.get_by_role("button", name="Run 10 steps").click()
    # Every 100 ms, not on every animation frame, while the ten steps run (within settle's own 300 s budget); then
    # the app settles.
    page.wait_for_function("() => document.querySelector('.js-plotly-plot .main-svg') !== null", polling=100,
                           timeout=300_000)
    watch.settle()
    watch.assert_clean()
    assert_nothing_injected(page)
    assert page.locator(".js-plotly-plot").count() >= 2  # start/end probabilities, curves
    assert page.locator("mark").count() >= 1  # the best span, highlighted in the passage
    page.get_by_label("Question", exact=True).fill("<script>alert(8)</script> which word?")
    page.keyboard.press("Enter")
    watch.settle()
    watch.assert_clean()
    assert_nothing_injected(page)
    page.screenshot(path=str(OUT / "page_qa_live.png"), full_page=True)
