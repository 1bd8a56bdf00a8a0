"""Fine-tuning BERT as a sentence classifier: the loop and what it shows (tasks and baseline: `tasks.py`).

The loop (`FineTuner`) knows nothing of the UI: the Fine-tuning page and `python -m
bert_core.finetune.finetune_eval` both call `step()`; it evaluates on the validation set on its own schedule.
It uses the pretraining loop's pieces (`training.adamw`, `training.warmup_linear_lr`, gradient
clipping) with fine-tuning's numbers: a small learning rate (`default_lr`: 3e-5 for bert-base-sized
models up to 3e-4 for small ones like the bundled model, about 1e-3 for a head alone), a few epochs,
warm-up over the first tenth of the steps. Any family's base works (RoBERTa, DistilBERT, ALBERT: see
`model/classifier_io.py`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import BertCoreError
from ..model.classifier_io import new_classifier
from ..model.classifiers import mean_pool
from ..model.loaded import LoadedModel
from ..model.loading import MINILM_NAME
from ..train.trainer import adamw, warmup_linear_lr
from .budget import step_seconds, training_bytes
from .tasks import MAX_EPOCHS, MAX_EVAL_POOLED, ClassificationTask

POOLINGS = {"cls": "[CLS] + pooler", "mean": "mean of the tokens"}


@dataclass
class FineTuneConfig:
    """How to fine-tune: what to train, optimisation, and reporting."""

    freeze_encoder: bool = False  # True: the head only (classifier, and its pooling layer when that is new)
    # All weights but the word-embedding matrix (shared with the base, not copied): MiniLM's 11.7M of 22.7M.
    freeze_word_embeddings: bool = False
    pooling: str = "cls"  # "cls": [CLS] through the pooler (transformers' classifier); "mean": mean of the tokens
    lr: float = 1e-4
    epochs: int = 3
    batch_size: int = 32
    max_len: int = 64  # tokens per example, [CLS] and [SEP] included
    warmup_fraction: float = 0.1
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    seed: int = 0
    evals_per_epoch: int = 2

    def validate(self) -> None:
        for name, v, lo, hi in [("learning rate", self.lr, 1e-7, 0.1), ("epochs", self.epochs, 1, MAX_EPOCHS),
                                ("batch size", self.batch_size, 1, 128), ("max length", self.max_len, 8, 512),
                                ("evaluations per epoch", self.evals_per_epoch, 1, 20)]:
            if not lo <= v <= hi:
                raise BertCoreError(f"{name} must be between {lo:g} and {hi:g}, got {v:g}")
        if self.pooling not in POOLINGS:
            raise BertCoreError(f"pooling must be one of {', '.join(POOLINGS)}, got {self.pooling!r}")


def default_lr(config, freeze_encoder: bool = False) -> float:
    """The learning rate fine-tuning starts from for a base of this size (the page's default).

    A head alone (frozen encoder) learns from scratch: 1e-3. All weights: small encoders want a larger
    rate than bert-base's classic 2e-5 .. 5e-5 (Devlin et al.; Turc et al. tune BERT-Tiny..Mini in
    1e-4 .. 3e-4): the bundled model (H = 256) on the topic task reaches 87.7% validation at 1e-4, barely
    above the bag-of-words baseline's 87.0%, and 91.3% at 3e-4 (docs/models.md).
    Example: H=256 -> 3e-4; H=512 -> 1e-4; H=768 (bert-base, roberta-base, ...) -> 3e-5; frozen -> 1e-3.
    """
    if freeze_encoder:
        return 1e-3
    H = config.hidden_size
    return 3e-4 if H <= 256 else 1e-4 if H <= 512 else 3e-5


DEFAULT_RUN_SECONDS = 120.0  # the page's default run: about two minutes on the reference machine (budget.py)
# Models whose vectors were trained to be averaged: the bundled MiniLM continues all-MiniLM-L6-v2, a
# sentence-transformers model trained with mean pooling (its pooler was re-trained for NSP only: MODEL.md).
MEAN_POOLED_MODELS = (MINILM_NAME,)


def default_pooling(m: LoadedModel) -> str:
    """The pooling the model was trained for: "mean" for a sentence-transformers model, else "cls" (+ pooler)."""
    return "mean" if m.pooling == "mean" or m.name in MEAN_POOLED_MODELS else "cls"


def token_lengths(tok, texts, max_len: int = 512) -> np.ndarray:
    """(N,) tokens per text as the classifier reads it: [CLS] text [SEP], cut to max_len."""
    return np.array([min(len(x) + 2, max_len) for x in tok.encode_batch_plain(list(texts))])


def finetune_defaults(m: LoadedModel, task: ClassificationTask, seconds: float = DEFAULT_RUN_SECONDS,
                      freeze_encoder: bool = False, max_bytes: int | None = None) -> FineTuneConfig:
    """What the Fine-tuning page picks for this model and this task: a run of about `seconds` on the reference
    machine (one busy core of a 2-core server, `budget.step_seconds`), the same on every machine.

    - pooling: what the model was trained for (`default_pooling`);
    - the word-embedding matrix frozen when it is at least a third of the encoder (MiniLM: 11.7M of 22.7M);
    - batch 16 for models 384 wide or more (activations: `budget.activation_bytes`), else 32; 8 for tiny tasks;
    - max length: the 95th percentile of the training texts' tokens, rounded up to a multiple of 8;
    - learning rate: `default_lr` for the width; epochs: as many as fit in `seconds` (1 .. MAX_EPOCHS), so a
      small task trains for many epochs and a large one for one or two.
    Example: bundled MiniLM on WordNet topic (3,000 texts, p95 31 tokens) -> mean pooling, word embeddings
    frozen, batch 16, max_len 32, lr 1e-4, 1 epoch (188 steps, about 2:04 estimated); word class (2,000 texts,
    max_len 24) -> 2 epochs; 160 everyday sentences (128 to train) -> batch 16, max_len 16, 20 epochs.
    max_bytes (a server's budget for a user's run; None: no limit): a run whose `run_cost` bytes exceed it freezes the
    word-embedding matrix, then the whole encoder (a bert-base-sized model on a 1,000 MB server: head only; all
    weights need ~1.8 GB, all but the word embeddings ~1.4 GB).
    """
    if len(task.train_texts) < 2:
        raise BertCoreError("the task needs at least two training examples")
    cfg = m.config
    enc = m.model.bert
    word = enc.embeddings.word_embeddings.weight.numel()
    n_enc = sum(p.numel() for p in enc.parameters())
    lengths = token_lengths(m.tokenizer, task.train_texts, m.max_length)
    max_len = int(min(m.max_length, max(16, 8 * math.ceil(np.percentile(lengths, 95) / 8))))
    batch = 16 if cfg.hidden_size >= 384 else 32
    while batch > 8 and batch > len(task.train_texts) // 4:  # a small task still gets several steps an epoch
        batch //= 2
    per_step = step_seconds(cfg, batch, max_len, trainable_encoder=not freeze_encoder)
    steps_per_epoch = math.ceil(len(task.train_texts) / batch)
    if freeze_encoder:  # the encoder runs once per text (then cached): the head's epochs cost almost nothing
        epochs = MAX_EPOCHS
    else:
        epochs = int(min(MAX_EPOCHS, max(1, round(seconds / (per_step * steps_per_epoch)))))
    big_words = word * 3 >= n_enc  # a third of the encoder or more (MiniLM: 11.7M of 22.7M)
    out = FineTuneConfig(freeze_encoder=freeze_encoder, freeze_word_embeddings=big_words and not freeze_encoder,
                         pooling=default_pooling(m), lr=default_lr(cfg, freeze_encoder), epochs=epochs,
                         batch_size=batch, max_len=max_len, evals_per_epoch=2 if epochs <= 4 else 1, seed=0)
    if max_bytes is None or freeze_encoder or run_cost(m, task, out)["bytes"] <= max_bytes:
        return out
    fewer = replace(out, freeze_word_embeddings=True)
    if run_cost(m, task, fewer)["bytes"] <= max_bytes:
        return fewer
    return finetune_defaults(m, task, seconds, freeze_encoder=True)


def run_cost(m: LoadedModel, task: ClassificationTask, cfg: FineTuneConfig) -> dict:
    """Before Start: the run's bytes (weights, gradients, AdamW, activations) and its estimated time.

    Returns {"trainable", "bytes", "steps", "seconds_per_step", "seconds"} (estimates for the reference machine).
    """
    enc = m.model.bert
    H, C = m.config.hidden_size, len(task.labels)
    head = 2 * H * H + H * (C + 2)  # the largest family head: dense H -> H (+ a new pooler), out
    if cfg.freeze_encoder:
        trainable = head
    else:
        trainable = sum(p.numel() for p in enc.parameters()) + head
        if cfg.freeze_word_embeddings:
            trainable -= enc.embeddings.word_embeddings.weight.numel()
    T = int(min(cfg.max_len, m.max_length, token_lengths(m.tokenizer, task.train_texts, cfg.max_len).max()))
    B = min(cfg.batch_size, len(task.train_texts))
    nbytes = training_bytes(trainable, m.config, B, T) if not cfg.freeze_encoder else 16 * trainable
    steps = cfg.epochs * math.ceil(len(task.train_texts) / cfg.batch_size)
    per_step = step_seconds(m.config, B, cfg.max_len, trainable_encoder=not cfg.freeze_encoder)
    if cfg.freeze_encoder:  # one encoder pass per text, then the head's steps on cached features
        seconds = per_step * math.ceil(len(task.train_texts) / B)
    else:
        seconds = per_step * steps
    return {"trainable": trainable, "bytes": nbytes, "steps": steps, "seconds_per_step": per_step,
            "seconds": seconds, "tokens": T}


@dataclass
class FineTuneStep:
    """What one optimisation step reports."""

    step: int
    epoch: float  # fractional: 1.5 is half-way through the second epoch
    loss: float  # mean cross-entropy of the batch
    accuracy: float  # of the batch, dropout on
    lr: float
    seconds: float


@dataclass
class EvalResult:
    """The validation set at one step: loss, accuracy, confusion matrix, pooled vectors (when asked)."""

    step: int
    loss: float
    accuracy: float
    confusion: np.ndarray  # (C, C) counts: row = true class, column = predicted class
    pooled: np.ndarray | None = None  # (N, H) the vectors the classifier reads, one per validation example
    f1: float | None = None  # question answering: mean token F1 (accuracy is then the exact match)


WORD_EMBEDDINGS_NOTE = (
    "The word-embedding matrix is frozen (shared with the base model, not copied): it is most of a small "
    "model's weights (MiniLM: 11.7M of 22.7M), a task of a few thousand texts touches a few thousand of its "
    "30,522 rows, and leaving it out spares its gradient and Adam's two moments (3 x 47 MB for MiniLM) and time.")


def share_word_embeddings(bert, base_bert) -> None:
    """Point `bert`'s word-embedding matrix at `base_bert`'s tensor, frozen (no copy, no gradient)."""
    base_w = base_bert.embeddings.word_embeddings.weight
    if bert.embeddings.word_embeddings.weight.data_ptr() != base_w.data_ptr():  # (new_classifier shares it already)
        bert.embeddings.word_embeddings.weight = torch.nn.Parameter(base_w.detach(), requires_grad=False)


def check_classes(task: ClassificationTask) -> None:
    """Refuse a task a classifier cannot learn: fewer than two classes to train on, or a class seen only in
    validation (nothing to learn it from)."""
    trained = set(task.train_labels)
    if len(trained) < 2:
        raise BertCoreError(f"the training examples have {len(trained)} class; a classifier needs at least two")
    only = sorted(set(task.valid_labels) - trained)
    if only:
        raise BertCoreError(f"the class {task.labels[only[0]]!r} has validation examples but no training example: "
                            "the model cannot learn it. Give every class training examples.")


def _encode(tok, texts, max_len: int) -> list[list[int]]:
    """[CLS] text [SEP] ids, cut to max_len."""
    ids = tok.encode_batch_plain(list(texts))
    return [[tok.cls_token_id, *x[: max_len - 2], tok.sep_token_id] for x in ids]


def _pad(rows: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, T) ids padded with pad_id, and the (B, T) attention mask."""
    T = max(map(len, rows))
    ids = torch.full((len(rows), T), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), T), dtype=torch.long)
    for r, row in enumerate(rows):
        ids[r, : len(row)] = torch.tensor(row)
        mask[r, : len(row)] = 1
    return ids, mask


