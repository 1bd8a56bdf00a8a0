"""What a fine-tuning run costs before it starts: bytes (weights, gradients, AdamW, activations) and time per step.

Bytes, fp32 (4 bytes a number), for P trainable parameters and a batch of B examples of T tokens:

    weights 4P + gradients 4P + AdamW's two moments 8P = 16P      (frozen weights are shared, not copied)
    activations = what autograd keeps for the backward pass, per encoder layer and token:
        10 H (LayerNorm, Q, K, V, context, residuals) + 2 I (feed-forward before / after GELU)
        + 3 nh T (attention scores, probabilities, dropped-out probabilities) + 4 (LayerNorm statistics)
      plus the fused Q/K/V weight each layer builds per forward (3 H^2), the embeddings (2 H + 2 a token)
      and the pooler; `activation_bytes` (checked against torch's saved-tensor hooks in the tests).

Time: a training step is about 3 forward passes' worth of multiply-adds (forward, then the gradients for the
activations and for the weights): 6 x (dense parameters) x (tokens) FLOPs, plus attention's 12 L H T per
token, at `REFERENCE_FLOPS` (measured on the project's 2-core AVX2 machine with one busy core: ~50 GFLOP/s).
The estimate is the same on every machine, so `finetune_defaults` picks the same recipe in a notebook and on
the page; the page also shows the real seconds per step once the run moves.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch

from ..model.config import BertConfig

BYTES = 4  # fp32
REFERENCE_FLOPS = 50e9  # FLOP/s a training step gets here: MiniLM, batch 32 x 24 tokens, 0.96 s on one busy core


def activation_bytes(config: BertConfig, batch: int, tokens: int) -> int:
    """Bytes autograd keeps for the backward pass of one (batch, tokens) forward in train mode (fp32)."""
    H, ff, nh, L = config.hidden_size, config.intermediate_size, config.num_attention_heads, config.num_hidden_layers
    E = config.embedding_size or H
    n = batch * tokens
    per_layer = n * (10 * H + 2 * ff + 3 * nh * tokens + 4) + 3 * H * H
    return BYTES * (L * per_layer + n * (2 * E + 2) + 4 * batch * H) + 16 * n  # + the (B, T) int64 ids and types


def training_bytes(trainable: int, config: BertConfig, batch: int, tokens: int) -> int:
    """Weights, gradients and AdamW's moments of `trainable` parameters, and the activations of one step."""
    return 4 * BYTES * trainable + activation_bytes(config, batch, tokens)


def dense_parameters(config: BertConfig) -> int:
    """Parameters every token is multiplied by in the encoder (the embedding tables are look-ups, not products)."""
    H, ff, L = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    return L * (4 * H * H + 2 * H * ff + 9 * H + ff)


def step_flops(config: BertConfig, batch: int, tokens: int, trainable_encoder: bool = True) -> float:
    """FLOPs of one training step: 3 passes (2 without the weights' gradients, a frozen encoder: 1, no graph)."""
    n = batch * tokens
    forward = 2 * dense_parameters(config) * n + 4 * config.num_hidden_layers * config.hidden_size * tokens * n
    return 3 * forward if trainable_encoder else forward


def step_seconds(config: BertConfig, batch: int, tokens: int, trainable_encoder: bool = True) -> float:
    """Estimated seconds per training step on the reference machine (one busy core of the project's server)."""
    return step_flops(config, batch, tokens, trainable_encoder) / REFERENCE_FLOPS


def saved_tensor_bytes(forward: Callable[[], object], exclude: Iterable[torch.Tensor] = ()) -> int:
    """Bytes autograd keeps for the backward pass of `forward()`, counted by torch's saved-tensor hooks: each
    storage once, `exclude`'s not (the weights, which the model holds anyway). What `activation_bytes` estimates."""
    seen = {t.untyped_storage().data_ptr() for t in exclude}
    total = 0

    def pack(t: torch.Tensor) -> torch.Tensor:
        nonlocal total
        if t.untyped_storage().data_ptr() not in seen:
            seen.add(t.untyped_storage().data_ptr())
            total += t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        forward()
    return total


__all__ = ["REFERENCE_FLOPS", "activation_bytes", "dense_parameters", "saved_tensor_bytes", "step_flops",
           "step_seconds", "training_bytes"]
