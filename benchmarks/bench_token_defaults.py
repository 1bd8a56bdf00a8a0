"""The Tagging and QA pages' default runs, timed against transformers doing the same work, interleaved.

    OMP_NUM_THREADS=1 python benchmarks/bench_token_defaults.py [--sentences 256] [--qa-steps 4] [--reps 2]

Tagging (head only, fit exactly): ours is `CachedHeadTagger` reading the first N Brown sentences and the first
N/4 validation sentences with the frozen encoder (its feature steps), then its L-BFGS fit; the peer is
transformers' BertModel (eager attention) running the same length-sorted batches under no_grad: the encoder
pass, which is most of the run. QA (all weights but the word embeddings): ours is `QAFineTuner.step()`;
the peer is transformers' BertForQuestionAnswering on the same batches (forward with start/end positions,
backward, clipping, AdamW). Both loops alternate in one process, so a neighbour's load hits both alike:
the ratio is what counts. The full default run's time is then ours per example x the page's examples.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bert_core  # noqa: E402
from bert_core.finetune.cached_head import CachedHeadTagger  # noqa: E402
from bert_core.finetune.finetuning import _pad  # noqa: E402
from bert_core.finetune.qa import builtin_qa_task, first_examples  # noqa: E402
from bert_core.finetune.tagging import builtin_pos_task, first_sentences  # noqa: E402
from bert_core.finetune.token_finetuning import QAFineTuner, _length_chunks, token_finetune_defaults  # noqa: E402

MINILM = Path(bert_core.__file__).resolve().parent / "bundled_minilm"


def tagging(n: int, reps: int) -> None:
    from transformers import BertModel

    m = bert_core.load_model("bundled-minilm")
    full = builtin_pos_task()
    task = first_sentences(full, n)
    task = replace(task, valid_words=full.valid_words[: n // 4], valid_tags=full.valid_tags[: n // 4])
    hf = BertModel.from_pretrained(str(MINILM), attn_implementation="eager", add_pooling_layer=False).eval()
    ours_feat, ours_fit, peer = 0.0, 0.0, 0.0
    for _ in range(reps):
        t = CachedHeadTagger(m, task, token_finetune_defaults(m, task))
        t0 = time.perf_counter()
        while t.fit is None:
            t.step()
        t1 = time.perf_counter()
        while not t.done:
            t.step()
        ours_feat += t1 - t0
        ours_fit += time.perf_counter() - t1
        t0 = time.perf_counter()
        with torch.no_grad():
            for rows in (t.train_rows, t.valid_rows):
                for chunk in _length_chunks(rows, 32):
                    ids, mask = _pad([rows[j] for j in chunk], 0)
                    hf(input_ids=ids, attention_mask=mask)
        peer += time.perf_counter() - t0
    per = ours_feat / reps / (n + n // 4)
    print(f"tagging, {n} + {n // 4} sentences, {reps} reps: ours reading {ours_feat / reps:.1f} s, fit "
          f"{ours_fit / reps:.1f} s; transformers' encoder on the same batches {peer / reps:.1f} s; "
          f"ours / transformers = {ours_feat / peer:.2f}; validation accuracy {t.evals[-1].accuracy:.3f}")
    print(f"  the page's default (3,000 + 1,106 sentences): about {per * 4106 / 60:.1f} min reading + the fit, "
          "at this machine's load")


def qa(steps: int, reps: int) -> None:
    from transformers import BertForQuestionAnswering

    m = bert_core.load_model("bundled-minilm")
    task = first_examples(builtin_qa_task(), 1000)
    cfg = replace(token_finetune_defaults(m, task), seed=0)
    ours, peer = 0.0, 0.0
    for _ in range(reps):
        t = QAFineTuner(m, replace(task, valid=task.valid[:8]), cfg)
        hf = BertForQuestionAnswering.from_pretrained(str(MINILM), attn_implementation="eager")
        hf.bert.embeddings.word_embeddings.weight.requires_grad_(False)
        hf.train()
        opt = torch.optim.AdamW([p for p in hf.parameters() if p.requires_grad], lr=cfg.lr, weight_decay=0.01)
        order = torch.randperm(len(t.train_rows), generator=torch.Generator().manual_seed(0))
        for s in range(steps):
            t0 = time.perf_counter()
            t.step()
            ours += time.perf_counter() - t0
            idx = order[s * cfg.batch_size:(s + 1) * cfg.batch_size].tolist()
            ids, mask = _pad([t.train_rows[j] for j in idx], 0)
            types = t._segments(ids)
            t0 = time.perf_counter()
            out = hf(input_ids=ids, attention_mask=mask, token_type_ids=types,
                     start_positions=t.train_y[idx, 0], end_positions=t.train_y[idx, 1])
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(hf.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
            peer += time.perf_counter() - t0
    n = steps * reps
    print(f"QA all weights, batch {cfg.batch_size}, {n} steps: ours {ours / n:.2f} s/step, transformers "
          f"{peer / n:.2f} s/step, ours / transformers = {ours / peer:.2f}")
    print(f"  the page's default ({t.max_steps} steps): about {ours / n * t.max_steps / 60:.1f} min + evaluations, "
          "at this machine's load")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentences", type=int, default=256)
    ap.add_argument("--qa-steps", type=int, default=4)
    ap.add_argument("--reps", type=int, default=2)
    args = ap.parse_args()
    print(f"{torch.get_num_threads()} torch thread(s)")
    tagging(args.sentences, args.reps)
    qa(args.qa_steps, args.reps)


if __name__ == "__main__":
    main()
