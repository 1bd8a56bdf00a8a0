"""Accessibility checks the browser tests share: axe-core, the page's structure, the focused element's ring, small
text (tests/browser/test_browser_a11y.py, test_browser_a11y_lesson.py)."""

from __future__ import annotations

from support.page_checks import AXE, AXE_RUN, WCAG_TAGS
from ui.theme import FOCUS_RING

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
  const box = a.closest('[class*="st-key-"]'), key = box ? box.className.match(/st-key-\\S+/)[0] : null;
  return {kind, ring, key, toolbar: !!a.closest('[data-testid="stElementToolbar"]'),
          html: a.outerHTML.slice(0, 200)}; }"""

def structure(pg, title: str) -> list[str]:
    """The page's title, its one h1 (among those a screen reader meets: not display:none) and its heading order."""
    problems = []
    if pg.title() != title:
        problems.append(f"document title {pg.title()!r}")
    h1 = pg.locator("h1").evaluate_all("hs => hs.filter(h => h.checkVisibility()).length")
    if h1 != 1:
        problems.append(f"{h1} h1 elements")
    levels = pg.locator(":is(h1, h2, h3, h4, h5, h6)").evaluate_all(  # in document order: sidebar, then main
        "hs => hs.filter(h => h.checkVisibility()).map(h => +h.tagName[1])")
    skips = [(a, b) for a, b in zip(levels, levels[1:]) if b > a + 1]
    if skips:
        problems.append(f"heading levels skipped: {skips}")
    if levels[:1] != [1]:
        problems.append(f"the first heading is h{levels[:1]}")
    return problems

def axe(pg) -> list[str]:
    if not pg.evaluate("() => typeof window.axe !== 'undefined'"):
        pg.evaluate(AXE + "\n;0")
    return pg.evaluate(AXE_RUN, WCAG_TAGS)

# Visible text under 12 px in the main area (an SVG chart's labels included): its tag, size and start.
SMALL_TEXT = """() => [...document.querySelectorAll('[data-testid="stMain"] *')].filter(e =>
    !e.closest('.katex-mathml')  /* a formula's MathML: for screen readers, clipped to 1 px, never seen */ &&
    [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.replace(/[\\s\\u200b]/g, ''))
    && e.getClientRects().length
    && e.checkVisibility({visibilityProperty: true}) && parseFloat(getComputedStyle(e).fontSize) < 12)
  .map(e => e.tagName + ' ' + getComputedStyle(e).fontSize + ' ' + e.textContent.trim().slice(0, 30))"""

def ringed(focused: dict) -> bool:
    ring = focused["ring"]
    return bool(ring) and ring["width"] >= 2 and ring["color"] == FOCUS_RING.css_rgb


# One chart's SVG text: its start, its computed fill and its centre relative to the chart's box.
CHART_TEXTS_JS = """c => { const b = c.getBoundingClientRect();
  return [...c.querySelectorAll('svg text')].filter(t => t.textContent.trim() && t.getClientRects().length
      && t.checkVisibility({visibilityProperty: true})).map(t => { const r = t.getBoundingClientRect();
    return {text: t.textContent.trim().slice(0, 30), fill: getComputedStyle(t).fill,
            x: r.left + r.width / 2 - b.left, y: r.top + r.height / 2 - b.top}; }); }"""
HIDE_CHART_TEXT = "[data-testid='stPlotlyChart'] svg text {visibility: hidden !important;}"


def chart_text_contrast(pg) -> tuple[int, list[str]]:
    """(texts read, each chart text whose fill contrasts less than 4.5:1 with what is drawn under it: WCAG 1.4.3).
    Each chart is photographed with its text hidden: the pixel at a text's centre is that text's background (a
    heatmap cell's colour, or the chart's paper)."""
    import io

    from PIL import Image

    from bert_core.figures.style import contrast

    charts = pg.locator('[data-testid="stMain"] [data-testid="stPlotlyChart"]')
    n, low = 0, []
    for k in range(charts.count()):
        chart = charts.nth(k)
        if not chart.is_visible():
            continue  # in a closed tab or expander: checked where it is shown
        chart.scroll_into_view_if_needed()
        texts = chart.evaluate(CHART_TEXTS_JS)
        style = pg.add_style_tag(content=HIDE_CHART_TEXT)
        try:
            shot = Image.open(io.BytesIO(chart.screenshot(animations="disabled"))).convert("RGB")
        finally:
            style.evaluate("s => s.remove()")
        box = chart.bounding_box()
        sx, sy = shot.width / box["width"], shot.height / box["height"]
        for t in texts:
            x, y = int(t["x"] * sx), int(t["y"] * sy)
            if not (0 <= x < shot.width and 0 <= y < shot.height):
                continue  # outside the chart's box: drawn on the page, not in the photograph
            n += 1
            bg = "rgb({}, {}, {})".format(*shot.getpixel((x, y)))
            ratio = contrast(t["fill"], bg)
            if ratio < 4.5:
                low.append(f"chart {k} {t['text']!r}: {t['fill']} on {bg} {ratio:.2f}:1")
    return n, low
