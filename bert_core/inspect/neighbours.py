"""Every word's contextual vector at every layer, and a word's nearest neighbours in a corpus (exBERT's search).

A word's vector at layer l is the hidden state of its first word piece (as the Tagging page and BERT's paper
label words): h^l_w, l = 0 (the embeddings' output) .. L. One forward pass gives all L+1 of them.

An index holds the unit vectors u^l_w = h^l_w / ||h^l_w|| of every word of a corpus; the neighbours of a
query word q at layer l are the corpus words with the largest

    cos(q, w) = u^l_q . u^l_w

Words that are near at layer l are ones the model treats alike there: at layer 0 mostly the same word form,
higher up the same role or meaning in context (Reif et al. 2019; exBERT, Hoover et al. 2020).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import torch

from ..errors import BertCoreError
from ..model.loaded import LoadedModel, Progress
from . import stored
from .token_tasks import first_pieces, split_words

MAX_WORDS_PIECES = 128  # pieces per sentence, [CLS] and [SEP] included; a word past the cut gets no vector
INDEX_MAX_BYTES = 64 * 2**20  # one index's vectors; charged to the app's result cache (400 MB by default)
INDEX_DTYPE = np.float16  # unit vectors: 2 bytes a number, cosines to ~1e-3 (search runs in float32)
BATCH = 32


@dataclass(frozen=True)
class WordVectors:
    """Each word's first-piece hidden state at every layer, for words of pre-split sentences."""

    vectors: np.ndarray  # (L+1, N, H) float32 (or the dtype asked for): 0 = the embeddings' output, then 1..L
    sentence: np.ndarray  # (N,) which sentence the word is in
    word: np.ndarray  # (N,) its index among the sentence's words


@torch.no_grad()
def word_vectors(encoder: torch.nn.Module, tok, sentences, max_len: int = MAX_WORDS_PIECES,
                 batch_size: int = BATCH, progress: Progress | None = None, what: str = "Reading",
                 dtype=np.float32) -> WordVectors:
    """(L+1, N, H) vectors of every word of `sentences` (each a list of words, read joined by single spaces).

    `encoder` is a `BertModel` (a LoadedModel's `.model.bert`, or an untrained copy); it runs in eval mode,
    one forward pass per batch with every hidden state (sentences sorted by length: little padding).
    Words past `max_len` pieces are left out (none of the built-in sentences is that long). `dtype` float16
    halves what a large table holds (the probes store theirs so).
    """
    sentences = [list(ws) for ws in sentences]
    if not sentences:
        raise BertCoreError("no sentences to read")
    was_training = encoder.training
    encoder.eval()
    rows, owners = [], []
    texts = [" ".join(ws) for ws in sentences]
    for ws, (ids, offsets) in zip(sentences, tok.encode_batch_offsets(texts)):
        first = first_pieces(offsets, ws)[: max_len - 2]
        rows.append([tok.cls_token_id, *ids[: max_len - 2], tok.sep_token_id])
        owners.append([(t + 1, w) for t, w in enumerate(first) if w is not None])  # (position, word)
    order = sorted(range(len(rows)), key=lambda i: len(rows[i]))
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    n_words = sum(len(o) for o in owners)
    out = None  # (L+1, N, H), allocated when the first batch says how many hidden states there are
    start = np.cumsum([0] + [len(owners[i]) for i in range(len(rows))])  # each sentence's first word's slot
    sent = np.repeat(np.arange(len(rows)), [len(o) for o in owners])
    word = np.array([w for o in owners for _, w in o], dtype=np.int64)
    try:
        for b in range(0, len(order), batch_size):
            batch = order[b:b + batch_size]
            T = max(len(rows[i]) for i in batch)
            ids = torch.full((len(batch), T), pad, dtype=torch.long)
            attn = torch.zeros_like(ids)
            for r, i in enumerate(batch):
                ids[r, : len(rows[i])] = torch.tensor(rows[i])
                attn[r, : len(rows[i])] = 1
            hs = torch.stack(encoder(ids, None, attn, trace=True).hidden_states)  # (L+1, B, T, H)
            if out is None:
                out = np.empty((hs.shape[0], n_words, hs.shape[-1]), dtype=dtype)
            for r, i in enumerate(batch):
                pos = [p for p, _ in owners[i]]
                out[:, start[i]:start[i + 1]] = hs[:, r, pos].numpy()
            if progress is not None:
                progress(f"{what}: {min(b + batch_size, len(order)):,} of {len(order):,} sentences",
                         min(1.0, (b + batch_size) / len(order)))
    finally:
        encoder.train(was_training)
    return WordVectors(out, sent.astype(np.int32), word.astype(np.int32))


