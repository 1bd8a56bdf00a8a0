"""Sentence embeddings (Sentence-BERT's pooling), cosine similarity, nearest neighbours and a ranking AUC.

A sentence vector is one H-vector made from the encoder's last hidden states h_1..h_T:

    mean:   e = sum_t m_t h_t / sum_t m_t      (m_t = 1 for real tokens, 0 for padding; [CLS], [SEP] count)
    cls:    e = h_[CLS]                        (the first token, as BERT's classifier reads it)
    pooler: e = tanh(W_p h_[CLS] + b_p)        (BERT's pooler, trained for next-sentence prediction)
    max:    e_j = max_t h_tj over real tokens

then, with `normalize`, e / ||e||. sentence-transformers models (modules.json, 1_Pooling/config.json)
say which pooling they were trained with and whether they normalise; `load_model` reads that into
`LoadedModel.pooling` / `.normalize`, and it is the default here. cos(a, b) = a.b / (||a|| ||b||).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..errors import BertCoreError
from ..model.loaded import LoadedModel

POOLINGS = ("mean", "cls", "pooler", "max")
MAX_SENTENCES = 5000  # one call; the page's search corpus is ~2,000
BATCH = 32


def default_pooling(m: LoadedModel) -> tuple[str, bool]:
    """(pooling, normalize) a model was trained with (a sentence-transformers folder says), else ("mean", True)."""
    return (m.pooling or "mean", True if m.normalize is None else bool(m.normalize))


@torch.no_grad()
def sentence_embedding(m: LoadedModel, texts: list[str], pooling: str | None = None,
                       normalize: bool | None = None, progress=None) -> np.ndarray:
    """(N, H) float32 sentence vectors of `texts` (module docstring); None settings: the model's own defaults.

    `progress(fraction)`, when given, is called after each batch of BATCH sentences.
    """
    pool_default, norm_default = default_pooling(m)
    pooling = pool_default if pooling is None else pooling
    normalize = norm_default if normalize is None else normalize
    if pooling not in POOLINGS:
        raise BertCoreError(f"pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}")
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise BertCoreError("sentence_embedding takes a list of texts")
    if not texts:
        raise BertCoreError("no sentences to embed")
    if len(texts) > MAX_SENTENCES:
        raise BertCoreError(f"at most {MAX_SENTENCES:,} sentences at once, got {len(texts):,}")
    bert = m.model.bert
    if pooling == "pooler" and bert.pooler is None:
        raise BertCoreError(f"{m.name} has no pooler (its checkpoint has no pooler weights), so 'pooler' pooling "
                            "is unavailable; use mean or cls")
    encs = [m.tokenizer.encode(t, max_length=m.max_length) for t in texts]
    pad = m.config.pad_token_id or 0
    out = np.empty((len(texts), m.config.hidden_size), dtype=np.float32)
    order = sorted(range(len(encs)), key=lambda i: len(encs[i].input_ids))  # similar lengths: little padding
    for start in range(0, len(order), BATCH):
        idx = order[start:start + BATCH]
        t_max = max(len(encs[i].input_ids) for i in idx)
        ids = torch.full((len(idx), t_max), pad, dtype=torch.long)  # (B, T)
        types = torch.zeros((len(idx), t_max), dtype=torch.long)
        mask = torch.zeros((len(idx), t_max), dtype=torch.long)
        for r, i in enumerate(idx):
            n = len(encs[i].input_ids)
            ids[r, :n] = torch.as_tensor(encs[i].input_ids)
            types[r, :n] = torch.as_tensor(encs[i].token_type_ids)
            mask[r, :n] = 1
        hidden = bert(ids, types, mask)  # (B, T, H)
        out[idx] = pool(hidden, mask, pooling, bert.pooler).numpy()
        if progress is not None:
            progress(min(start + BATCH, len(order)) / len(order))
    if normalize:
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out


def pool(hidden: torch.Tensor, mask: torch.Tensor, pooling: str, pooler=None) -> torch.Tensor:
    """(B, T, H) hidden states and (B, T) 0/1 mask -> (B, H) sentence vectors (module docstring)."""
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "pooler":
        return pooler(hidden)
    m = mask.unsqueeze(-1).to(hidden.dtype)  # (B, T, 1)
    if pooling == "max":
        return hidden.masked_fill(m == 0, torch.finfo(hidden.dtype).min).max(dim=1).values
    return (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)  # mean over real tokens


def cosine_matrix(a: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """(N, M) cosine similarities between the rows of `a` (N, H) and of `b` (M, H; default `a`)."""
    b = a if b is None else b
    an = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
    bn = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
    return (an @ bn.T).astype(np.float32)


@dataclass
class Neighbour:
    """One search hit: its index in the corpus, its text and its cosine similarity to the query."""

    index: int
    text: str
    cosine: float


def nearest(query: np.ndarray, corpus: np.ndarray, texts: list[str], k: int = 5) -> list[Neighbour]:
    """The `k` corpus rows most similar (cosine) to the (H,) `query`, best first (ties: lower index first)."""
    sims = cosine_matrix(query[None, :], corpus)[0]  # (M,)
    best = np.argsort(-sims, kind="stable")[:k]  # stable: ties keep the lower index first
    return [Neighbour(int(j), texts[j], float(sims[j])) for j in best]


def ranking_auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """The probability that a random positive pair scores above a random negative one (ties count one half).

    = the area under the ROC curve (Mann-Whitney U / (n_pos n_neg)). Example: scores [0.9, 0.2, 0.5],
    positive [1, 0, 0] -> 1.0; a score that cannot tell them apart -> 0.5.
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(positive).astype(bool)
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        raise BertCoreError("the AUC needs at least one positive and one negative pair")
    order = np.argsort(s, kind="mergesort")
    ranks = np.empty(len(s), dtype=np.float64)
    sorted_s = s[order]
    i = 0
    while i < len(s):  # average ranks over ties
        j = i
        while j + 1 < len(s) and sorted_s[j + 1] == sorted_s[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    u = ranks[y].sum() - n_pos * (n_pos + 1) / 2
    return float(u / (n_pos * n_neg))


def pair_auc(m: LoadedModel, pairs: list[tuple[str, str, int]], pooling: str,
             normalize: bool | None = None) -> float:
    """AUC of cos(e(a), e(b)) at telling pairs labelled 1 (same meaning) from pairs labelled 0."""
    a = sentence_embedding(m, [p[0] for p in pairs], pooling, normalize)
    b = sentence_embedding(m, [p[1] for p in pairs], pooling, normalize)
    cos = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    return ranking_auc(cos, np.array([p[2] for p in pairs]))


def pooling_auc_table(m: LoadedModel, pairs: list[tuple[str, str, int]], poolings=("mean", "cls", "pooler"),
                      progress=None) -> list[dict]:
    """One row per pooling the model has: the AUC of cosine similarity on `pairs` (each sentence embedded once)."""
    texts = sorted({p[0] for p in pairs} | {p[1] for p in pairs})
    rows = []
    usable = [p for p in poolings if p != "pooler" or m.model.bert.pooler is not None]
    for k, pooling in enumerate(usable):
        if progress is not None:
            progress(f"{pooling} pooling: embedding {len(texts):,} sentences", k / len(usable))
        e = sentence_embedding(m, texts, pooling, normalize=True)
        rows.append({"pooling": pooling, "AUC": auc_from_embeddings(e, texts, pairs)})
    return rows


def auc_from_embeddings(e: np.ndarray, texts: list[str], pairs) -> float:
    """AUC of cos(e[a], e[b]) over `pairs` (a, b, label, ...), where row i of the (N, H) `e` embeds texts[i]."""
    where = {t: i for i, t in enumerate(texts)}
    a = e[[where[p[0]] for p in pairs]]  # (P, H)
    b = e[[where[p[1]] for p in pairs]]
    cos = (a * b).sum(1) / np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    return ranking_auc(cos, np.array([p[2] for p in pairs]))
