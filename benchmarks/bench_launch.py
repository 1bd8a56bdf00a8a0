"""Where the time from `streamlit run` to the first rendered page goes, cold and with a warm-up.

    python benchmarks/bench_launch.py [--runs 3]

Each run starts a real server (the environment has PYTHONPROFILEIMPORTTIME=1, so the server's log
holds Python's own import timings) and opens it in Debian's chromium:
  cold    `streamlit run app.py`, then the browser: the first session pays for importing torch,
          bert_core and pandas and for loading the shared model;
  warm    the same with --server.scriptHealthCheckEnabled, and one GET of
          /_stcore/script-health-check once the server is healthy (what deploy/serve.sh and the
          Dockerfile's start do): Streamlit runs app.py once without a browser, so the imports and the
          shared model (st.cache_resource) are in the process before the first student arrives.
Columns: server healthy (Streamlit's own start), warm-up, browser start, first page after the browser
asked for it, total; then the imports the server did after it was healthy, from the log (torch is
counted inside the module that first imported it). It also checks that the server never imported
transformers (tests and benchmarks use it; the app must not).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # tests/support: the app server
from support.appserver import CHROMIUM, CHROMIUM_ARGS, _start_streamlit, _stop, free_port, wait_healthy  # noqa: E402

IMPORT_LINE = re.compile(r"^import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)$")


def top_level_imports(log: str) -> dict[str, float]:
    """Seconds per top-level import (Python prints a module after its children, indented by depth)."""
    out: dict[str, float] = {}
    for line in log.splitlines():
        m = IMPORT_LINE.match(line)
        if m and len(m.group(2)) == 1:  # one space: imported by the script itself, not by another module
            out[m.group(3)] = out.get(m.group(3), 0.0) + int(m.group(1)) / 1e6
    return out


def one_run(warm: bool, out_dir: Path) -> dict:
    from playwright.sync_api import sync_playwright

    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPROFILEIMPORTTIME": "1"}
    args = ("--server.scriptHealthCheckEnabled", "true") if warm else ()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = out_dir / f"server-{'warm' if warm else 'cold'}-{time.time_ns()}.log"
    r = {}
    with open(log_path, "w") as log:
        t0 = time.perf_counter()
        proc = _start_streamlit(port, env, log, args)
        try:
            wait_healthy(url, proc, 300)
            r["healthy"] = time.perf_counter() - t0
            n_before = len(log_path.read_text().splitlines())
            t = time.perf_counter()
            if warm:
                with urllib.request.urlopen(url + "/_stcore/script-health-check", timeout=300) as resp:
                    assert resp.status == 200, resp.status
            r["warm-up"] = time.perf_counter() - t
            with sync_playwright() as p:
                t = time.perf_counter()
                b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                page = b.new_page()
                r["browser"] = time.perf_counter() - t
                t = time.perf_counter()
                page.goto(url + "/")
                page.wait_for_selector("[data-testid='stDataFrame']", timeout=300_000)
                r["first page"] = time.perf_counter() - t
                r["total"] = time.perf_counter() - t0
                b.close()
        finally:
            _stop(proc)
    text = log_path.read_text()
    after = "\n".join(text.splitlines()[n_before:])
    r["imports"] = top_level_imports(after)
    r["transformers"] = bool(re.search(r"\|\s+transformers(\.|$)", text, re.M))
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(f"{os.cpu_count()} cores, load average at start {os.getloadavg()[0]:.1f}")
    print(f"{'run':<6} {'healthy':>8} {'warm-up':>8} {'browser':>8} {'1st page':>9} {'total':>7}   "
          "imports after healthy (s)")
    with tempfile.TemporaryDirectory() as d:
        for _ in range(args.runs):
            for warm in (False, True):
                r = one_run(warm, Path(d))
                assert not r["transformers"], "the server imported transformers"
                big = sorted(r["imports"].items(), key=lambda kv: -kv[1])[:4]
                print(f"{'warm' if warm else 'cold':<6} {r['healthy']:>8.1f} {r['warm-up']:>8.1f} {r['browser']:>8.1f} "
                      f"{r['first page']:>9.1f} {r['total']:>7.1f}   "
                      + ", ".join(f"{k} {v:.1f}" for k, v in big), flush=True)
    print(f"load average at end {os.getloadavg()[0]:.1f}; the server never imported transformers")


if __name__ == "__main__":
    main()
