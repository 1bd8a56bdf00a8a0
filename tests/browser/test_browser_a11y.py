"""WCAG 2.1 AA on every explorer page in a real chromium: axe-core's WCAG 2.0/2.1 A and AA rules find nothing; the
page has its own title and one h1; every chart has an accessible name and its numbers as a table; every frame a
title; and a focused control shows a focus ring of at least 3:1 and 2 px (the theme's, ui/theme.py).

One server (the session's), one chromium, one visit per page. The Lesson is not here: its own tests cover it."""

from __future__ import annotations

import pytest
from support.page_checks import AXE, AXE_RUN, WCAG_TAGS, drawn

from ui.theme import FOCUS_RING

pytestmark = pytest.mark.browser


# url_path -> the page's title in the menu (app.py's st.Page titles).
PAGES = {
    "tokenization": "Tokenization", "embeddings": "Embeddings", "masking": "Masking", "attention": "Attention",
    "predictions": "Predictions", "layers": "Layers", "inside-layer": "Inside a layer", "heads": "Heads & patching",
    "anatomy": "Model anatomy", "training": "Training", "compare": "Compare", "bert-vs-gpt": "BERT vs GPT",
    "finetuning": "Fine-tuning", "tagging": "Tagging", "question-answering": "Question answering",
    "similarity": "Sentence similarity", "probing": "Probing", "neighbours": "Neighbours",
}

# Each chart: its accessible name (st.plotly_chart's alt: role=figure, aria-label on the chart) and whether a "Data"
# expander (its numbers as a table) follows it.
CHARTS_JS = """() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stPlotlyChart"]')].map(c => {
  const name = c.getAttribute('role') === 'figure' ? (c.getAttribute('aria-label') || '') : '';
  let block = c.closest('[data-testid="stElementContainer"]');
  let table = false;
  for (let i = 0; i < 3 && block; i++) {
    block = block.nextElementSibling;
    const summary = block && block.querySelector('[data-testid="stExpander"] summary');
    if (summary && summary.textContent.includes('Data: ')) {  // textContent: a hidden tab's has no innerText
      table = true; break;
    }
  }
  return [name, table];
})"""


# The focused element's kind and the ring it shows: its own outline, or that of the label or box holding it (a
# radio's, a toggle's or a text field's input is hidden inside a drawing or a box), up to 4 levels up. One call, so
# the two are read from the same element.
FOCUSED_JS = """() => { const a = document.activeElement, t = a.tagName.toLowerCase();
  if (a === document.body || t === 'iframe') return null;
  const kind = t === 'input' ? t + ':' + (a.getAttribute('role') || a.type)
             : t + (a.getAttribute('role') ? ':' + a.getAttribute('role') : '');
  let ring = null;
  for (let e = a, k = 0; k < 5 && e; k++, e = e.parentElement) {
    const s = getComputedStyle(e);
    if (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) {
      ring = {style: s.outlineStyle, width: parseFloat(s.outlineWidth), color: s.outlineColor.replace(/ /g, '')};
      break;
    }
  }
  return {kind, ring, html: a.outerHTML.slice(0, 200)}; }"""


@pytest.mark.parametrize("path", list(PAGES))
def test_page_is_accessible(watch, path):
    pg = watch.open(f"/{path}")
    watch.assert_clean()
    drawn(pg, timeout=60)
    problems = []
    title = pg.title()
    if title != f"{PAGES[path]} · BERT Explorer":
        problems.append(f"document title {title!r}")
    h1 = pg.locator("h1").count()
    if h1 != 1:
        problems.append(f"{h1} h1 elements")
    levels = pg.locator(":is(h1, h2, h3, h4, h5, h6)").evaluate_all(  # in document order: sidebar, then main
        "hs => hs.filter(h => h.offsetParent !== null).map(h => +h.tagName[1])")
    skips = [(a, b) for a, b in zip(levels, levels[1:]) if b > a + 1]
    if skips:
        problems.append(f"heading levels skipped: {skips}")
    for name, table in pg.evaluate(CHARTS_JS):
        if not name or not table:
            problems.append(f"chart name={name!r} table={table}")
    for t in pg.locator("iframe").evaluate_all("fs => fs.map(f => f.title)"):
        if not t or t == "st.iframe":
            problems.append(f"iframe title {t!r}")
    for frame in pg.frames:  # the page and each frame it holds (bertviz's views): axe checks one document at a time
        if frame.is_detached() or (frame != pg.main_frame and frame.url.startswith("http")):
            continue  # a frame of Streamlit's own (none today) would be checked from its own page
        if not frame.evaluate("() => typeof window.axe !== 'undefined'"):
            frame.evaluate(AXE + "\n;0")  # evaluated, not a <script>: bertviz's frames forbid inline scripts (CSP)
        where = "" if frame == pg.main_frame else "frame: "
        problems += [where + v for v in frame.evaluate(AXE_RUN, WCAG_TAGS)]
    assert not problems, f"/{path}:\n" + "\n".join(problems)


def _ringed(focused: dict) -> bool:
    ring = focused["ring"]
    return bool(ring) and ring["width"] >= 2 and ring["color"] == FOCUS_RING.css_rgb


def test_focus_ring_shows_on_keyboard_focus(watch):
    """Tab through the Attention page from the top: every control reached (sidebar links, the model's select, the
    text box, buttons, toggles, number fields, expanders) shows the theme's ring: 3 px of FOCUS_RING (6.7:1 on white,
    ui/theme.py), on itself or on the label or box that holds it."""
    pg = watch.open("/attention")
    drawn(pg, timeout=60)
    kinds, bad = set(), []
    for _ in range(90):
        pg.keyboard.press("Tab")
        now = pg.evaluate(FOCUSED_JS)
        if now is None:
            continue
        kinds.add(now["kind"])
        if not _ringed(now):  # read again once the app is idle: a rerun redraws (and refocuses) what it reruns
            watch.settle()
            now = pg.evaluate(FOCUSED_JS)
            if now is not None and not _ringed(now):
                bad.append(now)
    assert {"a", "button", "summary", "input:switch", "input:combobox"} <= kinds, kinds
    assert not bad, bad
