"""A live class in real browsers: the teacher's chromium context and three students' contexts on one server.

Students join by the link and by the typed code, follow the teacher's step change, vote; the split appears
on the teacher's projector (presenter mode) with the right count, and the reveal reaches every student with
the model's answer (computed here by bert_core.lesson on the step's sentence).
"""

from __future__ import annotations

import re
import time
import urllib.parse

import pytest
from support.browser import settle
from support.class_pages import ScriptedStudent, explained, header_is, joined_by_link, split_chart, tab
from support.class_pages import seat_of as _me
from support.class_pages import start_class as _start_class
from support.page_checks import drawn
from support.slides import slide_problems
from support.wait import until

import bert_core
from ui.lesson import content as lesson
from ui.lesson.live_class.teacher import REVEAL_AFTER_MOVE_S

pytestmark = pytest.mark.browser



@pytest.fixture
def browser(browser):
    """The file's chromium, each test's contexts closed after it: a class's tabs share nothing with the test before,
    and none is left drawing its class's timers through the next test."""
    yield browser
    for ctx in browser.contexts:
        ctx.close()


def test_a_teacher_and_three_students(server, browser):
    pages = {}
    with explained(pages):
        _teacher_and_three_students(server, browser, pages)


def _teacher_and_three_students(server, browser, pages: dict) -> None:
    from playwright.sync_api import expect

    m = bert_core.load_model()
    teacher = pages["teacher"] = tab(browser, server)
    teacher.goto(server + "/lesson", wait_until="domcontentloaded")
    settle(teacher)
    teacher.get_by_role("button", name="Start a class").click()
    teacher.wait_for_url(re.compile(r"class=[A-Z0-9]{6}"))
    settle(teacher)
    code = urllib.parse.parse_qs(urllib.parse.urlparse(teacher.url).query)["class"][0]
    assert teacher.get_by_text(f"Code: {code}").count() == 1
    assert teacher.locator('[data-testid="stImage"] img').count() >= 1  # the QR code

    students = []
    for i in range(3):
        pg = pages[f"student{i}"] = tab(browser, server, (900, 900))
        if i == 0:  # by the link
            pg.goto(f"{server}/lesson?class={code}", wait_until="domcontentloaded")
            settle(pg)
            expect(pg.get_by_role("textbox", name="Class code")).to_have_value(code, timeout=120_000)
        else:  # by the code, typed the way people type it
            pg.goto(server + "/lesson", wait_until="domcontentloaded")
            settle(pg)
            pg.get_by_role("textbox", name="Class code").fill(f"{code[:3].lower()} {code[3:]}")
            pg.get_by_role("textbox", name="Class code").press("Enter")
        pg.get_by_role("textbox", name="Nickname (optional)").fill(f"<b>student {i}</b>")
        pg.get_by_role("textbox", name="Nickname (optional)").press("Enter")
        settle(pg)
        pg.get_by_role("button", name="Join the class").click()
        pg.wait_for_url(re.compile(rf"class={code}.*me=|me=.*class={code}"))
        settle(pg)
        students.append(pg)
    teacher.bring_to_front()
    teacher.wait_for_function("() => [...document.querySelectorAll('[data-testid=\"stMetricValue\"]')]"
                              ".some(e => e.innerText.trim() === '3')", timeout=120_000, polling=100)

    # The teacher goes to step 2 and presents: every student follows.
    teacher.get_by_role("button", name="Next →").click()
    settle(teacher)
    header_is(teacher, 2)  # the teacher moved (a failure below is then the students')
    for pg in students:
        header_is(pg, 2)
    teacher.goto(teacher.url.replace("/lesson?", "/lesson?present=1&"), wait_until="domcontentloaded")  # reload
    settle(teacher)
    header_is(teacher, 2)
    assert teacher.get_by_text(f"Join: code {code}").count() == 1  # the projector's join card, after a reload
    # Students vote: two on the model's answer, one elsewhere.
    s = lesson.STEPS[1]
    fn, args, kwargs = lesson.question_call(s, s.text, s.pair, 0)
    q = fn(m, *args, **kwargs)
    for pg, choice in zip(students, (q.answer, q.answer, (q.answer + 1) % len(q.choices))):
        pg.bring_to_front()
        pg.locator('[data-testid="stRadio"] [role="radiogroup"] label').nth(choice).click()
        pg.wait_for_selector("text=Your vote:", timeout=120_000)
    teacher.bring_to_front()
    teacher.wait_for_selector(".st-key-class_card >> text=Answered: 3 of 3", timeout=120_000)  # in the join card
    assert split_chart(teacher).count() == 0  # the step's own chart only, until the teacher asks
    teacher.get_by_role("button", name="Show the class's split").click()
    split_chart(teacher).wait_for(timeout=120_000)

    def counts() -> list[int]:  # the bars' labels, once plotly has drawn them
        return sorted(int(b) for b in split_chart(teacher).locator(".bars text").all_text_contents() if b.strip())

    until(lambda: counts() == [1, 2], 120, "the split's bars to read 1 and 2")
    for pg in students:  # no split and no answer on the students' devices before the reveal
        assert split_chart(pg).count() == 0 and "model's answer is" not in pg.inner_text("body")
    teacher.keyboard.press(" ")  # space reveals, as in presenter mode without a class
    teacher.wait_for_selector("text=The model's answer", timeout=120_000)
    shown = q.choices[q.answer]
    for i, pg in enumerate(students):
        pg.bring_to_front()
        pg.wait_for_selector('[data-testid="stAlert"]', timeout=120_000)
        alert = pg.locator('[data-testid="stAlert"]').first.inner_text()
        assert shown in alert and (("Right" in alert) == (i < 2)), (i, alert, shown)
        split_chart(pg).wait_for(timeout=120_000)  # the split beside the answer
        assert pg.locator('[data-testid="stException"]').count() == 0
        assert not pg.errors, pg.errors
    assert teacher.locator('[data-testid="stException"]').count() == 0 and not teacher.errors


