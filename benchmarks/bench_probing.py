"""How long the Probing and Neighbours pages' long work takes: probe fitting and index building.

    python benchmarks/bench_probing.py [--quick]

On the default model (bundled MiniLM) and a bert-base-sized model with random weights: the part-of-speech probes
(100 and 300 training sentences: two forward passes with every hidden state, then (L+1) L-BFGS fits for each of
pretrained, control task, random weights), the word-sense probes, and the neighbour index at the page's sizes.
The peer is one plain forward pass (last layer only) over the same sentences: the ratio says what reading every
layer and fitting costs on top of reading the sentences at all. One torch thread (the machine is shared).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def plain_pass(m, sentences) -> float:
    """Seconds of one forward pass (last hidden state only) over the sentences, batches of 32."""
    import torch

    from bert_core.train.batches import pad_rows

    tok = m.tokenizer
    rows = [[tok.cls_token_id, *ids[:126], tok.sep_token_id]
            for ids in tok.encode_batch_plain([" ".join(s) for s in sentences])]
    rows.sort(key=len)
    t = time.perf_counter()
    with torch.no_grad():
        for b in range(0, len(rows), 32):
            ids, attn = pad_rows(rows[b:b + 32], tok.pad_token_id or 0)
            m.model.bert(ids, None, attn)
    return time.perf_counter() - t


def bench(m, quick: bool) -> None:
    from bert_core.finetune.tagging import UNIVERSAL_TAGS, builtin_pos_task
    from bert_core.inspect.neighbours import build_index, sentences_within
    from bert_core.probe import probing

    print(f"== {m.name}: {m.config.num_hidden_layers} layers x {m.config.hidden_size}")
    for name, n in ([(probing.POS, 100)] if quick else [(probing.POS, 100), (probing.POS, 300), (probing.SENSE, 0)]):
        task = probing.probe_task(name, n or 300)
        peer = plain_pass(m, task.sentences)
        t = time.perf_counter()
        r = probing.probe_layers(m, name, n or 300, store=False)
        dt = time.perf_counter() - t
        print(f"probe {name} ({n or 'all'} sentences): {dt:.1f} s = {dt / peer:.0f} x one plain pass ({peer:.1f} s); "
              + ", ".join(f"{k} {v:.1f} s" for k, v in r.seconds.items())
              + f"; best pretrained {r.accuracy['pretrained'].max():.1%}, "
              + f"random {r.accuracy['random weights'].max():.1%}")
    pos = builtin_pos_task()
    for n in (200, 500):
        n = min(n, sentences_within(m, pos.valid_words))
        peer = plain_pass(m, pos.valid_words[:n])
        t = time.perf_counter()
        index = build_index(m, pos.valid_words[:n], pos.valid_tags[:n], UNIVERSAL_TAGS, store=False)
        dt = time.perf_counter() - t
        print(f"index of {n} sentences ({index.n_words:,} words, {index.nbytes / 2**20:.1f} MB): {dt:.1f} s = "
              f"{dt / peer:.1f} x one plain pass ({peer:.1f} s)")


def main() -> None:
    import torch
    from bench_analyze import make_checkpoint

    import bert_core

    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="only the 100-sentence part-of-speech probe and the index")
    args = ap.parse_args()
    torch.set_num_threads(1)
    bench(bert_core.load_model(), args.quick)
    with tempfile.TemporaryDirectory() as d:
        make_checkpoint(Path(d))
        bench(bert_core.load_model(d), args.quick)


if __name__ == "__main__":
    main()
