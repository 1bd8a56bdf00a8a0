"""Peak RSS of a real app server: with the bundled model, and with a bert-base-sized model.

    python benchmarks/memory.py

Starts `streamlit run app.py` on loopback, opens every page in Debian's chromium (all requests
off this machine aborted) and reads the server's peak resident set size (VmHWM) from /proc.
The bert-base-sized model has random weights (no hub) and is opened through the sidebar's model
field as a local folder under BERT_EXPLORER_LOCAL_ROOTS. Targets (issue 5): <= 500 MB and <= 1.2 GB.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from appserver import CHROMIUM, CHROMIUM_ARGS, app_server, peak_rss_mb  # noqa: E402

PAGES = ["", "embeddings", "masking", "attention", "predictions", "anatomy"]


def measure(model: str | None, env_extra: dict) -> float:
    """Peak RSS (MB) of a fresh server after every page has rendered once with `model`."""
    from playwright.sync_api import sync_playwright

    with app_server({**os.environ, "HF_HUB_OFFLINE": "1", **env_extra}) as (base, proc):
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            ctx = b.new_context()
            ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith(base) else r.abort())
            page = ctx.new_page()
            query = "?" + urllib.parse.urlencode({"model": model}) if model else ""
            for name in PAGES:
                page.goto(f"{base}/{name}{query}")
                page.wait_for_selector('[data-testid="stSidebar"]', timeout=120_000)
                time.sleep(1)
                while page.locator('[data-testid="stStatusWidget"]').count():
                    time.sleep(0.3)
            b.close()
        return peak_rss_mb(proc.pid)


def main() -> None:
    from bench_analyze import make_checkpoint

    bundled = measure(None, {})
    with tempfile.TemporaryDirectory() as d:
        make_checkpoint(Path(d))
        base = measure(d, {"BERT_EXPLORER_LOCAL_ROOTS": d})
    print(f"peak RSS, bundled model:          {bundled:7.0f} MB  (target 500)")
    print(f"peak RSS, bert-base-sized model:  {base:7.0f} MB  (target 1200)")


if __name__ == "__main__":
    main()
