"""Seconds per Training-page step for each objective (mlm, clm, rtd), interleaved in one process.

    python benchmarks/bench_objectives.py [--steps 40] [--rounds 2] [--preset small]

The Training page's run: its preset (default small, 4 layers x 128), batches of 32 lines of at most 64 tokens
from the built-in corpus sample, the tiny bundled model's vocabulary, the page's settings otherwise, one torch
thread. Each round times every objective in turn (after 5 warm-up steps), so a neighbour's load hits all three
alike; what counts is each objective's time relative to mlm (today's runs) and the minutes 500 steps take.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bert_core.objectives.catalog import OBJECTIVES  # noqa: E402
from bert_core.runs.settings import TrainSettings, builtin_lines, bundled_tokenizer  # noqa: E402
from bert_core.train.trainer import PRESETS, Trainer, new_model  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--preset", default="small", choices=[p.split(" ")[0] for p in PRESETS])
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    preset = next(p for p in PRESETS if p.startswith(args.preset))
    tok, lines = bundled_tokenizer(), builtin_lines()
    times: dict[str, list[float]] = {o: [] for o in OBJECTIVES}
    for _ in range(args.rounds):
        for obj in OBJECTIVES:
            s = TrainSettings(preset=preset, objective=obj, max_steps=500)
            model = new_model(tok, PRESETS[preset], max_position_embeddings=128, seed=s.seed,
                              causal=obj == "clm", rtd=obj == "rtd")
            tr = Trainer(model, tok, lines, s.train_config())
            tr.run(steps=5)
            t0 = time.perf_counter()
            tr.run(steps=args.steps)
            times[obj].append((time.perf_counter() - t0) / args.steps)
    base = sum(times["mlm"]) / len(times["mlm"])
    print(f"| objective | ms / step ({preset}, batch 32, 64 tokens) | vs mlm | 500 steps |")
    print("|---|---|---|---|")
    for obj, ts in times.items():
        mean = sum(ts) / len(ts)
        print(f"| {obj} | {1000 * mean:.0f} | {mean / base:.2f}x | {500 * mean / 60:.1f} min |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
