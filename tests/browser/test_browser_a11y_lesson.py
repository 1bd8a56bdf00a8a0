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
from support.a11y import FOCUSED_JS, SMALL_TEXT, axe, ringed, structure
from support.browser import press, settle
from support.page_checks import drawn

from ui.lesson import content as lesson

pytestmark = pytest.mark.browser


N = len(lesson.STEPS)
MAIN = '[data-testid="stMain"]'


def open_page(browser, server, path: str, width: int = 1280, height: int = 720):
    ctx = browser.new_context(viewport={"width": width, "height": height})
    pg = ctx.new_page()
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.goto(server + path, wait_until="domcontentloaded")
    idle(pg)
    return pg


def idle(pg, timeout_s: float = 300) -> None:
    """The script has run and stopped, and no rerun followed (support.browser.settle)."""
    settle(pg, timeout=timeout_s)


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
CLASS_HEADING_FOCUSED = "() => document.activeElement.textContent.trim() === 'A live class'"
CHECKED = "k => document.querySelectorAll('[role=radiogroup] input')[k].checked"  # the k-th guess (0-based)


def test_presenter_keyboard_walk_tree_and_structure(browser, server):
    """Presenter mode by keyboard alone: Tab reaches a guess (a real radio input, in the accessibility tree); 5 picks
    the fifth choice; Space on the focused guess does not reveal; Space with nothing focused reveals and focus lands
    on the answer; Enter on a focused Next moves one step without revealing, focus on the new heading; axe finds
    nothing; a chart has its Data expander. On the same page (the states those tests opened fresh before: step 1
    as loaded, step 2 before and after its reveal): step 1's accessibility tree (assert_step_1_tree) and presenter
    mode's structure (presenter_structure_problems)."""
    pg = open_page(browser, server, "/?step=1&present=1")
    assert_step_1_tree(pg)
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
    assert ringed(pg.evaluate(FOCUSED_JS)), pg.evaluate(FOCUSED_JS)  # the guess shows the theme's focus ring
    pg.keyboard.press("5")
    pg.wait_for_function(CHECKED, arg=4, timeout=60_000, polling=100)
    idle(pg)
    pg.keyboard.press("Space")  # on the focused guess: the guess's key, not the reveal
    idle(pg)
    assert not pg.evaluate(REVEALED)
    assert pg.get_by_role("button", name=re.compile("^Reveal")).count() == 1
    pg.evaluate("() => document.activeElement.blur()")
    pg.keyboard.press("Space")  # nothing focused: the reveal
    pg.wait_for_function(ANSWER_FOCUSED, timeout=60_000, polling=100)
    assert pg.locator(".st-key-lesson_answer").inner_text().startswith(("Right", "Not this time"))
    nxt = pg.locator(".st-key-lesson_next button")
    for _ in range(40):  # Tab on to Next
        pg.keyboard.press("Tab")
        if pg.evaluate("() => document.activeElement.textContent.trim().startsWith('Next')"):
            break
    expect(nxt).to_be_focused()
    pg.keyboard.press("Enter")
    pg.wait_for_function(FOCUSED_HEADING, arg=2, timeout=60_000, polling=100)
    idle(pg)
    assert not pg.evaluate(REVEALED), "Enter on Next revealed step 2"
    structure_problems = presenter_structure_problems(pg, revealed=False)
    nxt.focus()
    pg.keyboard.press("Enter")  # step 2 unrevealed: Enter presses Next, step 3
    pg.wait_for_function(FOCUSED_HEADING, arg=3, timeout=60_000, polling=100)
    idle(pg)
    assert not pg.evaluate(REVEALED), "Enter on Next revealed step 3"
    pg.keyboard.press("Space")  # focus on the heading, not a control: the reveal
    pg.wait_for_function(ANSWER_FOCUSED, timeout=60_000, polling=100)
    pg.keyboard.press("ArrowLeft")
    pg.wait_for_function(FOCUSED_HEADING, arg=2, timeout=60_000, polling=100)
    idle(pg)
    pg.keyboard.press("Space")
    pg.wait_for_function(ANSWER_FOCUSED, timeout=60_000, polling=100)
    idle(pg)  # the view is drawn after the answer
    structure_problems += presenter_structure_problems(pg, revealed=True)
    assert not structure_problems, structure_problems
    drawn(pg, timeout=60)
    charts = pg.locator(f'{MAIN} [data-testid="stPlotlyChart"][role="figure"]')
    assert charts.count() >= 1 and all(charts.evaluate_all("cs => cs.map(c => !!c.getAttribute('aria-label'))"))
    assert pg.locator(f'{MAIN} [data-testid="stExpander"] summary', has_text="Data: ").count() == charts.count()
    assert axe(pg) == []
    pg.locator(".st-key-lesson_exit button").focus()  # Enter on "Exit presenter mode": out, not a reveal
    pg.keyboard.press("Enter")
    expect(pg.locator('[data-testid="stSidebar"]')).to_be_visible(timeout=60_000)
    assert not pg.errors, pg.errors


