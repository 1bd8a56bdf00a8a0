"""Inside the encoder: one layer's arithmetic step by step, the residual stream, and the logit lens.

Every number here is computed by the model's own submodules (`attention.self.query/key/value`,
`attention.output.dense/LayerNorm`, `intermediate`, `output.dense/LayerNorm`, `cls.predictions`),
called one at a time so each intermediate can be shown. Written against the block objects, not
key names or a model type, so any family that reuses BERT's blocks (one per layer, or ALBERT's
single block reused L times) works unchanged. One BERT layer (post-LN):

    q, k, v  = W_q x + b_q,  W_k x + b_k,  W_v x + b_v        split into heads of d_k
    scores   = q k^T / sqrt(d_k) (+ padding mask)             per head, (T, T)
    probs    = softmax(scores)                                each row sums to 1
    context  = probs v, heads concatenated                    (T, H)
    attn_out = W_o context + b_o
    h1       = LayerNorm(x + attn_out)
    ffn_act  = act(W_1 h1 + b_1)                              (T, F)
    ffn_out  = W_2 ffn_act + b_2
    out      = LayerNorm(h1 + ffn_out)                        = the next layer's input
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn

from ..errors import BertCoreError
from ..model.loaded import LoadedModel
from ..model.tokenization import Encoding, Truncation

STEP_NAMES = ("x", "q", "k", "v", "scores", "probs", "context", "attn_out", "h1", "ffn_act", "ffn_out", "out")
MAX_LENS_POSITIONS = 16  # [MASK] positions the lens reads (each costs L+1 rows through the vocabulary)
MAX_REPEATED_WORDS = 20


@dataclass
class LayerSteps:
    """Every intermediate of one encoder layer for one input (numpy, fp32)."""

    layer: int
    tokens: list[str]
    x: np.ndarray  # (T, H)        the layer's input = analyze(...).hidden_states[layer]
    q: np.ndarray  # (nh, T, d_k)  per head
    k: np.ndarray  # (nh, T, d_k)
    v: np.ndarray  # (nh, T, d_k)
    scores: np.ndarray  # (nh, T, T) Q K^T / sqrt(d_k) (+ padding mask), before softmax
    probs: np.ndarray  # (nh, T, T)  softmax(scores) = analyze(...).attentions[layer]
    context: np.ndarray  # (T, H)    heads' weighted values, concatenated
    attn_out: np.ndarray  # (T, H)   after the attention output projection, before the residual
    h1: np.ndarray  # (T, H)         LayerNorm(x + attn_out)
    ffn_act: np.ndarray  # (T, F)    activation(W_1 h1 + b_1)
    ffn_out: np.ndarray  # (T, H)    W_2 ffn_act + b_2
    out: np.ndarray  # (T, H)        LayerNorm(h1 + ffn_out) = hidden_states[layer + 1]
    token_type_ids: np.ndarray | None = None  # (T,)
    truncation: Truncation | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def d_k(self) -> int:
        return self.q.shape[-1]


# ---------------------------------------------------------------------------------------------
# One layer, step by step


def blocks(m: LoadedModel) -> list[nn.Module]:
    """The block object each layer 0..L-1 runs (ALBERT: the same object L times)."""
    layers = m.model.bert.encoder.layer
    n = m.config.num_hidden_layers
    if len(layers) == n:
        return list(layers)
    if len(layers) == 1:  # one shared block stored once
        return [layers[0]] * n
    raise BertCoreError(f"the encoder has {len(layers)} blocks for {n} layers")


def block_steps(block: nn.Module, x: torch.Tensor, mask: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """One BERT layer's intermediates for a batch, from the block's own submodules.

    x: (B, T, H); mask: None or (B, 1, 1, T) additive (0 keep, most negative float for padding).
    """
    sa = block.attention.self
    B, T, H = x.shape
    nh = sa.num_attention_heads
    hs = H // nh  # d_k

    def heads(t):  # (B, T, H) -> (B, nh, T, d_k)
        return t.view(B, T, nh, hs).transpose(1, 2)

    q, k, v = heads(sa.query(x)), heads(sa.key(x)), heads(sa.value(x))
    # (Q / sqrt(d_k)) K^T: the model's own order of operations (bert_core.model.layers.BertSelfAttention).
    scores = torch.matmul(q * (hs**-0.5), k.transpose(-1, -2))  # (B, nh, T, T)
    if mask is not None:
        scores = scores + mask
    probs = scores.softmax(dim=-1)  # (B, nh, T, T)
    context = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, H)  # (B, T, H): heads side by side
    attn_out = block.attention.output.dense(context)  # (B, T, H)
    h1 = block.attention.output.LayerNorm(attn_out + x)  # post-LN: normalise after adding the residual
    ffn_act = block.intermediate(h1)  # (B, T, F): act(W_1 h1 + b_1), the block's own activation
    ffn_out = block.output.dense(ffn_act)  # (B, T, H)
    out = block.output.LayerNorm(ffn_out + h1)
    return dict(x=x, q=q, k=k, v=v, scores=scores, probs=probs, context=context, attn_out=attn_out, h1=h1,
                ffn_act=ffn_act, ffn_out=ffn_out, out=out)


class _Stop(Exception):
    """Raised inside a forward hook once the input we need has been seen: later layers are not run."""


def block_input(m: LoadedModel, enc: Encoding, layer: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(x, mask) as the model's own forward hands them to layer `layer`'s block, (1, T, H).

    The model's forward runs (the same call `analyze` makes, so x is its hidden_states[layer]) and
    a hook stops it at that block: embeddings and earlier layers are the model's code, later ones
    are skipped.
    """
    bl = blocks(m)
    block = bl[layer]
    target = sum(b is block for b in bl[:layer])  # ALBERT: the block's n-th call is layer n
    calls, seen = [0], {}

    def hook(module, args, kwargs):
        if calls[0] == target:
            seen["x"] = args[0]
            seen["mask"] = args[1] if len(args) > 1 else kwargs.get("mask")
            raise _Stop
        calls[0] += 1

    ids = torch.from_numpy(enc.input_ids).unsqueeze(0)  # (1, T)
    types = torch.from_numpy(enc.token_type_ids).unsqueeze(0)  # (1, T)
    handle = block.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        m.model(ids, types, trace=True)
    except _Stop:
        pass
    finally:
        handle.remove()
    if "x" not in seen:
        raise BertCoreError(f"layer {layer}'s block was never called")
    return seen["x"], seen["mask"]