def test_leave_join_reload_and_a_second_tab_keep_one_seat(server, browser):
    """One browser, one seat: Leave then Join, a reload, and the join link in a second tab of the same browser
    (its seat token, kept in a cookie) are the same student, with the same vote; the teacher counts one."""
    teacher = tab(browser, server)
    code = _start_class(teacher, server)
    s = tab(browser, server, (900, 900))
    s.goto(f"{server}/lesson?class={code}", wait_until="domcontentloaded")
    settle(s)
    s.get_by_role("textbox", name="Nickname (optional)").fill("Bob")
    s.get_by_role("textbox", name="Nickname (optional)").press("Enter")
    settle(s)
    s.get_by_role("button", name="Join the class").click()
    sid = _me(s)
    settle(s)
    s.locator('[data-testid="stRadio"] [role="radiogroup"] label').nth(1).click()
    s.wait_for_selector("text=Your vote:", timeout=120_000)
    # the seat token, kept
    s.wait_for_function("() => document.cookie.includes('bx_seat=')", timeout=120_000, polling=100)
    s.get_by_role("button", name="Leave the class").click()
    s.wait_for_function("() => !location.search.includes('me=')", timeout=120_000, polling=100)
    settle(s)
    s.get_by_role("textbox", name="Class code").fill(code)
    s.get_by_role("textbox", name="Class code").press("Enter")
    settle(s)
    s.get_by_role("button", name="Join the class").click()
    assert _me(s) == sid  # the same seat
    settle(s)
    s.wait_for_selector("text=Your vote:", timeout=120_000)  # and its vote
    second = s.context.new_page()  # the link again, in a new tab of the same browser: a new Streamlit session
    second.set_default_timeout(120_000)
    second.goto(f"{server}/lesson?class={code}", wait_until="domcontentloaded")
    settle(second)
    second.get_by_role("button", name="Join the class").click()
    assert _me(second) == sid
    s.reload(wait_until="domcontentloaded")
    settle(s)
    assert _me(s) == sid
    teacher.bring_to_front()
    teacher.wait_for_selector("text=1 of 1 students have answered.", timeout=120_000)
    teacher.wait_for_function("() => [...document.querySelectorAll('[data-testid=\"stMetricValue\"]')]"
                              ".some(e => e.innerText.trim() === '1')", timeout=120_000, polling=100)
    assert teacher.get_by_text("1 seat in the class.").count() == 1
    for pg in (teacher, s, second):
        assert pg.locator('[data-testid="stException"]').count() == 0 and not getattr(pg, "errors", [])


