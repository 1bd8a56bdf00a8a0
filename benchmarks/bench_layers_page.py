"""The Layers page's rerun after a text edit against the Predictions page's, in the same run.

    python benchmarks/bench_layers_page.py [--reps 3]

Uses bench_app's `time_reruns` (AppTest, a new text at every rerun so the cache misses) on the
bundled model and on a bert-base-sized random model at 64 tokens, for just these two pages, and
prints the ratio and the load average (the machine is shared: read the ratio, not the ms).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_app  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    from bench_analyze import make_checkpoint

    bench_app.PAGES = ["predictions", "layers"]
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as d:
        for name in ("bundled", "bert-base"):
            if name == "bert-base":
                make_checkpoint(Path(d))
                os.environ["BERT_EXPLORER_LOCAL_ROOTS"] = d
            t = bench_app.time_reruns(d if name == "bert-base" else None, 60 if name == "bert-base" else 0, args.reps)
            print(f"{name:<10} predictions {t['predictions'] * 1e3:7.0f} ms   layers {t['layers'] * 1e3:7.0f} ms   "
                  f"layers / predictions {t['layers'] / t['predictions']:.2f}   "
                  f"(load average {os.getloadavg()[0]:.1f})", flush=True)


if __name__ == "__main__":
    main()
