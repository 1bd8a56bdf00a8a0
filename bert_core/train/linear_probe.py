"""A fixed held-out probe of what an encoder learnt in pretraining, whatever its objective: a linear classifier
on its frozen sentence vectors.

Each text's vector is the mean of the encoder's last hidden states over its tokens ([CLS] and [SEP] included);
a ridge classifier (least squares onto one-hot labels, closed form: one answer, milliseconds) learns the built-in
"topic" task (what a
WordNet definition is about: animal, artifact, food, location, person, plant) from `n_train` fixed training
examples and is scored on `n_valid` fixed validation examples. The encoder is never updated, so the accuracy
measures only what pretraining put into the vectors; chance is 1/6, and the same probe is applied to an MLM,
a clm and an rtd encoder alike (Clark et al. 2020 compare MLM and RTD after fine-tuning; a frozen linear probe
is the cheap live stand-in).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch

from ..model.heads import BertForPreTraining
from ..model.tokenization import WordPieceTokenizer
from .batches import pad_rows
from .corpus import labelled_glosses

PROBE_TASK = "topic"
PROBE_TRAIN = 480  # 80 a class, fixed
PROBE_VALID = 300
PROBE_L2 = 1.0  # ridge penalty on standardised features


@dataclass(frozen=True)
class ProbeSet:
    """The probe's fixed texts and labels."""

    train_texts: tuple[str, ...]
    train_labels: tuple[int, ...]
    valid_texts: tuple[str, ...]
    valid_labels: tuple[int, ...]
    labels: tuple[str, ...]


@functools.lru_cache(maxsize=4)
def probe_set(n_train: int = PROBE_TRAIN, n_valid: int = PROBE_VALID) -> ProbeSet:
    """The first `n_train` training and `n_valid` validation examples of the topic task, balanced per class."""
    labels, train, valid = labelled_glosses()[PROBE_TASK]

    def take(pairs, n):
        per = n // len(labels)
        out, seen = [], dict.fromkeys(range(len(labels)), 0)
        for t, y in pairs:
            if seen[y] < per:
                out.append((t, y))
                seen[y] += 1
        return tuple(t for t, _ in out), tuple(y for _, y in out)

    return ProbeSet(*take(train, n_train), *take(valid, n_valid), labels)


def without_probe_texts(lines: list[str], probe: ProbeSet | None = None) -> list[str]:
    """`lines` minus the probe's validation texts (compared lower-cased, trimmed), so the probe stays held out.

    `pretrain`'s training split already holds them out; the Training page's 10,000-line sample of all the
    glosses holds 13 of the 300, which a run on it must not read.
    """
    held = {t.strip().lower() for t in (probe or probe_set()).valid_texts}
    return [x for x in lines if x.strip().lower() not in held]


@torch.no_grad()
def sentence_vectors(model: BertForPreTraining, tok: WordPieceTokenizer, texts, seq_len: int = 64,
                     batch_size: int = 128) -> np.ndarray:
    """(N, H): each text's mean last hidden state over its real tokens, in eval mode."""
    was_training = model.training
    model.eval()
    cls, sep, pad = tok.cls_token_id, tok.sep_token_id, tok.pad_token_id
    ids_all = tok.encode_batch_plain(list(texts))
    order = sorted(range(len(ids_all)), key=lambda i: len(ids_all[i]))  # neighbours in length: little padding
    out = []
    try:
        for s in range(0, len(order), batch_size):
            ids, attn = pad_rows([[cls, *ids_all[i][: seq_len - 2], sep] for i in order[s:s + batch_size]], pad)
            h = model(ids, None, attn)  # (B, T, H)
            w = attn.unsqueeze(-1).to(h.dtype)  # (B, T, 1)
            out.append(((h * w).sum(1) / w.sum(1)).numpy())
    finally:
        model.train(was_training)
    vecs = np.empty((len(order), out[0].shape[1]), dtype=out[0].dtype) if out else np.zeros((0, 0))
    vecs[order] = np.concatenate(out) if out else vecs
    return vecs


def fit_ridge(x: np.ndarray, y: np.ndarray, n_classes: int, l2: float = PROBE_L2) -> tuple[np.ndarray, np.ndarray]:
    """Ridge classifier: W = (X_c^T X_c + l2 I)^-1 X_c^T (Y - mean Y), b = mean Y - mean(X) W (X_c: centred X).

    Predict argmax(x W + b). Closed form, in float64: the same data always gives the same probe.
    """
    x = np.asarray(x, dtype=np.float64)
    onehot = np.eye(n_classes)[np.asarray(y)]  # (N, C)
    mx, my = x.mean(0), onehot.mean(0)
    xc = x - mx
    w = np.linalg.solve(xc.T @ xc + l2 * np.eye(x.shape[1]), xc.T @ (onehot - my))  # (H, C)
    return w, my - mx @ w


def probe_accuracy(model: BertForPreTraining, tok: WordPieceTokenizer, probe: ProbeSet | None = None) -> float:
    """Validation accuracy of the linear probe on `model`'s frozen sentence vectors (chance: 1 / classes)."""
    p = probe or probe_set()
    tr, va = sentence_vectors(model, tok, p.train_texts), sentence_vectors(model, tok, p.valid_texts)
    mu, sd = tr.mean(0), tr.std(0) + 1e-6  # standardised with the training vectors' statistics
    w, b = fit_ridge((tr - mu) / sd, np.array(p.train_labels), len(p.labels))
    pred = (((va - mu) / sd) @ w + b).argmax(1)
    return float((pred == np.array(p.valid_labels)).mean())