def test_a_new_sentence_after_the_reveal_opens_a_new_vote(server, browser):
    """Step 4 after the reveal: the teacher types a new sentence. The student's page shows it with a fresh vote (no
    old answer, nothing picked), the teacher's count starts again at 0, and the new vote is counted. The side
    column's labels are whole in a window 900 px wide and wider."""
    teacher = tab(browser, server)
    code = _start_class(teacher, server, "?step=4")
    s = joined_by_link(browser, server, code)
    header_is(s, 4)
    settle(s)
    s.locator('[data-testid="stRadio"] [role="radiogroup"] label').first.click()
    s.wait_for_selector("text=Your vote:", timeout=120_000)
    teacher.bring_to_front()
    teacher.wait_for_selector("text=1 of 1 students have answered.", timeout=120_000)
    teacher.locator(".st-key-lesson_reveal button").first.click()
    teacher.wait_for_selector('[data-testid="stAlert"]', timeout=180_000)
    s.bring_to_front()
    s.wait_for_selector("text=/^(Right: |Not this time: )/", timeout=120_000)  # the answer reached the student
    teacher.bring_to_front()
    box = teacher.get_by_role("textbox", name="This step's sentence")
    box.fill("She [MASK] the letter for her mother.")
    box.press("Enter")
    settle(teacher)
    teacher.wait_for_selector("text=0 of 1 students have answered.", timeout=120_000)
    assert teacher.get_by_role("button", name=re.compile(r"^Reveal ")).count() == 1  # again, for the new question
    s.bring_to_front()
    s.wait_for_selector("text=for her mother", timeout=120_000)  # the new sentence on the student's page
    settle(s)
    body = s.inner_text("body")
    assert "Right: " not in body and "Not this time" not in body and "Your vote:" not in body, body[:2000]
    assert s.locator('[data-testid="stRadio"] input:checked').count() == 0  # nothing picked: a new vote
    s.locator('[data-testid="stRadio"] [role="radiogroup"] label').nth(1).click()
    s.wait_for_selector("text=Your vote:", timeout=120_000)
    teacher.bring_to_front()
    teacher.wait_for_selector("text=1 of 1 students have answered.", timeout=120_000)
    for width in (900, 1024, 1280):  # the side column's labels (Follow the teacher, Leave the class) whole
        s.set_viewport_size({"width": width, "height": 900})
        s.wait_for_function(f"() => window.innerWidth === {width}", polling=100)
        drawn(s)  # laid out again at the new width, and kept still
        assert not cut_labels(s), (width, cut_labels(s))
    assert not cut_labels(teacher), cut_labels(teacher)
    for pg in (teacher, s):
        assert pg.locator('[data-testid="stException"]').count() == 0 and not pg.errors, pg.errors
    teacher.get_by_role("button", name="End the class").click()  # the shared server as it was found
    teacher.wait_for_function("() => !location.search.includes('class=')", timeout=120_000, polling=100)


def cut_labels(pg) -> list[str]:
    """Texts in the page's main area that Streamlit cut short with an ellipsis ("Follo…")."""
    return pg.evaluate("""() => [...document.querySelectorAll('[data-testid="stMain"] .stMarkdownEllipsis')]
        .filter(e => e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).textOverflow === 'ellipsis')
        .map(e => e.innerText)""")


def _box(pg, selector: str) -> dict:
    return pg.locator(selector).first.bounding_box()


def _overlap(a: dict, b: dict) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"] or
                a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


def _card_problems(t, code: str, what: str) -> list[str]:
    """The join card at 1280 x 720: the QR code and the code on screen, clear of the model corner, and nothing of
    the step (header, text, formulas, charts) under the card."""
    out = []
    q, c, corner = _box(t, '.st-key-class_card [data-testid="stImage"] img'), _box(t, ".st-key-class_card"), \
        _box(t, ".st-key-lesson_corner")
    if not (q and c and corner):
        return [f"{what}: no QR, card or corner ({q}, {c}, {corner})"]
    head = t.get_by_text(f"Join: code {code}")
    h = head.bounding_box() if head.count() == 1 else None
    for name, b in (("QR code", q), ("card", c), ("code", h)):
        if b is None or b["x"] < 0 or b["y"] < 0 or b["x"] + b["width"] > 1280 or b["y"] + b["height"] > 720:
            out.append(f"{what}: the {name} is not inside 1280 x 720: {b}")
        elif _overlap(b, corner):
            out.append(f"{what}: the {name} overlaps the presenter corner: {b} {corner}")
    if q["width"] < 150:
        out.append(f"{what}: the QR code is {q['width']} px wide (a phone at the back reads >= 150)")
    under = t.evaluate("""(c) => [...document.querySelectorAll(['h2', '[data-testid="stPlotlyChart"]', '.katex',
        '[data-testid="stMarkdownContainer"]', '[data-testid="stButton"]', '[data-testid="stAlert"]']
        .map(s => '[data-testid="stMainBlockContainer"] ' + s).join(','))]
        .filter(e => !e.closest('.st-key-class_card') && !e.closest('.st-key-lesson_corner')
                     && !e.closest('.st-key-lesson_keys') && e.checkVisibility())  // not a collapsed expander's
        .map(e => [e.getBoundingClientRect(), (e.innerText || e.tagName).trim().slice(0, 40)])
        .filter(([r]) => r.width > 0 && r.top < c.y + c.height && r.bottom > c.y && r.right > c.x + 1)
        .map(([r, s]) => s + ' (right ' + Math.round(r.right) + ')')""", c)
    out += [f"{what}: under the join card: {u}" for u in under]
    return out


