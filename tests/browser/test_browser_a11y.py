"""Every explorer page in a real chromium, served by a server whose process may talk to loopback only: it renders
with no network at all (the browser's requests off this machine are aborted too), with no error; WCAG 2.1 AA: axe-core's
WCAG 2.0/2.1 A and AA rules find nothing (colour contrast among them), the page has its own title and one h1, every
chart has an accessible name and its numbers as a table, every frame a title, chart text contrasts with what is under
it, and a focused control shows a focus ring of at least 3:1 and 2 px (the theme's, ui/theme.py); a hub model is
refused in plain words while the bundled one keeps working.

One server, one chromium, one visit per page: each visit carries every check made on that page at that size (a phone's
are made in one phone context of their own). The Lesson is here at the root and at two steps; its own tests cover the
rest of it."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect
from support.a11y import FOCUSED_JS, SMALL_TEXT, axe, chart_text_contrast, ringed, structure
from support.appserver import app_server
from support.browser import OUT, POLL_MS, settle
from support.page_checks import AXE, AXE_RUN, WCAG_TAGS, drawn
from support.paths import ROOT

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def server():
    """This file's server: its process may talk to loopback only (tests/offline_site), without HF_HUB_OFFLINE and
    with an empty hub cache, so every page here is proved to render with no network on the server's side too, and a
    hub model fails as it would offline. (Its own server, not the session's: the session's runs with HF_HUB_OFFLINE.)"""
    OUT.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_HUB_OFFLINE")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests" / "offline_site"), env.get("PYTHONPATH", "")])
    env["HF_HOME"] = str(OUT / "empty-hf-home")  # no cached hub files to fall back on
    with open(OUT / "offline_server.log", "w") as log, app_server(env, log=log, timeout=300) as (url, _):
        yield url


# url_path -> the page's title in the menu (app.py's st.Page titles).
PAGES = {
    "tokenization": "Tokenization", "embeddings": "Embeddings", "masking": "Masking", "attention": "Attention",
    "predictions": "Predictions", "layers": "Layers", "inside-layer": "Inside a layer", "heads": "Heads & patching",
    "anatomy": "Model anatomy", "training": "Training", "compare": "Compare", "bert-vs-gpt": "BERT vs GPT",
    "finetuning": "Fine-tuning", "tagging": "Tagging", "question-answering": "Question answering",
    "similarity": "Sentence similarity", "probing": "Probing", "neighbours": "Neighbours",
}

# The pages README shows as drawn here (scripts/screenshots.py copies tests/output/page_<name>.png).
README_SHOTS = {"tokenization", "embeddings", "masking", "attention", "predictions", "anatomy"}

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


def charts_drawn(pg, path: str) -> list[str]:
    """The pages that open on a chart or a table show it: a plotly chart's SVG (or a data grid) on Tokenization, a
    plotly chart drawn on Embeddings, Masking, Attention and Predictions."""
    if path in ("tokenization", "embeddings", "masking", "attention", "predictions"):
        pg.wait_for_selector(".js-plotly-plot .main-svg, [data-testid='stDataFrame']", timeout=60_000)
    if path in ("embeddings", "attention", "predictions", "masking"):
        pg.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)
        if pg.locator(".js-plotly-plot").count() < 1:
            return ["no plotly chart drawn"]
    return []


def page_structure(pg, path: str) -> list[str]:
    """Its own title, one h1 (hidden ones counted), no heading level skipped, every chart named and with its Data
    table, every frame titled."""
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
    return problems


def axe_everywhere(pg) -> list[str]:
    """axe-core's WCAG 2.0/2.1 A and AA rules (colour contrast among them) on the page and each frame it holds."""
    problems = []
    for frame in pg.frames:  # the page and each frame it holds (bertviz's views): axe checks one document at a time
        if frame.is_detached() or (frame != pg.main_frame and frame.url.startswith("http")):
            continue  # a frame of Streamlit's own (none today) would be checked from its own page
        if not frame.evaluate("() => typeof window.axe !== 'undefined'"):
            frame.evaluate(AXE + "\n;0")  # evaluated, not a <script>: bertviz's frames forbid inline scripts (CSP)
        where = "" if frame == pg.main_frame else "frame: "
        problems += [where + v for v in frame.evaluate(AXE_RUN, WCAG_TAGS)]
    return problems


def bertviz_draws_svg(pg, watch) -> list[str]:
    """Attention's bertviz views (two frames or more) draw their SVG with no network."""
    pg.wait_for_function("document.querySelectorAll('iframe').length >= 2", timeout=60_000, polling=POLL_MS)
    frames, n = pg.locator("iframe"), 0
    for i in range(frames.count()):
        fl = pg.frame_locator("iframe").nth(i)
        try:
            fl.locator("svg").first.wait_for(timeout=30_000)
        except Exception:
            continue
        n += int(fl.locator("svg line, svg rect, svg path").count() > 0)
    return [] if n >= 2 else [f"bertviz frames with drawn SVG: {n}"]


