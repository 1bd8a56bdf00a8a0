"""Training steps per second: our `Trainer.step` against transformers' BertForMaskedLM.

    python benchmarks/bench_training.py [--steps 20]

Same config, same starting weights (ours saved, HF loads them), same batches and masking draws
(drawn once from our data pipeline and generator), same AdamW hyper-parameters. Ours: the whole
`Trainer.step()` (it also builds its batch and draws its masking). HF: a standard loop, forward
with `labels=` (full-vocabulary MLM loss, HF's default sdpa attention), backward, clipping,
`torch.optim.AdamW`. Target (issue 3): ours / HF >= 1.5 in steps per second.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bert_core  # noqa: E402
from bert_core.corpus import load_builtin_corpus  # noqa: E402
from bert_core.training import PRESETS, TrainConfig, Trainer, new_model  # noqa: E402

CONFIGS = {
    "small preset (4x128)": PRESETS["small (4 layers, 128 wide)"],
    "bundled size (4x256)": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024),
}


def hf_steps(model, batches, lr: float, clip: float) -> float:
    """Seconds per step of a plain transformers MLM loop over `batches`."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-6, weight_decay=0.01)
    model.train()

    def one(b):
        ids, types, attn, labels = b
        loss = model(input_ids=ids, token_type_ids=types, attention_mask=attn, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()

    one(batches[0])  # warm-up
    t = time.perf_counter()
    for b in batches[1:]:
        one(b)
    return (time.perf_counter() - t) / (len(batches) - 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--batch-size", type=int, default=64)
    args = ap.parse_args()
    from transformers import BertForMaskedLM

    tok = bert_core.load_model().tokenizer  # the bundled 8,000-piece vocabulary
    lines = load_builtin_corpus()[:20000]
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, batch {args.batch_size}, "
          f"{args.steps} timed steps each")
    print(f"{'config':<22} {'ours steps/s':>13} {'HF steps/s':>11} {'ratio':>7}")
    for name, preset in CONFIGS.items():
        cfg = TrainConfig(batch_size=args.batch_size, seq_len=64, seed=0, max_steps=10_000)
        model = new_model(tok, preset, max_position_embeddings=128, nsp=False, seed=0, dropout=0.1)
        with tempfile.TemporaryDirectory() as d:
            bert_core.save_pretrained(model, tok, d)
            hf = BertForMaskedLM.from_pretrained(d)
        trainer = Trainer(model, tok, lines, cfg)
        # The HF loop gets the same batches and masking draws, drawn ahead of time (not timed).
        g = torch.Generator().manual_seed(0)
        batches = []
        for _ in range(args.steps + 1):
            ids, types, attn, special, _ = trainer.data.batch(cfg.batch_size, g, False)
            d = bert_core.mask_tokens(ids, special, vocab_size=tok.vocab_size, mask_token_id=tok.mask_token_id,
                                      generator=g, special_ids=tok.all_special_ids)
            batches.append((d.input_ids, types, attn, d.labels))
            torch.randint(2**62, (), generator=g)  # Trainer.step's dropout seed: keeps the streams in step
        trainer.step()  # warm-up
        t = time.perf_counter()
        for _ in range(args.steps):
            trainer.step()
        ours = (time.perf_counter() - t) / args.steps
        theirs = hf_steps(hf, batches, cfg.lr, cfg.grad_clip)
        print(f"{name:<22} {1 / ours:>13.2f} {1 / theirs:>11.2f} {theirs / ours:>7.2f}")


if __name__ == "__main__":
    main()
