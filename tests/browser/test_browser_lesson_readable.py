"""Readable from the back row: every Lesson step in presenter mode at 1280x720, before and after the reveal, on its
own sentence and on its "Try this" sentence, on the bundled MiniLM and on a bert-base-sized checkpoint (12 x 768,
random weights, in a Hugging Face cache as a download leaves it), measured in chromium.

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
import test_browser
import test_browser_lesson
from hub_cache import hub_cache_checkpoint
from page_checks import drawn, once_more
from test_browser_lesson import OUT, main_scrolls, settle

import bert_core
from ui.lesson import content as lesson

pytestmark = pytest.mark.browser

server = test_browser.server  # the shared offline server, and the Lesson tests' browser and 1280x720 page
chromium, page = test_browser_lesson.chromium, test_browser_lesson.page
MIN_PX, CHIP_PX = 18, 22

# Every visible text of the main area: [size px, text, on a chip, where]. Icons (a ligature font) and the
# MathML copy of a formula (read by screen readers, drawn 1 px wide) are not text on the slide.
TEXTS_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const shown = el => {
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1) return false;
    for (let e = el; e && e !== main; e = e.parentElement) {
      const cs = getComputedStyle(e);
      if (cs.visibility === 'hidden' || cs.display === 'none' || parseFloat(cs.opacity) === 0) return false;
    }
    return true;
  };
  const out = [];
  const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const text = n.textContent.replace(/[\u200b\u200c\u200d\ufeff]/g, '').trim();  // KaTeX's struts
    const el = n.parentElement;
    if (!text || !el || el.closest('svg') || el.closest('.katex-mathml') || el.closest('style, script')) continue;
    const cs = getComputedStyle(el);
    if (/Material Symbols|Material Icons/.test(cs.fontFamily)) continue;
    if (!shown(el)) continue;
    out.push([parseFloat(cs.fontSize), text.slice(0, 40), !!el.closest('.bx-chip, .bx-chip-label'), 'html']);
  }
  for (const t of main.querySelectorAll('.js-plotly-plot svg text')) {
    const text = t.textContent.trim();
    if (!text || !shown(t)) continue;
    // Plotly shrinks a bar's text to fit by a transform, not by its font size: the size drawn is both.
    const m = t.getScreenCTM();
    out.push([parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b), text.slice(0, 40), false, 'chart']);
  }
  return out;
}"""

# Chart texts that stick out of their chart (cut off by the SVG's edge), and boxes whose text is scrolled
# sideways out of sight (a formula wider than its column).
CUT_JS = r"""() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const cut = [];
  for (const plot of main.querySelectorAll('.js-plotly-plot')) {
    const box = plot.querySelector('svg.main-svg').getBoundingClientRect();
    for (const t of plot.querySelectorAll('svg text')) {
      const r = t.getBoundingClientRect();
      if (!t.textContent.trim() || r.width < 1) continue;
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
        cut.push('chart text out of its chart: ' + t.textContent.slice(0, 40));
    }
  }
  // Presenter mode's corner (the model, the way out) is fixed over the slide's bottom right, and the "Class and
  // sentence" button over its top right: nothing under either.
  for (const [sel, what] of [['.st-key-lesson_corner', 'the corner'], ['.st-key-class_tools', 'Class and sentence']]) {
    const corner = document.querySelector(sel);
    const c = corner && corner.getBoundingClientRect();
    const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); c && c.width > 0 && n; n = walker.nextNode()) {
      const el = n.parentElement;
      // Text not drawn (a collapsed Data expander's table keeps its boxes but checkVisibility() is false) is not
      // under anything.
      if (!n.textContent.trim() || !el || corner.contains(el) || el.closest('.st-key-lesson_keys')
          || !el.checkVisibility()) continue;
      for (const r of el.getClientRects()) {  // each line of the text: a title's first line may run under it
        if (r.width >= 1 && r.right > c.left && r.left < c.right && r.bottom > c.top && r.top < c.bottom) {
          cut.push('under ' + what + ': ' + n.textContent.trim().slice(0, 40));
          break;
        }
      }
    }
  }
  // The step's sentence and the choices (after the reveal too) in full ink: no faded text, no faded box.
  const faded = el => { for (let e = el; e && e !== main; e = e.parentElement) {
      const cs = getComputedStyle(e);
      if (parseFloat(cs.opacity) < 0.99) return true;
      const a = cs.color.match(/rgba?\(([^)]*)\)/)[1].split(',').map(Number);
      if (e === el && (a.length > 3 && a[3] < 0.99 || (a[0] + a[1] + a[2]) / 3 > 90)) return true;
    } return false; };
  for (const el of main.querySelectorAll('.st-key-lesson_sentence p, [data-testid="stRadioOption"] p'))
    if (faded(el)) cut.push('faded: ' + el.innerText.trim().slice(0, 40));
  for (const el of main.querySelectorAll('*')) {
    if (el.closest('.js-plotly-plot') || el.closest('.katex-mathml')) continue;
    const cs = getComputedStyle(el);
    if (!/(auto|scroll|hidden)/.test(cs.overflowX) || el.clientWidth === 0) continue;
    if (el.scrollWidth > el.clientWidth + 2 && el.innerText && el.innerText.trim())
      cut.push('scrolled sideways (' + el.scrollWidth + ' > ' + el.clientWidth + ' px): '
               + el.innerText.trim().slice(0, 40));
  }
  return cut;
}"""


