"""Fine-tune per-token heads on the built-in tasks, pretrained beside from scratch and the baseline (docs/models.md).

    python -m bert_core.finetune.token_eval --task pos --examples 3000      # tagging: the page's default run
    python -m bert_core.finetune.token_eval --task qa --examples 1000       # QA: the page's default run
    python -m bert_core.finetune.token_eval --task pos --models bundled --all-weights

For each model: the page's run (`token_finetune_defaults`: tagging, the head fit exactly on a frozen
encoder's cached vectors; QA, every weight but the word embeddings for one epoch), then the same run on
`untrained_copy(model, seed)` (same architecture, fresh weights, same data, settings and seed), beside the
task's baseline (most-frequent tag; the heuristic reader). pos: the Tagging page's loop on the Brown
part-of-speech task, word accuracy. qa: the Question answering page's loop on the WordNet task, exact match
and token F1. Fixed splits (validation never read by the bundled models in pretraining). `--head-only` /
`--all-weights` override the page's choice. It ends with the Markdown table docs/models.md shows (the command, the
date): paste it over the old one.
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
from ..model.untrained import untrained_copy
from .cached_head import CachedHeadReader, CachedHeadTagger, SampleEfficiency
from .qa import builtin_qa_task, first_examples, heuristic_baseline
from .tagging import builtin_pos_task, first_sentences, most_frequent_tag_baseline
from .token_finetuning import QAFineTuner, TokenFineTuner, token_finetune_defaults


def _task(name: str, n: int, n_valid: int | None = None):
    """(task, baseline: {metric: value}, one-line description)."""
    if name == "pos":
        task = first_sentences(builtin_pos_task(), n)
        task = replace(task, valid_words=task.valid_words[:n_valid], valid_tags=task.valid_tags[:n_valid])
        base = most_frequent_tag_baseline(task)
        words = sum(map(len, task.train_words))
        return (task, {"accuracy": base["accuracy"]},
                f"part of speech: {len(task.train_words):,} training sentences ({words:,} words), "
                f"{len(task.valid_words):,} validation ({base['words']:,} words)")
    task = first_examples(builtin_qa_task(), n)
    task = replace(task, valid=task.valid[:n_valid])
    base = heuristic_baseline(task)
    return (task, {"exact match": base["exact_match"], "F1": base["f1"]},
            f"question answering: {len(task.train):,} training questions, {len(task.valid):,} validation")


def _scores(task_name: str, e) -> dict[str, float]:
    return {"accuracy": e.accuracy} if task_name == "pos" else {"exact match": e.accuracy, "F1": e.f1}


def _fmt(scores: dict[str, float]) -> str:
    return " / ".join(f"{100 * v:.1f}%" for v in scores.values())


def _run(name: str, m, task, cfg, task_name: str):
    """One run to the end, printing each evaluation; (scores, steps, seconds, the tuner).

    Seconds: this process's CPU seconds (`time.process_time`), what one quiet core would take with one torch thread
    (wall time on a shared machine counts the neighbours' work too); the wall time is printed beside it.
    """
    frozen = cfg.freeze_encoder
    tuner = (CachedHeadTagger if frozen else TokenFineTuner) if task_name == "pos" else \
        (CachedHeadReader if frozen else QAFineTuner)
    t0, c0 = time.perf_counter(), time.process_time()
    ft = tuner(m, task, cfg)
    while not ft.done:
        ft.run(steps=ft.eval_every if not frozen else 10)
        e = ft.evals[-1]
        print(f"[{name}] step {ft.step_count}/{ft.max_steps}  validation loss {e.loss:.3f}  "
              f"{_fmt(_scores(task_name, e))}  ({time.process_time() - c0:.0f} CPU s, "
              f"{time.perf_counter() - t0:.0f} s wall)", flush=True)
    return _scores(task_name, ft.evals[-1]), ft.step_count, time.process_time() - c0, ft


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", choices=("pos", "qa"), default="pos")
    ap.add_argument("--models", nargs="*", default=["bundled-minilm"])
    ap.add_argument("--examples", type=int, default=3_000, help="training sentences / questions (the first of the "
                                                                    "fixed split)")
    ap.add_argument("--validation", type=int, default=None, help="the first N validation examples (default: all)")
    ap.add_argument("--train", choices=("page", "head", "all"), default="page",
                    help="page: what the page picks (tagging: head only; QA: all weights); head; all")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sample-efficiency", action="store_true",
                    help="head-only runs: also the score against training examples (8, 16, ... all)")
    args = ap.parse_args(argv)

    task, base, what = _task(args.task, args.examples, args.validation)
    print(f"{what}; baseline {_fmt(base)}", flush=True)
    rows, curves = [], []
    for name in args.models:
        m = load_model(name)
        freeze = {"head": True, "all": False}.get(args.train)
        cfg = token_finetune_defaults(m, task, freeze)
        cfg = replace(cfg, seed=args.seed)
        pre, steps, secs, t_pre = _run(name, m, task, cfg, args.task)
        fresh, _, secs_fresh, t_fresh = _run(f"{name}, fresh weights", untrained_copy(m, seed=args.seed), task, cfg,
                                             args.task)
        if args.sample_efficiency and cfg.freeze_encoder:  # head-only runs: their cached vectors serve every n
            curves.append((name, _sample_efficiency(args.task, task, {"pretrained": t_pre, "fresh weights": t_fresh})))
        what_trained = "head only, fit exactly" if cfg.freeze_encoder else (
            f"all weights{' but word embeddings' if cfg.freeze_word_embeddings else ''}, {cfg.epochs} epoch(s), "
            f"batch {cfg.batch_size}, lr {cfg.lr:g}")
        rows.append((name, what_trained, pre, fresh, steps, secs, secs_fresh))
    print()
    flags = shlex.join(sys.argv[1:] if argv is None else argv)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    env = "".join(f"{k}={os.environ[k]} " for k in ("OMP_NUM_THREADS",) if os.environ.get(k))
    metric = " / ".join(base)
    key = list(base)[-1]
    print(f"`{env}python -m bert_core.finetune.token_eval{' ' + flags if flags else ''}` ({what}; seed {args.seed}; "
          f"{when}, {torch.get_num_threads()} torch thread(s), load average {os.getloadavg()[0]:.1f}; times in CPU "
          "seconds of this process):")
    print()
    print(f"| model | trained | pretrained ({metric}) | same network, fresh weights | pretrained minus fresh "
          f"({key}) | baseline | steps | CPU time (pretrained / fresh) |")
    print("|---|---|---|---|---|---|---|---|")
    for name, trained, pre, fresh, steps, secs, secs_fresh in rows:
        print(f"| {name} | {trained} | **{_fmt(pre)}** | {_fmt(fresh)} | {100 * (pre[key] - fresh[key]):+.1f} points | "
              f"{_fmt(base)} | {steps} | {secs / 60:.1f} / {secs_fresh / 60:.1f} min |")
    for name, out in curves:
        sizes = out["pretrained"][0]
        print()
        print(f"Sample efficiency, {name} (validation {key}, head fit exactly on the first n training examples):")
        print()
        print("| n | " + " | ".join(f"{n:,}" for n in sizes) + " |")
        print("|---|" + "---|" * len(sizes))
        for label, (_, vals) in out.items():
            print(f"| {label} | " + " | ".join(f"{100 * v:.1f}%" for v in vals) + " |")


def _sample_efficiency(task_name: str, task, tuners: dict) -> dict:
    """{label: (sizes, scores)} for 8, 16, ... all training examples, the baseline on the same n."""
    if task_name == "pos":
        def base(n):
            return most_frequent_tag_baseline(first_sentences(task, n))["accuracy"]
    else:
        flat = heuristic_baseline(task)["f1"]

        def base(n):
            return flat
    n_all = len(next(iter(tuners.values())).train_rows)
    sizes = [8 * 2**k for k in range(20) if 8 * 2**k < n_all] + [n_all]
    return SampleEfficiency(tuners, sizes, base).run()


if __name__ == "__main__":
    main()
