"""Readable from the back row: every text on a presenter slide measured in chromium (font sizes, cut chart texts,
text under the presenter corner, faded text, a slide taller than the screen)."""

from __future__ import annotations

from support.browser import main_scrolls
from support.page_checks import drawn

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
    drawn(pg, still=max(0.3, wait_ms / 1000))  # charts draw after the script; `wait_ms`: how long it must keep still
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
