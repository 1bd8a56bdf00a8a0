"""A live class on phones and under attack, in real browsers beside the teacher's laptop.

The phone walk (390 x 844, touch): the join link shows the join box without scrolling, the vote targets are at least
44 px, and at each of the teacher's Next, Back and jumps ("Go to step", through every step with a formula) the new
step's heading is in view, nothing scrolls sideways (page, formulas), plotly's toolbar is off and no chart title is cut
or under a toolbar; a removed student is told within 5 s without acting. The flood (benchmarks/class_flood.py's,
smaller): scripted joins and class starts from one address (Streamlit's websocket, as benchmarks/load.py's clients
talk) and four seats changing their votes as fast as they can, while a real chromium student from another network
joins within 10 s and their vote counts. The waits are on conditions (the machine is loaded), and a failed wait shows
what each page showed (explained).
"""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from support.browser import settle
from support.class_pages import PHONE, REMOVED, explained, header_is, phone, tab
from support.class_pages import start_class as _start_class
from support.flood import STUDENT_ADDRESS, Attack

pytestmark = pytest.mark.browser




FORMULA_STEPS = (2, 3, 4, 6, 8, 9, 11, 13)  # the Lesson's steps with a display formula (ui/lesson/content.py)
# What does not fit a phone's screen: the page's width, the display formulas that scroll sideways, and the charts'
# titles cut by their chart's edge or under a toolbar (plotly's, or Streamlit's when it shows).
FITS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const over = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const titles = [];
  for (const plot of main.querySelectorAll('.js-plotly-plot')) {
    if (!plot.checkVisibility()) continue;
    const box = plot.querySelector('.main-svg').getBoundingClientRect();
    const shown = (b) => b.checkVisibility({opacityProperty: true});
    const bars = [...plot.closest('[data-testid="stElementContainer"]')?.querySelectorAll(
      '.modebar-container, [data-testid="stElementToolbar"]') ?? []].filter(shown)
      .map(b => b.getBoundingClientRect()).filter(r => r.width > 0);
    for (const t of plot.querySelectorAll('.gtitle')) {
      const r = t.getBoundingClientRect();
      if (r.width > 0 && (r.left < box.left - 1 || r.right > box.right + 1 || bars.some(b => over(b, r))))
        titles.push(t.textContent);
    }
  }
  return {page: document.documentElement.scrollWidth, titles,
          formulas: [...main.querySelectorAll('.katex-display')].filter(e => e.scrollWidth > e.clientWidth + 1)
            .map(e => e.innerText.slice(0, 40))};
}"""


@pytest.fixture
def browser(browser):
    """The file's chromium, each test's contexts closed after it: no class's page is left drawing its timers (and
    the server answering them) through the next test."""
    yield browser
    for ctx in browser.contexts:
        ctx.close()


def vote_targets(pg):
    return pg.locator('[data-testid="stRadio"] [role="radiogroup"] label')


def test_a_phone_joins_first_votes_follows_and_is_told_when_removed(server, browser):
    pages = {}
    with explained(pages):
        _phone_walk(server, browser, pages)


def _phone_walk(server, browser, pages: dict) -> None:
    from playwright.sync_api import expect

    teacher = pages["teacher"] = tab(browser, server)
    code = _start_class(teacher, server)
    ph = pages["phone"] = phone(browser, server)
    ph.goto(f"{server}/lesson?class={code}", wait_until="domcontentloaded")
    settle(ph)
    # The join box first: the nickname and Join in the first screen, above the step.
    for box in (ph.get_by_role("textbox", name="Nickname (optional)"), ph.get_by_role("button", name="Join the class")):
        expect(box).to_be_in_viewport(ratio=1.0, timeout=30_000)
    assert ph.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTop") == 0
    ph.get_by_role("textbox", name="Nickname (optional)").fill("Ada")
    ph.get_by_role("button", name="Join the class").tap()
    ph.wait_for_url(re.compile(r"me="))
    settle(ph)
    targets = vote_targets(ph)
    expect(targets.first).to_be_visible(timeout=30_000)
    boxes = [targets.nth(i).bounding_box() for i in range(targets.count())]
    assert boxes and all(b["height"] >= 44 and b["width"] >= 44 for b in boxes), boxes  # a finger's target
    targets.first.scroll_into_view_if_needed()
    targets.first.tap()
    expect(ph.locator('[data-testid="stMain"]').get_by_text("Your vote:")).to_be_visible(timeout=30_000)

    # The teacher moves on (Next), back (Back) and jumps ahead ("Go to step") through every step with a formula: each
    # time the phone, scrolled down to the vote, shows the new step's heading; nothing is wider than the screen, no
    # formula scrolls sideways and no chart title is cut or under a toolbar.
    moves = [(2, "next"), (3, "next"), (2, "back")] + [(k, "jump") for k in FORMULA_STEPS if k > 3]
    for step, how in moves:
        settle(teacher)
        if how == "jump":
            teacher.locator(".st-key-lesson_goto").click()
            teacher.get_by_role("option", name=re.compile(rf"^{step}\. ")).click()
        else:
            teacher.get_by_role("button", name="Next →" if how == "next" else "← Back").click()
        header_is(teacher, step)
        header_is(ph, step, timeout=60_000)
        expect(ph.locator("h2").first).to_be_in_viewport(timeout=10_000)  # focus to it: lessona11y (roles.py)
        settle(ph)
        fits = ph.evaluate(FITS)
        assert fits == {"page": PHONE[0], "formulas": [], "titles": []}, (step, how, fits)
        if step in FORMULA_STEPS:  # the formula drawn and checked (not a step that lost it)
            assert ph.locator('[data-testid="stMain"] .katex-display').count() >= 1, step
        if step == 2 and how == "next":  # step 2's chart: no plotly toolbar over its title on a touch screen
            expect(ph.locator(".js-plotly-plot .modebar-container").first).to_be_attached(timeout=30_000)
            bars = ph.evaluate("() => [...document.querySelectorAll('.modebar-container')]"
                               ".map(m => getComputedStyle(m).display)")
            assert set(bars) == {"none"}, bars
            assert ph.locator('[data-testid="stException"]').count() == 0  # a follower's chart (shared drawing)
        ph.evaluate("() => { const m = document.querySelector('[data-testid=\"stMain\"]'); m.scrollTop = "
                    "m.scrollHeight; }")  # the student scrolls down (to vote, or to read on)
        assert ph.evaluate("() => document.querySelector('[data-testid=\"stMain\"]').scrollTop") > 0

    # The teacher removes the seat: the phone says so within 5 s, without the student doing anything.
    pick = teacher.locator(".st-key-class_remove_pick input")
    remove = teacher.get_by_role("button", name="Remove the picked seats")

    # The pick, again while the seats' 5 s redraw closes its list or drops it (that is the pick, not the press); then
    # one press: the pick and the press are one form's submit (ui/lesson/live_class/teacher.py), so a press that did
    # nothing fails here.
    settle(teacher)  # the teacher's run of the last step over (it draws Seats anew)
    seats = teacher.locator('details:has(summary:has-text("Seats"))')
    chip = teacher.locator(".st-key-class_remove_pick").get_by_text("Ada", exact=True)
    for _ in range(4):
        if seats.get_attribute("open") is None:
            seats.locator("summary").click()
        expect(pick).to_be_visible(timeout=30_000)
        pick.click()
        pick.press_sequentially("Ada")
        try:
            teacher.get_by_role("option", name="Ada", exact=True).click(timeout=5_000)
            teacher.keyboard.press("Escape")
            chip.wait_for(timeout=5_000)
            break
        except PlaywrightTimeout:
            teacher.keyboard.press("Escape")
    expect(chip).to_be_visible()
    remove.press("Enter")  # by keyboard: a mouse click there first closes the pick's list
    teacher.get_by_text("0 seats in the class.").wait_for(timeout=30_000)
    t0 = time.monotonic()  # the teacher's screen shows the seat gone
    told = ph.get_by_text(REMOVED).first
    told.wait_for(state="attached", timeout=30_000)
    took = time.monotonic() - t0
    assert took <= 5.0, f"the removed student was told after {took:.1f} s"
    expect(ph.locator('[data-testid="stToast"]', has_text=REMOVED)).to_be_in_viewport(timeout=5_000)  # wherever
    # the page was scrolled (here to the bottom of step 13, the note where the vote was is above the screen)
    # no class vote box left (its own guess only): the page's whole run after the count's toast takes it away
    expect(ph.locator('[class*="st-key-class_vote_"]')).to_have_count(0, timeout=30_000)
    assert not ph.errors and not teacher.errors, (ph.errors, teacher.errors)


# ------------------------------------------------------------------ the flood
FLOOD, STARTS = 60, 30  # scripted joins and starts: three times the address's join bucket, six its start bucket
PRESS_AT = 20  # the student presses Join once the server has answered this many of the flood's 90 joins and starts
# (benchmarks/class_flood.py runs the 300 joins and 1,000 starts: docs/benchmarks.md)


def test_a_real_student_joins_and_votes_during_a_flood_of_joins_starts_and_votes(server, browser):
    """Scripted joins and "Start a class" presses from one address (a new browser token each, half the starts one
    token) and four seats flipping their votes, over the server's websocket: the address's buckets bound its seats
    and its classes, the flips are refused past a human's pace, and a real student in chromium on another network
    joins within 10 s during the flood and their vote is counted beside the four seats' (the live class keeps its
    joins and votes)."""
    from playwright.sync_api import expect

    pages = {}
    with explained(pages):
        teacher = pages["teacher"] = tab(browser, server)
        code = _start_class(teacher, server)
        # The real student's page is open, its join box drawn, before the flood; Join is pressed at a fixed point
        # of the flood (PRESS_AT of its joins and starts answered), whether or not the flood was refused yet.
        ph = pages["phone"] = phone(browser, server, {"X-Forwarded-For": STUDENT_ADDRESS})
        ph.goto(f"{server}/lesson?class={code}", wait_until="domcontentloaded")
        settle(ph)
        join_button = ph.get_by_role("button", name="Join the class")
        join_button.wait_for(timeout=60_000)
        attack = Attack(server, code, FLOOD, STARTS)
        attack.thread.start()
        try:
            assert attack.flippers_ready.wait(120), attack.errors
            assert attack.wait_answered(PRESS_AT, 120), ("the flood ended or stalled before the student pressed "
                                                         f"Join: {attack.answered} answered", attack.errors)
            t0, answered_then = time.monotonic(), attack.answered
            join_button.tap()
            ph.wait_for_url(re.compile(r"me="), timeout=30_000)
            took = time.monotonic() - t0
            running = not attack.flood_done.is_set()  # the flood still sending when the student was in
            print(f"the student pressed Join with {answered_then} of {FLOOD + STARTS} of the flood's joins and "
                  f"starts answered, joined in {took:.1f} s; the flood {'still running' if running else 'over'} "
                  f"then ({attack.answered} answered)")
            assert took <= 10.0, f"the student joined after {took:.1f} s"
            vote_targets(ph).first.wait_for(timeout=30_000)
            vote_targets(ph).nth(1).tap()
            expect(ph.locator('[data-testid="stMain"]').get_by_text("Your vote:")).to_be_visible(timeout=30_000)
            flips_then = attack.flips
            assert attack.flood_done.wait(300), f"the flood did not end: {attack.answered} answered"  # all of it
        finally:
            attack.stop.set()
            attack.thread.join(120)
        assert not attack.errors, attack.errors[:5]
        assert attack.bounds_hold() == [], (attack.joined, attack.started, attack.seconds)
        # The student's vote is in the class: 5 answered (the four seats flipping and the student), the teacher sees
        teacher.wait_for_selector("text=/5 of \\d+ students have answered/", timeout=30_000)
        print(f"flood over {attack.seconds:.0f} s: {attack.joined} joined, {attack.refused} refused; "
              f"{attack.started} started, {attack.starts_refused} refused; flips {attack.flips} "
              f"({attack.flips_refused} refused, {flips_then} before the vote); student joined in {took:.1f} s")


# A line broken between two letters or digits of one word, outside a code span: each text node's characters, by the
# top of their boxes (a code span, an identifier such as BERT_EXPLORER_PUBLIC_URL, may break anywhere).
MID_WORD = """(root) => {
  const cut = [];
  const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const word = /[\\p{L}\\p{N}]/u;
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    if (n.parentElement.closest('code')) continue;
    const t = n.textContent, r = document.createRange();
    let top = null;
    for (let i = 0; i < t.length; i++) {
      r.setStart(n, i); r.setEnd(n, i + 1);
      const box = r.getClientRects()[0];
      if (!box) { top = null; continue; }
      if (top !== null && box.top > top + 2 && word.test(t[i - 1]) && word.test(t[i]))
        cut.push(t.slice(Math.max(0, i - 12), i) + '|' + t.slice(i, i + 12));
      top = box.top;
    }
  }
  return cut;
}"""


# ------------------------------------------------------------------ the teacher's start, on a laptop and a phone
def _start_scrolled_to_the_button(pg, server: str, size) -> None:
    """The teacher scrolls down just far enough to see "Start a class" (its button at the bottom of the screen) and
    presses it: the class's heading, its code and its QR code are then on the screen, not below it."""
    from playwright.sync_api import expect

    pg.goto(f"{server}/lesson", wait_until="domcontentloaded")
    settle(pg)
    start = pg.locator(".st-key-lesson_side").get_by_role("button", name="Start a class").filter(visible=True)
    start.wait_for()  # (a phone's page also holds a hidden one)
    # the button's bottom 8 px above the screen's: as far as a teacher scrolls to reach it
    pg.evaluate("""() => { const m = document.querySelector('[data-testid="stMain"]');
      const b = [...document.querySelectorAll('.st-key-lesson_side button')]
        .find(e => e.innerText.includes('Start a class') && e.offsetWidth > 0);
      m.scrollTop += b.getBoundingClientRect().bottom - innerHeight + 8; }""")
    expect(start).to_be_in_viewport(ratio=1.0)
    start.tap() if size == PHONE else start.click()
    pg.wait_for_url(re.compile(r"class=[A-Z0-9]{6}"))
    settle(pg)
    side = pg.locator(".st-key-lesson_side")
    for part in (side.get_by_role("heading", name="A live class"), side.get_by_text(re.compile(r"^Code: ")),
                 side.get_by_role("img", name=re.compile("^QR code for the join link"))):
        expect(part).to_be_in_viewport(ratio=1.0, timeout=10_000)


