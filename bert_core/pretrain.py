"""Pretrain the bundled offline model: `python -m bert_core.pretrain --out bert_core/bundled`.

Seeded and single-process: the same command on the same machine gives the same model. It trains
a WordPiece vocabulary on the built-in corpus's training split, then a small BERT with the same
`Trainer` the Training page uses, saves a checkpoint `load_model()` reads, and writes the
held-out evaluation (`python -m bert_core.evaluate` re-computes it) beside the weights.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from .corpus import load_builtin_corpus, save_tokenizer, split_heldout, train_wordpiece
from .tokenization import WordPieceTokenizer
from .training import TrainConfig, Trainer, evaluate_mlm, new_model

BUNDLED_PRESET = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).parent / "bundled"))
    ap.add_argument("--steps", type=int, default=4000)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--vocab-size", type=int, default=8000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-minutes", type=float, default=80.0, help="stop early past this wall time")
    ap.add_argument("--log-every", type=int, default=50)
    args = ap.parse_args(argv)
    torch.manual_seed(args.seed)
    out = Path(args.out)
    t0 = time.time()

    train_lines, heldout = split_heldout(load_builtin_corpus(), fraction=0.02, seed=0)
    rust_tok = train_wordpiece(train_lines, vocab_size=args.vocab_size)
    save_tokenizer(rust_tok, out, model_max_length=128)
    tok = WordPieceTokenizer.from_dir(out, model_max_length=128)
    print(f"tokenizer: {tok.vocab_size} pieces, {time.time() - t0:.1f}s", flush=True)

    model = new_model(tok, BUNDLED_PRESET, max_position_embeddings=128, nsp=False, seed=args.seed, dropout=0.1)
    cfg = TrainConfig(batch_size=args.batch_size, seq_len=128, lr=args.lr, warmup_steps=max(args.steps // 20, 1),
                      max_steps=args.steps, seed=args.seed)
    trainer = Trainer(model, tok, train_lines, cfg)
    print(f"model: {model.num_parameters():,} parameters; corpus: {len(trainer.data.lines):,} lines, "
          f"{trainer.data.n_tokens:,} tokens", flush=True)
    seen, log = 0, []
    for step in range(args.steps):
        m = trainer.step()
        seen += m.tokens
        if (step + 1) % args.log_every == 0 or step == 0:
            row = dict(step=m.step, loss=round(m.loss, 4), acc=round(m.accuracy, 4), lr=m.lr,
                       tok_s=round(m.tokens_per_sec), minutes=round((time.time() - t0) / 60, 2))
            log.append(row)
            print(json.dumps(row), flush=True)
        if time.time() - t0 > args.max_minutes * 60:
            print(f"stopping early at step {m.step}: past {args.max_minutes} minutes", flush=True)
            break
    trainer.save(out)
    metrics = evaluate_mlm(trainer.model, tok, heldout, seed=0)
    report = {
        "preset": BUNDLED_PRESET, "parameters": model.num_parameters(), "steps": trainer.step_count,
        "planned_steps": args.steps, "batch_size": args.batch_size, "lr": args.lr, "seed": args.seed,
        "tokens_seen": seen, "train_lines": len(train_lines), "heldout_lines": len(heldout),
        "minutes": round((time.time() - t0) / 60, 1), "heldout": metrics, "log": log,
    }
    (out / "training_report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "log"}, indent=2), flush=True)


if __name__ == "__main__":
    main()