# --- the index ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NeighbourIndex:
    """Unit vectors of every word of a corpus at every layer, with the words, their sentences and tags."""

    units: np.ndarray  # (L+1, N, H) INDEX_DTYPE: h / ||h||
    sentence: np.ndarray  # (N,) sentence of each word
    word: np.ndarray  # (N,) index in its sentence
    tags: np.ndarray  # (N,) tag id of each word
    sentences: tuple[tuple[str, ...], ...]
    tag_names: tuple[str, ...]

    @property
    def n_words(self) -> int:
        return int(self.units.shape[1])

    def word_text(self, i: int) -> str:
        return self.sentences[int(self.sentence[i])][int(self.word[i])]

    @property
    def nbytes(self) -> int:
        return int(self.units.nbytes + self.sentence.nbytes + self.word.nbytes + self.tags.nbytes)


def index_bytes_per_word(m: LoadedModel) -> int:
    """Bytes one word costs in an index: (L+1) x H numbers of INDEX_DTYPE (plus 12 bytes of ids)."""
    return (m.config.num_hidden_layers + 1) * m.config.hidden_size * np.dtype(INDEX_DTYPE).itemsize + 12


def sentences_within(m: LoadedModel, sentences, budget: int = INDEX_MAX_BYTES) -> int:
    """How many of `sentences` (from the first) an index of `m` can hold within `budget` bytes."""
    per, total = index_bytes_per_word(m), 0
    for n, ws in enumerate(sentences):
        total += len(ws) * per
        if total > budget:
            return n
    return len(sentences)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)


def build_index(m: LoadedModel, sentences, tags, tag_names, budget: int = INDEX_MAX_BYTES,
                progress: Progress | None = None, store: bool = True) -> NeighbourIndex:
    """Index every word of `sentences` (lists of words; `tags`: a tag id per word) at every layer of `m`.

    Refuses a corpus whose vectors would exceed `budget` bytes (`sentences_within` says how many fit).
    `store`: read the index from disk when this model already indexed this corpus on this machine, and keep it
    there once built (`bert_core.inspect.stored`); the arrays are the same either way.
    """
    sentences = tuple(tuple(ws) for ws in sentences)
    n_fit = sentences_within(m, sentences, budget)
    if n_fit < len(sentences):
        raise BertCoreError(f"{len(sentences):,} sentences need more than {budget / 2**20:.0f} MB of vectors on "
                            f"{m.name}; at most {n_fit:,} fit")

    def compute() -> dict[str, np.ndarray]:
        wv = word_vectors(m.model.bert, m.tokenizer, sentences, progress=progress, what="Indexing")
        tag_ids = np.array([tags[s][w] for s, w in zip(wv.sentence, wv.word)], dtype=np.int32)
        return {"units": _unit(wv.vectors).astype(INDEX_DTYPE), "sentence": wv.sentence, "word": wv.word,
                "tags": tag_ids}

    # The same corpus on the same model gives the same index: a page and a notebook on this machine share it.
    args = [sentences, [list(t) for t in tags], list(tag_names)] if store else None
    a, _ = stored.stored("neighbour-index", m, args, compute) if store else (compute(), False)
    return NeighbourIndex(a["units"], a["sentence"], a["word"], a["tags"], sentences, tuple(tag_names))


# --- a query: the words of your sentence ------------------------------------------------------------


@dataclass(frozen=True)
class QueryWords:
    """The sidebar's text split into words (as Brown splits them), each word's vectors at every layer."""

    words: tuple[str, ...]
    vectors: np.ndarray  # (L+1, W, H) float32; a word cut by the length limit has NaN rows
    has_vector: np.ndarray  # (W,) bool