def presenter_structure_problems(pg, revealed: bool) -> list[str]:
    """Presenter mode hides the sidebar and its h1: the page still has its title, one h1 a screen reader meets (its
    own, visually hidden) and heading order; the keyboard walk checks it on step 2, before and after the reveal.
    Its problems, each said with the state it was seen in."""
    box = pg.locator(".st-key-lesson_h1").bounding_box()
    assert box is not None and box["height"] <= 1, box  # out of the slide's flow, clipped: it takes no room
    when = "revealed: " if revealed else "presenter structure: "
    return [when + p for p in structure(pg, "Lesson · BERT Explorer")]


def test_presenter_class_card_is_accessible(browser, server):
    """Presenter mode with a class's join card beside the step at 1280 x 720, before and after the reveal: axe finds
    nothing; the keyboard reaches a guess and "Class and sentence" and each shows the theme's focus ring."""
    pg = open_page(browser, server, "/?step=6&present=1")
    pg.locator(".st-key-class_tools button").first.click()
    pg.get_by_role("button", name="Start a class").click()
    pg.locator(".st-key-class_card").wait_for(timeout=60_000)
    idle(pg)
    assert axe(pg) == []
    pg.evaluate("() => document.activeElement.blur()")
    seen = {}  # (kind, the box it is in) -> it shows the ring
    for _ in range(40):
        pg.keyboard.press("Tab")
        now = pg.evaluate(FOCUSED_JS)
        if now is not None:
            seen[now["kind"], now["key"]] = seen.get((now["kind"], now["key"]), True) and ringed(now)
    assert all(seen.values()), seen
    assert ("button", "st-key-class_tools") in seen, seen  # the popover's "Class and sentence"
    pg.evaluate("() => document.activeElement.blur()")
    pg.keyboard.press("Space")
    pg.wait_for_function(ANSWER_FOCUSED, timeout=60_000, polling=100)
    idle(pg)
    drawn(pg, timeout=60)
    assert axe(pg) == []
    assert not pg.errors, pg.errors


def assert_step_1_tree(pg) -> None:
    """Step 1 in presenter mode as a screen reader meets it: the step's heading, its guesses as one named radio
    group of five radios, the Reveal and Next buttons (the keyboard walk's page, as loaded)."""
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


# The step's column: its width, and the main block's right padding (the join card's 185 px where the card is fixed).
STEP_BOX = """() => { const m = document.querySelector('[data-testid="stMainBlockContainer"]');
  const h = document.querySelector('[data-testid="stMain"] h2');
  return {pad: parseFloat(getComputedStyle(m).paddingRight), heading: h.getBoundingClientRect().width}; }"""


