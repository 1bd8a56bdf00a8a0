"""Readable from the back row: every Lesson step in presenter mode at 1280x720, before and after the reveal, on its
own sentence and on its "Try this" sentence on the bundled MiniLM, and on its own sentence on a bert-base-sized
checkpoint (12 x 768, random weights, in a Hugging Face cache as a download leaves it), measured in chromium.

Measured: the font size of every visible text on the slide (each text node's element in the page, and every
<text> of the plotly charts' SVG): at least 18 px, and at least 22 px on token chips and their labels; no chart
text outside its chart's box (a cut title or tick label); no box that hides text by scrolling sideways; and the
slide within 720 px (the main area does not scroll); nothing under the presenter corner or the "Class and
sentence" button; the step's sentence and the choices after the reveal in dark ink (not faded); each slide of the
model's guesses names the model on screen.
"""

from __future__ import annotations

import os
import urllib.parse

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from support.browser import OUT, POLL_MS, settle
from support.hub_cache import hub_cache_checkpoint
from support.slides import slide_problems

import bert_core
from ui.lesson import content as lesson

pytestmark = pytest.mark.browser


BERT_BASE_HOME = OUT / "hf-home-bert-base"  # tests/app/test_bert_base_setting.py's cache: made once, then kept


@pytest.fixture(scope="module")
def bert_base_server():
    """A server whose Hugging Face cache holds a bert-base-sized checkpoint as bert-base-uncased (no hub)."""
    from support.appserver import app_server

    snap = hub_cache_checkpoint(BERT_BASE_HOME)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(BERT_BASE_HOME),
           "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    with open(OUT / "lesson_readable_bert_base_server.log", "w") as log, \
            app_server(env, log=log, args=("--global.developmentMode", "false"), timeout=300) as (url, _):
        yield url, snap


def try_queries() -> dict[int, dict[str, str]]:
    """Step number -> its "Try this" sentence (and pair) as the URL carries it, for each step that has one."""
    out = {}
    for i, s in enumerate(lesson.STEPS, start=1):
        if s.try_text:
            out[i] = {f"t{i}": s.try_text}
            if s.pair is not None and s.try_pair is not None:
                out[i][f"b{i}"] = s.try_pair
    return out


def key_or_button(pg, key: str, button: str, until: str, what: str) -> None:
    """Press `key` once `button` (the key's own button: Streamlit binds its shortcut when it mounts, and a presenter
    sees no key work before the slide's buttons are there) is on the page and enabled, then wait for the JS
    condition `until`. Pressed once: a key the page lost would fail here (`what` names the step)."""
    pg.wait_for_selector(f"{button}:not([disabled])", state="attached", timeout=120_000)
    pg.keyboard.press(key)
    try:
        pg.wait_for_function(until, timeout=120_000, polling=POLL_MS)
    except PlaywrightTimeout:
        raise AssertionError(f"{what}: {key} did nothing; the page says: {pg.inner_text('body')[:1500]}") from None


DOCS_PICTURE = ("minilm", "own", 6)  # README's presenter picture (scripts/screenshots.py copies it)


def keep_picture(pg, model_name: str, sentence: str, i: int, failed: bool) -> None:
    """The slide in tests/output when it has a problem (the evidence) or is the README's picture; no other."""
    if failed or (model_name, sentence, i) == DOCS_PICTURE:
        pg.screenshot(path=str(OUT / f"lesson_readable_{model_name}_{sentence}_{i}.png"))


# (model, sentence): the walks, and why not a fourth, in the test's docstring.
WALKS = [("minilm", "own"), ("minilm", "try"), ("bert-base", "own")]


