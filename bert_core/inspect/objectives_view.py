"""BERT vs GPT (vs ELECTRA) on one text: the two attention masks, what each prediction sees, what each loss reads.

    BERT (bidirectional):  M_ij = 1 for every real j          -> softmax over all tokens
    GPT (causal):          M_ij = 1 if j <= i, else 0         -> softmax over tokens 0..i only

`mask_comparison` runs the SAME weights under both masks (the encoder's `causal` switch), so the difference
between the two attention maps is the mask's doing alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from ..errors import BertCoreError
from ..model.loaded import LoadedModel
from ..objectives.masking import mask_tokens

HIDDEN, VISIBLE, TARGET = 0, 1, 2  # what a prediction at one position may read: `visibility`


@dataclass
class MaskComparison:
    """One text under BERT's and GPT's masks: the masks and the attention they produce (same weights)."""

    tokens: list[str]
    bidirectional: np.ndarray  # (T, T) 0/1: which key j query i may attend to
    causal: np.ndarray  # (T, T) lower triangle
    attn_bidirectional: np.ndarray  # (L, nh, T, T)
    attn_causal: np.ndarray  # (L, nh, T, T): zero above the diagonal, rows renormalised over j <= i
    notes: list[str]


@torch.no_grad()
def mask_comparison(m: LoadedModel, text: str, text_pair: str | None = None) -> MaskComparison:
    """The attention maps of `m` on `text` with every token visible (BERT) and with the causal mask (GPT)."""
    if not text or not text.strip():
        raise BertCoreError("the text is empty: type a sentence in the sidebar")
    enc = m.tokenizer.encode(text, text_pair, max_length=m.max_length)
    ids, types = torch.as_tensor(enc.input_ids)[None], torch.as_tensor(enc.token_type_ids)[None]  # (1, T)
    was_training = m.model.training
    m.model.eval()
    try:
        bi = m.model.bert(ids, types, trace=True, causal=False).attentions
        ca = m.model.bert(ids, types, trace=True, causal=True).attentions
    finally:
        m.model.train(was_training)
    T = ids.shape[1]
    notes = list(enc.notes) + ([enc.truncation.message] if enc.truncation is not None else [])
    return MaskComparison(list(enc.tokens), np.ones((T, T), dtype=np.int8), np.tril(np.ones((T, T), dtype=np.int8)),
                          torch.stack([a[0] for a in bi]).numpy(), torch.stack([a[0] for a in ca]).numpy(), notes)


def visibility(n_tokens: int, position: int) -> dict[str, np.ndarray]:
    """For each objective, (T,) codes: what the prediction of the token at `position` may read.

    mlm: the token is replaced by [MASK] and guessed from every other token (both sides);
    clm: it is guessed at position - 1 from tokens 0..position-1 (the left only; GPT has no [MASK]);
    rtd: the discriminator judges it (original or replaced?) reading every token, itself included.
    Example: T=4, position 2 -> mlm [1, 1, 2, 1], clm [1, 1, 2, 0], rtd [1, 1, 2, 1].
    """
    if not 0 <= position < n_tokens:
        raise BertCoreError(f"position {position} is outside the {n_tokens} tokens")
    j = np.arange(n_tokens)
    mlm = np.where(j == position, TARGET, VISIBLE)
    clm = np.where(j == position, TARGET, np.where(j < position, VISIBLE, HIDDEN))
    return {"mlm": mlm, "clm": clm, "rtd": mlm.copy()}


@dataclass
class LossTargets:
    """Where each objective's loss is computed on one text, and with which target."""

    tokens: list[str]
    mlm: np.ndarray  # (T,) bool: the positions one seeded 15% draw selects (BERT's loss reads only these)
    mlm_input: list[str]  # what BERT reads after that draw ([MASK] / a random token / kept)
    clm_target: list[str | None]  # position t's target: token t + 1 (None at the last position)
    rtd: np.ndarray  # (T,) bool: every token (the discriminator labels each original / replaced)

    def shares(self) -> dict[str, float]:
        """The share of the T tokens each loss reads."""
        T = max(len(self.tokens), 1)
        return {"mlm": float(self.mlm.sum()) / T, "clm": sum(t is not None for t in self.clm_target) / T,
                "rtd": float(self.rtd.sum()) / T}


def loss_targets(m: LoadedModel, text: str, seed: int = 0, mlm_probability: float = 0.15) -> LossTargets:
    """One seeded masking draw of `text` (BERT's 80/10/10) beside GPT's next-token targets and ELECTRA's all-tokens."""
    if not text or not text.strip():
        raise BertCoreError("the text is empty: type a sentence in the sidebar")
    tok = m.tokenizer
    enc = tok.encode(text, max_length=m.max_length)
    ids = torch.as_tensor(enc.input_ids)
    draw = mask_tokens(ids, torch.as_tensor(enc.special_tokens_mask), vocab_size=m.config.vocab_size,
                       mask_token_id=tok.mask_token_id, generator=torch.Generator().manual_seed(seed),
                       mlm_probability=mlm_probability, special_ids=tok.all_special_ids)
    tokens = list(enc.tokens)
    return LossTargets(tokens, (draw.labels != -100).numpy(), [tok.id_to_token(int(i)) for i in draw.input_ids],
                       tokens[1:] + [None], np.ones(len(tokens), dtype=bool))