@pytest.mark.parametrize("in_class", [False, True], ids=["alone", "class"])
def test_presenter_reflows(browser, server, in_class):
    """At 200% zoom of 1280 x 720 (640 x 360 CSS px) and 320 px wide, presenter mode's model corner, "Class and
    sentence" and a started class's join card join the page's flow: none covers the heading or another, none is
    off-screen, nothing scrolls sideways (a display formula wraps: no scroll region the keyboard cannot reach), the
    step keeps the page's width (no 185 px kept for a card that is no longer beside it), and axe finds nothing.
    Step 4's formula (the widest, 279 px in a 263 px column at 640 x 360 before it was written as two relations),
    step 6's at 320 px alone. One page per case, its window narrowed from 640 to 320 px as a zoom does (no reload):
    alone, step 4 at 640 x 360, then narrowed, → → and step 6 at 320 px; in a class, step 4 at both."""
    pg = open_page(browser, server, "/?step=4&present=1", 640, 360)
    if in_class:
        pg.locator(".st-key-class_tools button").first.click()
        pg.get_by_role("button", name="Start a class").click()
        pg.locator(".st-key-class_card").wait_for(timeout=60_000)
        idle(pg)
    reveal_by_space(pg)
    assert_reflows(pg, 640, 360, in_class)
    pg.set_viewport_size({"width": 320, "height": 640})
    if in_class:
        drawn(pg, timeout=60)
    else:
        for k in (5, 6):  # drawn at 320 px
            press(pg, "ArrowRight")
            assert heading(pg).startswith(f"Step {k} of {N}"), heading(pg)
        reveal_by_space(pg)
    assert_reflows(pg, 320, 640, in_class)


def reveal_by_space(pg) -> None:
    """Space with nothing focused reveals; focus on the answer, the view drawn after it."""
    pg.evaluate("() => document.activeElement.blur()")
    pg.keyboard.press("Space")
    pg.wait_for_function(ANSWER_FOCUSED, timeout=60_000, polling=100)
    idle(pg)  # the view is drawn after the answer
    drawn(pg, timeout=60)


def assert_reflows(pg, width: int, height: int, in_class: bool) -> None:
    """test_presenter_reflows' checks on the page as it is, `width` x `height` CSS px."""
    at = f"{width} x {height}, {heading(pg)[:10]}"
    b = pg.evaluate(BOXES)
    parts = ["corner", "tools", "heading"] + (["card"] if in_class else [])
    assert all(b[x] for x in parts), (at, b)
    for i, x in enumerate(parts):
        for y in parts[i + 1:]:
            assert {x, y} == {"tools", "card"} or not overlap(b[x], b[y]), (at, x, y, b)  # the tools are in the card
        assert b[x][0] >= 0 and b[x][2] <= width, (at, x, b)  # on screen, across
    assert b["width"] <= width, (at, b)
    box = pg.evaluate(STEP_BOX)
    assert box["pad"] < 40 and box["heading"] >= width - 60, (at, box)
    assert pg.locator(f"{MAIN} .katex-display").count() >= 1, at
    assert pg.evaluate(SIDEWAYS_FORMULAS) == [], at
    assert axe(pg) == [], at


# Display formulas that scroll sideways (wider content than their box): the TeX of each.
SIDEWAYS_FORMULAS = """() => [...document.querySelectorAll('[data-testid="stMain"] .katex-display')]
  .filter(e => e.scrollWidth > e.clientWidth + 1)
  .map(e => (e.querySelector('annotation') || e).textContent.slice(0, 80))"""


def test_phone_text_is_at_least_12px(browser, server):
    """On a 390 x 844 phone, step 6 revealed (its map's cell numbers were 6 px): no visible text under 12 px."""
    pg = open_page(browser, server, "/?step=6", 390, 844)
    pg.get_by_role("radiogroup", name="Your guess").get_by_role("radio").first.focus()
    pg.keyboard.press("Space")
    idle(pg)
    pg.get_by_role("button", name=re.compile("^Reveal")).click()
    pg.wait_for_function(ANSWER_FOCUSED, timeout=60_000, polling=100)
    idle(pg)  # the view is drawn after the answer
    drawn(pg, timeout=60)
    assert pg.locator(f'{MAIN} [data-testid="stPlotlyChart"]').count() >= 1
    assert pg.evaluate(SMALL_TEXT) == []