def test_after_start_a_class_on_a_phone_the_class_card_is_in_view(server, browser):
    """_start_scrolled_to_the_button on a touch phone."""
    pg = tab(browser, server, PHONE, is_mobile=True, has_touch=True)
    with explained({"teacher": pg}):
        _start_scrolled_to_the_button(pg, server, PHONE)


def test_after_start_a_class_on_a_laptop_the_card_is_in_view_and_the_panel_never_wraps_mid_word(server, browser):
    """_start_scrolled_to_the_button at 1280x800; then the class panel with Seats open (a column of ~170 px): its
    join link and its notes (the one on this machine's address names --server.address and
    BERT_EXPLORER_PUBLIC_URL) wrap between words or after a link's / . : ? = &, never inside a word; a long
    identifier breaks only inside its code span. (One page: the class just started is the panel measured.)"""
    pg = tab(browser, server, (1280, 800))
    with explained({"teacher": pg}):
        _start_scrolled_to_the_button(pg, server, (1280, 800))
        pg.locator('details:has(summary:has-text("Seats")) summary').click()
        settle(pg)
        side = pg.locator(".st-key-lesson_side")
        parts = side.locator('[data-testid="stAlertContainer"], .bx-side-link, [data-testid="stImageCaption"]')
        assert parts.count() >= 2, parts.count()  # the link and the note on this machine's address
        cut = [c for i in range(parts.count()) for c in parts.nth(i).evaluate(MID_WORD)]
        assert cut == [], cut