def chart_text_contrasts(pg, watch) -> list[str]:
    """WCAG 1.4.3 inside the drawn charts: every tick, title, legend, colour-bar label, bar number and heatmap cell
    number at least 4.5:1 against the pixel under it (the chart photographed with its text hidden). Streamlit's
    chart theme drew ticks and titles rgb(128,132,149), 3.72:1; plotly's cell numbers #444, 3.48:1 on a mid blue;
    Predictions' bar numbers white on #2e86c1, 3.97:1."""
    pg.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"] [data-testid=\"stPlotlyChart\"] svg "
                         "text')", timeout=60_000, polling=POLL_MS)
    n, low = chart_text_contrast(pg)
    return ([f"only {n} chart texts read"] if n < 9 else []) + [f"chart text contrast: {t}" for t in low[:10]]


def focus_ring_on_every_control(pg, watch) -> list[str]:
    """Tab through the Attention page from the top: every control reached (sidebar links, the model's select, the
    text box, buttons, toggles, number fields, expanders) shows the theme's ring: 3 px of FOCUS_RING (6.7:1 on white,
    ui/theme.py), on itself or on the label or box that holds it. Done last: Tab moves focus and scrolls."""
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
    need = {"a", "button", "summary", "input:switch", "input:combobox"}
    return ([f"controls not reached by Tab: {need - kinds} (reached {kinds})"] if not need <= kinds else []) \
        + [f"no focus ring: {b}" for b in bad]


def data_table_heads_its_rows(pg, watch) -> list[str]:
    """A chart's Data table names each number by its row and its column (WCAG 1.3.1): its first column is made of
    row headers (<th scope="row">), as a screen reader reads them, not bare cells. Done last: it opens an expander."""
    box = pg.locator('[data-testid="stMain"] [data-testid="stExpander"]', has_text="Data: ").first
    box.locator("summary").click()
    table = box.locator('[data-testid="stTable"] table')
    table.wait_for(timeout=60_000)
    rows, heads = table.locator("tbody tr"), table.locator('tbody tr > th[scope="row"]:first-child')
    problems = []
    if rows.count() < 2:
        problems.append(f"Data table: {rows.count()} rows")
    if heads.count() != rows.count():
        problems.append(f"Data table: {heads.count()} row headers for {rows.count()} rows")
    # The row header names the point (a candidate word), not one of its numbers: "made | 0.027 | 2.7%".
    first = table.locator("thead th").first.inner_text().strip()
    if first != "candidate":
        problems.append(f"Data table: first column {first!r}")
    if any(re.fullmatch(r"[\d.%-]+", h.strip()) for h in heads.all_inner_texts()):
        problems.append(f"Data table: a number as a row header: {heads.all_inner_texts()}")
    cols = table.locator("tbody tr").first.locator("th, td").count()
    if table.locator("thead th").count() != cols:
        problems.append(f"Data table: {table.locator('thead th').count()} column heads for {cols} cells")
    return problems


# The checks a page has beyond every page's, in order (those that move focus or open things last).
MORE = {
    "attention": [bertviz_draws_svg, chart_text_contrasts, focus_ring_on_every_control],
    "predictions": [chart_text_contrasts, data_table_heads_its_rows],
    "layers": [chart_text_contrasts], "similarity": [chart_text_contrasts], "embeddings": [chart_text_contrasts],
}


@pytest.mark.parametrize("path", list(PAGES))
def test_page_renders_offline_and_is_accessible(watch, path):
    """The page renders with no error, no dialog and no network; shows its charts; is WCAG 2.1 AA (structure, axe on
    the page and its frames); and passes the page's own checks (MORE). README's pictures are taken here."""
    pg = watch.open(f"/{path}")
    watch.assert_clean()
    problems = charts_drawn(pg, path)
    drawn(pg, timeout=60)  # charts draw after the script
    if path in README_SHOTS:
        pg.screenshot(path=str(OUT / f"page_{path}.png"), full_page=True)
    problems += page_structure(pg, path) + axe_everywhere(pg)
    for check in MORE.get(path, []):
        problems += check(pg, watch)
    watch.assert_clean()
    assert not problems, f"/{path}:\n" + "\n".join(problems)


REVEALED_FOCUS = "() => document.activeElement.classList.contains('st-key-lesson_answer')"


def reveal_by_keyboard(pg, watch) -> None:
    """Pick the first guess (focus it, Space), then press Reveal (focus it, Enter); wait for focus on the answer."""
    pg.get_by_role("radiogroup", name="Your guess").get_by_role("radio").first.focus()
    pg.keyboard.press("Space")
    watch.settle()
    pg.get_by_role("button", name=re.compile("^Reveal")).first.focus()
    pg.keyboard.press("Enter")
    pg.wait_for_function(REVEALED_FOCUS, timeout=120_000, polling=POLL_MS)
    watch.settle()
    drawn(pg, timeout=60)


LESSON_STRUCTURE = "Lesson · BERT Explorer"


