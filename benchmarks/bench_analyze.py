"""Time `bert_core.analyze` against transformers' BertForMaskedLM on a bert-base-sized config.

    python benchmarks/bench_analyze.py [--reps 10]

Random weights (no hub), the same weights in both (saved by HF, loaded by our loader), fp32.
Ours: the whole `analyze` call (tokenization, one forward pass with every hidden state and
attention map, top-k at the [MASK], numpy conversion). Peers, measured in the same run:
  eager: HF eager attention with output_attentions=True and output_hidden_states=True
  sdpa:  HF sdpa attention, logits only (no attention maps)
Targets (issue 2): ours / eager <= 0.7, ours / sdpa <= 1.0.
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
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # tests/support: the checkpoint writer
from support.checkpoints import write_base_sized_checkpoint as make_checkpoint  # noqa: E402

import bert_core  # noqa: E402


def best_of(fn, reps: int) -> float:
    """Median wall time of `fn()` over `reps` calls, after one warm-up call."""
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--lengths", default="16,128,512")
    args = ap.parse_args()
    from transformers import BertForMaskedLM

    torch.set_grad_enabled(False)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d)
        make_checkpoint(path)
        ours = bert_core.load_model(str(path))
        eager = BertForMaskedLM.from_pretrained(path, attn_implementation="eager").eval()
        sdpa = BertForMaskedLM.from_pretrained(path, attn_implementation="sdpa").eval()
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, reps {args.reps} (median)")
    print(f"{'tokens':>6} {'ours ms':>9} {'eager ms':>9} {'sdpa ms':>9} {'ours/eager':>11} {'ours/sdpa':>10}")
    for T in (int(x) for x in args.lengths.split(",")):
        words = [f"w{i % 1000}" for i in range(T - 3)]
        text = " ".join(words[: T // 2] + ["[MASK]"] + words[T // 2:])
        trace = bert_core.analyze(ours, text)
        assert len(trace.tokens) == T, len(trace.tokens)
        ids = torch.from_numpy(trace.input_ids)[None]
        types = torch.zeros_like(ids)
        t_ours = best_of(lambda text=text: bert_core.analyze(ours, text), args.reps)
        with torch.inference_mode():
            t_eager = best_of(lambda ids=ids, types=types: eager(
                input_ids=ids, token_type_ids=types, output_attentions=True, output_hidden_states=True), args.reps)
            t_sdpa = best_of(lambda ids=ids, types=types: sdpa(input_ids=ids, token_type_ids=types), args.reps)
        print(f"{T:>6} {t_ours * 1e3:>9.1f} {t_eager * 1e3:>9.1f} {t_sdpa * 1e3:>9.1f} "
              f"{t_ours / t_eager:>11.2f} {t_ours / t_sdpa:>10.2f}")


if __name__ == "__main__":
    main()
