"""Heads & patching: seconds for head importance, the pruning curve and activation patching, batched, against a
plain loop of one `analyze` pass per variant (the peer), on the bundled MiniLM and a bert-base-sized random model.

    python benchmarks/bench_heads.py [--reps 3] [--lengths 16,64] [--threads 1] [--no-loop]

Texts are `n` tokens in all ([CLS] and [SEP] included) with one [MASK] in the middle; the patching pair differs in
its first word. Importance runs L x nh variants, pruning L x nh + 1 more (plus the importance it sorts by),
patching (L+1) x T.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bert_core  # noqa: E402


def median_time(fn, reps: int) -> float:
    """Median wall time of `fn()` over `reps` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def texts(m: bert_core.LoadedModel, n: int, words: list[str]) -> tuple[str, str, str, str]:
    """(sentence with one [MASK], clean, corrupt, target): n tokens each with the specials."""
    body = [words[i % len(words)] for i in range(n - 3)]
    body.insert(len(body) // 2, "[MASK]")
    text = " ".join(body)
    return text, " ".join([words[0], *body[1:]]), " ".join([words[1], *body[1:]]), words[2]


def loop_importance(m: bert_core.LoadedModel, text: str) -> None:
    """The peer: one analyze per knocked-out head (what a page without batching would do)."""
    for layer in range(m.config.num_hidden_layers):
        for head in range(m.config.num_attention_heads):
            bert_core.analyze(m, text, embeddings=False, hidden_states=False, attentions=False,
                              ablate_heads=[(layer, head)])


def run(m: bert_core.LoadedModel, name: str, lengths: list[int], reps: int, words: list[str], loop: bool) -> None:
    L, nh = m.config.num_hidden_layers, m.config.num_attention_heads
    for n in lengths:
        text, clean, corrupt, target = texts(m, n, words)
        assert len(m.tokenizer.encode(text)) == n, len(m.tokenizer.encode(text))
        t_an = median_time(partial(bert_core.analyze, m, text), reps)
        t_imp = median_time(partial(bert_core.head_importance, m, text), reps)
        t_pr = median_time(partial(bert_core.pruning_curve, m, text), reps)
        t_pa = median_time(partial(bert_core.patch_activations, m, clean, corrupt, target), reps)
        line = (f"{name:<22} {n:>4} tokens  analyze {t_an * 1e3:7.0f} ms  importance ({L * nh:>3}) {t_imp:6.2f} s  "
                f"pruning {t_pr:6.2f} s  patching ({(L + 1) * n:>4}) {t_pa:6.2f} s")
        if loop:
            t_loop = median_time(partial(loop_importance, m, text), max(1, reps // 3))
            line += f"  | importance as a loop of analyze {t_loop:6.2f} s ({t_loop / t_imp:.1f}x the batched)"
        print(line, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--lengths", default="16,64")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-loop", action="store_true", help="skip the plain-loop peer")
    ap.add_argument("--only", choices=["bundled", "base"], default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    lengths = [int(x) for x in args.lengths.split(",")]
    print(f"torch threads: {args.threads}")
    if args.only != "base":
        m = bert_core.load_model("bundled-minilm")
        run(m, "bundled MiniLM 6x384", lengths, args.reps, ["the", "a", "he", "she", "cat", "sat", "on", "mat"],
            not args.no_loop)
    if args.only != "bundled":
        from bench_analyze import make_checkpoint

        with tempfile.TemporaryDirectory() as d:
            make_checkpoint(Path(d))
            m = bert_core.load_model(d, local_roots=[d])
            run(m, "bert-base-sized 12x768", lengths, args.reps, [f"w{i}" for i in range(1, 400)], not args.no_loop)


if __name__ == "__main__":
    main()
