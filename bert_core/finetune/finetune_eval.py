"""Fine-tune a model on every built-in task and print a table beside the bag-of-words baseline.

    python -m bert_core.finetune.finetune_eval                    # the bundled model, the page's default settings
                                                                 # (lr: finetuning.default_lr of the model)
    python -m bert_core.finetune.finetune_eval --model bert-base-uncased --freeze --lr 1e-3
    python -m bert_core.finetune.finetune_eval --tasks topic --epochs 1
    python -m bert_core.finetune.finetune_eval --model bundled-minilm --page --compare   # the page's recipe
                          # (finetune_defaults), beside the same network untrained (untrained_copy), same budget
    python -m bert_core.finetune.finetune_eval --model bundled-minilm --page --compare \
        --csv tests/data/everyday_topics.csv
    python -m bert_core.finetune.finetune_eval --model bundled-minilm --sample-efficiency   # head-only, L-BFGS

Same loop as the Fine-tuning page (`FineTuner`), the tasks' fixed train/validation splits, fixed seed.
Time: the fine-tuning steps and evaluations (not loading), in CPU seconds of this process (with
OMP_NUM_THREADS=1: one quiet core's time) and wall-clock. It ends with the block docs/models.md's fine-tuning
section shows (the command, the date, the bundled weights' hash, a Markdown table): paste it over the old one.
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
from ..model.untrained import untrained_copy
from .finetuning import FineTuneConfig, FineTuner, default_lr, finetune_defaults
from .tasks import bow_baseline, builtin_tasks, task_from_csv
from .transfer import sample_efficiency


def _fine_tune(m, task, cfg, label: str) -> tuple[float, float, int, float, float]:
    """(accuracy before, after, steps, CPU seconds, wall seconds) of one run, printing each evaluation.

    CPU seconds (`time.process_time`): what one quiet core takes with OMP_NUM_THREADS=1 (the wall time on a
    shared machine counts the neighbours' work too).
    """
    t0, c0 = time.perf_counter(), time.process_time()
    ft = FineTuner(m, task, cfg)
    before = ft.evals[0].accuracy
    while not ft.done:
        ft.run(steps=ft.eval_every)
        e = ft.evals[-1]
        print(f"[{task.name}, {label}] step {ft.step_count}/{ft.max_steps}  validation loss {e.loss:.3f}  "
              f"accuracy {100 * e.accuracy:.1f}%  ({time.process_time() - c0:.0f} CPU s, "
              f"{time.perf_counter() - t0:.0f} s wall)", flush=True)
    return before, ft.evals[-1].accuracy, ft.max_steps, time.process_time() - c0, time.perf_counter() - t0


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
    ap.add_argument("--page", action="store_true",
                    help="the Fine-tuning page's recipe for this model and task: finetune_defaults (with --freeze: "
                         "its head-only recipe; other settings ignored)")
    ap.add_argument("--compare", action="store_true",
                    help="also fine-tune the same network untrained (untrained_copy, seed 0), same recipe")
    ap.add_argument("--csv", default=None, help="a text,label CSV file as the task (a fifth held out, seed 0)")
    ap.add_argument("--sample-efficiency", action="store_true",
                    help="head-only accuracy against examples per class (pretrained, untrained, bag of words)")
    args = ap.parse_args(argv)
    torch.manual_seed(0)

    tasks = dict(builtin_tasks())
    if args.csv:
        with open(args.csv, encoding="utf-8") as f:
            name = os.path.basename(args.csv)
            tasks = {name: task_from_csv(f.read(), name=name, seed=0)}
    names = args.tasks or list(tasks)
    unknown = [n for n in names if n not in tasks]
    if unknown:
        raise SystemExit(f"unknown task(s) {unknown}; built-in: {list(tasks)}")
    m = load_model(args.model)
    flags = shlex.join(sys.argv[1:] if argv is None else argv)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    weights = ""
    if m.source == "bundled":
        digest = hashlib.sha256((BUNDLED_MODELS[m.name] / "model.safetensors").read_bytes()).hexdigest()[:12]
        weights = f", {m.name} model.safetensors sha256 {digest}..."
    env = "".join(f"{k}={os.environ[k]} " for k in ("OMP_NUM_THREADS",) if os.environ.get(k))
    command = f"`{env}python -m bert_core.finetune.finetune_eval{' ' + flags if flags else ''}`"
    if args.sample_efficiency:
        blocks = []
        for name in names:
            t0 = time.perf_counter()
            def say(msg, f, name=name):
                if f >= 0.8:
                    print(f"[{name}] {msg}", flush=True)
            r = sample_efficiency(m, tasks[name], seed=args.seed, progress=say)
            blocks.append((name, r, time.perf_counter() - t0))
        print(f"\n{command} ({when}, {torch.get_num_threads()} torch threads{weights}): head-only validation "
              "accuracy (L-BFGS on cached features), mean of 5 draws per size\n")
        for name, r, secs in blocks:
            print(f"| {name}: examples per class | " + " | ".join(r.labels) + f" |  ({secs:.0f} s)")
            print("|---" * (len(r.labels) + 1) + "|")
            for learner, accs in r.accuracy.items():
                print(f"| {learner} | " + " | ".join(f"{100 * a:.1f}%" for a in accs) + " |")
            print()
        return
    if args.lr is None:
        args.lr = default_lr(m.config, args.freeze)
    manual = FineTuneConfig(freeze_encoder=args.freeze, lr=args.lr, epochs=args.epochs, batch_size=args.batch,
                            max_len=args.max_len, seed=args.seed)
    print(f"model: {m.name} ({sum(p.numel() for p in m.model.parameters()):,} parameters); torch threads "
          f"{torch.get_num_threads()}, {platform.processor() or platform.machine()}", flush=True)
    scratch = untrained_copy(m, seed=0) if args.compare else None
    rows = []
    for name in names:
        task = tasks[name]
        cfg = finetune_defaults(m, task, freeze_encoder=args.freeze) if args.page else manual
        print(f"[{name}] {cfg}", flush=True)
        base = bow_baseline(task)
        print(f"[{name}] baseline {100 * base['accuracy']:.1f}% (l2 {base['l2']:g}, {base['seconds']:.1f} s)",
              flush=True)
        before, after, steps, seconds, wall = _fine_tune(m, task, cfg, "pretrained")
        scratch_acc = _fine_tune(scratch, task, cfg, "untrained copy")[1] if scratch is not None else None
        rows.append((name, len(task.labels), len(task.train_texts), len(task.valid_texts), base["accuracy"], before,
                     after, scratch_acc, steps, seconds, wall, cfg))
    print()
    print(f"{command} ({when}, {torch.get_num_threads()} torch thread(s), load average {os.getloadavg()[0]:.1f}"
          f"{weights}; time: the pretrained run's CPU seconds, wall in brackets):")
    print()
    print(f"| task | classes | train / validation | bag-of-words baseline | {m.name}: before | {m.name} fine-tuned |"
          + (" same network untrained, same recipe | pretrained minus untrained |" if args.compare else "")
          + " recipe | steps | time |")
    print("|---" * (9 + 2 * args.compare) + "|")
    for name, c, ntr, nva, base, before, after, scratch_acc, steps, secs, wall, cfg in rows:
        what = ("head only" if cfg.freeze_encoder else "all weights but the word embeddings"
                if cfg.freeze_word_embeddings else "all weights")
        recipe = (f"{what}, {cfg.pooling} pooling, lr {cfg.lr:g}, {cfg.epochs} epoch{'s' * (cfg.epochs > 1)}, "
                  f"batch {cfg.batch_size}, max {cfg.max_len} tokens")
        cmp = (f" {100 * scratch_acc:.1f}% | {100 * (after - scratch_acc):+.1f} points |"
               if scratch_acc is not None else "")
        print(f"| {name} | {c} | {ntr:,} / {nva:,} | {100 * base:.1f}% | {100 * before:.1f}% | **{100 * after:.1f}%** |"
              f"{cmp} {recipe} | {steps} | {secs / 60:.1f} min ({wall / 60:.1f}) |")


if __name__ == "__main__":
    main()
