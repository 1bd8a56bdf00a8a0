"""Fine-tuning BERT as a tagger: `FineTuner`'s loop with one prediction per token (tasks and baseline: `tagging.py`).

    logits_t = W_c · dropout(h_t) + b_c                      (T, C), h_t the last layer's vector of token t
    L = mean over labelled tokens of -log softmax(logits_t)[y_t]   (y_t = -100 on all but each word's first piece)

Schedule, batches, dropout seeding, clipping, the slot cap and the export are `FineTuner`'s; this class
only builds a token-classification head (HF's `BertForTokenClassification` and its family siblings) and
puts the labels on each word's first piece. Accuracy and the confusion matrix count words.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..inspect.token_tasks import first_pieces
from ..model.loaded import LoadedModel
from ..model.token_heads import BertForTokenClassification
from ..model.token_heads_io import new_token_model
from .finetuning import EvalResult, FineTuneConfig, FineTuner, _pad
from .tagging import IGNORE, TaggingTask

TAGGING_MAX_LEN = 128  # pieces per sentence, [CLS] and [SEP] included (the built-in sentences have <= 60 words)


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
        return m.classifier(m.dropout(hidden))  # (B, T, C)

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
