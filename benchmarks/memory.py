"""Peak RSS of a real app server: with the bundled model, and with a bert-base-sized model.

    python benchmarks/memory.py                 # every page once: bundled, then bert-base-sized
    python benchmarks/memory.py --long-texts 20  # issue 14 (a): 20 distinct 512-token texts, one user
    python benchmarks/memory.py --make-checkpoint DIR  # only write the bert-base-sized folder (for load.py --model)

Starts `streamlit run app.py` on loopback, opens pages in Debian's chromium (all requests
off this machine aborted) and reads the server's peak resident set size (VmHWM) from /proc.
The bert-base-sized model has random weights (no hub) and is opened through the sidebar's model
field as a local folder under BERT_EXPLORER_LOCAL_ROOTS. Targets (issue 5): <= 500 MB and <= 1.2 GB.

`--long-texts N` is one browser session that pastes N distinct 512-token texts into the sidebar and
sends each through Predictions, Attention and Embeddings, printing the server's RSS and peak RSS
after each text. Target (issue 14): peak <= 2.5 GB (a Cloud container has about 2.7 GB).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))  # tests/support: the app server and the websocket client
from support.appserver import CHROMIUM, CHROMIUM_ARGS, app_server, peak_rss_mb  # noqa: E402

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


def rss_mb(pid: int) -> float:
    """A process's resident set size now (VmRSS), MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def long_text(i: int, n_words: int = 510) -> str:
    """Text i of the long-text run: n_words distinct-per-text words of the test vocabulary (one token each)."""
    rng = random.Random(i)
    return " ".join(f"w{rng.randrange(30_000)}" for _ in range(n_words))


def settle(page, timeout: float = 900) -> None:
    """Wait until the app has rendered and no script runs (the status widget is gone twice in a row)."""
    page.wait_for_selector('[data-testid="stSidebar"]', timeout=timeout * 1000)
    deadline = time.time() + timeout
    time.sleep(1.0)
    while time.time() < deadline:
        if page.locator('[data-testid="stStatusWidget"]').count() == 0:
            time.sleep(0.5)
            if page.locator('[data-testid="stStatusWidget"]').count() == 0:
                return
        time.sleep(0.3)
    raise RuntimeError("the app was still running after the timeout")


def measure_long_texts(model_dir: str, n_texts: int, env_extra: dict, pages=("Predictions", "Attention",
                                                                              "Embeddings")) -> list[tuple]:
    """One user sends `n_texts` distinct 512-token texts through `pages`: (text, RSS MB, peak RSS MB) per text."""
    from playwright.sync_api import sync_playwright

    rows = []
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "BERT_EXPLORER_LOCAL_ROOTS": model_dir, **env_extra}
    with app_server(env, timeout=180) as (base, proc):
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            ctx = b.new_context(viewport={"width": 1400, "height": 1000})
            ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith((base, "data:", "blob:",
                                                                                    "about:"))
                      else r.abort())
            page = ctx.new_page()
            page.set_default_timeout(300_000)  # a busy machine: chromium may take long to draw 512-token maps
            page.goto(f"{base}/predictions?" + urllib.parse.urlencode({"model": model_dir}))
            settle(page)
            print(f"loaded: RSS {rss_mb(proc.pid):6.0f} MB, peak {peak_rss_mb(proc.pid):6.0f} MB", flush=True)
            for i in range(n_texts):
                t0 = time.time()
                box = page.get_by_label("Text", exact=True)
                box.fill(long_text(i))
                box.press("Control+Enter")
                settle(page)
                for name in pages:
                    page.get_by_role("link", name=name, exact=True).click()
                    settle(page)
                    if page.locator('[data-testid="stException"]').count():
                        raise RuntimeError(page.locator('[data-testid="stException"]').first.inner_text())
                row = (i + 1, rss_mb(proc.pid), peak_rss_mb(proc.pid), time.time() - t0)
                rows.append(row)
                print(f"text {row[0]:2d}: RSS {row[1]:6.0f} MB, peak {row[2]:6.0f} MB  ({row[3]:.0f} s)", flush=True)
            b.close()
    return rows


def main() -> None:
    from bench_analyze import make_checkpoint

    ap = argparse.ArgumentParser()
    ap.add_argument("--long-texts", type=int, default=0, help="issue 14 (a): N distinct 512-token texts")
    ap.add_argument("--make-checkpoint", metavar="DIR", help="only write the bert-base-sized checkpoint to DIR")
    args = ap.parse_args()
    if args.make_checkpoint:
        Path(args.make_checkpoint).mkdir(parents=True, exist_ok=True)
        make_checkpoint(Path(args.make_checkpoint))
        return
    if args.long_texts:
        with tempfile.TemporaryDirectory() as d:
            make_checkpoint(Path(d))
            rows = measure_long_texts(d, args.long_texts, {})
        print(f"peak RSS after {len(rows)} texts of 512 tokens through Predictions, Attention, Embeddings: "
              f"{rows[-1][2]:.0f} MB  (target 2500)")
        return
    bundled = measure(None, {})
    with tempfile.TemporaryDirectory() as d:
        make_checkpoint(Path(d))
        base = measure(d, {"BERT_EXPLORER_LOCAL_ROOTS": d})
    print(f"peak RSS, bundled model:          {bundled:7.0f} MB  (target 500)")
    print(f"peak RSS, bert-base-sized model:  {base:7.0f} MB  (target 1200)")


if __name__ == "__main__":
    main()