def test_class_is_accessible_and_speaks(browser, server):
    """A class: the teacher starts it (focus on the class's heading), the QR code is named by its link, a student
    joins (focus on the class's heading); axe finds nothing on either page; the teacher's Next is announced on the
    student's page in a polite live region and moves the student's focus to the new step's heading; the student's
    counted vote is announced (WCAG 4.1.3); the teacher's reveal is announced too, and moves focus to the answer on
    both pages."""
    t = open_page(browser, server, "/?step=4", 1400, 1000)
    t.get_by_role("button", name="Start a class").click()
    t.wait_for_function(CLASS_HEADING_FOCUSED, timeout=60_000, polling=100)
    idle(t)
    code = re.search(r"Code: ([A-Z0-9]+)", t.inner_text(MAIN)).group(1)
    alts = t.locator(f"{MAIN} img").evaluate_all("is => is.map(i => i.alt)")
    assert any(a.startswith("QR code for the join link http") and a.endswith(f"class={code}") for a in alts), alts
    assert axe(t) == []

    s = open_page(browser, server, f"/?class={code}", 390, 844)
    s.get_by_role("button", name="Join the class").click()
    s.wait_for_function(CLASS_HEADING_FOCUSED, timeout=60_000, polling=100)
    idle(s)
    assert heading(s).startswith(f"Step 4 of {N}")
    assert axe(s) == []
    live = s.locator("#bx-live")
    expect(live).to_have_attribute("aria-live", "polite")

    t.get_by_role("button", name="Next →").click()
    expect(live).to_have_text(re.compile(rf"^Step 5 of {N}: .+, your teacher moved on\.$"), timeout=60_000)
    s.wait_for_function(FOCUSED_HEADING, arg=5, timeout=60_000, polling=100)
    idle(t)
    idle(s)
    s.locator(f'{MAIN} [role="radiogroup"] label').first.click()  # the vote, counted: said, not only written
    expect(live).to_have_text(re.compile(r"^Your vote: .+\. You can change it until the teacher reveals"),
                              timeout=60_000)
    assert "\\" not in live.text_content(), live.text_content()  # the choice as text, not markdown-escaped
    idle(s)
    t.get_by_role("button", name=re.compile("^Reveal")).first.click()
    expect(live).to_have_text("Your teacher revealed the answer.", timeout=60_000)
    s.wait_for_function(ANSWER_FOCUSED, timeout=60_000, polling=100)
    # The teacher's own reveal: focus on the answer, as alone.
    t.wait_for_function(ANSWER_FOCUSED, timeout=60_000, polling=100)
    assert not t.errors and not s.errors, (t.errors, s.errors)


def tab_to(pg, test: str, limit: int = 80, back: bool = False) -> None:
    """Tab (Shift+Tab with `back`) until the focused element passes `test` (a JS function of it): the keyboard's
    only way there, as a keyboard-only student goes."""
    for _ in range(limit):
        if pg.evaluate(f"() => ({test})(document.activeElement)"):
            return
        pg.keyboard.press("Shift+Tab" if back else "Tab")
    assert pg.evaluate(f"() => ({test})(document.activeElement)"), f"never reached {test}: at {active(pg)}"


def button_named(start: str) -> str:
    """A test for tab_to: a button whose text starts with `start`."""
    return f"a => a.tagName === 'BUTTON' && a.textContent.trim().startsWith({start!r})"


ENABLED_RADIO = "a => a.type === 'radio' && !a.disabled"