def test_a_phones_join_box_and_leave_are_finger_sized_and_the_nickname_is_kept(server, browser):
    """On a touch phone the join box's fields and Join, and Leave, are at least 44 px tall (WCAG 2.5.5's size, as
    the vote targets); after Leave the join box holds the nickname joined with."""
    teacher = tab(browser, server)
    pages = {"teacher": teacher}
    with explained(pages):
        code = _start_class(teacher, server)
        ph = pages["phone"] = phone(browser, server)
        ph.goto(f"{server}/lesson?class={code}", wait_until="domcontentloaded")
        settle(ph)

        def tall(*boxes) -> None:
            """Each box, a text field's by its drawn box (the border around the field), at least 44 px tall, and
            wholly there (a field taller than its box is cut)."""
            for box in boxes:
                box.wait_for(timeout=30_000)
                drawn = box.locator("xpath=..") if box.evaluate("e => e.tagName") == "INPUT" else box
                height = drawn.bounding_box()["height"]
                assert height >= 44 and box.bounding_box()["height"] <= height, (box, height)

        nick = ph.get_by_role("textbox", name="Nickname (optional)")
        tall(ph.get_by_role("textbox", name="Class code"), nick, ph.get_by_role("button", name="Join the class"))
        nick.fill("Ada")
        ph.get_by_role("button", name="Join the class").tap()
        ph.wait_for_url(re.compile(r"me="))
        settle(ph)
        leave = ph.get_by_role("button", name="Leave the class")
        tall(leave)
        leave.scroll_into_view_if_needed()
        leave.tap()
        ph.wait_for_url(lambda u: "me=" not in u)
        settle(ph)
        nick = ph.get_by_role("textbox", name="Nickname (optional)")
        tall(nick, ph.get_by_role("button", name="Join the class"))
        assert nick.input_value() == "Ada"
