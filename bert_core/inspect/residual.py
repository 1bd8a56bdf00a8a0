"""Across the layers: the logit lens, the residual stream (norms, cosines, PCA), the same word in two places.

What the Layers page reads: each layer's hidden state read through the MLM head (the lens), how far each
layer moves each token, and whether a word's vectors drift apart with context. One layer's own arithmetic
is in `inside_layers.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import torch

from ..errors import BertCoreError
from ..model.loaded import LoadedModel
from ..model.tokenization import Encoding, Truncation
from .analysis import analyze
from .inside_layers import block_input, block_steps, blocks, encoding_notes

MAX_LENS_POSITIONS = 16  # [MASK] positions the lens reads (each costs L+1 rows through the vocabulary)
MAX_REPEATED_WORDS = 20


@dataclass
class LogitLens:
    """The MLM head applied to every hidden state 0..L at each [MASK] (state 0: the embedding output)."""

    tokens: list[str]
    predictions: dict[int, list[list[tuple[str, float]]]]  # pos -> per state, top-k (token, prob)
    final_token: dict[int, str]  # pos -> the last layer's top candidate (the model's answer)
    final_rank: dict[int, np.ndarray]  # pos -> (L+1,) its rank (1 = top) in each state's distribution
    final_prob: dict[int, np.ndarray]  # pos -> (L+1,) its probability in each state
    skipped: int = 0  # [MASK] positions beyond MAX_LENS_POSITIONS, not read
    truncation: Truncation | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def mask_positions(self) -> list[int]:
        return sorted(self.predictions)


@dataclass
class ResidualStream:
    """How every token's vector changes through the layers (the Layers page's numbers)."""

    tokens: list[str]
    token_type_ids: np.ndarray  # (T,)
    special_tokens_mask: np.ndarray  # (T,)
    norms: np.ndarray  # (L+1, T)    |h_l[t]|
    self_similarity: np.ndarray  # (L, T)   cos(h_{l+1}[t], h_l[t]): how much layer l turned each token
    token_similarity: np.ndarray  # (L+1, T, T) cos(h_l[i], h_l[j])
    attn_update: np.ndarray  # (L, T)   |attn_out| / |x| per token and layer
    ffn_update: np.ndarray  # (L, T)    |ffn_out| / |h1|
    pca: np.ndarray | None  # (L+1, T, 2) every token at every layer on the first two principal axes (pca=True)
    pca_explained: np.ndarray | None  # (2,) share of the variance each axis explains
    cls: np.ndarray  # (H,)          the last layer's [CLS] vector
    pooled: np.ndarray | None  # (H,) tanh(W_p h_[CLS] + b_p), or None without a pooler
    lens: LogitLens | None = None  # the logit lens of the same forward pass (lens_top_k > 0 and an MLM head)
    truncation: Truncation | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class RepeatedWord:
    """One word that occurs twice, with the cosine of its two vectors at every hidden state."""

    word: str
    first: list[int]  # token positions of the first occurrence (its word pieces)
    second: list[int]  # token positions of the second
    cos: np.ndarray  # (L+1,) cos(mean of first's pieces, mean of second's pieces) per state


@dataclass
class SameWord:
    """Every word that occurs at least twice in an input, compared across the layers."""

    tokens: list[str]
    words: list[RepeatedWord]
    truncation: Truncation | None = None
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# The logit lens


def logit_lens(m: LoadedModel, text: str, text_pair: str | None = None, top_k: int = 5,
               max_positions: int = MAX_LENS_POSITIONS) -> LogitLens:
    """The model's MLM head (transform, LayerNorm, tied decoder) read at every hidden state, per [MASK].

    State L is what `analyze` predicts; earlier states show how the answer forms. The head was
    trained on the last layer only, so earlier layers are read with a head not made for them.
    Only the first `max_positions` [MASK]s are read (each costs L+1 rows through the vocabulary).
    """
    if not m.has_mlm:
        raise BertCoreError("this checkpoint has no masked-language-model head (no cls.predictions weights), "
                            "so there is nothing to read the hidden states with")
    if not 1 <= int(top_k) <= 100:
        raise BertCoreError(f"top_k must be between 1 and 100, got {top_k}")
    enc = m.tokenizer.encode(text, text_pair, max_length=m.max_length)
    shown, skipped = _lens_positions(m, enc, max_positions)
    ids = torch.from_numpy(enc.input_ids).unsqueeze(0)  # (1, T)
    types = torch.from_numpy(enc.token_type_ids).unsqueeze(0)
    with torch.inference_mode():
        tr = m.model(ids, types, trace=True)
        hidden = torch.stack(tr.hidden_states)[:, 0]  # (L+1, T, H)
        predictions, final_token, final_rank, final_prob = _read_lens(m, hidden, shown, top_k)
    return _lens_result(m, enc, predictions, final_token, final_rank, final_prob, shown, skipped)


def _lens_positions(m: LoadedModel, enc: Encoding, max_positions: int) -> tuple[list[int], int]:
    """The [MASK] positions the lens reads (the first `max_positions`) and how many it skips."""
    masks = np.flatnonzero(enc.input_ids == m.tokenizer.mask_token_id).tolist()
    return masks[:max_positions], max(0, len(masks) - max_positions)


def _read_lens(m: LoadedModel, hidden: torch.Tensor, positions: list[int], top_k: int):
    """The MLM head on every state (L+1, T, H) at each position: top-k, the final answer's rank and p."""
    predictions, final_token, final_rank, final_prob = {}, {}, {}, {}
    for pos in positions:  # one position at a time: (L+1, V) probabilities, never (P, L+1, V)
        probs = m.model.mlm_logits(hidden[:, pos]).softmax(-1)  # (L+1, V)
        k = min(int(top_k), probs.shape[-1])
        p, idx = probs.topk(k, dim=-1)  # (L+1, k)
        predictions[pos] = [[(m.tokenizer.id_to_token(i), float(q)) for i, q in zip(ix, pr)]
                            for pr, ix in zip(p.tolist(), idx.tolist())]
        answer = int(idx[-1, 0])
        pa = probs[:, answer]  # (L+1,)
        final_token[pos] = m.tokenizer.id_to_token(answer)
        final_prob[pos] = pa.numpy().copy()
        final_rank[pos] = ((probs > pa[:, None]).sum(-1) + 1).numpy()
    return predictions, final_token, final_rank, final_prob


