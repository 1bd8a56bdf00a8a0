"""Retake the screenshots the browser tests do not take: `python scripts/screenshots.py [page ...]`.

Starts the app offline on loopback (benchmarks/appserver.py), opens each page in Debian's chromium with the
bundled model and the default text, waits until the page has stopped running, and writes
`docs/screenshots/<page>.png` (full page). Default pages: layers, inside_layer.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from appserver import CHROMIUM, CHROMIUM_ARGS, app_server  # noqa: E402

DOCS = ROOT / "docs" / "screenshots"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pages", nargs="*", default=["layers", "inside_layer"])
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with app_server() as (base, _proc), sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        ctx = b.new_context(viewport={"width": 1400, "height": 1000})
        ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith(base) else r.abort())
        page = ctx.new_page()
        for name in args.pages:
            page.goto(f"{base}/{name}")
            page.wait_for_selector('[data-testid="stSidebar"]', timeout=120_000)
            time.sleep(1)
            while page.locator('[data-testid="stStatusWidget"]').count():  # still running
                time.sleep(0.3)
            page.wait_for_selector(".js-plotly-plot", timeout=60_000)
            time.sleep(1)  # plotly's first paint
            out = DOCS / f"{name}.png"
            page.screenshot(path=str(out), full_page=True)
            print(out.relative_to(ROOT))
        b.close()


if __name__ == "__main__":
    main()
