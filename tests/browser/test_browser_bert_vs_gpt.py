"""The BERT vs GPT page in a real browser, offline: the masks on the sidebar text, three live runs, what each does."""

from __future__ import annotations

import urllib.parse

import pytest
from support.browser import OUT, SLOW, main_text, open_slow, wait_for_text

# The plain offline server and chromium (module-scoped fixtures), and a watched page on them.

pytestmark = pytest.mark.browser
TEXT = "the cat sat on the [MASK] ."


def test_bert_vs_gpt_trains_three_models_and_shows_what_each_can_do(watch):
    page = open_slow(watch, "/bert-vs-gpt?" + urllib.parse.urlencode({"text": TEXT}))
    wait_for_text(page, "Two attention masks", SLOW)
    wait_for_text(page, "GPT: token i sees tokens 0…i", SLOW)  # the masks' chart draws after the script has run
    watch.assert_clean()
    body = main_text(page)
    assert "GPT: token i sees tokens 0…i" in body and "Which positions each prediction can see" in body
    page.screenshot(path=str(OUT / "page_bert_vs_gpt.png"), full_page=True)
    page.get_by_text("Built-in: WordNet glosses").click()  # the three objectives' comparison (the farm one: two)
    watch.settle(timeout=SLOW)
    steps = page.get_by_label("Steps per model")
    steps.fill("20")
    steps.press("Enter")
    watch.settle(timeout=SLOW)
    page.get_by_role("button", name="Train the models").click()
    # Polled twice a second while the three models train, within the budget of the settle and the wait it replaces.
    wait_for_text(page, "What each model can do now", 2 * SLOW)
    watch.settle(timeout=SLOW)
    watch.assert_clean()
    body = main_text(page)
    assert "Sample efficiency" in body and "BERT fills each [MASK] reading the words on both sides" in body
    page.get_by_text("Sample efficiency: what the encoder learnt").scroll_into_view_if_needed()
    page.screenshot(path=str(OUT / "page_bert_vs_gpt_trained.png"))  # the runs' curves (the app scrolls inside)