def _lens_result(m, enc, predictions, final_token, final_rank, final_prob, shown, skipped) -> LogitLens:
    notes = encoding_notes(m, enc)
    if skipped:
        notes.append(f"The lens reads the first {len(shown)} of {len(shown) + skipped} [MASK] positions.")
    return LogitLens(tokens=enc.tokens, predictions=predictions, final_token=final_token, final_rank=final_rank,
                     final_prob=final_prob, skipped=skipped, truncation=enc.truncation, notes=notes)


# ---------------------------------------------------------------------------------------------
# The residual stream across all layers


def _cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Cosine along the last axis (0 for a zero vector)."""
    return torch.nn.functional.cosine_similarity(a, b, dim=-1, eps=1e-12)


def _ratio(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """|a| / |b| along the last axis."""
    return a.norm(dim=-1) / b.norm(dim=-1).clamp_min(1e-12)


def pca_2d(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(N, H) -> (N, 2) coordinates on the first two principal axes, and their explained variance share.

    The axes are the top two eigenvectors of Xc^T Xc (Xc: the centred points), in float64. With
    fewer points than dimensions the N x N matrix Xc Xc^T is decomposed instead: it has the same
    nonzero eigenvalues, and u -> Xc^T u / sqrt(lambda) maps its eigenvectors to the axes (far
    cheaper: a short text on the bundled model has 5 x 14 points in 256 dimensions). The total
    variance is the trace, sum(Xc^2). Each axis's sign is fixed so its largest loading is positive
    (the same input always gives the same picture).
    Example: points on a line y = 2x in 2-D -> all variance on axis 1, explained ~ (1.0, 0.0).
    """
    X = np.asarray(points, dtype=np.float64)
    N, H = X.shape
    Xc = X - X.mean(axis=0, keepdims=True)  # (N, H)
    if N < H:
        vals, U = np.linalg.eigh(Xc @ Xc.T)  # (N,), (N, N), ascending
        order = np.argsort(vals)[::-1][:2]
        lam = vals[order].clip(min=0)
        axes = (Xc.T @ U[:, order]) / np.sqrt(np.where(lam > 0, lam, 1.0))  # (H, 2): unit where lam > 0
    else:
        vals, vecs = np.linalg.eigh(Xc.T @ Xc)  # (H,), (H, H), ascending
        order = np.argsort(vals)[::-1][:2]
        lam, axes = vals[order].clip(min=0), vecs[:, order]
    signs = np.sign(axes[np.abs(axes).argmax(axis=0), range(axes.shape[1])])
    axes = axes * np.where(signs == 0, 1, signs)
    total = float((Xc**2).sum())
    explained = lam / total if total > 0 else np.zeros(len(order))
    coords = Xc @ axes  # (N, <=2)
    if coords.shape[1] < 2:  # H = 1 or a single point: pad a zero axis
        coords = np.pad(coords, ((0, 0), (0, 2 - coords.shape[1])))
        explained = np.pad(explained, (0, 2 - len(explained)))
    return coords.astype(np.float32), explained.astype(np.float32)


