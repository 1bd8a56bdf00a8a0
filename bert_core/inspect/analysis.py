"""One forward pass -> every number the explorer's pages draw, as numpy arrays."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..errors import BertCoreError
from ..model.loaded import LoadedModel
from ..model.tokenization import Encoding, Truncation


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
    embeddings: EmbeddingParts | None  # None when `analyze(..., embeddings=False)`
    hidden_states: np.ndarray | None  # (L+1, T, H); None when `analyze(..., hidden_states=False)`
    attentions: np.ndarray | None  # (L, nh, T, T), rows sum to 1; None when `analyze(..., attentions=False)`
    predictions: dict[int, list[tuple[str, float]]]  # [MASK] position -> top-k (token, prob)
    nsp: tuple[float, float] | None  # (p_is_next, p_not_next)
    truncation: Truncation | None = None
    notes: list[str] = field(default_factory=list)
    ablated: tuple[tuple[int, int], ...] = ()  # (layer, head), 0-based: the heads knocked out in this pass

    @property
    def mask_positions(self) -> list[int]:
        return sorted(self.predictions)


def analyze(
    m: LoadedModel,
    text: str,
    text_pair: str | None = None,
    top_k: int = 5,
    predict_positions: list[int] | None = None,
    *,
    embeddings: bool = True,
    hidden_states: bool = True,
    attentions: bool = True,
    ablate_heads=(),
) -> Trace:
    """Tokenize, run the encoder once in eval mode without gradients, and collect everything.

    Predictions are made at every [MASK] (plus `predict_positions`, if given). Only those rows go
    through the vocabulary projection: the (T, V) logits of every position are never needed.

    A page that needs less can say so: `attentions=False` drops the (L, nh, T, T) maps, 85% of a
    trace (bert-base at 512 tokens: 151 of 178 MB), and those fields are then None. The numbers
    kept are the same fp32 numbers either way (the same forward pass).

    `ablate_heads` [(layer, head), ...] (0-based) knocks those heads out: their context vectors are zeroed
    before the attention output projection (transformers v4's `head_mask=0`), in the same single pass, so
    every field of the trace (hidden states, attentions, predictions, NSP) is the ablated model's.
    Example: analyze(m, "The cat [MASK] on the mat.", ablate_heads=[(0, 3), (5, 11)]).
    """
    if not 1 <= int(top_k) <= 100:
        raise BertCoreError(f"top_k must be between 1 and 100, got {top_k}")
    enc = m.tokenizer.encode(text, text_pair, max_length=m.max_length)
    return analyze_encoding(m, enc, text, text_pair, top_k, predict_positions, embeddings=embeddings,
                            hidden_states=hidden_states, attentions=attentions, ablate_heads=ablate_heads)


def analyze_encoding(
    m: LoadedModel,
    enc: Encoding,
    text: str = "",
    text_pair: str | None = None,
    top_k: int = 5,
    predict_positions: list[int] | None = None,
    *,
    embeddings: bool = True,
    hidden_states: bool = True,
    attentions: bool = True,
    ablate_heads=(),
) -> Trace:
    """`analyze` for an input that is already tokenized (e.g. a masking draw's corrupted ids)."""
    model = m.model
    ids = torch.from_numpy(enc.input_ids).unsqueeze(0)  # (1, T)
    types = torch.from_numpy(enc.token_type_ids).unsqueeze(0)  # (1, T)
    ablated = check_heads(m, ablate_heads)
    head_mask = None
    if ablated:
        head_mask = torch.ones(m.config.num_hidden_layers, m.config.num_attention_heads)  # (L, nh)
        head_mask[tuple(zip(*ablated))] = 0.0
    with torch.inference_mode():
        tr = model(ids, types, trace=True, head_mask=head_mask)
        positions = sorted(set(np.flatnonzero(enc.input_ids == m.tokenizer.mask_token_id).tolist())
                           | set(predict_positions or []))
        predictions: dict[int, list[tuple[str, float]]] = {}
        notes = list(m.notes)
        if model.config.is_decoder and positions:
            # A left-to-right model predicts token p at position p - 1 (from the words before it only).
            positions = [p for p in positions if p > 0]
            notes.append("A causal (left-to-right) model: each [MASK] is guessed from the words before it, as the "
                         "next-token prediction at the position just before; it never reads what follows.")
        if positions and model.has_mlm:
            read = [p - 1 for p in positions] if model.config.is_decoder else positions
            rows = tr.hidden_states[-1][0, read]  # (P, H): only the positions we predict
            probs = model.mlm_logits(rows).softmax(-1)  # (P, V)
            k = min(int(top_k), probs.shape[-1])
            p, idx = probs.topk(k, dim=-1)  # (P, k)
            for pos, pr, ix in zip(positions, p.tolist(), idx.tolist()):
                predictions[pos] = [(m.tokenizer.id_to_token(i), float(q)) for i, q in zip(ix, pr)]
        nsp = None
        if model.has_nsp:
            p_next = model.nsp_logits(tr.pooled).softmax(-1)[0].tolist()
            nsp = (float(p_next[0]), float(p_next[1]))
        # Copied before the lists are freed. (T, E) LayerNorm(sum); ALBERT's layer 1 reads W normed + b (T, H).
        albert = tr.normed is not None
        normed = _np(tr.normed[0] if albert else tr.hidden_states[0][0]).copy()
        first = _np(tr.hidden_states[0][0]).copy()  # what layer 1 reads
        hidden = _stack_and_free(tr.hidden_states) if hidden_states else None  # (L+1, T, H)
        attn = _stack_and_free(tr.attentions) if attentions else None  # (L, nh, T, T)
        if hidden is not None:
            first = hidden[0]  # the same numbers: hold them once
        parts = EmbeddingParts(
            word=_np(tr.word[0]),
            position=_np(tr.position[0]).copy(),  # a view of the model's weights: a trace is a snapshot
            segment=_np(tr.segment[0]),
            sum=_np(tr.sum[0]),
            normed=normed if albert else first,
            projected=first if albert else None,
            has_segments=model.config.has_segments,
        ) if embeddings else None
        del tr  # every per-layer tensor the pages did not ask for goes now, not when the trace is dropped
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
        embeddings=parts,
        hidden_states=hidden,
        attentions=attn,
        predictions=predictions,
        nsp=nsp,
        truncation=enc.truncation,
        notes=notes,
        ablated=ablated,
    )


def check_heads(m: LoadedModel, heads) -> tuple[tuple[int, int], ...]:
    """(layer, head) pairs, 0-based, checked against the model and sorted, duplicates dropped.

    Example (6 layers x 12 heads): [(5, 0), (0, 3), (0, 3)] -> ((0, 3), (5, 0)); (6, 0) is refused.
    """
    L, nh = m.config.num_hidden_layers, m.config.num_attention_heads
    out = set()
    for pair in heads or ():
        try:
            layer, head = (int(v) for v in pair)
        except (TypeError, ValueError):
            raise BertCoreError(f"a head to knock out is a (layer, head) pair of integers, got {pair!r}") from None
        if not (0 <= layer < L and 0 <= head < nh):
            raise BertCoreError(f"no head ({layer}, {head}) in this model: layers are 0..{L - 1} and heads "
                                f"0..{nh - 1} (0-based; the pages show them as 1..{L} and 1..{nh})")
        out.add((layer, head))
    return tuple(sorted(out))


def _np(x: torch.Tensor) -> np.ndarray:
    return x.detach().cpu().numpy()


def _stack_and_free(per_layer: list[torch.Tensor]) -> np.ndarray:
    """Stack a list of (1, ...) tensors into one (n, ...) array, freeing each tensor once copied.

    `torch.stack` would hold the list and the stack at once: twice the 151 MB of bert-base's
    attention maps at 512 tokens. Copying layer by layer into one array peaks at one map more.
    """
    out = np.empty((len(per_layer), *per_layer[0].shape[1:]), dtype=_np(per_layer[0]).dtype)  # (n, ...)
    for i in range(len(per_layer)):
        out[i] = per_layer[i][0].numpy()
        per_layer[i] = None  # the list is the trace's own: drop the tensor now
    return out


def position_similarity(m: LoadedModel, n: int | None = None) -> np.ndarray:
    """Cosine similarity between the model's learned position embeddings 0..n-1. (n, n).

    RoBERTa's rows 0..padding_idx are never used by a real token: row padding_idx + 1 is its position 0.
    """
    w = m.model.bert.embeddings.position_embeddings.weight.detach()
    w = w[m.config.position_offset:]
    w = w[: n or w.shape[0]]
    w = torch.nn.functional.normalize(w, dim=-1)
    return (w @ w.T).numpy()  # (n, n)
