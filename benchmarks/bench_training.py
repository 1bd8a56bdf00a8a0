"""Training steps per second: our `Trainer.step` against a transformers loop, interleaved, same losses.

    python benchmarks/bench_training.py [--steps 30] [--batch-size 128] [--seq-len 128] [--small]

The target row is the bundled model's size as `python -m bert_core.train.pretrain` trains it: 4 layers x 256,
4 heads, FF 1024, a 12,000-piece WordPiece vocabulary trained here on the pretraining corpus, batches of
128 rows up to 128 tokens from the document-mode corpus (WordNet lines, Brown sentence pairs), MLM + NSP.

Same starting weights (ours saved, HF's `BertForPreTraining` loads them), same batches and masking draws
(drawn from a copy of our data pipeline with our generator's stream), and the optimiser transformers'
own `Trainer` uses by default with torch >= 2.8 (fused AdamW; no weight decay on biases and LayerNorms;
our warmup + linear decay schedule). Ours: the whole `Trainer.step()` (it also builds its batch and
draws its masking, which the HF loop gets for free). HF: forward with `labels=` and
`next_sentence_label=` (full-vocabulary MLM loss, HF's default sdpa attention), backward, clipping, step.

The two loops alternate step by step in one process, so a neighbour's load hits both alike; the
ratio of their summed step times is what counts (target, issue 13 item 3: ours / HF >= 1.5).
Both see the same data, so their losses after N steps must agree within dropout noise: printed as
the paired difference over the last steps, and as held-out losses (dropout off) of both final models.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import bert_core  # noqa: E402
from bert_core.model.tokenization import WordPieceTokenizer  # noqa: E402
from bert_core.train.corpus import load_pretraining_corpus, save_tokenizer, train_wordpiece  # noqa: E402
from bert_core.train.pretrain import BUNDLED_PRESET  # noqa: E402
from bert_core.train.trainer import PRESETS, TrainConfig, Trainer, new_model  # noqa: E402


def hf_batches(trainer: Trainer, n: int):
    """The next `n` batches `trainer.step()` will see, drawn from copies of its data and generator."""
    data = copy.copy(trainer.data)
    data.queue = list(trainer.data.queue)
    g = torch.Generator().manual_seed(trainer.cfg.seed)
    g.set_state(trainer.g.get_state())
    c, tok = trainer.cfg, trainer.tok
    out = []
    for _ in range(n):
        ids, types, attn, special, nsp_labels = data.batch(c.batch_size, g, c.nsp)
        d = bert_core.mask_tokens(ids, special, vocab_size=trainer.model.config.vocab_size,
                                  mask_token_id=tok.mask_token_id, generator=g,
                                  mlm_probability=c.mlm_probability, special_ids=tok.all_special_ids)
        torch.randint(2**62, (), generator=g)  # Trainer.step's dropout seed: keeps the streams in step
        labels = nsp_labels if c.nsp and bool((nsp_labels != -100).any()) else None
        out.append((d.input_ids, types, attn, d.labels, labels))
    return out


def hf_loss(model, ids, types, attn, labels, nsp_labels):
    """HF's own loss: MLM + NSP, or MLM alone for a batch without NSP pairs (then HF returns no loss)."""
    kw = {"next_sentence_label": nsp_labels} if nsp_labels is not None else {}
    out = model(input_ids=ids, token_type_ids=types, attention_mask=attn, labels=labels, **kw)
    if out.loss is not None:
        return out.loss
    logits = out.prediction_logits if hasattr(out, "prediction_logits") else out.logits
    return torch.nn.functional.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1))


