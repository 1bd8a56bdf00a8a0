"""Wall time of each page's "Open as a notebook" download, run top to bottom in a fresh kernel, offline.

    python benchmarks/bench_notebooks.py [--pages attention predictions ...] [--lesson] [--cold]

Each page opens in AppTest on the bundled MiniLM with its default settings (Neighbours builds its index at
the page's default size; Probing fits at the page's default size); the View its button offers becomes the
.ipynb it downloads, which nbclient runs in a new python3 kernel with HF_HUB_OFFLINE=1 and the repository on
the path, as a reader next to the app would. Page and kernel share a fresh results folder
(BERT_EXPLORER_RESULTS_DIR, bert_core/inspect/stored.py): the notebook of a page that computed its index or
probes reads them back, as on the app's machine; `--cold` turns that off in the kernel (a reader elsewhere).
The peer, measured in the same run: a notebook that only imports bert_core and loads the model (the fixed cost
every notebook pays). Target: <= 60 s per notebook on 2 cores. Each line also gives the kernel's CPU seconds
(reaped with the kernel): on a shared machine wall time follows the load, CPU time far less.
Tagging and Question answering are left out: the bundled models have no task head, so their notebooks only say so.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

PAGES = ["tokenization", "embeddings", "masking", "attention", "predictions", "layers", "inside_layer", "heads",
         "bert_vs_gpt", "compare", "similarity", "neighbours", "probing"]
PEER = b"""{"cells": [{"cell_type": "code", "execution_count": null, "id": "a", "metadata": {}, "outputs": [],
 "source": "import bert_core\\nmodel = bert_core.load_model('bundled-minilm')"}],
 "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
 "nbformat": 4, "nbformat_minor": 5}"""


def offered(page: str):
    """The View the page's button offers, from AppTest on its defaults."""
    from support.apptest import open_page

    from ui.notebook_ui import VIEWS_KEY

    at = open_page(page, text="The harbour master [MASK] the ship into the dock at night.", timeout=900)
    if page == "neighbours":
        at.button(key="nb_build").click().run()
    if page == "probing":
        at.button(key="pr_fit").click().run()
    return at.session_state[VIEWS_KEY][page]


def lesson_views():
    from support.apptest import open_page

    from ui.lesson.content import STEPS
    from ui.notebook_ui import VIEWS_KEY

    at = open_page("lesson")
    for k in range(1, len(STEPS) + 1):
        if k > 1:
            at.button(key="lesson_next").click().run()
        yield f"lesson {k}", at.session_state[VIEWS_KEY]["lesson"]


def timed(data: bytes, timeout: int) -> tuple[float, float] | None:
    """(wall seconds, the kernel's CPU seconds) to run the notebook in a fresh kernel; None when a cell ran longer
    than `timeout` seconds. CPU time (user + system of the kernel process, reaped when it shuts down) moves far
    less than wall time on a shared machine: it is what the notebook costs, whoever else holds the cores."""
    from nbclient.exceptions import CellTimeoutError
    from support.nb_run import run

    def children() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    t, c = time.perf_counter(), children()
    try:
        run(data, timeout=timeout)  # a fresh kernel each time
    except CellTimeoutError:
        return None
    return time.perf_counter() - t, children() - c


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", nargs="*", default=PAGES)
    ap.add_argument("--lesson", action="store_true", help="also every Lesson step")
    ap.add_argument("--timeout", type=int, default=300, help="seconds one cell may take")
    ap.add_argument("--cold", action="store_true", help="the kernels store and read no results (a reader elsewhere)")
    args = ap.parse_args()
    from bert_core.notebooks import notebook_bytes

    os.environ["BERT_EXPLORER_RESULTS_DIR"] = tempfile.mkdtemp(prefix="bench-notebooks-")
    t = time.perf_counter()
    views = [(p, offered(p)) for p in args.pages] + (list(lesson_views()) if args.lesson else [])
    print(f"the pages (AppTest, building what they show): {time.perf_counter() - t:.1f} s")
    if args.cold:
        os.environ["BERT_EXPLORER_RESULTS_DIR"] = "off"  # the kernels inherit it
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    peer, peer_cpu = timed(PEER, args.timeout)
    print(f"{'peer (import + load)':24s} {peer:6.1f} s  (kernel CPU {peer_cpu:5.1f} s)")
    for name, view in views:
        got = timed(notebook_bytes(view), args.timeout)
        if got is None:
            print(f"{name:24s} a cell took over {args.timeout} s")
        else:
            t, cpu = got
            print(f"{name:24s} {t:6.1f} s  {t / peer:4.1f}x peer  {'ok' if t <= 60 else 'OVER 60 s'}  "
                  f"(kernel CPU {cpu:5.1f} s, {cpu / peer_cpu:4.1f}x the peer's)  load {os.getloadavg()[0]:.1f}")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