class FineTuner:
    """Fine-tune a new classifier head (and, unless frozen, the encoder) on one task, a step at a time.

    What is particular to sentence classification sits in `_new_model`, `_encode_split`, `_targets`,
    `_logits`, `_loss_and_accuracy` and `evaluate`; `token_finetuning.TokenFineTuner` overrides them for
    one label per token and shares the rest (schedule, batches, dropout seeding, clipping, reporting).
    """

    keeps_pooled = True  # evaluate(pooled=True) returns the vectors the head reads (the page's PCA plot)

    def __init__(self, base: LoadedModel, task: ClassificationTask, cfg: FineTuneConfig | None = None):
        self.cfg = cfg = cfg or FineTuneConfig()
        cfg.validate()
        if len(task.train_texts) < 2 or len(task.valid_texts) < 1:
            raise BertCoreError("the task needs at least two training and one validation example")
        if isinstance(task, ClassificationTask):
            check_classes(task)
        # What a run may hold is the memory ledger's business (runs/finetune_run.py charges `run_bytes`).
        self.base, self.task, self.tok = base, task, base.tokenizer
        # Frozen: the model shares the base's encoder modules (no copy) and never puts them in
        # train mode, so a shared read-only model stays exactly as it was.
        self.model, self.notes = self._new_model(base, task, cfg)
        if cfg.freeze_word_embeddings and not cfg.freeze_encoder:
            share_word_embeddings(self.model.bert, base.model.bert)
            self.notes.append(WORD_EMBEDDINGS_NOTE)
        if cfg.pooling == "mean" and hasattr(self.model, "pooling"):
            self.model.pooling = "mean"
        # New here: the head (and any new pooling layer); the rest is the base's.
        from_base = {id(p) for p in base.model.parameters()}
        if cfg.freeze_encoder:
            head = [p for p in self.model.parameters() if id(p) not in from_base]
        else:
            head = [p for p in self.model.parameters() if p.requires_grad]
        self.trainable = head
        self._features: dict[str, dict[int, torch.Tensor]] = {"train": {}, "valid": {}}  # head only: cached
        self._batch_idx: list[int] = []
        self.opt = adamw(head, cfg.lr, cfg.weight_decay)
        max_len = min(cfg.max_len, base.max_length)
        self.train_rows, self.train_y = self._encode_split(task, "train", max_len)
        self.valid_rows, self.valid_y = self._encode_split(task, "valid", max_len)
        self.steps_per_epoch = math.ceil(len(self.train_rows) / cfg.batch_size)
        self.max_steps = cfg.epochs * self.steps_per_epoch
        self.warmup_steps = max(1, round(cfg.warmup_fraction * self.max_steps))
        self.eval_every = max(1, self.steps_per_epoch // cfg.evals_per_epoch)
        self.g = torch.Generator().manual_seed(cfg.seed)
        self._order = torch.empty(0, dtype=torch.long)
        self.step_count = 0
        self.elapsed = 0.0  # seconds in training steps and evaluations
        self.history: list[FineTuneStep] = []
        self.evals: list[EvalResult] = [self.evaluate(pooled=True)]  # step 0: before fine-tuning

    def _new_model(self, base: LoadedModel, task, cfg: FineTuneConfig):
        """The classifier on the base's encoder (shared when frozen, else a copy), and notes on what is new."""
        model, notes = new_classifier(base, list(task.labels), seed=cfg.seed, copy_encoder=not cfg.freeze_encoder,
                                      share_words=cfg.freeze_word_embeddings)
        # New: the classifier, and the layer that pools (a new pooler when the base had none;
        # DistilBERT's pre_classifier and RoBERTa's classifier.dense always).
        self.new_pooler = id(model.pooling_layer().weight) not in {id(p) for p in base.model.parameters()}
        return model, notes

    def _encode_split(self, task, split: str, max_len: int):
        """One split's [CLS] text [SEP] id rows and its (N,) class ids."""
        texts, labels = (task.train_texts, task.train_labels) if split == "train" else (task.valid_texts,
                                                                                         task.valid_labels)
        return _encode(self.tok, texts, max_len), torch.tensor(labels)

    def _targets(self, ys, idx: list[int], T: int) -> torch.Tensor:
        """The batch's targets: (B,) class ids (T, the padded length, matters for per-token targets)."""
        return ys[idx]

    @staticmethod
    def _loss_and_accuracy(logits: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, float]:
        """Mean cross-entropy over the batch and the share it gets right."""
        return F.cross_entropy(logits, y), (logits.argmax(-1) == y).float().mean().item()

    @property
    def done(self) -> bool:
        return self.step_count >= self.max_steps

    @property
    def trainable_parameters(self) -> int:
        return sum(p.numel() for p in self.trainable)

    def lr_at(self, step: int) -> float:
        return warmup_linear_lr(step, self.cfg.lr, self.warmup_steps, self.max_steps)

    def _set_train_mode(self) -> None:
        """Dropout on where we train: the whole model, or (frozen) only the head's dropout."""
        if self.cfg.freeze_encoder:
            self.model.dropout.train()  # the shared encoder modules stay in eval mode
        else:
            self.model.train()

    def _pool(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, T, H) -> (B, H): the classifier's pooling ([CLS] + pooler), or the mean over real tokens."""
        if self.cfg.pooling == "mean":
            return mean_pool(hidden, mask)
        return self.model.pooled(hidden)

    def _frozen_features(self, split: str, idx: list[int], ids, mask) -> torch.Tensor:
        """(B, H) what a trainable head reads, from a frozen encoder: run once per example, then cached.

        Cached: the mean of the tokens, the pooler's output (the base's own, frozen), or the [CLS] vector
        when the pooling layer is new and trains. A head-only run's later epochs cost almost nothing.
        """
        cache = self._features[split]
        todo = [r for r, j in enumerate(idx) if j not in cache]
        if todo:
            with torch.no_grad():  # a frozen encoder: no graph, no gradients into the shared modules
                m, keep = self.model, torch.tensor(todo)
                sub_mask = mask[keep]
                T = int(sub_mask.sum(1).max())
                hidden = m.bert(ids[keep, :T], None, sub_mask[:, :T])  # (b, T, H)
                if self.cfg.pooling == "mean":
                    feats = mean_pool(hidden, sub_mask[:, :T])
                else:
                    feats = hidden[:, 0] if self.new_pooler else m.pooled(hidden)  # (b, H)
            for r, f in zip(todo, feats):
                cache[idx[r]] = f.clone()
        return torch.stack([cache[j] for j in idx])  # (B, H)

    def _head_logits(self, feats: torch.Tensor) -> torch.Tensor:
        """(B, H) cached features -> (B, C): a new pooling layer (trained) when there is one, then the head."""
        m = self.model
        if self.cfg.pooling != "mean" and self.new_pooler:
            feats = m.pooled(feats[:, None])  # the pooling layer reads position 0
        return m.head(feats)

    def _logits(self, ids, mask) -> torch.Tensor:
        m = self.model
        if not self.cfg.freeze_encoder:
            return m.head(self._pool(m.bert(ids, None, mask), mask))  # (B, C)
        return self._head_logits(self._frozen_features("train", self._batch_idx, ids, mask))

    def step(self) -> FineTuneStep:
        """One AdamW step on the next batch of this epoch's shuffled order; evaluates on schedule."""
        if self.done:
            raise BertCoreError(f"fine-tuning is finished ({self.max_steps} steps)")
        c, t0 = self.cfg, time.perf_counter()
        i = self.step_count % self.steps_per_epoch
        if i == 0:
            self._order = torch.randperm(len(self.train_rows), generator=self.g)
        idx = self._order[i * c.batch_size:(i + 1) * c.batch_size].tolist()
        self._batch_idx = idx
        ids, mask = _pad([self.train_rows[j] for j in idx], self.tok.pad_token_id)
        y = self._targets(self.train_y, idx, ids.shape[1])
        lr = self.lr_at(self.step_count)
        for group in self.opt.param_groups:
            group["lr"] = lr
        self._set_train_mode()
        try:
            with torch.random.fork_rng():  # dropout from our generator, so runs repeat
                torch.manual_seed(int(torch.randint(2**62, (), generator=self.g)))
                logits = self._logits(ids, mask)  # (B, C), or (B, T, C) per token
                loss, acc = self._loss_and_accuracy(logits, y)
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                if c.grad_clip:
                    torch.nn.utils.clip_grad_norm_(self.trainable, c.grad_clip)
                self.opt.step()
                self.opt.zero_grad(set_to_none=True)  # between steps the gradients (one model's worth) go
        finally:
            self.model.eval()
        self.step_count += 1
        dt = time.perf_counter() - t0
        self.elapsed += dt
        out = FineTuneStep(self.step_count, self.step_count / self.steps_per_epoch, loss.item(), acc, lr, dt)
        self.history.append(out)
        if self.step_count % self.eval_every == 0 or self.done:
            t1 = time.perf_counter()
            self.evals.append(self.evaluate(pooled=self.done))
            self.elapsed += time.perf_counter() - t1
        return out

    @torch.no_grad()
    def evaluate(self, pooled: bool = False, batch_size: int = 64) -> EvalResult:
        """Validation loss, accuracy and confusion matrix (dropout off); the pooled vectors if asked."""
        self.model.eval()
        C = len(self.task.labels)
        losses, preds, vecs = [], [], []
        for s in range(0, len(self.valid_rows), batch_size):
            ids, mask = _pad(self.valid_rows[s:s + batch_size], self.tok.pad_token_id)
            if self.cfg.freeze_encoder:
                feats = self._frozen_features("valid", list(range(s, s + len(ids))), ids, mask)
                p = self.model.pooled(feats[:, None]) if self.cfg.pooling != "mean" and self.new_pooler else feats
            else:
                p = self._pool(self.model.bert(ids, None, mask), mask)  # (B, H)
            logits = self.model.head(p)  # (B, C), dropout off
            y = self.valid_y[s:s + batch_size]
            losses.append(F.cross_entropy(logits, y, reduction="sum").item())
            preds.append(logits.argmax(-1))
            if pooled:
                vecs.append(p[: max(0, MAX_EVAL_POOLED - s)].numpy().astype(np.float32))
        pred = torch.cat(preds).numpy()
        true = self.valid_y.numpy()
        confusion = np.bincount(true * C + pred, minlength=C * C).reshape(C, C)
        return EvalResult(self.step_count, sum(losses) / len(true), float((pred == true).mean()), confusion,
                          np.concatenate(vecs) if pooled else None)

    def run(self, steps: int | None = None, seconds: float | None = None) -> list[FineTuneStep]:
        """Step until `steps` are done, `seconds` have passed, or training is finished."""
        out, t0 = [], time.perf_counter()
        while not self.done and (steps is None or len(out) < steps) and \
                (seconds is None or time.perf_counter() - t0 < seconds):
            out.append(self.step())
        return out

    def what(self) -> str:
        """'head only', 'all weights' or 'all weights but the word embeddings'."""
        c = self.cfg
        return "head only" if c.freeze_encoder else "all weights but the word embeddings" if \
            c.freeze_word_embeddings else "all weights"

    def as_loaded(self, name: str | None = None) -> LoadedModel:
        """The classifier in training, wrapped like any loaded model (shares its weights; eval mode)."""
        note = (f"Fine-tuned in this session from {self.base.name} on {self.task.name}: {self.step_count} steps, "
                f"{self.what()}, lr {self.cfg.lr:g}, pooling: {POOLINGS[self.cfg.pooling]}.")
        return LoadedModel(self.model, self.tok, name or f"{self.base.name} + {self.task.name}", "session",
                           [note, *self.notes])

    def report(self) -> dict:
        """Settings and results, for training_report.json beside an exported checkpoint."""
        last = self.evals[-1]
        return {"base_model": self.base.name, "task": self.task.name, "labels": list(self.task.labels),
                "train_examples": len(self.train_rows), "validation_examples": len(self.valid_rows),
                "freeze_encoder": self.cfg.freeze_encoder,
                "freeze_word_embeddings": self.cfg.freeze_word_embeddings, "pooling": self.cfg.pooling,
                "lr": self.cfg.lr, "epochs": self.cfg.epochs,
                "batch_size": self.cfg.batch_size, "steps": self.step_count,
                "training_seconds": round(self.elapsed, 1), "validation_accuracy": last.accuracy,
                "validation_loss": last.loss, "notes": self.notes}


# --- what the page draws ------------------------------------------------------------------------


def pca_2d(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, H) -> (N, 2) coordinates on the top two principal components, and their variance shares.

    Centre, SVD, project: X_c = U S V^T, coords = X_c V[:, :2]. Each axis's sign is fixed so its
    largest loading is positive (an SVD may flip signs between runs).
    """
    x = np.asarray(x, dtype=np.float64)
    xc = x - x.mean(0)
    _, s, vt = np.linalg.svd(xc, full_matrices=False)
    vt = vt[:2] * np.sign(vt[:2][np.arange(min(2, len(vt))), np.abs(vt[:2]).argmax(1)])[:, None]
    coords = xc @ vt.T
    if coords.shape[1] < 2:
        coords = np.pad(coords, ((0, 0), (0, 2 - coords.shape[1])))
    var = s**2 / max((s**2).sum(), 1e-30)
    return coords.astype(np.float32), np.pad(var[:2], (0, max(0, 2 - len(var[:2]))))
