"""Classify a text with a sentence classifier: the softmax over its labels."""

from __future__ import annotations

import torch

from ..model.classifier_io import classifier_of
from ..model.loaded import LoadedModel


@torch.no_grad()
def classify(m: LoadedModel, text: str, text_pair: str | None = None) -> list[tuple[str, float]]:
    """[(label, probability)] in label-id order: softmax of the classifier's logits (dropout off).

    p(c | x) = exp(z_c) / sum_c' exp(z_c'),  z = W_c tanh(W_p h_[CLS] + b_p) + b_c
    (BERT, ALBERT; DistilBERT: ReLU(W_pre h + b_pre) in place of the pooler, RoBERTa: the head's own tanh layer)
    """
    model = classifier_of(m)
    enc = m.tokenizer.encode(text, text_pair, max_length=m.max_length)
    ids = torch.from_numpy(enc.input_ids)[None]  # (1, T)
    types = torch.from_numpy(enc.token_type_ids)[None]
    was_training = model.training
    model.eval()
    try:
        probs = model.logits(ids, types).softmax(-1)[0]  # (C,)
    finally:
        model.train(was_training)
    return list(zip(model.labels, probs.tolist()))