def query_words(m: LoadedModel, text: str) -> QueryWords:
    """Split `text` into words and read every word's vector at every layer (the corpus is read the same way)."""
    # A special token typed in the text ([MASK]) is one word, as the tokenizer reads it, not "[", "MASK", "]".
    specials = sorted({t for t in m.tokenizer.specials.values() if t}, key=len, reverse=True)
    parts = re.split("(" + "|".join(map(re.escape, specials)) + ")", text or "") if specials else [text or ""]
    words = [w for part in parts for w in ([part] if part in specials else [w for w, _, _ in split_words(part)])]
    if not words:
        raise BertCoreError("type a sentence with some words")
    wv = word_vectors(m.model.bert, m.tokenizer, [words], max_len=min(MAX_WORDS_PIECES, m.max_length))
    L1, _, H = wv.vectors.shape
    vecs = np.full((L1, len(words), H), np.nan, dtype=np.float32)
    vecs[:, wv.word] = wv.vectors
    has = np.zeros(len(words), dtype=bool)
    has[wv.word] = True
    return QueryWords(tuple(words), vecs, has)


@dataclass(frozen=True)
class Neighbours:
    """The k corpus words nearest a query word at one layer, best first."""

    ids: np.ndarray  # (k,) word ids in the index
    cosines: np.ndarray  # (k,) float32
    tag_counts: np.ndarray  # (C,) how many of the k have each tag


def nearest_words(index: NeighbourIndex, query: np.ndarray, layer: int, k: int = 20) -> Neighbours:
    """The `k` index words whose unit vectors at `layer` have the largest cosine with `query` (H,).

    Ties keep the lower word id first (a stable sort), so the answer is the same on every machine.
    """
    if not 0 <= layer < index.units.shape[0]:
        raise BertCoreError(f"layer must be 0..{index.units.shape[0] - 1}, not {layer}")
    q = np.asarray(query, dtype=np.float32)
    if q.shape != (index.units.shape[2],) or not np.isfinite(q).all():
        raise BertCoreError("that word has no vector (cut by the length limit?)")
    sims = index.units[layer].astype(np.float32) @ (q / max(float(np.linalg.norm(q)), 1e-12))  # (N,)
    best = np.argsort(-sims, kind="stable")[: max(1, min(k, len(sims)))]
    counts = np.bincount(index.tags[best], minlength=len(index.tag_names))
    return Neighbours(best, sims[best].astype(np.float32), counts)


def neighbour_rows(index: NeighbourIndex, res: Neighbours) -> list[dict]:
    """One row per neighbour, best first: rank, word, tag, cosine (4 decimals), 8 words each side, the sentence."""
    rows = []
    for rank, (i, cos) in enumerate(zip(res.ids, res.cosines), 1):
        s, w = int(index.sentence[i]), int(index.word[i])
        ws = index.sentences[s]
        rows.append({"rank": rank, "word": ws[w], "tag": index.tag_names[int(index.tags[i])],
                     "cosine": round(float(cos), 4),
                     "left": " ".join(ws[max(0, w - 8):w]), "right": " ".join(ws[w + 1:w + 9]),
                     "sentence": " ".join(ws)})
    return rows


def occurrences(index: NeighbourIndex, word: str) -> np.ndarray:
    """Word ids of every occurrence of `word` (case-insensitive) in the index."""
    w = word.lower()
    return np.array([i for i in range(index.n_words) if index.word_text(i).lower() == w], dtype=np.int64)


def pca_2d(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, 2) coordinates of the rows of `x` on their first two principal components, and the variance share
    of each (SVD of the centred rows; each axis's sign fixed so its largest loading is positive)."""
    x = np.asarray(x, dtype=np.float64)
    if x.shape[0] < 2:
        raise BertCoreError("a projection needs at least two vectors")
    xc = x - x.mean(0)
    u, s, vt = np.linalg.svd(xc, full_matrices=False)
    k = min(2, len(s))
    signs = np.sign(vt[np.arange(k), np.abs(vt[:k]).argmax(1)])
    coords = np.zeros((x.shape[0], 2))
    coords[:, :k] = u[:, :k] * s[:k] * signs
    var = s**2
    share = np.zeros(2)
    share[:k] = var[:k] / max(var.sum(), 1e-300)
    return coords, share