class HFLoop:
    """transformers' model, stepped as its Trainer would (fused AdamW, decay groups, same schedule)."""

    def __init__(self, model, trainer: Trainer):
        self.model, self.lr_at, self.clip = model, trainer.lr_at, trainer.cfg.grad_clip
        decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
        no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
        self.opt = torch.optim.AdamW(
            [{"params": decay, "weight_decay": trainer.cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
            lr=trainer.cfg.lr, betas=(0.9, 0.98), eps=1e-6, fused=True)
        self.step_count = 0
        model.train()

    def step(self, batch) -> float:
        ids, types, attn, labels, nsp_labels = batch
        for group in self.opt.param_groups:
            group["lr"] = self.lr_at(self.step_count)
        loss = hf_loss(self.model, ids, types, attn, labels, nsp_labels)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        self.opt.step()
        self.step_count += 1
        return loss.item()


@torch.no_grad()
def heldout_loss(hf_model, batches) -> float:
    """Mean MLM (+ NSP) loss of a transformers model over fixed batches, dropout off."""
    hf_model.eval()
    losses = []
    for ids, types, attn, labels, nsp_labels in batches:
        losses.append(hf_loss(hf_model, ids, types, attn, labels, nsp_labels).item())
    hf_model.train()
    return sum(losses) / len(losses)


def compare(name, tok, lines, docs, preset, cfg, steps, heldout):
    """Build both, step them alternately, print speeds and losses."""
    from transformers import BertForMaskedLM, BertForPreTraining

    model = new_model(tok, preset, max_position_embeddings=128, nsp=cfg.nsp, seed=0, dropout=0.1)
    with tempfile.TemporaryDirectory() as d:
        bert_core.save_pretrained(model, tok, d)
        hf = (BertForPreTraining if cfg.nsp else BertForMaskedLM).from_pretrained(d)
    trainer = Trainer(model, tok, lines, cfg, documents=docs)
    batches = hf_batches(trainer, steps + 1)
    loop = HFLoop(hf, trainer)
    ours_t, hf_t, ours_loss, hf_loss = [], [], [], []
    for i in range(steps + 1):  # step 0 of each is a warm-up, not timed
        order = (0, 1) if i % 2 == 0 else (1, 0)  # who goes first alternates too
        for who in order:
            t = time.perf_counter()
            if who == 0:
                loss = trainer.step().loss
            else:
                loss = loop.step(batches[i])
            dt = time.perf_counter() - t
            if i:
                (ours_t if who == 0 else hf_t).append(dt)
            (ours_loss if who == 0 else hf_loss).append(loss)
    ratio = sum(hf_t) / sum(ours_t)
    per_step = statistics.median(h / o for h, o in zip(hf_t, ours_t))
    print(f"{name:<24} {steps / sum(ours_t):>12.3f} {steps / sum(hf_t):>11.3f} {ratio:>7.2f} {per_step:>12.2f}")
    k = min(10, steps)
    diffs = [a - b for a, b in zip(ours_loss[-k:], hf_loss[-k:])]
    se = statistics.stdev(diffs) / k**0.5 if k > 1 else float("nan")
    with tempfile.TemporaryDirectory() as d:
        bert_core.save_pretrained(model, tok, d)
        ours_as_hf = (BertForPreTraining if cfg.nsp else BertForMaskedLM).from_pretrained(d)
    held = hf_batches_from(heldout, tok, cfg)
    print(f"{'':<24} loss, mean of steps {steps - k + 2}-{steps + 1}: ours {statistics.mean(ours_loss[-k:]):.4f}, "
          f"HF {statistics.mean(hf_loss[-k:]):.4f}; paired diff {statistics.mean(diffs):+.4f} +- {se:.4f} (se); "
          f"step 1: ours {ours_loss[0]:.4f}, HF {hf_loss[0]:.4f}")
    print(f"{'':<24} held-out loss after {steps + 1} steps (dropout off, HF forward): "
          f"ours {heldout_loss(ours_as_hf, held):.4f}, HF {heldout_loss(hf, held):.4f}")


def hf_batches_from(heldout, tok, cfg, n: int = 4):
    """Fixed evaluation batches from held-out text, one seeded masking draw."""
    lines, docs = heldout
    probe = Trainer(new_model(tok, PRESETS["tiny (2 layers, 64 wide)"], nsp=cfg.nsp), tok, lines,
                    TrainConfig(batch_size=cfg.batch_size, seq_len=cfg.seq_len, nsp=cfg.nsp, seed=123),
                    documents=docs)
    return hf_batches(probe, n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--vocab-size", type=int, default=12000)
    ap.add_argument("--small", action="store_true", help="also the Training page's small preset, MLM only")
    args = ap.parse_args()

    t0 = time.perf_counter()
    train_lines, train_docs, held_lines, held_docs = load_pretraining_corpus(seed=0)
    docs = [list(d.sentences) for d in train_docs]
    held = (held_lines, [list(d.sentences) for d in held_docs])
    with tempfile.TemporaryDirectory() as d:
        sentences = [s for doc in docs for s in doc]
        save_tokenizer(train_wordpiece(train_lines + sentences, vocab_size=args.vocab_size), d, model_max_length=128)
        tok = WordPieceTokenizer.from_dir(d, model_max_length=128)
    cpu = torch.backends.cpu.get_cpu_capability()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, CPU {cpu}; "
          f"vocabulary {tok.vocab_size}, batch {args.batch_size}, seq <= {args.seq_len}, {args.steps} timed steps "
          f"each, interleaved (setup {time.perf_counter() - t0:.0f}s)")
    print(f"{'config':<24} {'ours step/s':>12} {'HF step/s':>11} {'ratio':>7} {'median ratio':>12}")
    cfg = TrainConfig(batch_size=args.batch_size, seq_len=args.seq_len, seed=0, nsp=True, max_steps=3000,
                      warmup_steps=150)
    compare("bundled 4x256 MLM+NSP", tok, train_lines, docs, BUNDLED_PRESET, cfg, args.steps, held)
    if args.small:
        cfg = TrainConfig(batch_size=32, seq_len=64, seed=0, nsp=False, max_steps=3000, warmup_steps=150)
        compare("small 4x128 MLM (page)", tok, train_lines, None, PRESETS["small (4 layers, 128 wide)"], cfg,
                args.steps, (held_lines, None))


if __name__ == "__main__":
    main()
