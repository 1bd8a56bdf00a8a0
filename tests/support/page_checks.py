"""What the browser tests check on a drawn page: that it has finished drawing, and axe-core's colour contrast."""

from __future__ import annotations

import time

from support.paths import ROOT

OUT = ROOT / "tests" / "output"

# The page as drawn: [charts without their SVG yet, images not loaded, fonts loading, main area's height, elements].
DRAWN_JS = """() => {
  const main = document.querySelector('[data-testid="stMain"]') || document.body;
  const q = (sel) => [...main.querySelectorAll(sel)];
  const charts = q('[data-testid="stPlotlyChart"]').filter(c => !c.querySelector('.main-svg')).length
    + q('[data-testid="stVegaLiteChart"]').filter(c => !c.querySelector('svg, canvas')).length;
  return [charts, q('img').filter(i => !i.complete).length, document.fonts.status !== 'loaded' ? 1 : 0,
          main.scrollHeight, main.getElementsByTagName('*').length];
}"""


def drawn(pg, timeout: float = 60.0, still: float = 0.3) -> None:
    """After a run has ended (settle): wait until every chart has drawn its SVG, images and fonts have loaded, and
    the main area has kept its height and element count for `still` seconds (charts draw after the script): short
    on a quiet machine, longer on a loaded one; the generous timeout is only reached by a page that never settles."""
    deadline, last, since = time.time() + timeout, None, time.time()
    while time.time() < deadline:
        now = pg.evaluate(DRAWN_JS)
        if now != last:
            last, since = now, time.time()
        elif not any(now[:3]) and time.time() - since >= still:
            return
        time.sleep(0.05)
    raise AssertionError(f"the page was still drawing after {timeout} s: {last}")


AXE = (ROOT / "tests" / "browser" / "vendor" / "axe.min.js").read_text()


def contrast_failures(pg) -> list[str]:
    """axe-core's colour-contrast violations on the page as it is now: one line per element."""
    if not pg.evaluate("() => typeof window.axe !== 'undefined'"):
        pg.add_script_tag(content=AXE)
    return pg.evaluate("""async () => {
        const r = await axe.run(document, {runOnly: {type: 'rule', values: ['color-contrast']}});
        return r.violations.flatMap(v => v.nodes.map(n =>
            n.target.join(' ') + ' :: ' + n.any.map(a => a.message).join('; ')));
    }""")


# axe-core's WCAG 2.0/2.1 A and AA rules, and a run of them returning each violation's rule, target and summary.
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


AXE_RUN = """async (tags) => {
  const r = await axe.run(document, {runOnly: {type: 'tag', values: tags}});
  return r.violations.flatMap(v => v.nodes.map(n => v.id + ' :: ' + n.target.join(' ') + ' :: '
      + n.failureSummary.replace(/\\s+/g, ' ')));
}"""
