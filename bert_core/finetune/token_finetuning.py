"""Fine-tuning BERT per token: `FineTuner`'s loop for a tagger and for an extractive QA reader.

Tagging (tasks and baseline: `tagging.py`):

    logits_t = W_c · dropout(h_t) + b_c                      (T, C), h_t the last layer's vector of token t
    L = mean over labelled tokens of -log softmax(logits_t)[y_t]   (y_t = -100 on all but each word's first piece)

Question answering (task, metrics and baseline: `qa.py`), transformers' BertForQuestionAnswering:

    [start_t, end_t] = W_qa · h_t + b_qa  over [CLS] question [SEP] context [SEP]
    L = (-log softmax(start)[s*] - log softmax(end)[e*]) / 2,  s*, e* the answer's first and last token

(padding is left out of both softmaxes, so a padded batch gives what one example alone gives).
Schedule, batches, dropout seeding, clipping, the slot cap and the export are `FineTuner`'s; these
classes only build the head (HF's layouts, every family) and say what a target and a score are. A frozen
encoder's head fit exactly on cached vectors, and the sample-efficiency curves: `cached_head.py`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import BertCoreError
from ..inspect.token_tasks import best_spans, first_pieces
from ..model.loaded import LoadedModel
from ..model.token_heads import BertForQuestionAnswering, BertForTokenClassification
from ..model.token_heads_io import new_token_model
from .finetuning import EvalResult, FineTuneConfig, FineTuner, _pad, default_lr, finetune_defaults
from .qa import QATask, qa_scores
from .tagging import IGNORE, TaggingTask

TAGGING_MAX_LEN = 128  # pieces per sentence, [CLS] and [SEP] included (the built-in sentences have <= 60 words)
QA_MAX_LEN = 192  # question and context (the built-in ones: <= 20-word definitions, 4 sentences of <= 25 words)
MAX_ANSWER_TOKENS = 30


def qa_lr(config) -> float:
    """The rate a reader trains every weight at: about 3x the classifier's `default_lr`, on the page's ladder.

    A new start/end head and one epoch: the bundled MiniLM (H = 384) on 1,000 WordNet questions reaches 51.1% F1
    at 1e-4, 60.2% at 3e-4 (docs/models.md). Models wider than 512 (bert-base: classifier 3e-5) get 1e-4 (not measured).
    Example: H=256 -> 3e-4; H=384 -> 3e-4; H=768 -> 1e-4.
    """
    return 3e-4 if config.hidden_size <= 512 else 1e-4


def encode_words(tok, sentences, tags, max_len: int) -> tuple[list[list[int]], list[list[int]]]:
    """[CLS] pieces [SEP] ids of each sentence (words joined by spaces), and per piece its word's label or -100.

    The label goes on the first piece of each word; other pieces, [CLS], [SEP] get -100 (ignored by the
    loss). A word past max_len is cut with its label (the validation numbers count only words kept).
    """
    texts = [" ".join(ws) for ws in sentences]
    rows, ys = [], []
    for ws, ts, (ids, offsets) in zip(sentences, tags, tok.encode_batch_offsets(texts)):
        first = first_pieces(offsets, list(ws))
        ids, first = ids[: max_len - 2], first[: max_len - 2]
        rows.append([tok.cls_token_id, *ids, tok.sep_token_id])
        ys.append([IGNORE, *(IGNORE if w is None else ts[w] for w in first), IGNORE])
    return rows, ys


def pad_labels(ys: list[list[int]], T: int) -> torch.Tensor:
    """(B, T) label ids, padded with -100."""
    out = torch.full((len(ys), T), IGNORE, dtype=torch.long)
    for r, y in enumerate(ys):
        out[r, : len(y)] = torch.tensor(y)
    return out


class TokenFineTuner(FineTuner):
    """Fine-tune a new token-classification head (and, unless frozen, the encoder) on a tagging task."""

    keeps_pooled = False  # a tagger reads every token: there is no single pooled vector to plot

    def __init__(self, base: LoadedModel, task: TaggingTask, cfg: FineTuneConfig | None = None):
        cfg = cfg or FineTuneConfig(max_len=TAGGING_MAX_LEN)
        super().__init__(base, task, cfg)

    def _new_model(self, base: LoadedModel, task, cfg: FineTuneConfig):
        model = new_token_model(base, "token", list(task.labels), seed=cfg.seed, copy_encoder=not cfg.freeze_encoder)
        notes = ["A new token-classification head (transformers' "
                 f"{type(model).__name__} layout: `classifier`, {len(task.labels)} labels) reads every token's "
                 "last hidden state; no pooler."]
        if isinstance(base.model, BertForTokenClassification):
            notes.append(f"{base.name} was already a tagger: its encoder is kept, its head replaced by a new one.")
        return model, notes

    def _encode_split(self, task, split: str, max_len: int):
        words, tags = (task.train_words, task.train_tags) if split == "train" else (task.valid_words, task.valid_tags)
        return encode_words(self.tok, words, tags, max_len)

    def _targets(self, ys, idx: list[int], T: int) -> torch.Tensor:
        return pad_labels([ys[j] for j in idx], T)  # (B, T)

    @staticmethod
    def _loss_and_accuracy(logits: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, float]:
        """Mean cross-entropy over labelled tokens (first pieces), and the share of words right."""
        flat = logits.reshape(-1, logits.shape[-1])  # (B*T, C)
        y = y.reshape(-1)
        keep = y != IGNORE
        acc = (flat[keep].argmax(-1) == y[keep]).float().mean().item()
        return F.cross_entropy(flat, y, ignore_index=IGNORE), acc

    def _logits(self, ids, mask) -> torch.Tensor:
        m = self.model
        if not self.cfg.freeze_encoder:
            return m.logits(ids, None, mask)  # (B, T, C)
        with torch.no_grad():  # a frozen encoder: no graph, no gradients into the shared modules
            hidden = m.bert(ids, None, mask)  # (B, T, H)
        return m.head(hidden)  # (B, T, C)

    @torch.no_grad()
    def evaluate(self, pooled: bool = False, batch_size: int = 64) -> EvalResult:
        """Validation loss (mean over words), word accuracy and the (C, C) confusion over words (dropout off)."""
        self.model.eval()
        C = len(self.task.labels)
        loss, preds, trues = 0.0, [], []
        for s in range(0, len(self.valid_rows), batch_size):
            ids, mask = _pad(self.valid_rows[s:s + batch_size], self.tok.pad_token_id)
            y = pad_labels(self.valid_y[s:s + batch_size], ids.shape[1])
            logits = self.model.logits(ids, None, mask)  # (B, T, C)
            keep = y != IGNORE
            loss += F.cross_entropy(logits[keep], y[keep], reduction="sum").item()
            preds.append(logits[keep].argmax(-1))
            trues.append(y[keep])
        pred, true = torch.cat(preds).numpy(), torch.cat(trues).numpy()
        confusion = (torch.bincount(torch.from_numpy(true * C + pred), minlength=C * C).reshape(C, C)).numpy()
        return EvalResult(self.step_count, loss / max(1, len(true)), float((pred == true).mean()), confusion, None)


def answer_tokens(offsets, sequence_ids, start: int, end: int) -> tuple[int, int] | None:
    """The first and last context token covering characters [start, end) of the context, or None (cut off)."""
    ctx = [t for t, sid in enumerate(sequence_ids) if sid == 1]
    first = next((t for t in ctx if offsets[t][1] > start), None)
    last = next((t for t in reversed(ctx) if offsets[t][0] < end), None)
    if first is None or last is None or last < first or offsets[first][0] >= end:
        return None
    return first, last


class QAFineTuner(FineTuner):
    """Fine-tune a new start/end head (`qa_outputs`) and, unless frozen, the encoder on an extractive QA task."""

    keeps_pooled = False

    def __init__(self, base: LoadedModel, task: QATask, cfg: FineTuneConfig | None = None):
        cfg = cfg or FineTuneConfig(max_len=QA_MAX_LEN)
        super().__init__(base, task, cfg)

    def _new_model(self, base: LoadedModel, task, cfg: FineTuneConfig):
        model = new_token_model(base, "qa", seed=cfg.seed, copy_encoder=not cfg.freeze_encoder)
        notes = ["A new question-answering head (transformers' BertForQuestionAnswering layout: `qa_outputs`, "
                 "a start and an end score per token) reads every token's last hidden state; no pooler."]
        if isinstance(base.model, BertForQuestionAnswering):
            notes.append(f"{base.name} was already a QA model: its encoder is kept, its head replaced by a new one.")
        return model, notes

    def _encode_split(self, task, split: str, max_len: int):
        """[CLS] question [SEP] context [SEP] ids and the (N, 2) answer's first and last token.

        Training drops an example whose answer the length limit cut off; validation keeps every example
        (with its offsets and context mask, to read the predicted span's text).
        """
        examples = task.train if split == "train" else task.valid
        rows, ys, meta = [], [], []
        for ex in examples:
            enc = self.tok.encode(ex.question, ex.context, max_length=max_len)
            span = answer_tokens(enc.offsets, enc.sequence_ids, ex.answer_start,
                                 ex.answer_start + len(ex.answer_text))
            if span is None and split == "train":
                continue
            rows.append(list(map(int, enc.input_ids)))
            ys.append(span or (0, 0))  # (a cut-off validation answer points at [CLS]: never predicted)
            meta.append((enc.offsets, np.array([sid == 1 for sid in enc.sequence_ids]), ex))
        if split == "train" and len(rows) < 2:
            raise BertCoreError("the task needs at least two training examples whose answers fit the length limit")
        if split == "valid":
            self.valid_meta = meta
        return rows, torch.tensor(ys, dtype=torch.long).reshape(-1, 2)

    def _segments(self, ids: torch.Tensor) -> torch.Tensor | None:
        """(B, T) segment ids: 1 from the token after the first [SEP] on (BERT, ALBERT); None for RoBERTa/DistilBERT."""
        if not self.tok.segments:
            return None
        sep = (ids == self.tok.sep_token_id).long()
        return ((sep.cumsum(1) - sep) >= 1).long()

    def _logits(self, ids, mask) -> torch.Tensor:
        """(B, T, 2) start and end logits, padding at -inf (out of both softmaxes)."""
        m, types = self.model, self._segments(ids)
        if self.cfg.freeze_encoder:
            with torch.no_grad():  # a frozen encoder: no graph, no gradients into the shared modules
                hidden = m.bert(ids, types, mask)  # (B, T, H)
            start, end = m.head(hidden)
        else:
            start, end = m.logits(ids, types, mask)  # (B, T) each
        out = torch.stack([start, end], -1)  # (B, T, 2)
        return out.masked_fill(~mask.bool()[..., None], torch.finfo(out.dtype).min)

    @staticmethod
    def _loss_and_accuracy(logits: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, float]:
        """(CE(start) + CE(end)) / 2 as transformers computes it; accuracy: both ends exactly right."""
        loss = (F.cross_entropy(logits[..., 0], y[:, 0]) + F.cross_entropy(logits[..., 1], y[:, 1])) / 2
        right = (logits[..., 0].argmax(-1) == y[:, 0]) & (logits[..., 1].argmax(-1) == y[:, 1])
        return loss, right.float().mean().item()

    @torch.no_grad()
    def evaluate(self, pooled: bool = False, batch_size: int = 32) -> EvalResult:
        """Validation loss, exact match (as accuracy) and token F1 of the best span (dropout off).

        Batches of similar length (shortest first): padding is masked out, so the scores are those of any batching,
        and the encoder reads ~30% fewer padding tokens than in file order (WordNet QA: 48 tokens median, 85 max).
        """
        self.model.eval()
        loss, predictions = 0.0, [""] * len(self.valid_rows)
        for idx in _length_chunks(self.valid_rows, batch_size):
            ids, mask = _pad([self.valid_rows[j] for j in idx], self.tok.pad_token_id)
            logits = self._logits(ids, mask)  # (B, T, 2)
            y = self.valid_y[idx]
            loss += self._loss_and_accuracy(logits, y)[0].item() * len(y)
            for b, j in enumerate(idx):
                offsets, ctx, ex = self.valid_meta[j]
                T = len(offsets)
                found = best_spans(logits[b, :T, 0].numpy(), logits[b, :T, 1].numpy(), ctx, 1, MAX_ANSWER_TOKENS)
                predictions[j] = ex.context[offsets[found[0][0]][0]:offsets[found[0][1]][1]] if found else ""
        scores = qa_scores(predictions, [m[2] for m in self.valid_meta])
        self.last_predictions = predictions
        return EvalResult(self.step_count, loss / len(self.valid_rows), scores["exact_match"],
                          np.zeros((0, 0), dtype=np.int64), None, scores["f1"])


def _length_chunks(rows: list[list[int]], size: int) -> list[list[int]]:
    """Example indices, shortest first, in chunks of `size` (a chunk's padding is then small)."""
    order = sorted(range(len(rows)), key=lambda j: len(rows[j]))
    return [order[s:s + size] for s in range(0, len(order), size)]

def head_only_by_default(task: TaggingTask | QATask) -> bool:
    """Tagging: head only (a word's tag is mostly in its pretrained vector: 95.7% on Brown POS with MiniLM).
    QA: all weights (a reader must relate question and passage, which a frozen encoder never learned: head only,
    fit exactly, gives 43.5% F1 on 1,000 WordNet questions, every weight for one epoch 60.2%; docs/models.md)."""
    return isinstance(task, TaggingTask)


def token_finetune_defaults(m: LoadedModel, task: TaggingTask | QATask,
                            freeze_encoder: bool | None = None) -> FineTuneConfig:
    """What the Tagging and Question answering pages pick for this model and task (freeze_encoder None: the
    task's default, `head_only_by_default`).

    Head only: the frozen encoder reads each example once and the head is fit to convergence on
    the cached vectors (`CachedHeadTagger`, `CachedHeadReader`): no learning rate or epochs to get wrong, and
    about two minutes for 3,000 Brown sentences or 1,000 WordNet questions with MiniLM on 2 cores. All weights:
    `finetuning.finetune_defaults` (batch, learning rate, epochs for about two minutes, the word-embedding
    matrix frozen when it is a third of the encoder), at the task's length limit.
    A reader, all weights: `qa_lr` (3x the classifier's rate), evaluated twice an epoch (each evaluation reads
    every validation question: 400 here, the work of about 10 of the epoch's 63 steps).
    Example: bundled MiniLM, POS -> FineTuneConfig(freeze_encoder=True, max_len=128, lr=1e-3, seed=0);
    WordNet QA, 1,000 questions -> all weights but the word embeddings, 1 epoch, batch 16, lr 3e-4, max_len 192.
    """
    max_len = TAGGING_MAX_LEN if isinstance(task, TaggingTask) else QA_MAX_LEN
    if freeze_encoder is None:
        freeze_encoder = head_only_by_default(task)
    if freeze_encoder:
        return FineTuneConfig(freeze_encoder=True, max_len=max_len, lr=default_lr(m.config, True), seed=0)
    cfg = finetune_defaults(m, task, freeze_encoder=False)
    lr = qa_lr(m.config) if isinstance(task, QATask) else cfg.lr
    return replace(cfg, max_len=max(cfg.max_len, min(max_len, m.max_length)), pooling="cls", lr=lr,
                   evals_per_epoch=2)
