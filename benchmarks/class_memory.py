"""A class of real browser sessions on one server: RSS per session, per page, and after the tabs close (issue 23).

    python benchmarks/class_memory.py                       # 30 sessions, bert-base-sized folder, 3 browsers
    python benchmarks/class_memory.py --sessions 6 --after 60   # a quick look
    python benchmarks/class_memory.py --pages Predictions,Attention,Layers,"Inside a layer",Compare

Starts `streamlit run app.py` on loopback with a bert-base-sized folder (random weights, 30,522-entry
vocabulary), warms it with one short visit (then closes that tab), and reads the server's RSS: "warm".
Then N sessions, each in its own browser context (a student's tab) driven by one of `--browsers`
Debian chromium processes working side by side: open Predictions with the folder, paste a distinct
512-token text, Ctrl+Enter (timed: "text edit"), then visit each page of `--pages`. Every tab stays open
until the whole class is through. The server's RSS is sampled every 0.25 s in this process.
Printed: RSS after each session (the curve against N), the mean RSS added by each page, the peak
(VmHWM), the p50 / p95 of a text edit, then RSS every 30 s for `--after` seconds after every tab has
closed. Targets (issue 23, 30 sessions): peak <= 2,300 MB; `--after` 300 s after the tabs close,
RSS <= warm + cache budget (BERT_EXPLORER_CACHE_MB, 400) + 300 MB.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))  # tests/support: the app server and the websocket client
from memory import long_text, rss_mb  # noqa: E402
from memory import settle as _settle  # noqa: E402
from support.appserver import CHROMIUM, CHROMIUM_ARGS, app_server, peak_rss_mb  # noqa: E402


def settle(page, timeout: float = 240) -> None:
    """Wait until the page has drawn and no script runs; a page stuck longer than `timeout` s is an error."""
    _settle(page, timeout)


def open_page(browser, base: str):
    """A new tab in its own browser context (its own cookies: its own Streamlit session), offline."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    ctx.route("**/*", lambda r: r.continue_() if r.request.url.startswith((base, "data:", "blob:", "about:"))
              else r.abort())
    page = ctx.new_page()
    page.set_default_timeout(240_000)
    return ctx, page


def student(page, base: str, model_dir: str, text: str, pages: list[str], report) -> None:
    """One student's session: Predictions with a long text (the edit timed), then each page in `pages`."""
    page.bring_to_front()  # a tab in the background is throttled by chromium and may never finish drawing
    page.goto(f"{base}/predictions?" + urllib.parse.urlencode({"model": model_dir}))
    settle(page)
    report("open")
    box = page.get_by_label("Text", exact=True)
    box.fill(text)
    t0 = time.time()
    box.press("Control+Enter")
    settle(page)
    report("edit", time.time() - t0)
    for name in pages:
        page.get_by_role("link", name=name, exact=True).click()
        settle(page)
        if page.locator('[data-testid="stException"]').count():
            raise RuntimeError(page.locator('[data-testid="stException"]').first.inner_text())
        report(name)


def worker(wid: int, sessions: list[int], base: str, model_dir: str, pages: list[str], events, close) -> None:
    """One chromium: its share of the class, one session after another, every tab kept open until `close`."""
    try:
        _worker(wid, sessions, base, model_dir, pages, events, close)
    except Exception as e:  # the main process must hear of it, or it waits for this worker forever
        events.put((-1, f"worker {wid} failed: {e!r}"[:2000], None, time.time()))
        raise


def _worker(wid: int, sessions: list[int], base: str, model_dir: str, pages: list[str], events, close) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        for i in sessions:
            _, page = open_page(browser, base)
            try:
                student(page, base, model_dir, long_text(1000 + i), pages,
                        lambda what, value=None, i=i: events.put((i, what, value, time.time())))
            except Exception:
                out = ROOT / "tests" / "output"
                out.mkdir(parents=True, exist_ok=True)
                for j, pg in enumerate(page.context.browser.contexts):
                    for k, tab in enumerate(pg.pages):
                        tab.screenshot(path=str(out / f"class_memory_session{i}_tab{j}_{k}.png"), timeout=30_000)
                raise
            events.put((i, "done", None, time.time()))
        events.put((-1, f"worker {wid} waiting", None, time.time()))
        close.wait()
        browser.close()  # every tab closes: the websockets drop
    events.put((-1, f"worker {wid} closed", None, time.time()))


class Sampler(threading.Thread):
    """The server's RSS every `period` s, kept as (time, MB)."""

    def __init__(self, pid: int, period: float = 0.25):
        super().__init__(daemon=True)
        self.pid, self.period, self.samples, self.stop = pid, period, [], threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            try:
                self.samples.append((time.time(), rss_mb(self.pid)))
            except (FileNotFoundError, ProcessLookupError, RuntimeError):
                return
            time.sleep(self.period)


def warm(base: str, model_dir: str) -> None:
    """One short visit that loads the model and draws Predictions, then closes its tab."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        _, page = open_page(browser, base)
        page.goto(f"{base}/predictions?" + urllib.parse.urlencode({"model": model_dir}))
        settle(page)
        browser.close()


def run_class(model_dir: str, n: int, n_browsers: int, pages: list[str], after: float, env_extra: dict) -> dict:
    """The whole measurement on a fresh server; returns the numbers it printed."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "BERT_EXPLORER_LOCAL_ROOTS": model_dir, **env_extra}
    out: dict = {}
    # No file watcher: an edit to the source during a run must not put "File changed, rerun?" on every tab.
    with app_server(env, timeout=180, args=("--server.fileWatcherType", "none")) as (base, proc):
        warm(base, model_dir)
        time.sleep(5)
        out["warm"] = rss_mb(proc.pid)
        print(f"warm (model loaded, one visit, tab closed): RSS {out['warm']:.0f} MB, "
              f"peak {peak_rss_mb(proc.pid):.0f} MB", flush=True)
        sampler = Sampler(proc.pid)
        sampler.start()
        ctx = mp.get_context("spawn")
        events, close = ctx.Queue(), ctx.Event()
        shares = [list(range(w, n, n_browsers)) for w in range(n_browsers)]
        workers = [ctx.Process(target=worker, args=(w, s, base, model_dir, pages, events, close))
                   for w, s in enumerate(shares) if s]
        t_start = time.time()
        for w in workers:
            w.start()
        done, edits, page_delta, last_rss = 0, [], {name: [] for name in ["open", *pages]}, {}
        curve = []
        waiting = 0
        while waiting < len(workers):
            i, what, value, _ = events.get(timeout=3600)
            now = rss_mb(proc.pid)
            if i < 0:
                if "failed" in what:
                    close.set()
                    raise RuntimeError(what)
                waiting += what.endswith("waiting")
                continue
            if what == "edit":
                edits.append(value)
                what = "Predictions (text edit)"
                page_delta.setdefault(what, [])
            if what in page_delta:
                page_delta[what].append(now - last_rss.get(i, now))
            last_rss[i] = now
            if what == "done":
                done += 1
                curve.append((done, now, peak_rss_mb(proc.pid)))
                print(f"session {done:2d} through: RSS {now:6.0f} MB, peak {curve[-1][2]:6.0f} MB "
                      f"({time.time() - t_start:.0f} s)", flush=True)
        time.sleep(5)
        out["all_open"] = rss_mb(proc.pid)
        out["peak"] = peak_rss_mb(proc.pid)
        close.set()
        for w in workers:
            w.join(timeout=120)
        t_closed = time.time()
        print(f"all {n} sessions through and open: RSS {out['all_open']:.0f} MB; peak {out['peak']:.0f} MB; "
              f"tabs closed at {t_closed - t_start:.0f} s", flush=True)
        out["after"] = []
        while time.time() - t_closed < after:
            time.sleep(min(30, after - (time.time() - t_closed)))
            out["after"].append((time.time() - t_closed, rss_mb(proc.pid)))
            since, mb = out["after"][-1]
            print(f"  {since:4.0f} s after the tabs closed: RSS {mb:6.0f} MB", flush=True)
        sampler.stop.set()
        out["curve"], out["edits"], out["page_delta"] = curve, edits, page_delta
    cache_mb = float(env.get("BERT_EXPLORER_CACHE_MB", 400))
    q = statistics.quantiles(edits, n=20) if len(edits) >= 2 else [edits[0]] * 19
    print(f"\n{n} sessions, pages {pages}, {n_browsers} browsers side by side")
    print(f"warm {out['warm']:.0f} MB; all open {out['all_open']:.0f} MB; peak {out['peak']:.0f} MB (target 2300)")
    for name, ds in page_delta.items():
        if ds:
            print(f"  RSS added per session by {name:26s}: mean {statistics.mean(ds):6.1f} MB, "
                  f"max {max(ds):6.1f} MB")
    print(f"text edit p50 {statistics.median(edits):.2f} s, p95 {q[18]:.2f} s")
    if out["after"]:
        end = out["after"][-1][1]
        target = out["warm"] + cache_mb + 300
        print(f"{out['after'][-1][0]:.0f} s after the tabs closed: {end:.0f} MB; target <= warm + cache "
              f"{cache_mb:.0f} + 300 = {target:.0f} MB: {'met' if end <= target else 'NOT met'}")
    return out


def main() -> None:
    from bench_analyze import make_checkpoint

    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=30)
    ap.add_argument("--browsers", type=int, default=3, help="chromium processes working side by side")
    ap.add_argument("--pages", default="Attention,Layers", help="pages after Predictions, by link name")
    ap.add_argument("--after", type=float, default=300, help="seconds to watch RSS after the tabs close")
    ap.add_argument("--model", help="a bert-base-sized folder (default: write one to a temporary folder)")
    args = ap.parse_args()
    pages = [p for p in args.pages.split(",") if p]
    if args.model:
        run_class(args.model, args.sessions, args.browsers, pages, args.after, {})
        return
    with tempfile.TemporaryDirectory() as d:
        make_checkpoint(Path(d))
        run_class(d, args.sessions, args.browsers, pages, args.after, {})


if __name__ == "__main__":
    main()
