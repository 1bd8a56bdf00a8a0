"""A live class in real browsers: the teacher's chromium context and three students' contexts on one server.

Students join by the link and by the typed code, follow the teacher's step change, vote; the split appears
on the teacher's projector (presenter mode) with the right count, and the reveal reaches every student with
the model's answer (computed here by bert_core.lesson on the step's sentence).
"""

from __future__ import annotations

import re
import urllib.parse

import pytest
import test_browser
from appserver import CHROMIUM, CHROMIUM_ARGS, ROOT
from test_browser_lesson import settle

import bert_core
from ui import lesson

pytestmark = pytest.mark.browser

OUT = ROOT / "tests" / "output"
server = test_browser.server  # the same real server fixture (offline, developmentMode off)


@pytest.fixture
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


def tab(browser, base: str, size=(1280, 900)):
    """A page in its own context (its own cookies: its own Streamlit session), offline."""
    host = urllib.parse.urlparse(base).netloc
    ctx = browser.new_context(viewport={"width": size[0], "height": size[1]})
    ctx.route("**/*", lambda r: r.continue_() if urllib.parse.urlparse(r.request.url).netloc in (host, "")
              else r.abort())
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    return pg


def split_chart(pg):
    """The class's split (a plotly chart titled "The class's guesses"), beside the step's own charts."""
    return pg.locator('[data-testid="stPlotlyChart"]').filter(has=pg.locator(".gtitle", has_text="The class's guesses"))


def header_is(pg, step: int, timeout: float = 30_000) -> None:
    pg.wait_for_function(f"() => document.querySelector('h2')?.innerText.startsWith('Step {step} of')",
                         timeout=timeout)


def test_a_teacher_and_three_students(server, browser):
    from playwright.sync_api import expect

    m = bert_core.load_model()
    teacher = tab(browser, server)
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
        pg = tab(browser, server, (900, 900))
        if i == 0:  # by the link
            pg.goto(f"{server}/lesson?class={code}", wait_until="domcontentloaded")
            settle(pg)
            expect(pg.get_by_role("textbox", name="Class code")).to_have_value(code, timeout=30_000)
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
                              ".some(e => e.innerText.trim() === '3')", timeout=30_000)

    # The teacher goes to step 2 and presents: every student follows.
    teacher.get_by_role("button", name="Next →").click()
    settle(teacher)
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
        pg.wait_for_selector("text=Your vote:", timeout=30_000)
    teacher.bring_to_front()
    teacher.wait_for_selector("text=3 of 3 students have answered.", timeout=30_000)
    assert split_chart(teacher).count() == 0  # the step's own chart only, until the teacher asks
    teacher.get_by_role("button", name="Show the class's split").click()
    split_chart(teacher).wait_for(timeout=30_000)
    teacher.wait_for_timeout(1500)
    bars = split_chart(teacher).locator(".bars text").all_text_contents()
    assert sorted(int(b) for b in bars if b.strip()) == [1, 2], bars
    teacher.screenshot(path=str(OUT / "class_projector_split.png"))
    for pg in students:  # no split and no answer on the students' devices before the reveal
        assert split_chart(pg).count() == 0 and "model's answer is" not in pg.inner_text("body")
    teacher.keyboard.press(" ")  # space reveals, as in presenter mode without a class
    teacher.wait_for_selector("text=The model's answer", timeout=30_000)
    shown = q.choices[q.answer]
    for i, pg in enumerate(students):
        pg.bring_to_front()
        pg.wait_for_selector('[data-testid="stAlert"]', timeout=30_000)
        alert = pg.locator('[data-testid="stAlert"]').first.inner_text()
        assert shown in alert and (("Right" in alert) == (i < 2)), (i, alert, shown)
        split_chart(pg).wait_for(timeout=30_000)  # the split beside the answer
        assert pg.locator('[data-testid="stException"]').count() == 0
        assert not pg.errors, pg.errors
    students[2].screenshot(path=str(OUT / "class_student_reveal.png"))
    assert teacher.locator('[data-testid="stException"]').count() == 0 and not teacher.errors