@dataclass(frozen=True)
class PairSpread:
    """The cosines between different tokens at one state: their range, median and how many are <= 0."""

    low: float
    median: float
    high: float
    at_most_zero: int
    pairs: int


def pair_spread(similarity: np.ndarray) -> PairSpread | None:
    """Summarise a (T, T) cosine map over its pairs i < j (the diagonal is 1 by definition); None under 2 tokens."""
    sim = np.asarray(similarity, dtype=float)
    off = sim[np.triu_indices(sim.shape[0], k=1)]
    if off.size == 0:
        return None
    return PairSpread(float(off.min()), float(np.median(off)), float(off.max()), int((off <= 0).sum()), int(off.size))


def residual_stream(m: LoadedModel, text: str, text_pair: str | None = None, lens_top_k: int = 0,
                    pca: bool = True) -> ResidualStream:
    """Norms, similarities, update sizes and a PCA of every token at every layer, for one input.

    Each layer is run by `block_steps` (the same arithmetic as `layer_steps`), so the update sizes
    |attn_out|/|x| and |ffn_out|/|h1| come from the very numbers the Inside-a-layer page shows.
    With `lens_top_k` > 0 (and an MLM head) the logit lens is read from the same hidden states
    (`.lens`, equal to `logit_lens(m, text, text_pair, top_k=lens_top_k)`): one forward pass for both.
    `pca=False` skips the PCA (the costliest part on a bert-base-sized model: an eigendecomposition).
    """
    if lens_top_k and not 1 <= int(lens_top_k) <= 100:
        raise BertCoreError(f"top_k must be between 1 and 100, got {lens_top_k}")
    enc = m.tokenizer.encode(text, text_pair, max_length=m.max_length)
    lens = None
    with torch.inference_mode():
        x, mask = block_input(m, enc, 0)
        hidden, attn_up, ffn_up = [x[0]], [], []
        for block in blocks(m):
            s = block_steps(block, x, mask)
            attn_up.append(_ratio(s["attn_out"][0], s["x"][0]))  # (T,)
            ffn_up.append(_ratio(s["ffn_out"][0], s["h1"][0]))
            x = s["out"]
            hidden.append(x[0])
        h = torch.stack(hidden)  # (L+1, T, H)
        if lens_top_k and m.has_mlm:
            shown, skipped = _lens_positions(m, enc, MAX_LENS_POSITIONS)
            lens = _lens_result(m, enc, *_read_lens(m, h, shown, lens_top_k), shown, skipped)
        unit = torch.nn.functional.normalize(h, dim=-1, eps=1e-12)
        token_sim = unit @ unit.transpose(-1, -2)  # (L+1, T, T)
        pooler = m.model.bert.pooler
        pooled = pooler(h[-1:])[0].numpy() if pooler is not None else None  # pooler reads row 0: [CLS]
        norms = h.norm(dim=-1).numpy()
        self_sim = _cos(h[1:], h[:-1]).numpy()  # (L, T)
        L1, T, H = h.shape
        coords, explained = pca_2d(h.reshape(L1 * T, H).numpy()) if pca else (None, None)
    return ResidualStream(
        tokens=enc.tokens, token_type_ids=enc.token_type_ids, special_tokens_mask=enc.special_tokens_mask,
        norms=norms, self_similarity=self_sim, token_similarity=token_sim.numpy(),
        attn_update=torch.stack(attn_up).numpy(), ffn_update=torch.stack(ffn_up).numpy(),
        pca=None if coords is None else coords.reshape(L1, T, 2), pca_explained=explained,
        cls=h[-1, 0].numpy().copy(), pooled=pooled, lens=lens, truncation=enc.truncation, notes=encoding_notes(m, enc),
    )


