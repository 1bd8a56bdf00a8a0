"""Presenter keys pressed faster than the page redraws (ui/a11y.py): each press is one action, none lost and none
doubled. The keys are pressed back to back, so every press after the first arrives while the first one's rerun is
under way, the old step's buttons still on screen; each press is made once, and the page is read once it is idle."""

from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from support.browser import POLL_MS, settle

from ui.lesson import content as lesson

pytestmark = pytest.mark.browser

N = len(lesson.STEPS)
AT = "n => (document.querySelector('h2')?.innerText || '').startsWith('Step ' + n + ' of ')"


def heading(pg) -> str:
    return pg.locator("h2").first.inner_text()


def at_step(pg, n: int) -> None:
    """Wait for step n's heading and an idle page, then check that no further step was made."""
    try:
        pg.wait_for_function(AT, arg=n, timeout=120_000, polling=POLL_MS)
    except PlaywrightTimeout:
        raise AssertionError(f"step {n} was never shown; the page shows {heading(pg)!r}") from None
    settle(pg)
    assert heading(pg).startswith(f"Step {n} of {N}"), heading(pg)


def keys(pg, *pressed: str) -> None:
    for key in pressed:
        pg.keyboard.press(key)


def test_step_keys_pressed_during_a_rerun_each_move_one_step(page):
    """→ → from step 2 is step 4; Page Down, →, Page Down then is step 7; ← Page Up back to 5."""
    page.goto(page.base + "/lesson?present=1&step=2", wait_until="domcontentloaded")
    settle(page)
    keys(page, "ArrowRight", "ArrowRight")
    at_step(page, 4)
    keys(page, "PageDown", "ArrowRight", "PageDown")
    at_step(page, 7)
    keys(page, "ArrowLeft", "PageUp")
    at_step(page, 5)
    assert not page.errors, page.errors


def test_a_number_key_pressed_during_a_step_change_picks_on_the_new_step(page):
    """→ then 2 from step 3: step 4 with its second choice picked (not step 3's guess, which is gone)."""
    page.goto(page.base + "/lesson?present=1&step=3", wait_until="domcontentloaded")
    settle(page)
    keys(page, "ArrowRight", "2")
    at_step(page, 4)
    inputs = page.locator('[data-testid="stMain"] [role="radiogroup"] input')
    picked = "() => document.querySelectorAll('[role=radiogroup] input:checked').length === 1"
    try:
        page.wait_for_function(picked, timeout=60_000, polling=POLL_MS)
    except PlaywrightTimeout:
        raise AssertionError("the 2 pressed during the step change picked nothing on step 4") from None
    settle(page)
    assert inputs.nth(1).is_checked(), [inputs.nth(i).is_checked() for i in range(inputs.count())]
    assert not page.errors, page.errors


def test_a_click_on_next_and_a_key_at_once_move_two_steps(page):
    """A click on Next then → at once, from step 5: step 7; a click on Back then ← at once: step 5."""
    page.goto(page.base + "/lesson?present=1&step=5", wait_until="domcontentloaded")
    settle(page)
    page.locator(".st-key-lesson_next button").click()
    keys(page, "ArrowRight")
    at_step(page, 7)
    page.locator(".st-key-lesson_back button").click()
    keys(page, "ArrowLeft")
    at_step(page, 5)
    assert not page.errors, page.errors
