"""Fine-tune a model on every built-in task and print a table beside the bag-of-words baseline.

    python -m bert_core.train.finetune_eval                       # the bundled model, the page's default settings
                                                            # (lr: finetuning.default_lr of the model)
    python -m bert_core.train.finetune_eval --model bert-base-uncased --freeze --lr 1e-3
    python -m bert_core.train.finetune_eval --tasks topic --epochs 1

Same loop as the Fine-tuning page (`FineTuner`), the tasks' fixed train/validation splits, fixed seed.
Time is wall-clock for the fine-tuning steps and evaluations (not loading), on however many cores
torch uses here. It ends with the block README.md's fine-tuning section shows (the command, the date,
the bundled weights' hash, a Markdown table): paste it over the old one.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import os
import platform
import shlex
import sys
import time

import torch

from ..model.loading import BUNDLED_MODELS, load_model
from .finetuning import FineTuneConfig, FineTuner, default_lr
from .tasks import bow_baseline, builtin_tasks


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="bundled",
                    help="bundled (the tiny one), bundled-minilm, a local folder or a hub id")
    ap.add_argument("--tasks", nargs="*", default=None, help="built-in task names (default: all)")
    d = FineTuneConfig()
    ap.add_argument("--lr", type=float, default=None,
                    help="peak learning rate (default: the page's default for this model, finetuning.default_lr)")
    ap.add_argument("--epochs", type=int, default=d.epochs)
    ap.add_argument("--batch", type=int, default=d.batch_size)
    ap.add_argument("--max-len", type=int, default=d.max_len)
    ap.add_argument("--freeze", action="store_true", help="train the head only")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    tasks = builtin_tasks()
    names = args.tasks or list(tasks)
    unknown = [n for n in names if n not in tasks]
    if unknown:
        raise SystemExit(f"unknown task(s) {unknown}; built-in: {list(tasks)}")
    m = load_model(args.model)
    if args.lr is None:
        args.lr = default_lr(m.config, args.freeze)
    cfg = FineTuneConfig(freeze_encoder=args.freeze, lr=args.lr, epochs=args.epochs, batch_size=args.batch,
                         max_len=args.max_len, seed=args.seed)
    what = "head only" if args.freeze else "all weights"
    print(f"model: {m.name} ({sum(p.numel() for p in m.model.parameters()):,} parameters); {what}, lr {args.lr:g}, "
          f"{args.epochs} epochs, batch {args.batch}, max {args.max_len} tokens, seed {args.seed}; "
          f"torch threads {torch.get_num_threads()}, {platform.processor() or platform.machine()}", flush=True)
    rows = []
    for name in names:
        task = tasks[name]
        base = bow_baseline(task)
        print(f"[{name}] baseline {100 * base['accuracy']:.1f}% (l2 {base['l2']:g}, {base['seconds']:.1f} s)",
              flush=True)
        t0 = time.perf_counter()
        ft = FineTuner(m, task, cfg)
        before = ft.evals[0].accuracy
        while not ft.done:
            ft.run(steps=ft.eval_every)
            e = ft.evals[-1]
            print(f"[{name}] step {ft.step_count}/{ft.max_steps}  validation loss {e.loss:.3f}  "
                  f"accuracy {100 * e.accuracy:.1f}%  ({time.perf_counter() - t0:.0f} s)", flush=True)
        seconds = time.perf_counter() - t0
        rows.append((name, len(task.labels), len(task.train_texts), len(task.valid_texts), base["accuracy"], before,
                     ft.evals[-1].accuracy, ft.max_steps, seconds))
    print()
    flags = shlex.join(sys.argv[1:] if argv is None else argv)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    weights = ""
    if m.source == "bundled":
        digest = hashlib.sha256((BUNDLED_MODELS[m.name] / "model.safetensors").read_bytes()).hexdigest()[:12]
        weights = f", {m.name} model.safetensors sha256 {digest}..."
    env = "".join(f"{k}={os.environ[k]} " for k in ("OMP_NUM_THREADS",) if os.environ.get(k))
    print(f"`{env}python -m bert_core.train.finetune_eval{' ' + flags if flags else ''}` ({what}, lr {args.lr:g}, "
          f"{args.epochs} epochs, batch {args.batch}, seed {args.seed}; {when}, {torch.get_num_threads()} torch "
          f"threads{weights}):")
    print()
    print(f"| task | classes | train / validation | bag-of-words baseline | {m.name}: before | "
          f"{m.name} fine-tuned ({what}, lr {args.lr:g}, {args.epochs} epochs) | steps | time |")
    print("|---|---|---|---|---|---|---|---|")
    for name, c, ntr, nva, base, before, after, steps, secs in rows:
        print(f"| {name} | {c} | {ntr:,} / {nva:,} | {100 * base:.1f}% | {100 * before:.1f}% | **{100 * after:.1f}%** "
              f"| {steps} | {secs / 60:.1f} min |")


if __name__ == "__main__":
    main()
