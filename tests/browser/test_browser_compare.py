"""The Compare page in a real browser, offline: the bundled model against a model trained in this session,
and against a RoBERTa folder (tiny, random, tokenizer trained in the test) given as the sidebar's model."""

from __future__ import annotations

import os
import urllib.parse

import pytest
from support.appserver import app_server
from support.browser import OUT, SLOW, assert_nothing_injected, main_text, open_slow, wait_for_text
from support.family import write_family_checkpoint

pytestmark = pytest.mark.browser
TEXT = "She [MASK] the letter to her mother."


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    root = tmp_path_factory.mktemp("cmp-browser")
    write_family_checkpoint(root / "roberta", "roberta", "mlm")
    return root


@pytest.fixture(scope="module")
def server(roots):
    """A Streamlit server with no hub (HF_HUB_OFFLINE) that may load local folders under `roots` only."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
           "BERT_EXPLORER_LOCAL_ROOTS": str(roots)}
    OUT.mkdir(parents=True, exist_ok=True)
    with open(OUT / "server_compare.log", "w") as log, \
            app_server(env, log=log, args=("--global.developmentMode", "false"), timeout=90) as (url, _):
        yield url


def wait_for_tables(page, n: int = 5):
    """Wait until the page shows `n` dataframes (a busy server draws them one rerun step at a time)."""
    page.wait_for_function(f"document.querySelectorAll('[data-testid=\"stDataFrame\"]').length >= {n}",
                           polling=100, timeout=SLOW * 1000)  # every 100 ms, not on every animation frame


def test_compare_bundled_with_the_session_model(watch):
    """Train 10 steps, keep the model, go to Compare (same session): both models, their guesses, agreement."""
    page = open_slow(watch, "/training?" + urllib.parse.urlencode({"text": TEXT}))
    page.get_by_role("button", name="Run 10 steps").click()
    watch.settle(timeout=SLOW)  # ten training steps
    page.get_by_role("button", name="Use this model").click()
    watch.settle(timeout=SLOW)
    watch.assert_clean()
    # The sidebar's navigation keeps this browser session (a fresh URL would start a new one without the model).
    page.locator('[data-testid="stSidebarNav"] a', has_text="Compare").click()
    watch.settle(timeout=SLOW)
    wait_for_text(page, "Agreement", SLOW)
    wait_for_tables(page)
    watch.assert_clean()
    body = main_text(page)
    assert "Compare models" in body and "Pick at least two" not in body
    # The multiselect's default: the sidebar's model and the session's (a long label may be cut with an ellipsis
    # in its chip once the sidebar's model has a longer name), and the comparison ran on the session's model.
    chips = page.locator('[data-testid="stMultiSelect"]').first.inner_text().split("\n")
    assert any(c.strip().startswith("my trained") for c in chips), chips
    assert "my model (step 10)" in body
    assert "[MASK] at position 2" in body and "Tokens side by side" in body
    # The models table, tokens, one top-k table per model and the agreement table.
    assert page.locator('[data-testid="stDataFrame"]').count() == 5
    page.screenshot(path=str(OUT / "page_compare_session.png"), full_page=True)


def test_compare_roberta_folder_with_the_bundled_model(watch, roots):
    """A RoBERTa folder as the sidebar model, compared with the bundled BERT: two families, two mask tokens."""
    q = urllib.parse.urlencode({"model": str(roots / "roberta"), "text": TEXT})
    page = open_slow(watch, f"/compare?{q}")
    wait_for_text(page, "Agreement", SLOW)
    wait_for_tables(page)
    watch.settle(timeout=SLOW)
    watch.assert_clean()
    body = main_text(page)
    assert "RoBERTa family" in body and "BERT family" in body  # each column: the model's name, its family under
    assert "<mask> at position" in body and "[MASK] at position" in body
    side = page.locator('[data-testid="stSidebar"]').inner_text()
    assert "Could not load" not in side, side
    assert page.locator('[data-testid="stDataFrame"]').count() == 5
    page.screenshot(path=str(OUT / "page_compare_roberta.png"), full_page=True)


def test_compare_text_with_markup_injects_nothing(watch, roots):
    # [MASK] first: the tiny RoBERTa (38 positions) truncates this text, and would drop a [MASK] at its end.
    payload = '[MASK] <script>alert("x")</script><img src=x onerror=alert(1)><b id="inj">bold</b>'
    q = urllib.parse.urlencode({"model": str(roots / "roberta"), "text": payload})
    page = open_slow(watch, f"/compare?{q}")
    wait_for_text(page, "Agreement", SLOW)
    watch.assert_clean()
    assert page.locator("#inj").count() == 0
    assert_nothing_injected(page)