@pytest.mark.parametrize("model_name, sentence", WALKS, ids=[f"{s}-{m}" for m, s in WALKS])
def test_every_presenter_step_is_readable_from_the_back_row(page, sentence, model_name, request):
    """One page walks every step with → from step 1 (the presenter's keyboard walk: → moves, space reveals the
    model's answer, ← goes back). The "Try this" walk opens one link carrying every step's Try sentence (t<k>,
    b<k>: what a teacher's shared link holds) and walks it the same way; step 10 has no Try sentence and is passed
    by.

    Three walks, not four: bert-base on the Try sentences adds no path of its own. The model changes the axes that
    count layers (steps 2 and 8: 13 points, not 7), step 10's table, the model line and step 6's refusal, the same
    on both sentences (the bert-base own walk); the sentence changes the axes that count tokens (the same WordPiece
    vocabulary on both models), the chips and step 13's marks (the MiniLM Try walk, whose model line is the longer
    one: step 7's Try slide is the tallest). Random weights guess other words on other sentences, drawn by the
    same code."""
    problems = []
    chips_seen = hashes = 0
    extra = {}
    if model_name == "minilm":
        model = bert_core.load_model()  # the server's default model, the bundled MiniLM
    else:  # the same page, on a server that has a bert-base-sized checkpoint under bert-base-uncased
        page.base, snap = request.getfixturevalue("bert_base_server")
        host = urllib.parse.urlparse(page.base).netloc  # the page lets only its first server through: this one too
        page.context.route(f"http://{host}/**", lambda r: r.continue_())
        model, extra = bert_core.load_model(str(snap)), {"model": "bert-base-uncased"}
    tries = try_queries() if sentence == "try" else {}
    carried = {k: v for q in tries.values() for k, v in q.items()}
    n = len(lesson.STEPS)
    alert = "() => document.querySelector('[data-testid=\"stAlert\"]') !== null"
    name = sentence
    for i in range(1, n + 1):
        if i == 1:
            query = urllib.parse.urlencode({"present": "1", "step": "1", **extra, **carried})
            page.goto(f"{page.base}/lesson?{query}", wait_until="domcontentloaded")
        else:  # the keyboard walk: → from the step before
            key_or_button(page, "ArrowRight", ".st-key-lesson_next button",
                          f"() => document.querySelector('h2')?.innerText.startsWith('Step {i} of {n}')", f"step{i}")
        settle(page)
        if sentence == "try" and i not in tries:
            continue  # no Try sentence: its own is the own walk's
        q = tries.get(i, {})
        before = len(problems)
        if i == 1 and sentence == "own":  # presenter mode: no sidebar, large type
            assert page.locator('[data-testid="stSidebar"]').is_hidden()
            body = page.locator('[data-testid="stMain"] [data-testid="stMarkdownContainer"] p').first
            assert float(body.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")) >= 22
        step = lesson.STEPS[i - 1]
        text, pair = q.get(f"t{i}", step.text), q.get(f"b{i}", step.pair)
        fn, args, kwargs = lesson.question_call(step, text, pair, 0)
        assert f"step={i}" in page.url, page.url
        on_slide = " ".join(page.locator(".st-key-lesson_sentence").inner_text().split())
        want = " ".join((f"Sentence: {text}" + (f" · B: {pair}" if pair else "")).split())
        if on_slide != want:  # the link's sentence (or the step's own) is the one the slide and the question read
            problems.append(f"step {i} ({name} sentence): the slide says {on_slide!r}, not {want!r}")
        try:
            asked = fn(model, *args, **kwargs)
        except bert_core.BertCoreError as e:
            # Random bert-base-sized weights link no word clearly (attention near 1/T): step 6 asks for another
            # sentence instead of a question. That message must fit the slide too.
            assert model_name == "bert-base" and step.question == "attention_target", (i, str(e))
            said = page.locator('[data-testid="stAlert"]').first.inner_text()
            assert "links “yesterday” clearly" in said, said
            problems += slide_problems(page, f"step {i} ({name} sentence), asking for another sentence")
            keep_picture(page, model_name, sentence, i, len(problems) > before)
            continue
        assert page.locator('[data-testid="stAlert"]').count() == 0, i  # the answer stays hidden until asked
        problems += slide_problems(page, f"step {i} ({name} sentence), before the reveal")
        key_or_button(page, " ", ".st-key-lesson_reveal button", alert, f"{sentence}_{i}_reveal")  # space reveals
        settle(page)
        said = page.locator('[data-testid="stAlert"]').first.inner_text()
        label = lesson.answer_label(asked)  # "the model's answer" only for what the model computed
        if not (f"{label[0].upper()}{label[1:]}" in said and asked.choices[asked.answer] in said):
            problems.append(f"step {i} ({name} sentence): the reveal says {said!r}, not {label}: "
                            f"{asked.choices[asked.answer]}")
        problems += slide_problems(page, f"step {i} ({name} sentence), after the reveal")
        if step.guesses:  # a slide of the model's guesses names the model on screen
            shown = page.locator(".bx-model-line").all_inner_texts()
            want = "On screen: BERT-base" if model_name == "bert-base" else "On screen: MiniLM, 6 layers × 384"
            if not any(t.startswith(want) for t in shown):
                problems.append(f"step {i} ({name} sentence): no model line {want!r}: {shown}")
        chips_seen += page.locator('[data-testid="stMain"] .bx-chip').count()
        if i in (1, 7):  # the token steps: one chip per token as the model reads it, ## on a word's later pieces
            tokens = bert_core.analyze(model, text, pair).tokens
            shown = [c.replace("\u00a0", " ").strip()
                     for c in page.locator('[data-testid="stMain"] .bx-chip').all_inner_texts()]
            if shown != tokens:
                problems.append(f"step {i} ({name} sentence): the chips {shown} are not the tokens {tokens}")
            hashes += sum(t.startswith("##") for t in tokens)
        keep_picture(page, model_name, sentence, i, len(problems) > before)
    if sentence == "own":  # and back with ←
        key_or_button(page, "ArrowLeft", ".st-key-lesson_back button",
                      f"() => document.querySelector('h2')?.innerText.startsWith('Step {n - 1} of {n}')", "back")
        assert page.locator('[data-testid="stException"]').count() == 0
    assert not problems, "\n".join(problems)
    assert chips_seen, "no token chip was measured: the chips' class is gone"
    assert hashes or sentence == "try", "the own sentences of steps 1 and 7 cut no word: the ## check checked nothing"
    assert not page.errors, page.errors
