"""Server time of a Compare-page rerun after a text edit, against the Predictions page in the same run.

    python benchmarks/bench_compare.py [--reps 5]

AppTest runs the script in-process, as the server does. Two set-ups: the bundled model against a
session model (a copy of the bundled, as "Use this model" stores one: the offline case), and a
bert-base-sized model with random weights (sidebar, 64 tokens) against the bundled one. Each edit is
a new text, so the analysis cache misses as for a user typing. Compare runs every model's analysis
twice (it reports the best of two as "time per analysis"), so its peer is the Predictions page, which
runs one analysis of the sidebar's model.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def median_rerun(page: str, reps: int, model_dir: str | None, session_copy: bool, n_words: int) -> float:
    """Median seconds of a rerun of `page` after a text edit (the first rerun, which warms caches, dropped)."""
    from streamlit.testing.v1 import AppTest

    import bert_core
    from ui.state import BUNDLED_LABEL, SESSION_LABEL

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    at.run()
    if model_dir:
        at.sidebar.selectbox(key="model_choice").select("other hub id…").run()
        at.sidebar.text_input(key="other_model").set_value(model_dir).run()
    if session_copy:
        m = bert_core.load_model()
        at.session_state["session_model"] = bert_core.LoadedModel(m.model, m.tokenizer, "copy", "session")
        at.session_state["session_model_version"] = 1
    at.switch_page(f"views/{page}.py").run()
    if page == "compare":
        ms = at.multiselect(key="cmp_models")
        ms.set_value([ms.options[0], SESSION_LABEL if session_copy else BUNDLED_LABEL]).run()
    assert not at.exception, [e.value for e in at.exception]
    times = []
    for r in range(reps + 1):
        words = [f"w{(i * 7 + r) % 500}" for i in range(n_words)] if model_dir else \
            f"the cat sat on the mat number {r} page {page} and then it [MASK] away".split()
        text = " ".join(words[: len(words) // 2] + ["[MASK]"] + words[len(words) // 2:])
        at.sidebar.text_area(key="text").set_value(text)
        t = time.perf_counter()
        at.run()
        dt = time.perf_counter() - t
        assert not at.exception, [e.value for e in at.exception]
        if page == "compare":
            assert len(at.multiselect(key="cmp_models").value) == 2 and any("top-1 agree" in d.value.columns
                                                                           for d in at.dataframe)
        if r:
            times.append(dt)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    from bench_analyze import make_checkpoint

    rows = []
    for page in ("predictions", "compare"):
        rows.append(("bundled + session copy", page, median_rerun(page, args.reps, None, True, 0)))
    with tempfile.TemporaryDirectory() as d:
        make_checkpoint(Path(d))
        os.environ["BERT_EXPLORER_LOCAL_ROOTS"] = d
        for page in ("predictions", "compare"):
            rows.append(("bert-base-sized + bundled", page, median_rerun(page, args.reps, d, False, 60)))
    print(f"{'set-up':<27} {'page':<12} {'ms':>7}")
    for setup, page, s in rows:
        print(f"{setup:<27} {page:<12} {s * 1e3:>7.0f}")
    for setup in ("bundled + session copy", "bert-base-sized + bundled"):
        p, c = (s for su, _, s in rows if su == setup)
        print(f"{setup}: compare / predictions = {c / p:.2f}")
    print("(budgets of bench_app.py: 150 ms bundled, 600 ms bert-base-sized at 64 tokens)")


if __name__ == "__main__":
    main()
