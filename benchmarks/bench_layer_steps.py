"""Time `layer_steps` against one layer inside `analyze`, on a bert-base-sized random model at 128 tokens.

    python benchmarks/bench_layer_steps.py [--reps 10] [--tokens 128]

Peer, measured in the same run: one layer as `analyze` runs it, `block(x, mask, need_probs=True)`
(the eager path that also returns the attention map), on the same x. Measured for ours:
  block_steps  the step-by-step arithmetic of one layer (every intermediate kept), same x
  layer_steps  the whole public call for the LAST layer: tokenize, run the earlier layers, the
               steps, numpy out; compared with the whole `analyze` call (all layers)
Target (issue 9): block_steps / one layer <= 1.5.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bert_core  # noqa: E402
from bert_core.inspect.inside_layers import block_input, block_steps, blocks  # noqa: E402


def paired_times(a, b, reps: int) -> tuple[float, float, float]:
    """Medians of a() and b() timed in alternation, and the median of the per-round ratios b / a.

    Alternating puts both under the same load from other processes (the machine is shared), so the
    ratio is steadier than the ratio of two medians taken one after the other.
    """
    a(), b()
    ta, tb = [], []
    for _ in range(reps):
        for fn, out in ((a, ta), (b, tb)):
            t = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t)
    ratio = statistics.median(y / x for x, y in zip(ta, tb))
    return statistics.median(ta), statistics.median(tb), ratio


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=128)
    args = ap.parse_args()
    from bench_analyze import make_checkpoint

    torch.set_grad_enabled(False)
    with tempfile.TemporaryDirectory() as d:
        make_checkpoint(Path(d))
        m = bert_core.load_model(d)
    words = [f"w{(i * 7) % 500}" for i in range(args.tokens - 3)]
    text = " ".join(words[: len(words) // 2] + ["[MASK]"] + words[len(words) // 2:])
    enc = m.tokenizer.encode(text, max_length=m.max_length)
    assert len(enc) == args.tokens, len(enc)
    last = m.config.num_hidden_layers - 1
    block = blocks(m)[last]
    with torch.inference_mode():
        x, mask = block_input(m, enc, last)
        t_layer, t_steps, r_steps = paired_times(lambda: block(x, mask, need_probs=True),
                                                 lambda: block_steps(block, x, mask), args.reps)
    t_analyze, t_public, r_public = paired_times(lambda: bert_core.analyze(m, text),
                                                 lambda: bert_core.layer_steps(m, text, last), args.reps)
    print(f"bert-base-sized random model, {args.tokens} tokens, median of {args.reps} alternating rounds, "
          f"{torch.get_num_threads()} threads")
    print(f"one layer as analyze runs it        {t_layer * 1e3:8.1f} ms")
    print(f"block_steps (one layer, all steps)  {t_steps * 1e3:8.1f} ms   ratio {r_steps:.2f}  (target <= 1.5)")
    print(f"analyze (all {last + 1} layers + head)      {t_analyze * 1e3:8.1f} ms")
    print(f"layer_steps(layer={last}) public call    {t_public * 1e3:8.1f} ms   ratio to analyze {r_public:.2f}")


if __name__ == "__main__":
    main()
