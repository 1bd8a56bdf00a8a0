"""The Lesson's presenter keys in a real browser at 1280x720: → ← Page Down/Up, space and Enter, 1-4, Esc, after a
click on a guess too. The walk over every step with the keyboard, each reveal the model's answer, is
test_browser_lesson_readable.py's "own" walk."""

from __future__ import annotations

import pytest
from support.browser import POLL_MS, press, settle
from support.page_checks import drawn

import bert_core
from ui.lesson import content as lesson

pytestmark = pytest.mark.browser



def heading(pg) -> str:
    return pg.locator("h2").first.inner_text()


def test_presenter_keys_survive_a_click_on_a_guess(page):
    """A click on a guess keeps no focus: → then moves the slide (not the guess), space reveals, Esc exits."""
    n = len(lesson.STEPS)
    page.goto(page.base + "/lesson?present=1&step=4", wait_until="domcontentloaded")
    settle(page)
    options = page.locator('[data-testid="stMain"] [role="radiogroup"] label')
    options.nth(1).click()
    settle(page)
    assert page.locator('[role="radiogroup"] input:checked').count() == 1
    assert page.evaluate("document.activeElement.tagName") != "INPUT"  # the click left no focus on the guess
    press(page, "ArrowRight")
    assert heading(page).startswith(f"Step 5 of {n}"), heading(page)
    page.mouse.move(640, 5)  # no tooltip of what the mouse was left over ("Commit a guess first") over the choices
    options.nth(0).click()
    settle(page)
    picked = page.locator('[role="radiogroup"] input:checked').evaluate("e => e.value")
    press(page, "ArrowRight")  # the slide moves; the guess of step 5 is not moved on to another option
    assert heading(page).startswith(f"Step 6 of {n}"), heading(page)
    press(page, "ArrowLeft")
    assert heading(page).startswith(f"Step 5 of {n}"), heading(page)
    assert page.locator('[role="radiogroup"] input:checked').evaluate("e => e.value") == picked
    assert page.locator('[data-testid="stAlert"]').count() == 0
    press(page, " ")  # space reveals, with the guess counted
    alert = page.locator('[data-testid="stAlert"]').first.inner_text()
    assert "the model's answer" in alert.lower() or alert.startswith("Right"), alert
    press(page, "PageDown")
    assert heading(page).startswith(f"Step 6 of {n}"), heading(page)
    press(page, "Enter")
    assert page.locator('[data-testid="stAlert"]').count() == 1
    press(page, "PageUp")
    assert heading(page).startswith(f"Step 5 of {n}"), heading(page)
    corner = page.locator(".st-key-lesson_corner").inner_text()
    m = bert_core.load_model()
    assert f"{m.config.num_hidden_layers} layers × {m.config.hidden_size} wide" in corner, corner
    press(page, "Escape")  # the way out
    assert "present=1" not in page.url and page.locator('[data-testid="stSidebar"]').is_visible()
    assert not page.errors, page.errors


def test_number_keys_pick_a_guess(page):
    """In presenter mode 1-4 pick the first to fourth choice, as a click would; space then reveals it, counted."""
    page.goto(page.base + "/lesson?present=1&step=4", wait_until="domcontentloaded")
    settle(page)
    drawn(page)
    inputs = page.locator('[data-testid="stMain"] [role="radiogroup"] input')
    checked = "v => [...document.querySelectorAll('[role=radiogroup] input:checked')].map(e => e.value).join() === v"
    for key in ("3", "1"):
        # Streamlit binds a button's shortcut only while the button is mounted and enabled: wait for it first.
        page.wait_for_selector(f'.st-key-lesson_pick_{key} button:not([disabled])', state="attached", timeout=30_000)
        want = inputs.nth(int(key) - 1).evaluate("e => e.value")
        page.keyboard.press(key)  # once: a key pressed while the page redraws is kept by the page (ui/a11y.py)
        page.wait_for_function(checked, arg=want, timeout=120_000, polling=POLL_MS)
        settle(page)
        assert page.locator('[role="radiogroup"] input:checked').count() == 1, key
    press(page, " ")
    alert = page.locator('[data-testid="stAlert"]').first.inner_text()
    assert alert.startswith(("Right", "Not this time")), alert  # the picked guess was counted
    assert page.locator('[data-testid="stException"]').count() == 0 and not page.errors, page.errors