def test_lesson_by_keyboard_alone(browser, server):
    """Normal mode (no presenter), all 13 steps by keyboard only: on each, Tab to a guess and pick it with Space,
    Tab to Reveal and press Enter (focus lands on the answer), Tab to Next and press Enter (focus lands on the next
    step's heading). No mouse."""
    pg = open_page(browser, server, "/lesson?step=1")
    pg.evaluate("() => document.activeElement.blur()")
    for k in range(1, N + 1):
        assert heading(pg).startswith(f"Step {k} of {N}"), heading(pg)
        tab_to(pg, ENABLED_RADIO)
        pg.keyboard.press("Space")
        pg.wait_for_function("() => document.activeElement.type === 'radio' && document.activeElement.checked",
                             timeout=60_000, polling=100)
        idle(pg)
        tab_to(pg, button_named("Reveal"))
        pg.keyboard.press("Enter")
        pg.wait_for_function(ANSWER_FOCUSED, timeout=120_000, polling=100)
        idle(pg)
        assert pg.locator(".st-key-lesson_answer").inner_text().startswith(("Right", "Not this time")), k
        if k == N:
            break
        tab_to(pg, button_named("Next"))
        pg.keyboard.press("Enter")
        pg.wait_for_function(FOCUSED_HEADING, arg=k + 1, timeout=120_000, polling=100)
        idle(pg)
    assert not pg.errors, pg.errors


def test_class_by_keyboard_alone(browser, server):
    """A class by keyboard only: the teacher Tabs to "Start a class" and presses Enter; the student Tabs to "Join
    the class" (the code filled in by the link) and presses Enter; the teacher Tabs to Next, Enter; the student's
    focus is on the new step's heading and they Tab to a guess and pick it with the number key 2; the teacher sees
    the vote counted, Tabs back to Reveal and presses Enter; both pages put focus on the answer. Then the student
    Tabs to "Leave the class" and presses Enter: focus lands on the class panel's heading."""
    t = open_page(browser, server, "/lesson?step=4", 1400, 1000)
    t.evaluate("() => document.activeElement.blur()")
    tab_to(t, button_named("Start a class"), limit=120)
    t.keyboard.press("Enter")
    t.wait_for_function(CLASS_HEADING_FOCUSED, timeout=60_000, polling=100)
    idle(t)
    code = re.search(r"Code: ([A-Z0-9]+)", t.inner_text(MAIN)).group(1)

    s = open_page(browser, server, f"/?class={code}", 390, 844)
    s.evaluate("() => document.activeElement.blur()")
    tab_to(s, button_named("Join the class"))
    s.keyboard.press("Enter")
    s.wait_for_function(CLASS_HEADING_FOCUSED, timeout=60_000, polling=100)
    idle(s)
    assert heading(s).startswith(f"Step 4 of {N}")

    tab_to(t, button_named("Next"), limit=120, back=True)  # up from the side column
    t.keyboard.press("Enter")
    t.wait_for_function(FOCUSED_HEADING, arg=5, timeout=60_000, polling=100)
    s.wait_for_function(FOCUSED_HEADING, arg=5, timeout=60_000, polling=100)
    idle(t)
    idle(s)
    tab_to(s, ENABLED_RADIO)
    s.keyboard.press("2")
    s.wait_for_function(CHECKED, arg=1, timeout=60_000, polling=100)
    expect(t.locator(MAIN)).to_contain_text("1 of 1 students have answered", timeout=60_000)
    idle(t)
    t.evaluate("() => document.activeElement.blur()")
    tab_to(t, button_named("Reveal"), limit=120)
    t.keyboard.press("Enter")
    t.wait_for_function(ANSWER_FOCUSED, timeout=60_000, polling=100)
    s.wait_for_function(ANSWER_FOCUSED, timeout=60_000, polling=100)
    idle(s)
    tab_to(s, button_named("Leave the class"), limit=120)
    s.keyboard.press("Enter")
    s.wait_for_function(CLASS_HEADING_FOCUSED, timeout=60_000, polling=100)
    expect(s.locator("#bx-live")).to_have_text("You left the class.", timeout=30_000)
    assert not t.errors and not s.errors, (t.errors, s.errors)
