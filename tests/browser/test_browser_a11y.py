"""WCAG 2.1 AA on every explorer page in a real chromium: axe-core's WCAG 2.0/2.1 A and AA rules find nothing; the
page has its own title and one h1; every chart has an accessible name and its numbers as a table; every frame a
title; and a focused control shows a focus ring of at least 3:1 and 2 px (the theme's, ui/theme.py).

One server (the session's), one chromium, one visit per page. The Lesson is not here: its own tests cover it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from support.a11y import FOCUSED_JS, SMALL_TEXT, axe, chart_text_contrast, ringed, structure
from support.browser import settle
from support.page_checks import AXE, AXE_RUN, WCAG_TAGS, drawn

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


REVEALED_FOCUS = "() => document.activeElement.classList.contains('st-key-lesson_answer')"


def reveal_by_keyboard(pg, watch) -> None:
    """Pick the first guess (focus it, Space), then press Reveal (focus it, Enter); wait for focus on the answer."""
    pg.get_by_role("radiogroup", name="Your guess").get_by_role("radio").first.focus()
    pg.keyboard.press("Space")
    watch.settle()
    pg.get_by_role("button", name=re.compile("^Reveal")).first.focus()
    pg.keyboard.press("Enter")
    pg.wait_for_function(REVEALED_FOCUS, timeout=120_000)
    watch.settle()
    drawn(pg, timeout=60)


@pytest.mark.parametrize("step", [1, 6, 13])
def test_lesson_is_accessible(watch, step):
    """The Lesson in normal mode, before and after the reveal: its title, one h1 (the sidebar's), heading order,
    axe (WCAG 2.0/2.1 A and AA) finds nothing, every chart named and with its Data table."""
    pg = watch.open(f"/lesson?step={step}")
    drawn(pg, timeout=60)
    problems = structure(pg, "Lesson · BERT Explorer") + axe(pg)
    reveal_by_keyboard(pg, watch)
    watch.assert_clean()
    problems += ["revealed: " + p for p in structure(pg, "Lesson · BERT Explorer") + axe(pg)]
    for name, table in pg.evaluate(CHARTS_JS):
        if not name or not table:
            problems.append(f"chart name={name!r} table={table}")
    assert not problems, f"step {step}:\n" + "\n".join(problems)


def test_every_page_on_a_phone(browser, server):
    """Every page (the Lesson too) on a 390 x 844 phone, one context: no visible text under 12 px in the page, and
    nothing scrolls sideways, the page or a formula."""
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        pg = ctx.new_page()
        problems = []
        for path in ["lesson?step=6", *PAGES]:
            pg.goto(f"{server}/{path}", wait_until="domcontentloaded")
            settle(pg, timeout=300)  # the script has run and stopped, and no rerun followed
            drawn(pg, timeout=60)
            small = pg.evaluate(SMALL_TEXT)
            wide = pg.evaluate("() => document.documentElement.scrollWidth")
            # A formula that scrolls sideways is a scroll region the keyboard cannot reach (WCAG 2.1.1, axe's
            # scrollable-region-focusable): 12 pages had one before formulas wrapped on every page. What wrapping
            # leaves may run a few px into the page's margin, never more.
            scrolls = pg.evaluate("""() => [...document.querySelectorAll('[data-testid="stMain"] .katex-display')]
                .filter(e => e.scrollWidth > e.clientWidth + 1 && (e.scrollWidth > e.clientWidth + 8
                             || ['auto', 'scroll'].includes(getComputedStyle(e).overflowX)))
                .map(e => e.scrollWidth + ' in ' + e.clientWidth)""")
            if small:
                problems.append(f"/{path}: text under 12 px: {small[:5]}")
            if wide > 390:
                problems.append(f"/{path}: {wide} px wide")
            if scrolls:
                problems.append(f"/{path}: formulas scroll sideways: {scrolls}")
        assert not problems, "\n".join(problems)
    finally:
        ctx.close()


def ring_walk(pg, presses: int, settle) -> tuple[set, list, set]:
    """Tab `presses` times from where focus is: (the kinds of control reached, those without the theme's ring, the
    kinds reached inside an element's toolbar: an image's fullscreen button, a data grid's search and download)."""
    kinds, bad, toolbar = set(), [], set()
    for _ in range(presses):
        pg.keyboard.press("Tab")
        now = pg.evaluate(FOCUSED_JS)
        if now is None:
            continue
        kinds.add(now["kind"])
        if now["toolbar"]:
            toolbar.add(now["kind"])
        if not ringed(now):  # read again once the app is idle: a rerun redraws (and refocuses) what it reruns
            settle()
            now = pg.evaluate(FOCUSED_JS)
            if now is not None and not ringed(now):
                bad.append(now)
    return kinds, bad, toolbar


def test_focus_ring_on_the_lesson_and_a_class(watch):
    """The Lesson in normal mode: its guesses (radio inputs), Reveal, and once revealed its charts' Data expanders
    show the ring; a teacher's class panel: its QR code's fullscreen button (the image's toolbar) shows it too."""
    pg = watch.open("/lesson?step=6")
    drawn(pg, timeout=60)
    kinds, bad, _ = ring_walk(pg, 60, watch.settle)
    assert {"input:radio", "button", "a"} <= kinds, kinds
    reveal_by_keyboard(pg, watch)
    more, bad2, _ = ring_walk(pg, 25, watch.settle)
    assert "summary" in more, more
    pg.get_by_role("button", name="Start a class").click()
    pg.wait_for_function("() => document.activeElement.textContent.trim() === 'A live class'", timeout=60_000)
    watch.settle()
    _, bad3, toolbar = ring_walk(pg, 40, watch.settle)
    assert "button" in toolbar, toolbar  # the QR code's fullscreen button
    assert not bad + bad2 + bad3, bad + bad2 + bad3


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
        if not ringed(now):  # read again once the app is idle: a rerun redraws (and refocuses) what it reruns
            watch.settle()
            now = pg.evaluate(FOCUSED_JS)
            if now is not None and not ringed(now):
                bad.append(now)
    assert {"a", "button", "summary", "input:switch", "input:combobox"} <= kinds, kinds
    assert not bad, bad


@pytest.mark.parametrize("path", ["attention", "predictions", "layers", "similarity", "embeddings"])
def test_chart_text_contrasts_with_what_is_under_it(watch, path):
    """WCAG 1.4.3 inside the drawn charts: every tick, title, legend, colour-bar label, bar number and heatmap cell
    number at least 4.5:1 against the pixel under it (the chart photographed with its text hidden). Streamlit's
    chart theme drew ticks and titles rgb(128,132,149), 3.72:1; plotly's cell numbers #444, 3.48:1 on a mid blue;
    Predictions' bar numbers white on #2e86c1, 3.97:1."""
    pg = watch.open(f"/{path}")
    pg.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"] [data-testid=\"stPlotlyChart\"] svg "
                         "text')", timeout=60_000)
    drawn(pg, timeout=60)
    n, low = chart_text_contrast(pg)
    assert n >= 9, f"only {n} chart texts read"
    assert not low, low[:10]


def test_a_data_table_heads_its_rows(watch):
    """A chart's Data table names each number by its row and its column (WCAG 1.3.1): its first column is made of
    row headers (<th scope="row">), as a screen reader reads them, not bare cells."""
    pg = watch.open("/predictions")
    drawn(pg, timeout=60)
    box = pg.locator('[data-testid="stMain"] [data-testid="stExpander"]', has_text="Data: ").first
    box.locator("summary").click()
    table = box.locator('[data-testid="stTable"] table')
    table.wait_for(timeout=60_000)
    rows = table.locator("tbody tr")
    assert rows.count() >= 2
    heads = table.locator('tbody tr > th[scope="row"]:first-child')
    assert heads.count() == rows.count()
    # The row header names the point (a candidate word), not one of its numbers: "made | 0.027 | 2.7%".
    assert table.locator("thead th").first.inner_text().strip() == "candidate"
    assert not any(re.fullmatch(r"[\d.%-]+", h.strip()) for h in heads.all_inner_texts()), heads.all_inner_texts()
    assert table.locator("thead th").count() == table.locator("tbody tr").first.locator("th, td").count()


def test_a_collapsed_sidebar_is_out_of_the_keyboard_s_way(browser, server):
    """On a phone the sidebar starts collapsed, moved off the screen: Tab goes to the page, not to its 20 hidden links
    (a student needed 31 Tabs to reach "Join the class"); opened, its links are reached again."""
    ctx = browser.new_context(viewport={"width": 390, "height": 844})
    pg = ctx.new_page()
    try:
        pg.goto(server + "/attention", wait_until="domcontentloaded")
        settle(pg)
        assert pg.locator('[data-testid="stSidebar"]').get_attribute("data-collapsed") == "true"
        where = []
        for _ in range(6):
            pg.keyboard.press("Tab")
            where.append(pg.evaluate("() => !!document.activeElement.closest('[data-testid=\"stSidebar\"]')"))
        assert not any(where), where
        pg.locator('[data-testid="stExpandSidebarButton"]').click()
        expect(pg.locator('[data-testid="stSidebarNav"] a').first).to_be_visible(timeout=30_000)
        pg.locator('[data-testid="stSidebarNav"] a').first.focus()
        assert pg.evaluate("() => !!document.activeElement.closest('[data-testid=\"stSidebar\"]')")
    finally:
        ctx.close()
