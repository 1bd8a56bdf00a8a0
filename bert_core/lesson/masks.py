"""One model's weights under BERT's mask and under GPT's: what each position may look at."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import torch

from ..model.encoder import BertModel
from ..model.loaded import LoadedModel


@dataclass
class TwoMasks:
    """The same layer and head's attention on the same tokens, without and with the causal mask."""

    tokens: list[str]
    layer: int  # 0-based
    head: int
    bidirectional: np.ndarray  # (T, T) rows sum to 1 over every token
    causal: np.ndarray  # (T, T) rows sum to 1 over keys j <= i; exactly 0 above the diagonal


def causal_view(m: LoadedModel) -> BertModel:
    """The shared encoder's own modules under GPT's mask (config is_decoder): no weights are copied."""
    src = m.model.bert
    with torch.device("meta"):  # an empty shell; its modules are replaced by the shared model's own
        shell = BertModel(dataclasses.replace(src.config, is_decoder=True), add_pooling_layer=False)
    shell.embeddings, shell.encoder = src.embeddings, src.encoder
    return shell.eval()


def two_masks(m: LoadedModel, text: str, layer: int, head: int = 0) -> TwoMasks:
    """Attention of `layer`/`head` on `text` under the bidirectional mask (BERT) and the causal one (GPT)."""
    enc = m.tokenizer.encode(text, None, max_length=m.max_length)
    ids = torch.from_numpy(enc.input_ids)[None]  # (1, T)
    types = torch.from_numpy(enc.token_type_ids)[None]
    with torch.inference_mode():
        both = m.model.bert(ids, types, trace=True).attentions[layer][0, head]  # (T, T)
        causal = causal_view(m)(ids, types, trace=True).attentions[layer][0, head]  # (T, T)
    return TwoMasks(enc.tokens, layer, head, both.numpy().copy(), causal.numpy().copy())
