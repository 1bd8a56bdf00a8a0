"""What fine-tuning the bundled MiniLM's weights holds: the ledger's charge against what the process really holds.

    OMP_NUM_THREADS=1 python benchmarks/finetune_memory.py            # the page's recipe on WordNet topic
    OMP_NUM_THREADS=1 python benchmarks/finetune_memory.py --all-weights   # the word-embedding matrix trains too

One process, like one server: the shared MiniLM, then one run (charged bytes; tensors it holds; what autograd
saved in its last step, counted by saved-tensor hooks; RSS), then runs set up one after another until the ledger
makes one wait (the page's queue): how many train at once inside the budget, and the process's RSS with them.
Each run takes 3 training steps. RSS is read from /proc/self/status (VmRSS, and VmHWM for the peak).

    OMP_NUM_THREADS=1 python benchmarks/finetune_memory.py --worst-case   # a bert-base-sized server, full

The worst case of one server process on Streamlit Community Cloud (~2.7 GB): the default MiniLM and a bert-base-sized
random checkpoint (transformers, safetensors, in a temporary folder) both loaded, the analysis cache
(`ui.cache.ByteLRU`, BERT_EXPLORER_CACHE_MB) filled with bert-base analyses of 512-token texts, then users' runs
charged to the ledger (BERT_EXPLORER_SESSION_MB) until it refuses or queues one: the bert-base page recipe (refused
when larger than the budget), a bert-base head-only run with its from-scratch copy, MiniLM page runs; the runs the
slot cap (BERT_EXPLORER_MAX_TRAINING) lets train at once take their steps together, in threads, as the server's
sessions do. Prints the RSS and its peak after each stage.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bert_core  # noqa: E402
from bert_core.finetune.budget import saved_tensor_bytes  # noqa: E402
from bert_core.finetune.finetuning import finetune_defaults  # noqa: E402
from bert_core.finetune.tasks import builtin_tasks  # noqa: E402
from bert_core.runs.finetune_run import FineTuneSession, finetune_bytes  # noqa: E402
from bert_core.runs.memory import format_mb, tensor_bytes  # noqa: E402
from bert_core.runs.status import WAITING  # noqa: E402
from server.ledger import SessionMemory, budget_bytes  # noqa: E402
from server.slots import SlotManager  # noqa: E402


def rss(field: str = "VmRSS") -> int:
    """This process's resident memory (or its peak, VmHWM), bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def saved_bytes_of_a_step(ft) -> int:
    """Bytes autograd keeps for the backward pass of one of the run's batches (its longest), by saved-tensor hooks."""
    from bert_core.finetune.finetuning import _pad

    rows = sorted(ft.train_rows, key=len)[-ft.cfg.batch_size:]
    ids, mask = _pad(rows, ft.tok.pad_token_id)
    ft.model.train()
    try:
        return saved_tensor_bytes(lambda: ft._logits(ids, mask), ft.model.parameters())
    finally:
        ft.model.eval()


