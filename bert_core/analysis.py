"""One forward pass -> every number the explorer's pages draw, as numpy arrays."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from .errors import BertCoreError
from .pretrained import LoadedModel
from .tokenization import Encoding, Truncation


@dataclass
class EmbeddingParts:
    """The input embedding of each token, term by term. Each (T, E); E = H except for ALBERT."""

    word: np.ndarray
    position: np.ndarray
    segment: np.ndarray  # zeros where the model has no segment table (DistilBERT: has_segments False)
    sum: np.ndarray  # word + position + segment
    normed: np.ndarray  # LayerNorm(sum): what layer 1 reads (dropout is off in eval); ALBERT: before E -> H
    projected: np.ndarray | None = None  # (T, H) ALBERT only: W normed + b, what its layer 1 reads
    has_segments: bool = True


@dataclass
class Trace:
    """Everything `analyze` computed for one input."""

    text: str
    text_pair: str | None
    tokens: list[str]
    input_ids: np.ndarray  # (T,)
    token_type_ids: np.ndarray  # (T,)
    special_tokens_mask: np.ndarray  # (T,)
    offsets: list[tuple[int, int] | None]
    sequence_ids: list[int | None]
    word_ids: list[int | None]
    embeddings: EmbeddingParts
    hidden_states: np.ndarray  # (L+1, T, H)
    attentions: np.ndarray  # (L, nh, T, T), rows sum to 1
    predictions: dict[int, list[tuple[str, float]]]  # [MASK] position -> top-k (token, prob)
    nsp: tuple[float, float] | None  # (p_is_next, p_not_next)
    truncation: Truncation | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def mask_positions(self) -> list[int]:
        return sorted(self.predictions)


def analyze(
    m: LoadedModel,
    text: str,
    text_pair: str | None = None,
    top_k: int = 5,
    predict_positions: list[int] | None = None,
) -> Trace:
    """Tokenize, run the encoder once in eval mode without gradients, and collect everything.

    Predictions are made at every [MASK] (plus `predict_positions`, if given). Only those rows go
    through the vocabulary projection: the (T, V) logits of every position are never needed.
    """
    if not 1 <= int(top_k) <= 100:
        raise BertCoreError(f"top_k must be between 1 and 100, got {top_k}")
    enc = m.tokenizer.encode(text, text_pair, max_length=m.max_length)
    return analyze_encoding(m, enc, text, text_pair, top_k, predict_positions)


def analyze_encoding(
    m: LoadedModel,
    enc: Encoding,
    text: str = "",
    text_pair: str | None = None,
    top_k: int = 5,
    predict_positions: list[int] | None = None,
) -> Trace:
    """`analyze` for an input that is already tokenized (e.g. a masking draw's corrupted ids)."""
    model = m.model
    ids = torch.from_numpy(enc.input_ids).unsqueeze(0)  # (1, T)
    types = torch.from_numpy(enc.token_type_ids).unsqueeze(0)  # (1, T)
    with torch.inference_mode():
        tr = model(ids, types, trace=True)
        positions = sorted(set(np.flatnonzero(enc.input_ids == m.tokenizer.mask_token_id).tolist())
                           | set(predict_positions or []))
        predictions: dict[int, list[tuple[str, float]]] = {}
        notes = list(m.notes)
        if positions and model.has_mlm:
            rows = tr.hidden_states[-1][0, positions]  # (P, H): only the positions we predict
            probs = model.mlm_logits(rows).softmax(-1)  # (P, V)
            k = min(int(top_k), probs.shape[-1])
            p, idx = probs.topk(k, dim=-1)  # (P, k)
            for pos, pr, ix in zip(positions, p.tolist(), idx.tolist()):
                predictions[pos] = [(m.tokenizer.id_to_token(i), float(q)) for i, q in zip(ix, pr)]
        nsp = None
        if model.has_nsp:
            p_next = model.nsp_logits(tr.pooled).softmax(-1)[0].tolist()
            nsp = (float(p_next[0]), float(p_next[1]))
        hidden = torch.stack(tr.hidden_states)[:, 0]  # (L+1, T, H)
        attn = torch.stack(tr.attentions)[:, 0]  # (L, nh, T, T)
    notes += enc.notes
    if enc.truncation is not None:
        notes.append(enc.truncation.message)
    return Trace(
        text=text,
        text_pair=text_pair,
        tokens=enc.tokens,
        input_ids=enc.input_ids,
        token_type_ids=enc.token_type_ids,
        special_tokens_mask=enc.special_tokens_mask,
        offsets=enc.offsets,
        sequence_ids=enc.sequence_ids,
        word_ids=enc.word_ids,
        embeddings=EmbeddingParts(
            word=_np(tr.word[0]),
            position=_np(tr.position[0]),
            segment=_np(tr.segment[0]),
            sum=_np(tr.sum[0]),
            normed=_np(tr.hidden_states[0][0] if tr.normed is None else tr.normed[0]),
            projected=None if tr.normed is None else _np(tr.hidden_states[0][0]),
            has_segments=model.config.has_segments,
        ),
        hidden_states=_np(hidden),
        attentions=_np(attn),
        predictions=predictions,
        nsp=nsp,
        truncation=enc.truncation,
        notes=notes,
    )


def _np(x: torch.Tensor) -> np.ndarray:
    return x.detach().cpu().numpy()


def position_similarity(m: LoadedModel, n: int | None = None) -> np.ndarray:
    """Cosine similarity between the model's learned position embeddings 0..n-1. (n, n).

    RoBERTa's rows 0..padding_idx are never used by a real token: row padding_idx + 1 is its position 0.
    """
    w = m.model.bert.embeddings.position_embeddings.weight.detach()
    w = w[m.config.position_offset:]
    w = w[: n or w.shape[0]]
    w = torch.nn.functional.normalize(w, dim=-1)
    return (w @ w.T).numpy()  # (n, n)