# ---------------------------------------------------------------------------------------------
# Same word, two contexts


def word_occurrences(tokens: list[str], sequence_ids: list, word_ids: list) -> dict[str, list[list[int]]]:
    """Each word (its pieces joined, lower-cased) -> the token positions of each of its occurrences.

    Only words with letters or digits count (not punctuation). Words are those of the tokenizer's
    pre-tokenizer (`word_ids`), per sentence.
    Example: [CLS] the bank , the river bank [SEP] -> {"the": [[1], [4]], "bank": [[2], [6]], "river": [[5]]}
    """
    groups: dict[tuple[int, int], list[int]] = {}
    for pos, (seq, wid) in enumerate(zip(sequence_ids, word_ids)):
        if seq is not None and wid is not None:
            groups.setdefault((seq, wid), []).append(pos)
    out: dict[str, list[list[int]]] = {}
    for positions in groups.values():
        word = "".join(tokens[p][2:] if tokens[p].startswith("##") else tokens[p] for p in positions).lower()
        if re.search(r"\w", word):
            out.setdefault(word, []).append(positions)
    return out


def same_word(m: LoadedModel, text: str, text_pair: str | None = None) -> SameWord:
    """For every word that occurs twice or more: cosine of its first two occurrences at each hidden state.

    A word of several pieces is represented by the mean of its pieces' vectors. The hidden states
    are `analyze`'s, so state 0 is the embedding output (same word piece -> nearly the same vector;
    only position and segment differ) and later states show how much context pulls them apart.
    """
    t = analyze(m, text, text_pair)
    occ = word_occurrences(t.tokens, t.sequence_ids, t.word_ids)
    words = []
    h = torch.from_numpy(np.ascontiguousarray(t.hidden_states))  # (L+1, T, H)
    for word, places in occ.items():
        if len(places) < 2 or len(words) >= MAX_REPEATED_WORDS:
            continue
        a, b = places[0], places[1]
        va, vb = h[:, a].mean(dim=1), h[:, b].mean(dim=1)  # (L+1, H)
        words.append(RepeatedWord(word, a, b, _cos(va, vb).numpy()))
    return SameWord(tokens=t.tokens, words=words, truncation=t.truncation, notes=t.notes)


__all__ = [
    "LogitLens",
    "RepeatedWord",
    "ResidualStream",
    "SameWord",
    "logit_lens",
    "pca_2d",
    "residual_stream",
    "same_word",
    "word_occurrences",
]
