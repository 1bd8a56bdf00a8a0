"""Fine-tune per-token heads on the built-in tasks and print them beside their baselines (README's numbers).

    python -m bert_core.train.token_eval --task pos            # tagging: bundled and bundled-minilm
    python -m bert_core.train.token_eval --task qa --examples 5000
    python -m bert_core.train.token_eval --task pos --models bundled --examples 3000

pos: the Tagging page's loop (`TokenFineTuner`, labels on each word's first piece) on the Brown
part-of-speech task, word accuracy beside the most-frequent-tag baseline. qa: the Question answering
page's loop (`QAFineTuner`) on the WordNet task, exact match and token F1 beside the heuristic baseline.
Fixed splits (validation never read by the bundled models in pretraining), fixed seed, the pages' default
learning rate for each model (`finetuning.default_lr`). A model whose encoder is over the server's limit
for training every weight (`trainer.MAX_TRAIN_PARAMS`: bundled-minilm) trains its head only, as the pages
would. It ends with the Markdown table README.md shows (the command, the date): paste it over the old one.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shlex
import sys
import time
from dataclasses import replace

import torch

from ..model.loading import load_model
from .finetuning import FineTuneConfig, default_lr
from .qa import builtin_qa_task, first_examples, heuristic_baseline
from .tagging import builtin_pos_task, first_sentences, most_frequent_tag_baseline
from .token_finetuning import QA_MAX_LEN, TAGGING_MAX_LEN, QAFineTuner, TokenFineTuner
from .trainer import MAX_TRAIN_PARAMS


def _task(name: str, n: int, n_valid: int | None = None):
    """(task, tuner class, max_len, baseline: {metric: value}, one-line description)."""
    if name == "pos":
        task = first_sentences(builtin_pos_task(), n)
        task = replace(task, valid_words=task.valid_words[:n_valid], valid_tags=task.valid_tags[:n_valid])
        base = most_frequent_tag_baseline(task)
        words = sum(map(len, task.train_words))
        return (task, TokenFineTuner, TAGGING_MAX_LEN, {"accuracy": base["accuracy"]},
                f"part of speech: {len(task.train_words):,} training sentences ({words:,} words), "
                f"{len(task.valid_words):,} validation ({base['words']:,} words)")
    task = first_examples(builtin_qa_task(), n)
    task = replace(task, valid=task.valid[:n_valid])
    base = heuristic_baseline(task)
    return (task, QAFineTuner, QA_MAX_LEN, {"exact match": base["exact_match"], "F1": base["f1"]},
            f"question answering: {len(task.train):,} training questions, {len(task.valid):,} validation")


def _scores(task_name: str, e) -> dict[str, float]:
    return {"accuracy": e.accuracy} if task_name == "pos" else {"exact match": e.accuracy, "F1": e.f1}


def _fmt(scores: dict[str, float]) -> str:
    return " / ".join(f"{100 * v:.1f}%" for v in scores.values())


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", choices=("pos", "qa"), default="pos")
    ap.add_argument("--models", nargs="*", default=["bundled", "bundled-minilm"])
    ap.add_argument("--examples", type=int, default=12_000, help="training sentences / questions (the first of the "
                                                                    "fixed split)")
    ap.add_argument("--validation", type=int, default=None, help="the first N validation examples (default: all)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    task, tuner, max_len, base, what = _task(args.task, args.examples, args.validation)
    print(f"{what}; baseline {_fmt(base)}", flush=True)
    rows = []
    for name in args.models:
        m = load_model(name)
        freeze = sum(p.numel() for p in m.model.bert.parameters()) > MAX_TRAIN_PARAMS
        lr = default_lr(m.config, freeze)
        cfg = FineTuneConfig(freeze_encoder=freeze, lr=lr, epochs=args.epochs, batch_size=args.batch,
                             max_len=max_len, seed=args.seed, evals_per_epoch=2)
        t0 = time.perf_counter()
        ft = tuner(m, task, cfg)
        while not ft.done:
            ft.run(steps=ft.eval_every)
            e = ft.evals[-1]
            print(f"[{name}] step {ft.step_count}/{ft.max_steps}  validation loss {e.loss:.3f}  "
                  f"{_fmt(_scores(args.task, e))}  ({time.perf_counter() - t0:.0f} s)", flush=True)
        rows.append((name, "head only" if freeze else "all weights", lr, _scores(args.task, ft.evals[0]),
                     _scores(args.task, ft.evals[-1]), ft.max_steps, time.perf_counter() - t0))
    print()
    flags = shlex.join(sys.argv[1:] if argv is None else argv)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    env = "".join(f"{k}={os.environ[k]} " for k in ("OMP_NUM_THREADS",) if os.environ.get(k))
    metric = " / ".join(base)
    print(f"`{env}python -m bert_core.train.token_eval{' ' + flags if flags else ''}` ({what}; {args.epochs} "
          f"epoch(s), batch {args.batch}, seed {args.seed}; {when}, {torch.get_num_threads()} torch threads):")
    print()
    print(f"| model | trained | lr | baseline ({metric}) | new head, before | fine-tuned | steps | time |")
    print("|---|---|---|---|---|---|---|---|")
    for name, trained, lr, before, after, steps, secs in rows:
        print(f"| {name} | {trained} | {lr:g} | {_fmt(base)} | {_fmt(before)} | **{_fmt(after)}** | {steps} | "
              f"{secs / 60:.1f} min |")


if __name__ == "__main__":
    main()
