"""The same network with fresh random weights: what pretraining is worth is the gap to this copy.

`untrained_copy(m)` keeps `m`'s config, tokenizer, heads and tied / shared weights, and draws every weight
again as transformers' `BertPreTrainedModel._init_weights` does (RoBERTa, ALBERT, DistilBERT and ELECTRA use
the same rule):

    Linear, Embedding weights ~ N(0, initializer_range^2)   (0.02 for BERT)
    Linear biases = 0;  the padding token's embedding row = 0;  LayerNorm: weight 1, bias 0
    the MLM decoder's output bias = 0

Fine-tuning it on a task with the pretrained model's recipe (same data, budget and seed) is "training from
scratch": the Fine-tuning page's side-by-side run.
"""

from __future__ import annotations

import copy

import torch
import torch.nn as nn

from .heads import init_weights  # the one rule, also BertForPreTraining's
from .loaded import LoadedModel


@torch.no_grad()
def untrained_copy(m: LoadedModel, seed: int = 0) -> LoadedModel:
    """`m`'s architecture, heads and tokenizer with every weight drawn afresh from `seed` (m is not touched).

    Example: untrained_copy(load_model()).model has the bundled MiniLM's 6 layers x 384 and its MLM and NSP
    heads, weights ~ N(0, 0.02): its masked-word guesses are noise until it is trained.
    """
    model = copy.deepcopy(m.model)  # keeps ties (decoder = word embeddings) and ALBERT's shared layer
    std = model.config.initializer_range
    with torch.random.fork_rng():  # our seed, without moving anyone's global generator
        torch.manual_seed(seed)
        for module in model.modules():
            init_weights(module, std)
        for module in model.modules():  # the tied MLM decoder (a Linear) redrew the padding row: zero it again
            if isinstance(module, nn.Embedding) and module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()
    model.eval()
    note = (f"An untrained copy of {m.name}: the same architecture, heads and tokenizer, every weight drawn "
            f"afresh (seed {seed}, N(0, {std:g}) as transformers initialises): what the network is before pretraining.")
    return LoadedModel(model, m.tokenizer, f"{m.name} (untrained, seed {seed})", "session", [note],
                       pooling=m.pooling, normalize=m.normalize)


__all__ = ["init_weights", "untrained_copy"]
