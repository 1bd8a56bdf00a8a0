"""The Lesson in presenter mode in a real browser at 1280x720: walked with the keyboard, every question revealed
with space, every reveal the model's answer (computed here by bert_core.lesson), and the main area never scrolls."""

from __future__ import annotations

import time
import urllib.parse

import pytest
import test_browser
from appserver import CHROMIUM, CHROMIUM_ARGS, ROOT

import bert_core
from ui import lesson

pytestmark = pytest.mark.browser

OUT = ROOT / "tests" / "output"
DONE = '[data-testid="stApp"][data-test-connection-state="CONNECTED"][data-test-script-state="notRunning"]'


server = test_browser.server  # the same real server fixture (offline, developmentMode off)


@pytest.fixture(scope="module")
def chromium():
    """One chromium for this module's tests (each test gets a fresh context: no cookie, storage or session shared)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(server, chromium):
    host = urllib.parse.urlparse(server).netloc
    ctx = chromium.new_context(viewport={"width": 1280, "height": 720})
    # No network: anything off this machine fails, as it would offline.
    ctx.route("**/*", lambda r: r.continue_() if urllib.parse.urlparse(r.request.url).netloc in (host, "")
              else r.abort())
    pg = ctx.new_page()
    pg.base, pg.errors = server, []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    yield pg
    ctx.close()


def settle(pg, timeout: float = 120) -> None:
    """The script has run and stopped, twice half a second apart (a page may rerun right after a run)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        pg.wait_for_selector(DONE, timeout=max(1.0, deadline - time.time()) * 1000)
        time.sleep(0.5)
        if pg.locator(DONE).count() == 1:
            return
    raise AssertionError("the app was still running after the timeout")


# The page as drawn: [charts without their SVG yet, images not loaded, fonts loading, main area's height, elements].
DRAWN_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  const q = (sel) => [...main.querySelectorAll(sel)];
  const charts = q('[data-testid="stPlotlyChart"]').filter(c => !c.querySelector('.main-svg')).length
    + q('[data-testid="stVegaLiteChart"]').filter(c => !c.querySelector('svg, canvas')).length;
  return [charts, q('img').filter(i => !i.complete).length, document.fonts.status !== 'loaded' ? 1 : 0,
          main.scrollHeight, main.getElementsByTagName('*').length];
}"""


def drawn(pg, timeout: float = 8.0, still: float = 0.3) -> None:
    """After a run has ended (settle): wait until every chart has drawn its SVG, images and fonts have loaded, and
    the main area has kept its height and element count for `still` seconds (charts draw after the script).
    Was a fixed 1.5 s wait per slide: this is shorter on a quiet machine and waits longer on a loaded one."""
    deadline, last, since = time.time() + timeout, None, time.time()
    while time.time() < deadline:
        now = pg.evaluate(DRAWN_JS)
        if now != last:
            last, since = now, time.time()
        elif not any(now[:3]) and time.time() - since >= still:
            return
        time.sleep(0.05)
    raise AssertionError(f"the page was still drawing after {timeout} s: {last}")


def main_scrolls(pg) -> tuple[int, int]:
    """(scrollHeight, clientHeight) of the main area, the element that scrolls in Streamlit."""
    return tuple(pg.evaluate("""() => { const e = document.querySelector('[data-testid="stMain"]');
                                        return [e.scrollHeight, e.clientHeight]; }"""))


def chart_text_below(pg, px: float) -> list[tuple[float, str]]:
    """Every drawn text of the main area's charts (ticks, titles, legends, annotations, cell numbers) smaller
    than `px`, with its size."""
    return pg.evaluate("""(px) => Array.from(
        document.querySelectorAll('[data-testid="stMain"] .js-plotly-plot svg text'))
        .filter(t => t.textContent.trim() && t.getBBox().width > 0)
        .map(t => [parseFloat(getComputedStyle(t).fontSize), t.textContent.slice(0, 30)])
        .filter(([size]) => size < px)""", px)


def test_presenter_mode_walks_every_step_with_the_keyboard(page):
    m = bert_core.load_model()
    page.goto(page.base + "/lesson?present=1", wait_until="domcontentloaded")
    settle(page)
    assert page.locator('[data-testid="stSidebar"]').is_hidden()
    body = page.locator('[data-testid="stMain"] [data-testid="stMarkdownContainer"] p').first
    assert float(body.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")) >= 22
    n = len(lesson.STEPS)
    for i, step in enumerate(lesson.STEPS, start=1):
        page.wait_for_function(f"() => document.querySelector('h2')?.innerText.startsWith('Step {i} of {n}')",
                               timeout=120_000)
        settle(page)
        assert page.locator('[data-testid="stAlert"]').count() == 0, i  # the answer stays hidden until asked
        page.keyboard.press(" ")  # space reveals
        page.wait_for_selector('[data-testid="stAlert"]', timeout=120_000)
        settle(page)
        fn, args, kwargs = lesson.question_call(step, step.text, step.pair, 0)
        q = fn(m, *args, **kwargs)
        alert = page.locator('[data-testid="stAlert"]').first.inner_text()
        label = lesson.answer_label(q)  # "the model's answer" only for what the model computed
        assert f"{label[0].upper()}{label[1:]}" in alert and q.choices[q.answer] in alert, (i, alert, label)
        drawn(page)
        small = chart_text_below(page, 18)
        assert not small, f"step {i}: chart text under 18 px on a projector: {small[:5]}"
        scroll, height = main_scrolls(page)
        assert scroll <= height + 1, f"step {i}: the main area scrolls ({scroll} px of content in {height} px)"
        assert f"step={i}" in page.url
        page.screenshot(path=str(OUT / f"lesson_present_{i}.png"))
        if i < n:
            page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowLeft")  # and back
    page.wait_for_function(f"() => document.querySelector('h2')?.innerText.startsWith('Step {n - 1} of {n}')",
                           timeout=120_000)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert not page.errors, page.errors


def heading(pg) -> str:
    return pg.locator("h2").first.inner_text()


def press(pg, key: str) -> None:
    """A key, then the rerun it starts."""
    pg.keyboard.press(key)
    pg.wait_for_timeout(700)
    settle(pg)


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
        press(page, key)
        try:  # the key's rerun may start after press() has seen the page idle (a loaded machine): wait for its result
            page.wait_for_function(checked, arg=want, timeout=15_000)
        except Exception:  # a key lost once (seen once in CI, never here): keep what the page was, then once more
            OUT.mkdir(exist_ok=True)
            (OUT / f"number_key_{key}_lost.html").write_text(page.content())
            print(f"key {key} lost once; page kept in tests/output/number_key_{key}_lost.html")
            press(page, key)
            page.wait_for_function(checked, arg=want, timeout=30_000)
        assert page.locator('[role="radiogroup"] input:checked').count() == 1, key
    press(page, " ")
    alert = page.locator('[data-testid="stAlert"]').first.inner_text()
    assert alert.startswith(("Right", "Not this time")), alert  # the picked guess was counted
    assert page.locator('[data-testid="stException"]').count() == 0 and not page.errors, page.errors