def lesson_checks(pg, where: str) -> list[str]:
    """The Lesson as drawn now: its title, one h1 (the sidebar's), heading order, axe (WCAG 2.0/2.1 A and AA) finds
    nothing, and (once revealed) every chart named and with its Data table."""
    problems = structure(pg, LESSON_STRUCTURE) + axe(pg)
    if where == "revealed":
        for name, table in pg.evaluate(CHARTS_JS):
            if not name or not table:
                problems.append(f"chart name={name!r} table={table}")
    return [f"{where}: {p}" for p in problems]


@pytest.mark.parametrize("path", ["/", "/lesson?step=13"], ids=["root-step-1", "step-13"])
def test_lesson_is_accessible(watch, path):
    """The Lesson in normal mode, before and after the reveal (lesson_checks), with no error and no network: at the
    root (the default page, step 1) and at step 13. Step 6: test_lesson_step_6_is_accessible_with_focus_rings."""
    pg = watch.open(path)
    watch.assert_clean()
    drawn(pg, timeout=60)
    problems = lesson_checks(pg, "before")
    reveal_by_keyboard(pg, watch)
    watch.assert_clean()
    problems += lesson_checks(pg, "revealed")
    assert not problems, f"{path}:\n" + "\n".join(problems)


def collapsed_sidebar_out_of_the_keyboard_s_way(pg) -> None:
    """On a phone the sidebar starts collapsed, moved off the screen: Tab goes to the page, not to its 20 hidden links
    (a student needed 31 Tabs to reach "Join the class"); opened, its links are reached again."""
    assert pg.locator('[data-testid="stSidebar"]').get_attribute("data-collapsed") == "true"
    where = []
    for _ in range(6):
        pg.keyboard.press("Tab")
        where.append(pg.evaluate("() => !!document.activeElement.closest('[data-testid=\"stSidebar\"]')"))
    assert not any(where), f"Tab reached the collapsed sidebar: {where}"
    pg.locator('[data-testid="stExpandSidebarButton"]').click()
    expect(pg.locator('[data-testid="stSidebarNav"] a').first).to_be_visible(timeout=30_000)
    pg.locator('[data-testid="stSidebarNav"] a').first.focus()
    assert pg.evaluate("() => !!document.activeElement.closest('[data-testid=\"stSidebar\"]')")


def test_every_page_on_a_phone_and_its_collapsed_sidebar(browser, server):
    """Every page (the Lesson too) on a 390 x 844 phone, one context: no visible text under 12 px in the page, and
    nothing scrolls sideways, the page or a formula; on the last, Attention, the collapsed sidebar is out of the
    keyboard's way (collapsed_sidebar_out_of_the_keyboard_s_way: it moves focus and opens the sidebar, so last)."""
    ctx = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    try:
        pg = ctx.new_page()
        problems = []
        for path in ["lesson?step=6", *(p for p in PAGES if p != "attention"), "attention"]:
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
        collapsed_sidebar_out_of_the_keyboard_s_way(pg)  # on Attention, the walk's last page
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


def test_lesson_step_6_is_accessible_with_focus_rings(watch):
    """The Lesson at step 6 in normal mode, before and after the reveal (lesson_checks); its guesses (radio inputs),
    Reveal, and once revealed its charts' Data expanders show the ring; a teacher's class panel: its QR code's
    fullscreen button (the image's toolbar) shows it too."""
    pg = watch.open("/lesson?step=6")
    watch.assert_clean()
    drawn(pg, timeout=60)
    problems = lesson_checks(pg, "before")
    kinds, bad, _ = ring_walk(pg, 60, watch.settle)
    assert {"input:radio", "button", "a"} <= kinds, kinds
    reveal_by_keyboard(pg, watch)
    watch.assert_clean()
    problems += lesson_checks(pg, "revealed")
    assert not problems, "step 6:\n" + "\n".join(problems)
    more, bad2, _ = ring_walk(pg, 25, watch.settle)
    assert "summary" in more, more
    pg.get_by_role("button", name="Start a class").click()
    pg.wait_for_function("() => document.activeElement.textContent.trim() === 'A live class'", timeout=60_000,
                         polling=POLL_MS)
    watch.settle()
    _, bad3, toolbar = ring_walk(pg, 40, watch.settle)
    assert "button" in toolbar, toolbar  # the QR code's fullscreen button
    assert not bad + bad2 + bad3, bad + bad2 + bad3


def test_a_hub_model_is_refused_plainly_offline(watch):
    """Asked for a hub model it cannot reach, the offline server says so in the sidebar, in plain words, and keeps
    the bundled model, which still answers."""
    page = watch.open("/predictions?model=bert-base-uncased")
    watch.assert_clean()
    side = page.locator('[data-testid="stSidebar"]').inner_text()
    assert "Could not load bert-base-uncased" in side and "hub" in side, side
    assert "Still showing: bundled" in side
    # The bundled model still answers: its chart is drawn (plotly renders after the script has
    # finished, on its own schedule in the browser: wait for it, do not count at once).
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=180_000)
    assert page.locator(".js-plotly-plot").count() >= 1
