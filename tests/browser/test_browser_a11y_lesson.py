"""WCAG 2.1 AA on the Lesson and the live class in a real chromium: axe-core (WCAG 2.0/2.1 A and AA) in presenter
mode and in a class (teacher and one student); a keyboard-only walk of presenter mode (a guess is a real radio
input, keys 1-5 pick, Space reveals only where no control has focus, Enter on a focused Next moves without
revealing, focus follows each action); a following student hears the teacher's new step in a polite live region and
gets focus on its heading; one step's accessibility tree; presenter mode's reflow at 640 x 360 (200% zoom) and
320 px; no text under 12 px on a 390 x 844 phone.

One server (the session's), one chromium; each test its own browser context (its own Streamlit session)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from support.page_checks import AXE, AXE_RUN, WCAG_TAGS, drawn

from ui.lesson import content as lesson

pytestmark = pytest.mark.browser


N = len(lesson.STEPS)
MAIN = '[data-testid="stMain"]'
DONE = '[data-testid="stApp"][data-test-connection-state="CONNECTED"][data-test-script-state="notRunning"]'


def open_page(browser, server, path: str, width: int = 1280, height: int = 720):
    ctx = browser.new_context(viewport={"width": width, "height": height})
    pg = ctx.new_page()
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.goto(server + path, wait_until="domcontentloaded")
    idle(pg)
    return pg


def idle(pg, timeout_s: float = 300) -> None:
    """The script has run and stopped (twice, 0.5 s apart: a page may rerun right after a run)."""
    pg.wait_for_selector(DONE, timeout=timeout_s * 1000)
    pg.wait_for_timeout(500)
    pg.wait_for_selector(DONE, timeout=timeout_s * 1000)


def axe(pg) -> list[str]:
    if not pg.evaluate("() => typeof window.axe !== 'undefined'"):
        pg.evaluate(AXE + "\n;0")
    return pg.evaluate(AXE_RUN, WCAG_TAGS)


def active(pg) -> str:
    """The focused element: its tag and the start of its text."""
    return pg.evaluate("() => { const a = document.activeElement; "
                       "return a.tagName + ' ' + (a.textContent || '').trim().slice(0, 60); }")


def heading(pg) -> str:
    return pg.locator(f"{MAIN} h2").first.inner_text()


FOCUSED_HEADING = ("k => document.activeElement.tagName === 'H2' && "
                   "document.activeElement.textContent.startsWith(`Step ${k} of`)")
REVEALED = "() => document.querySelector('.st-key-lesson_answer') !== null"
ANSWER_FOCUSED = "() => document.activeElement.classList.contains('st-key-lesson_answer')"


def test_presenter_keyboard_walk(browser, server):
    """Presenter mode by keyboard alone: Tab reaches a guess (a real radio input, in the accessibility tree); 5 picks
    the fifth choice; Space on the focused guess does not reveal; Space with nothing focused reveals and focus lands
    on the answer; Enter on a focused Next moves one step without revealing, focus on the new heading; axe finds
    nothing; a chart has its Data expander."""
    pg = open_page(browser, server, "/?step=1&present=1")
    radios = pg.locator(f'{MAIN} [role="radiogroup"] input[type="radio"]')
    assert radios.count() == 5
    pg.locator(".st-key-class_tools button").first.focus()  # before the reveal, Enter opens the popover
    pg.keyboard.press("Enter")
    expect(pg.get_by_role("textbox", name="This step's sentence")).to_be_visible(timeout=30_000)
    pg.keyboard.press("Escape")  # closes it, still in presenter mode
    expect(pg.get_by_role("textbox", name="This step's sentence")).to_be_hidden(timeout=30_000)
    idle(pg)
    assert not pg.evaluate(REVEALED) and "present=1" in pg.url
    pg.evaluate("() => document.activeElement.blur()")
    for _ in range(20):  # Tab from the top of the page to the first guess
        pg.keyboard.press("Tab")
        if pg.evaluate("() => document.activeElement.type === 'radio'"):
            break
    assert pg.evaluate("() => document.activeElement.type === 'radio'"), active(pg)
    pg.keyboard.press("5")
    pg.wait_for_function("() => document.querySelectorAll('[role=radiogroup] input')[4].checked", timeout=60_000)
    idle(pg)
    pg.keyboard.press("Space")  # on the focused guess: the guess's key, not the reveal
    idle(pg)
    assert not pg.evaluate(REVEALED)
    assert pg.get_by_role("button", name=re.compile("^Reveal")).count() == 1
    pg.evaluate("() => document.activeElement.blur()")
    pg.keyboard.press("Space")  # nothing focused: the reveal
    pg.wait_for_function(ANSWER_FOCUSED, timeout=60_000)
    assert pg.locator(".st-key-lesson_answer").inner_text().startswith(("Right", "Not this time"))
    nxt = pg.locator(".st-key-lesson_next button")
    for _ in range(40):  # Tab on to Next
        pg.keyboard.press("Tab")
        if pg.evaluate("() => document.activeElement.textContent.trim().startsWith('Next')"):
            break
    expect(nxt).to_be_focused()
    pg.keyboard.press("Enter")
    pg.wait_for_function(FOCUSED_HEADING, arg=2, timeout=60_000)
    idle(pg)
    assert not pg.evaluate(REVEALED), "Enter on Next revealed step 2"
    nxt.focus()
    pg.keyboard.press("Enter")  # step 2 unrevealed: Enter presses Next, step 3
    pg.wait_for_function(FOCUSED_HEADING, arg=3, timeout=60_000)
    idle(pg)
    assert not pg.evaluate(REVEALED), "Enter on Next revealed step 3"
    pg.keyboard.press("Space")  # focus on the heading, not a control: the reveal
    pg.wait_for_function(ANSWER_FOCUSED, timeout=60_000)
    pg.keyboard.press("ArrowLeft")
    pg.wait_for_function(FOCUSED_HEADING, arg=2, timeout=60_000)
    idle(pg)
    pg.keyboard.press("Space")
    pg.wait_for_function(ANSWER_FOCUSED, timeout=60_000)
    idle(pg)  # the view is drawn after the answer
    drawn(pg, timeout=60)
    charts = pg.locator(f'{MAIN} [data-testid="stPlotlyChart"][role="figure"]')
    assert charts.count() >= 1 and all(charts.evaluate_all("cs => cs.map(c => !!c.getAttribute('aria-label'))"))
    assert pg.locator(f'{MAIN} [data-testid="stExpander"] summary', has_text="Data: ").count() == charts.count()
    assert axe(pg) == []
    pg.locator(".st-key-lesson_exit button").focus()  # Enter on "Exit presenter mode": out, not a reveal
    pg.keyboard.press("Enter")
    expect(pg.locator('[data-testid="stSidebar"]')).to_be_visible(timeout=60_000)
    assert not pg.errors, pg.errors


def test_step_accessibility_tree(browser, server):
    """Step 1 in presenter mode as a screen reader meets it: the step's heading, its guesses as one named radio
    group of five radios, the Reveal and Next buttons."""
    pg = open_page(browser, server, "/?step=1&present=1")
    expect(pg.locator(MAIN)).to_match_aria_snapshot(f"""
    - heading /^Step 1 of {N}:\\s.+/ [level=2]
    - radiogroup "Your guess":
      - radio
      - radio
      - radio
      - radio
      - radio
    - button /^Reveal/
    - button /^Back/ [disabled]
    - button /^Next/
    """)


BOXES = """() => { const r = s => { const e = document.querySelector(s); if (!e) return null;
    const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
  return {corner: r('.st-key-lesson_corner'), tools: r('.st-key-class_tools'), card: r('.st-key-class_card'),
          heading: r('[data-testid="stMain"] h2'), width: document.documentElement.scrollWidth}; }"""


def overlap(a, b) -> bool:
    return a is not None and b is not None and a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("size", [(640, 360), (320, 640)])
def test_presenter_reflows(browser, server, size):
    """At 200% zoom of 1280 x 720 (640 x 360 CSS px) and 320 px wide, presenter mode's model corner and "Class and
    sentence" join the page's flow: neither covers the heading nor each other, and nothing scrolls sideways."""
    width, height = size
    pg = open_page(browser, server, "/?step=6&present=1", width, height)
    pg.keyboard.press("Space")
    pg.wait_for_function(ANSWER_FOCUSED, timeout=60_000)
    idle(pg)  # the view is drawn after the answer
    drawn(pg, timeout=60)
    b = pg.evaluate(BOXES)
    assert b["corner"] and b["tools"] and b["heading"], b
    for x, y in (("corner", "tools"), ("corner", "heading"), ("tools", "heading")):
        assert not overlap(b[x], b[y]), (x, y, b)
    assert b["width"] <= width, b


SMALL_TEXT = """() => [...document.querySelectorAll('[data-testid="stMain"] *')].filter(e =>
    [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.replace(/[\\s\\u200b]/g, ''))
    && e.getClientRects().length
    && e.checkVisibility({visibilityProperty: true}) && parseFloat(getComputedStyle(e).fontSize) < 12)
  .map(e => e.tagName + ' ' + getComputedStyle(e).fontSize + ' ' + e.textContent.trim().slice(0, 30))"""


def test_phone_text_is_at_least_12px(browser, server):
    """On a 390 x 844 phone, step 6 revealed (its map's cell numbers were 6 px): no visible text under 12 px."""
    pg = open_page(browser, server, "/?step=6", 390, 844)
    pg.get_by_role("radio").first.focus()
    pg.keyboard.press("Space")
    idle(pg)
    pg.get_by_role("button", name=re.compile("^Reveal")).click()
    pg.wait_for_function(ANSWER_FOCUSED, timeout=60_000)
    idle(pg)  # the view is drawn after the answer
    drawn(pg, timeout=60)
    assert pg.locator(f'{MAIN} [data-testid="stPlotlyChart"]').count() >= 1
    assert pg.evaluate(SMALL_TEXT) == []


def test_class_is_accessible_and_speaks(browser, server):
    """A class: the teacher starts it (focus on the class's heading), the QR code is named by its link, a student
    joins (focus on the class's heading); axe finds nothing on either page; the teacher's Next is announced on the
    student's page in a polite live region and moves the student's focus to the new step's heading; the teacher's
    reveal is announced too, and moves focus to the answer on both pages."""
    t = open_page(browser, server, "/?step=4", 1400, 1000)
    t.get_by_role("button", name="Start a class").click()
    t.wait_for_function("() => document.activeElement.textContent.trim() === 'A live class'", timeout=60_000)
    idle(t)
    code = re.search(r"Code: ([A-Z0-9]+)", t.inner_text(MAIN)).group(1)
    alts = t.locator(f"{MAIN} img").evaluate_all("is => is.map(i => i.alt)")
    assert any(a.startswith("QR code for the join link http") and a.endswith(f"class={code}") for a in alts), alts
    assert axe(t) == []

    s = open_page(browser, server, f"/?class={code}", 390, 844)
    s.get_by_role("button", name="Join the class").click()
    s.wait_for_function("() => document.activeElement.textContent.trim() === 'A live class'", timeout=60_000)
    idle(s)
    assert heading(s).startswith(f"Step 4 of {N}")
    assert axe(s) == []
    live = s.locator("#bx-live")
    expect(live).to_have_attribute("aria-live", "polite")

    t.get_by_role("button", name="Next →").click()
    expect(live).to_have_text(re.compile(rf"^Step 5 of {N}: .+, your teacher moved on\.$"), timeout=60_000)
    s.wait_for_function(FOCUSED_HEADING, arg=5, timeout=60_000)
    idle(t)
    t.get_by_role("button", name=re.compile("^Reveal")).first.click()
    expect(live).to_have_text("Your teacher revealed the answer.", timeout=60_000)
    s.wait_for_function(ANSWER_FOCUSED, timeout=60_000)
    t.wait_for_function(ANSWER_FOCUSED, timeout=60_000)  # the teacher's own reveal: focus on the answer, as alone
    assert not t.errors and not s.errors, (t.errors, s.errors)
