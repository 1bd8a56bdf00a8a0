"""transformers' BERT with forward hooks: the reference for knocked-out heads and patched activations."""

from __future__ import annotations

from contextlib import contextmanager

import torch


@contextmanager
def knocked_out(hf, heads):
    """HF with each (layer, head)'s context slice zeroed before `attention.output.dense`."""
    hs = hf.config.hidden_size // hf.config.num_attention_heads
    handles = []
    for layer, head in heads:
        def pre(module, args, head=head):
            ctx = args[0].clone()
            ctx[..., head * hs:(head + 1) * hs] = 0.0
            return (ctx, *args[1:])
        dense = hf.bert.encoder.layer[layer].attention.output.dense
        handles.append(dense.register_forward_pre_hook(pre))
    try:
        yield
    finally:
        for h in handles:
            h.remove()


@contextmanager
def patched(hf, layer, position, value):
    """HF with hidden state `layer` (0 = the embeddings' output) at `position` replaced by `value`."""
    module = hf.bert.embeddings if layer == 0 else hf.bert.encoder.layer[layer - 1]

    def hook(mod, args, out):
        out = out.clone()
        out[:, position] = value
        return out

    h = module.register_forward_hook(hook)
    try:
        yield
    finally:
        h.remove()


def hf_logits(m, hf, text, positions, pair=None):
    """HF's MLM logits at `positions` only, (P, V): `hf.bert`, then `hf.cls` on those rows (the loops' pass)."""
    enc = m.tokenizer.encode(text, pair)
    with torch.inference_mode():
        h = hf.bert(input_ids=torch.from_numpy(enc.input_ids)[None],
                    token_type_ids=torch.from_numpy(enc.token_type_ids)[None]).last_hidden_state  # (1, T, H)
        return hf.cls.predictions(h[0, positions])  # (P, V)