def _check_layer(m: LoadedModel, layer) -> int:
    n = m.config.num_hidden_layers
    if not isinstance(layer, (int, np.integer)) or not 0 <= int(layer) < n:
        raise BertCoreError(f"layer must be between 0 and {n - 1}, got {layer!r}")
    return int(layer)


def layer_steps(m: LoadedModel, text: str, layer: int, text_pair: str | None = None) -> LayerSteps:
    """Every intermediate of encoder layer `layer` (0-based) for one input, as numpy arrays."""
    layer = _check_layer(m, layer)
    enc = m.tokenizer.encode(text, text_pair, max_length=m.max_length)
    with torch.inference_mode():
        x, mask = block_input(m, enc, layer)
        s = block_steps(blocks(m)[layer], x, mask)
        arrays = {name: s[name][0].detach().cpu().numpy() for name in STEP_NAMES}
    return LayerSteps(layer=layer, tokens=enc.tokens, token_type_ids=enc.token_type_ids,
                      truncation=enc.truncation, notes=encoding_notes(m, enc), **arrays)


def encoding_notes(m: LoadedModel, enc: Encoding) -> list[str]:
    notes = list(m.notes) + list(enc.notes)
    if enc.truncation is not None:
        notes.append(enc.truncation.message)
    return notes


@dataclass
class TokenPath:
    """One query token followed through one layer and one head (slices of a `LayerSteps`)."""

    token: int
    head: int
    x: np.ndarray  # (H,)     its input
    q: np.ndarray  # (d_k,)   its query in this head
    keys: np.ndarray  # (T, d_k)   every token's key in this head
    values: np.ndarray  # (T, d_k) every token's value in this head
    dots: np.ndarray  # (T,)  q · k_j
    scores: np.ndarray  # (T,) q · k_j / sqrt(d_k) (+ mask): the same row as LayerSteps.scores
    weights: np.ndarray  # (T,) softmax(scores) = the Attention page's row
    head_context: np.ndarray  # (d_k,) sum_j weights_j v_j
    context: np.ndarray  # (H,)  all heads' contexts side by side
    attn_out: np.ndarray  # (H,)
    resid1: np.ndarray  # (H,)   x + attn_out, before LayerNorm
    h1: np.ndarray  # (H,)
    ffn_act: np.ndarray  # (F,)
    top_neurons: np.ndarray  # (n,) indices of the largest activations, largest first
    ffn_out: np.ndarray  # (H,)
    resid2: np.ndarray  # (H,)   h1 + ffn_out, before LayerNorm
    out: np.ndarray  # (H,)


def follow_token(s: LayerSteps, head: int, token: int, n_neurons: int = 12) -> TokenPath:
    """Slice one head and one query token out of `s`, with the two sums shown before each LayerNorm.

    Example: weights = s.probs[head, token]; head_context = weights @ v = s.context[token, head*d_k:(head+1)*d_k].
    """
    nh, T, dk = s.q.shape
    if not 0 <= head < nh or not 0 <= token < T:
        raise BertCoreError(f"head must be in 0..{nh - 1} and token in 0..{T - 1}")
    q = s.q[head, token]  # (d_k,)
    k, v = s.k[head], s.v[head]  # (T, d_k)
    act = s.ffn_act[token]  # (F,)
    top = np.argsort(-act, kind="stable")[:n_neurons]
    return TokenPath(
        token=token, head=head, x=s.x[token], q=q, keys=k, values=v, dots=k @ q, scores=s.scores[head, token],
        weights=s.probs[head, token], head_context=s.context[token, head * dk:(head + 1) * dk],
        context=s.context[token], attn_out=s.attn_out[token], resid1=s.x[token] + s.attn_out[token],
        h1=s.h1[token], ffn_act=act, top_neurons=top, ffn_out=s.ffn_out[token],
        resid2=s.h1[token] + s.ffn_out[token], out=s.out[token],
    )


__all__ = [
    "LayerSteps",
    "TokenPath",
    "block_steps",
    "follow_token",
    "layer_steps",
]