def test_the_join_card_fits_a_projector_beside_every_step_with_the_split(server, browser):
    """Presenter mode at 1280 x 720, a class started from the presenter's popover and one student voting on every
    step: on steps 1-13, with the class's split shown before the reveal and after it, the QR code and the code are
    on screen beside the step, clear of the model corner, and the slide is readable (slide_problems: every text
    >= 18 px, the card's included; no chart text cut; nothing scrolled sideways; the slide within 720 px). Opened
    as 127.0.0.1, the card says students cannot reach that address and links to this machine's network address.

    Every step, both states: the card is fixed and the column beside it 185 px narrower than the readable walk's
    (test_browser_lesson_readable.py), so each step's own charts, formula and answer box meet that width here only;
    before the reveal the slide has the step's own "Reveal <what>" button row, after it the answer box instead. The
    student is scripted (Streamlit's websocket): the checks are the projector's, and a chromium student would only
    vote, drawing every step's charts to do so."""

    from ui.lesson.live_class.join import lan_address

    t = tab(browser, server, (1280, 720))
    code = _start_class(t, server, "?present=1")
    lan = lan_address()
    text = t.locator(".st-key-class_card").inner_text()
    assert f"Join: code {code}" in text and "Only this computer can reach 127.0.0.1" in text, text
    if lan:
        assert f"http://{lan}:" in text and "http://127.0.0.1" not in text, text
    s = ScriptedStudent(server, code)
    moved = time.monotonic()  # no Next yet: nothing to wait for
    problems = []
    try:
        with explained({"teacher": t}):
            for k in range(1, 14):
                header_is(t, k)  # its run over (start_class and Next settle): the class has the step's question
                # Every step has a question: the student votes (the split has a bar), the teacher shows the split.
                s.vote(k)
                t.wait_for_selector(".st-key-class_card >> text=Answered: 1 of 1", timeout=120_000)
                t.get_by_role("button", name="Show the class's split").click()
                split_chart(t).wait_for(timeout=120_000)
                settle(t)
                t.mouse.move(640, 5)  # no tooltip of the button just clicked over the slide
                # The charts were drawn while settle() waited: 0.5 s more, not the readable walk's 1.5 s.
                problems += slide_problems(t, f"step {k}, split shown", 500) + _card_problems(t, code,
                                                                                            f"step {k}, split")
                # A projector's Reveal within REVEAL_AFTER_MOVE_S of Next is taken for a slip and refused (teacher.py);
                # the teacher's move was made before `moved` (its run had ended), so from then on Reveal counts.
                time.sleep(max(0.0, REVEAL_AFTER_MOVE_S - (time.monotonic() - moved)))
                t.locator(".st-key-lesson_reveal button").first.click()
                t.wait_for_selector('[data-testid="stAlert"]', timeout=180_000)
                settle(t)
                split_chart(t).wait_for(timeout=120_000)
                t.mouse.move(640, 5)
                problems += slide_problems(t, f"step {k}, revealed", 500) + _card_problems(t, code,
                                                                                         f"step {k}, revealed")
                if k < 13:
                    t.locator(".st-key-lesson_next button").click()
                    settle(t)
                    moved = time.monotonic()
    finally:
        s.close()
    assert not problems, "\n".join(problems)
    assert t.locator('[data-testid="stException"]').count() == 0 and not t.errors, t.errors
    # The shared server as it was found: the class ended (out of presenter mode, where its End button is).
    t.get_by_role("button", name="Exit presenter mode").click()
    settle(t)
    t.get_by_role("button", name="End the class").click()
    t.wait_for_function("() => !location.search.includes('class=')", timeout=120_000, polling=100)
