"""What fine-tuning the bundled MiniLM's weights holds: the ledger's charge against what the process really holds.

    OMP_NUM_THREADS=1 python benchmarks/finetune_memory.py            # the page's recipe on WordNet topic
    OMP_NUM_THREADS=1 python benchmarks/finetune_memory.py --all-weights   # the word-embedding matrix trains too

One process, like one server: the shared MiniLM, then one run (charged bytes; tensors it holds; what autograd
saved in its last step, counted by saved-tensor hooks; RSS), then runs set up one after another until the ledger
makes one wait (the page's queue): how many train at once inside the budget, and the process's RSS with them.
Each run takes 3 training steps. RSS is read from /proc/self/status (VmRSS, and VmHWM for the peak).
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
from bert_core.runs.finetune_run import FineTuneSession, finetune_bytes  # noqa: E402
from bert_core.runs.memory import SessionMemory, budget_bytes, format_mb, tensor_bytes  # noqa: E402
from bert_core.runs.slots import SlotManager  # noqa: E402
from bert_core.runs.status import WAITING  # noqa: E402
from bert_core.train.finetuning import finetune_defaults  # noqa: E402
from bert_core.train.tasks import builtin_tasks  # noqa: E402


def rss(field: str = "VmRSS") -> int:
    """This process's resident memory (or its peak, VmHWM), bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def saved_bytes_of_a_step(ft) -> int:
    """Bytes autograd keeps for the backward pass of one of the run's batches (its longest), by saved-tensor hooks."""
    from bert_core.train.finetuning import _pad

    rows = sorted(ft.train_rows, key=len)[-ft.cfg.batch_size:]
    ids, mask = _pad(rows, ft.tok.pad_token_id)
    seen = {p.untyped_storage().data_ptr() for p in ft.model.parameters()}
    total = 0

    def pack(t):
        nonlocal total
        if t.untyped_storage().data_ptr() not in seen:
            seen.add(t.untyped_storage().data_ptr())
            total += t.untyped_storage().nbytes()
        return t

    ft.model.train()
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            ft._logits(ids, mask)
    finally:
        ft.model.eval()
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--all-weights", action="store_true", help="train the word-embedding matrix too")
    ap.add_argument("--task", default="topic")
    ap.add_argument("--max-runs", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
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
