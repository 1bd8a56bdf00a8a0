"""Fine-tune a tagger on the built-in part-of-speech task and print it beside the most-frequent-tag baseline.

    python -m bert_core.train.token_eval                                  # bundled and bundled-minilm
    python -m bert_core.train.token_eval --models bundled --sentences 3000 --epochs 1

Same loop as the Tagging page (`TokenFineTuner`, labels on each word's first piece), the task's fixed
split (validation: 1,106 Brown sentences both bundled models never read), fixed seed, the page's
default learning rate for each model (`finetuning.default_lr`). Accuracy counts validation words.
It ends with the Markdown table README.md shows (the command, the date): paste it over the old one.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import sys
import time

import torch

from ..model.loading import load_model
from .finetuning import FineTuneConfig, default_lr
from .tagging import builtin_pos_task, first_sentences, most_frequent_tag_baseline
from .token_finetuning import TAGGING_MAX_LEN, TokenFineTuner


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", default=["bundled", "bundled-minilm"])
    ap.add_argument("--sentences", type=int, default=12_000, help="training sentences (the first of the fixed split)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=None, help="default: finetuning.default_lr of each model")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    task = first_sentences(builtin_pos_task(), args.sentences)
    base = most_frequent_tag_baseline(task)
    n_train = sum(map(len, task.train_words))
    print(f"part of speech: {len(task.train_words):,} training sentences ({n_train:,} words), "
          f"{len(task.valid_words):,} validation ({base['words']:,} words); baseline {100 * base['accuracy']:.1f}% "
          f"({100 * base['unseen']:.1f}% of validation words unseen in training)", flush=True)
    rows = []
    for name in args.models:
        m = load_model(name)
        lr = args.lr or default_lr(m.config)
        cfg = FineTuneConfig(lr=lr, epochs=args.epochs, batch_size=args.batch, max_len=TAGGING_MAX_LEN,
                             seed=args.seed, evals_per_epoch=2)
        t0 = time.perf_counter()
        ft = TokenFineTuner(m, task, cfg)
        while not ft.done:
            ft.run(steps=ft.eval_every)
            e = ft.evals[-1]
            print(f"[{name}] step {ft.step_count}/{ft.max_steps}  validation loss {e.loss:.3f}  "
                  f"accuracy {100 * e.accuracy:.2f}%  ({time.perf_counter() - t0:.0f} s)", flush=True)
        rows.append((name, lr, ft.evals[0].accuracy, ft.evals[-1].accuracy, ft.max_steps, time.perf_counter() - t0))
    print()
    flags = shlex.join(sys.argv[1:] if argv is None else argv)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    env = "".join(f"{k}={os.environ[k]} " for k in ("OMP_NUM_THREADS",) if os.environ.get(k))
    print(f"`{env}python -m bert_core.train.token_eval{' ' + flags if flags else ''}` (all weights, {args.epochs} "
          f"epoch(s), batch {args.batch}, seed {args.seed}, {len(task.train_words):,} training sentences; {when}, "
          f"{torch.get_num_threads()} torch threads):")
    print()
    print("| model | lr | most-frequent-tag baseline | before (new head) | fine-tuned | steps | time |")
    print("|---|---|---|---|---|---|---|")
    for name, lr, before, after, steps, secs in rows:
        print(f"| {name} | {lr:g} | {100 * base['accuracy']:.1f}% | {100 * before:.1f}% | **{100 * after:.1f}%** "
              f"| {steps} | {secs / 60:.1f} min |")


if __name__ == "__main__":
    main()
