"""The Fine-tuning page's notebook, as a student at home runs it: the wheel installed outside the checkout, the
notebook the page offers before any run (its default run: the built-in task, finetune_defaults' recipe, the seed),
run top to bottom by nbclient in an empty folder, timed; then the same run in-process, as the page trains it
(FineTuner step by step, its last evaluation at the end), and the two summary lines compared.

    python benchmarks/bench_finetuning_notebook.py [--no-compare]

Target (issue 53): <= 10 minutes on 2 cores for the notebook. Output under benchmarks/output/finetuning_notebook.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "packaging")]
OUT = ROOT / "benchmarks" / "output" / "finetuning_notebook"


def install() -> Path:
    """The project's wheel (pip wheel . --no-deps), installed alone into a folder; that folder."""
    from install_util import build_wheel, install

    whl = build_wheel(OUT)
    print(f"wheel: {whl.name}, {whl.stat().st_size / 1e6:.1f} MB")
    return install(whl, OUT / "site")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--no-compare", action="store_true", help="skip the in-process run (the page's numbers)")
    args = ap.parse_args()
    site = install()
    from support.apptest import assert_ok, open_page
    from support.nb_run import run, start_kernel

    from bert_core.notebooks import notebook_bytes
    from ui.notebook_ui import VIEWS_KEY

    at = open_page("finetuning", timeout=900)
    assert_ok(at)
    view = at.session_state[VIEWS_KEY]["finetuning"]
    print("settings:", view.settings)
    km = start_kernel(path=site, cwd=OUT / "empty")
    t0, c0 = time.perf_counter(), os.times()
    try:
        _, out = run(notebook_bytes(view), km, timeout=1800)
    finally:
        km.shutdown_kernel(now=True)
    wall = time.perf_counter() - t0
    c1 = os.times()
    line = next(ln for ln in out.splitlines() if ln.startswith("Step "))
    print(out[out.index("Task:"):])
    cpu = c1.children_user + c1.children_system - c0.children_user - c0.children_system
    print(f"notebook wall time: {wall:.0f} s (kernel CPU: {cpu:.0f} s; {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f})")
    if args.no_compare:
        return
    import bert_core
    from bert_core.finetune.finetuning import FineTuneConfig
    from bert_core.runs.settings import ema

    s = view.settings
    base = bert_core.load_model(s["base"])
    tuner = bert_core.FineTuner(base, bert_core.builtin_tasks()[s["task"]], FineTuneConfig(**s["recipe"]))
    t0 = time.perf_counter()
    while not tuner.done:  # the page's loop (FineTuneSession steps the trainer; evaluations happen inside)
        tuner.step()
    tuner.evals.append(tuner.evaluate(pooled=True))  # the page's last evaluation (FineTuneSession._final_record)
    last, loss = tuner.evals[-1], ema([m.loss for m in tuner.history], 0.9)[-1]
    page = (f"Step {tuner.step_count:,} / {tuner.max_steps:,}; train loss (smoothed) {loss:.3f}; validation loss "
            f"{last.loss:.3f}; validation accuracy {100 * last.accuracy:.1f} %; evaluated at step {last.step:,}.")
    print(f"in-process run: {time.perf_counter() - t0:.0f} s")
    print("notebook:", line)
    print("page:    ", page)
    print("same numbers:", line == page)


if __name__ == "__main__":
    main()
