"""ELECTRA's discriminator read on a text: for every token, the probability that it was replaced.

The discriminator is trained on text in which a small generator has rewritten ~15% of the tokens; it
learns to say, for EVERY token, whether it is the original:

    p_i = sigmoid(w . act(W h_i + b) + c)        (h_i: the last hidden state at position i)

Read on a sentence with a word swapped by hand, p is high at the odd word out: the model has learnt which
words fit their context, from every token rather than from 15% of them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from ..errors import BertCoreError
from ..model.loaded import LoadedModel


@dataclass
class ReplacedTokens:
    """Per token: the discriminator's logit and its sigmoid, the probability that the token was replaced."""

    tokens: list[str]
    probs: np.ndarray  # (T,) sigmoid(logit)
    logits: np.ndarray  # (T,)
    special: np.ndarray  # (T,) bool: [CLS] / [SEP], which a corruption never touches
    notes: list[str] = field(default_factory=list)


@torch.no_grad()
def replaced_token_probs(m: LoadedModel, text: str, text_pair: str | None = None) -> ReplacedTokens:
    """ELECTRA's replaced-token probabilities for `text` (and `text_pair`), = ElectraForPreTraining's sigmoid."""
    if not m.model.has_rtd:
        raise BertCoreError(f"{m.name} has no replaced-token-detection head: load an ELECTRA discriminator "
                            "(ElectraForPreTraining) or train a model with the rtd objective")
    if not text or not text.strip():
        raise BertCoreError("type a sentence to score")
    enc = m.tokenizer.encode(text, text_pair, max_length=m.max_length)
    ids = torch.as_tensor(enc.input_ids)[None]  # (1, T)
    types = torch.as_tensor(enc.token_type_ids)[None]
    was_training = m.model.training
    m.model.eval()
    try:
        logits = m.model.rtd_logits(m.model.bert(ids, types))[0].double()  # (T,)
    finally:
        m.model.train(was_training)
    notes = list(enc.notes)
    if enc.truncation is not None:
        notes.append(enc.truncation.message)
    return ReplacedTokens(list(enc.tokens), torch.sigmoid(logits).numpy(), logits.numpy(),
                          enc.special_tokens_mask.astype(bool), notes)