def worst_case(task_name: str, max_runs: int, steps: int = 3) -> None:
    """A full server: both models, the cache full, the ledger full of runs, the slot cap's runs stepping at once."""
    import subprocess
    import tempfile
    import threading

    from server.slots import MAX_CONCURRENT_TRAINING
    from ui.cache import ByteLRU
    from ui.cache import budget_bytes as cache_budget

    def say(what: str) -> None:
        gc.collect()
        print(f"{what}: RSS {format_mb(rss())}, peak {format_mb(rss('VmHWM'))}", flush=True)

    import pandas  # noqa: F401  (what the server imports besides: the measure starts from its footprint)
    import plotly.graph_objects  # noqa: F401
    import streamlit  # noqa: F401

    say("imports (torch, transformers, streamlit, plotly, pandas, bert_core)")
    minilm = bert_core.load_model()
    with tempfile.TemporaryDirectory() as d:  # written by another process: its transformers model is not ours
        subprocess.run([sys.executable, str(Path(__file__).parent / "memory.py"), "--make-checkpoint", d], check=True)
        big = bert_core.load_model(d)
    for m in (minilm, big):
        for p in m.model.parameters():
            p.requires_grad_(False)  # as the app's shared models
    say(f"{minilm.name} and a bert-base-sized model ({sum(p.numel() for p in big.model.parameters()):,} parameters) "
        "loaded")
    cache = ByteLRU(cache_budget())
    for i in range(20):  # new texts until the first eviction: the cache is then as full as these entries fill it
        text = " ".join(f"w{(7 * i + j) % 30_000}" for j in range(510))
        cache.get_or_compute(("analyze", i), lambda text=text: bert_core.analyze(big, text))
        if len(cache) <= i:
            break
    say(f"the analysis cache holds {format_mb(cache.total)} of {format_mb(cache.max_bytes)} ({len(cache)} bert-base "
        "analyses of 512 tokens)")
    ledger = SessionMemory(budget_bytes())
    task = builtin_tasks()[task_name]
    runs: list[FineTuneSession] = []

    def new_run(base, cfg, what: str, untrained_seed: int | None = None, task=task) -> bool:
        s = FineTuneSession(SlotManager(capacity=max_runs), memory=ledger)
        try:
            s.setup(base, task, cfg, untrained_seed=untrained_seed)
        except bert_core.BertCoreError as e:
            print(f"{what}: refused: {e}")
            return False
        if s.state == WAITING:
            print(f"{what}: waits in line for memory ({format_mb(ledger.used())} of {format_mb(ledger.max_bytes)} "
                  f"held by {len(runs)} runs)")
            s.reset()
            return False
        runs.append(s)
        say(f"{what}: charged {format_mb(ledger.held(s.mem_key))}, ledger {format_mb(ledger.used())}")
        return True

    new_run(big, finetune_defaults(big, task), "bert-base, the page's recipe")
    # Head only on bert-base: what it holds hardly depends on the task's size (one vector a text), and reading the
    # whole task with bert-base takes minutes: 128 + 64 texts, every k-th (the splits are sorted by class).
    tr, va = slice(None, None, len(task.train_texts) // 128), slice(None, None, len(task.valid_texts) // 64)
    few = dataclasses.replace(task, train_texts=task.train_texts[tr], train_labels=task.train_labels[tr],
                              valid_texts=task.valid_texts[va], valid_labels=task.valid_labels[va])
    head = finetune_defaults(big, few, freeze_encoder=True)
    new_run(big, head, "bert-base, head only", task=few)
    new_run(big, head, "bert-base, head only, from scratch (its untrained copy)", untrained_seed=0, task=few)
    while len(runs) < max_runs and new_run(minilm, finetune_defaults(minilm, task), f"{minilm.name}, the page's "
                                                                                       "recipe"):
        pass
    live = runs[-MAX_CONCURRENT_TRAINING:]  # the slot cap: these step at the same time, the others are paused
    threads = [threading.Thread(target=s.run_steps, args=(steps,)) for s in live]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    say(f"{len(runs)} runs held ({format_mb(ledger.used())} charged of {format_mb(ledger.max_bytes)}), "
        f"{len(live)} took {steps} steps at once (BERT_EXPLORER_MAX_TRAINING={MAX_CONCURRENT_TRAINING})")
    print(f"worst case: peak RSS {format_mb(rss('VmHWM'))} against Streamlit Community Cloud's ~2.7 GB (a Streamlit "
          "server adds ~0.1-0.2 GB of its own: python -m streamlit's imports and sessions)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all-weights", action="store_true", help="train the word-embedding matrix too")
    ap.add_argument("--task", default="topic")
    ap.add_argument("--max-runs", type=int, default=5)
    ap.add_argument("--worst-case", action="store_true", help="a bert-base-sized server, cache and ledger full")
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    if args.worst_case:
        worst_case(args.task, args.max_runs)
        return
    m = bert_core.load_model()
    for p in m.model.parameters():
        p.requires_grad_(False)  # as the app's shared model
    task = builtin_tasks()[args.task]
    cfg = finetune_defaults(m, task)
    if args.all_weights:
        cfg = dataclasses.replace(cfg, freeze_word_embeddings=False)
    gc.collect()
    r0 = rss()
    ledger = SessionMemory(budget_bytes())
    print(f"model {m.name}; task {task.name}; {cfg}")
    print(f"ledger budget {format_mb(ledger.max_bytes)} (BERT_EXPLORER_SESSION_MB); RSS with the shared model "
          f"{format_mb(r0)}")
    charge = finetune_bytes(m, task, cfg)
    runs, t0 = [], time.perf_counter()
    for i in range(args.max_runs):
        s = FineTuneSession(SlotManager(capacity=args.max_runs), memory=ledger)
        s.setup(m, task, cfg)
        if s.state == WAITING:
            print(f"run {i + 1}: waits in line for memory (position {s.memory_position()}): "
                  f"{format_mb(ledger.used())} of {format_mb(ledger.max_bytes)} held by {len(runs)} runs")
            s.reset()
            break
        s.run_steps(3)
        runs.append(s)
        ft = s.trainer
        held = tensor_bytes([p.detach() for p in ft.trainable]) * 2 + tensor_bytes(ft.opt)  # weights, grads, Adam
        saved = saved_bytes_of_a_step(ft)
        gc.collect()
        now = format_mb(ledger.held(s.mem_key))
        print(f"run {i + 1}: charged {format_mb(charge)} before it was built, holds {now} "
              f"now; its trained weights + gradients + AdamW {format_mb(held)}, a step's saved activations (longest "
              f"batch) {format_mb(saved)}; RSS {format_mb(rss())} (+{format_mb(rss() - r0)} over the shared model), "
              f"peak {format_mb(rss('VmHWM'))}; {time.perf_counter() - t0:.0f} s")
    print(f"{len(runs)} runs at once inside the ledger's {format_mb(ledger.max_bytes)}; process RSS "
          f"{format_mb(rss())}, peak {format_mb(rss('VmHWM'))}")


if __name__ == "__main__":
    main()
