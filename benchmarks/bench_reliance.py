"""Time occlusion salience, gradient salience and pseudo-log-likelihood against one `analyze`, bert-base-sized.

    python benchmarks/bench_reliance.py [--reps 5] [--tokens 32]

Random bert-base-sized weights (no hub), fp32. The peer is one `bert_core.analyze` of the same
text, measured in the same run. Occlusion and PLL run one copy of the input per scored position
(T - 2 at T tokens) in one batched pass (chunks of CHUNK_TOKENS tokens); gradient salience is one
forward and one backward pass. Target (issue 10): occlusion and PLL each <= 4x one analyze at 32 tokens.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from anywhere in the repo
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_analyze import make_checkpoint  # noqa: E402

import bert_core  # noqa: E402


def interleaved_medians(fns: dict, reps: int) -> dict[str, float]:
    """Median wall time of each call, the calls taken in turn within every rep (after one warm-up round).

    Interleaving puts every call and its peer under the same load when the machine is shared, so the
    ratios hold even while the absolute times swing.
    """
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=32)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        make_checkpoint(Path(d))
        m = bert_core.load_model(d)
    for p in m.model.parameters():
        p.requires_grad_(False)  # as the app's shared model
    T = args.tokens
    words = [f"w{i % 1000}" for i in range(T - 3)]
    text = " ".join(words[: T // 2] + ["[MASK]"] + words[T // 2:])
    trace = bert_core.analyze(m, text)
    assert len(trace.tokens) == T, len(trace.tokens)
    pos = trace.mask_positions[0]
    rows = {
        "analyze (peer)": lambda: bert_core.analyze(m, text),
        "salience occlusion": lambda: bert_core.salience(m, text, pos),
        "salience gradient": lambda: bert_core.salience(m, text, pos, method="gradient"),
        "pseudo_log_likelihood": lambda: bert_core.pseudo_log_likelihood(m, text),
        "fill_masks left_to_right": lambda: bert_core.fill_masks(m, text, strategy="left_to_right"),
    }
    times = interleaved_medians(rows, args.reps)
    peer = times["analyze (peer)"]
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, {T} tokens, reps {args.reps} "
          "(median, calls interleaved)")
    print(f"{'call':<26} {'ms':>9} {'x analyze':>10}")
    for name, t in times.items():
        print(f"{name:<26} {t * 1e3:>9.1f} {t / peer:>10.2f}")
    print("target: occlusion and PLL <= 4x analyze")


if __name__ == "__main__":
    main()
