"""What the Lesson's handout costs: the per-rerun record of each chart a step draws (ui/lesson/views.lesson_chart), as a
ratio to plotly's own serialisation of the same figure (what st.plotly_chart sends on every rerun, measured in the
same run), and the size and build time of the handout with every step visited.

    python benchmarks/bench_handout.py [--model bundled-minilm] [--reps 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import bert_core  # noqa: E402
from bert_core.figures.attention import head_heatmap  # noqa: E402
from bert_core.figures.embeddings import norms_figure  # noqa: E402
from bert_core.figures.predictions import candidates_figure, nsp_figure  # noqa: E402
from bert_core.inspect import input_tables  # noqa: E402
from ui.lesson import content as lesson  # noqa: E402
from ui.lesson import handout_doc, handout_record, handout_svg  # noqa: E402


def median_ms(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=bert_core.DEFAULT_BUNDLED)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    m = bert_core.load_model(args.model)
    text = "The cat sat on the [MASK] because it was warm and the cat was tired after a long day outside."
    t = bert_core.analyze(m, text, "It slept.", top_k=5)
    figs = {
        "top 5 bars": candidates_figure(t.predictions[t.mask_positions[0]], "Top 5"),
        "NSP bars": nsp_figure(*t.nsp),
        "norms lines": norms_figure(input_tables.token_norms(t.embeddings), input_tables.token_labels(t.tokens),
                                    input_tables.EMBEDDING_TITLES, t.token_type_ids),
        f"attention map, {len(t.tokens)} tokens": head_heatmap(t.attentions[0, 0], t.tokens, "L1 H1"),
        "attention map, 64 tokens": head_heatmap(np.full((64, 64), 1 / 64), [f"t{i}" for i in range(64)], "64"),
    }
    print(f"{'chart':32} {'record ms':>10} {'to_json ms':>10} {'ratio':>6} {'svg KB':>7}")
    records = []
    for name, f in figs.items():
        rec_ms = median_ms(lambda f=f: handout_record.record(f), args.reps)
        json_ms = median_ms(lambda f=f: f.to_json(), args.reps)
        rec = handout_record.record(f)
        records.append(rec)
        print(f"{name:32} {rec_ms:10.2f} {json_ms:10.2f} {rec_ms / json_ms:6.2f} "
              f"{len(handout_svg.svg(rec, 'x')) / 1024:7.0f}")
    pages = [handout_doc.StepPage(i, s.title, s.explain, s.formula, s.text, s.pair, prompt="Which?",
                                  choices=("a", "b"), answer=0, reveal="r", charts=tuple(records[:3]))
             for i, s in enumerate(lesson.STEPS, 1)]
    h = handout_doc.Handout("bench", 6, 384, 12, 22_000_000, "now", bert_core.__version__, len(lesson.STEPS),
                            tuple(pages))
    build_ms = median_ms(lambda: handout_doc.build(h), max(3, args.reps // 4))
    print(f"handout, 13 steps x 3 charts: {len(handout_doc.build(h).encode()) / 1024:.0f} KB, built in "
          f"{build_ms:.0f} ms (budget {handout_doc.MAX_BYTES / 2**20:.0f} MB)")


if __name__ == "__main__":
    main()