def slide_problems(pg, what: str, wait_ms: int = 0) -> list[str]:
    """Everything on the slide a back row cannot read: small text, cut text, a slide taller than the screen."""
    drawn(pg)  # charts draw after the script has finished
    pg.wait_for_timeout(wait_ms)
    out = []
    for size, text, chip, where in pg.evaluate(TEXTS_JS):
        floor = CHIP_PX if chip else MIN_PX
        if size < floor - 0.05:
            out.append(f"{what}: {where} text {size:.1f} px < {floor}{' (chip)' if chip else ''}: {text!r}")
    out += [f"{what}: {c}" for c in pg.evaluate(CUT_JS)]
    scroll, height = main_scrolls(pg)
    if scroll > height + 1:
        out.append(f"{what}: the slide is {scroll} px tall in a {height} px screen")
    return out


BERT_BASE_HOME = OUT / "hf-home-bert-base"  # tests/app/test_bert_base_setting.py's cache: made once, then kept


@pytest.fixture(scope="module")
def bert_base_server():
    """A server whose Hugging Face cache holds a bert-base-sized checkpoint as bert-base-uncased (no hub)."""
    from appserver import app_server

    snap = hub_cache_checkpoint(BERT_BASE_HOME)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(BERT_BASE_HOME),
           "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    with open(OUT / "lesson_readable_bert_base_server.log", "w") as log, \
            app_server(env, log=log, args=("--global.developmentMode", "false"), timeout=300) as (url, _):
        yield url, snap


def variants():
    """(step number, name, query) for each step on its own sentence and on its "Try this" sentence."""
    for i, s in enumerate(lesson.STEPS, start=1):
        yield i, "own", {}
        if s.try_text:
            q = {f"t{i}": s.try_text}
            if s.pair is not None and s.try_pair is not None:
                q[f"b{i}"] = s.try_pair
            yield i, "try", q


def key_or_button(pg, key: str, button: str, until: str, what: str) -> None:
    """Press `key`, then wait for the JS condition `until`; a key pressed before the page's shortcuts were bound
    (Streamlit binds them when the buttons mount) is kept in tests/output and the button itself is clicked."""
    def click() -> None:
        target = pg.locator(button)
        assert target.count(), f"{what}: no {button}; the page says: {pg.inner_text('body')[:1500]}"
        target.first.click()

    once_more(pg, lambda: pg.keyboard.press(key), lambda ms: pg.wait_for_function(until, timeout=ms),
              f"lesson_readable_{what}_key", retry=click, first_s=20, then_s=120)


@pytest.mark.parametrize("model_name", ["minilm", "bert-base"])
@pytest.mark.parametrize("sentence", ["own", "try"])
def test_every_presenter_step_is_readable_from_the_back_row(page, sentence, model_name, request):
    """Each step on its own sentence is reached with → from step 1 (the presenter's keyboard walk: → moves, space
    reveals the model's answer, ← goes back); each "Try this" sentence is opened by its link."""
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
    n = len(lesson.STEPS)
    alert = "() => document.querySelector('[data-testid=\"stAlert\"]') !== null"
    for i, name, q in variants():
        if name != sentence:
            continue
        if sentence == "try" or i == 1:
            query = urllib.parse.urlencode({"present": "1", "step": str(i), **extra, **q})
            page.goto(f"{page.base}/lesson?{query}", wait_until="domcontentloaded")
        else:  # the keyboard walk: → from the step before
            key_or_button(page, "ArrowRight", ".st-key-lesson_next button",
                          f"() => document.querySelector('h2')?.innerText.startsWith('Step {i} of {n}')", f"step{i}")
        settle(page)
        if i == 1 and sentence == "own":  # presenter mode: no sidebar, large type
            assert page.locator('[data-testid="stSidebar"]').is_hidden()
            body = page.locator('[data-testid="stMain"] [data-testid="stMarkdownContainer"] p').first
            assert float(body.evaluate("e => parseFloat(getComputedStyle(e).fontSize)")) >= 22
        step = lesson.STEPS[i - 1]
        text, pair = q.get(f"t{i}", step.text), q.get(f"b{i}", step.pair)
        fn, args, kwargs = lesson.question_call(step, text, pair, 0)
        assert f"step={i}" in page.url, page.url
        try:
            asked = fn(model, *args, **kwargs)
        except bert_core.BertCoreError as e:
            # Random bert-base-sized weights link no word clearly (attention near 1/T): step 6 asks for another
            # sentence instead of a question. That message must fit the slide too.
            assert model_name == "bert-base" and step.question == "attention_target", (i, str(e))
            said = page.locator('[data-testid="stAlert"]').first.inner_text()
            assert "links “yesterday” clearly" in said, said
            problems += slide_problems(page, f"step {i} ({name} sentence), asking for another sentence")
            page.screenshot(path=str(OUT / f"lesson_readable_{model_name}_{sentence}_{i}.png"))
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
        page.screenshot(path=str(OUT / f"lesson_readable_{model_name}_{sentence}_{i}.png"))
    if sentence == "own":  # and back with ←
        key_or_button(page, "ArrowLeft", ".st-key-lesson_back button",
                      f"() => document.querySelector('h2')?.innerText.startsWith('Step {n - 1} of {n}')", "back")
        assert page.locator('[data-testid="stException"]').count() == 0
    assert not problems, "\n".join(problems)
    assert chips_seen, "no token chip was measured: the chips' class is gone"
    assert hashes or sentence == "try", "the own sentences of steps 1 and 7 cut no word: the ## check checked nothing"
    assert not page.errors, page.errors
