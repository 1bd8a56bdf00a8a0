"""Parameter counts from a config alone (no weights needed)."""

from __future__ import annotations

from .config import BertConfig


def param_counts(config: BertConfig, mlm: bool = True, nsp: bool = True, pooler: bool = True) -> dict[str, int]:
    """Parameter count per component, from the config alone (no weights needed).

    Example: bert-base (V=30522, H=768, L=12, I=3072, P=512) -> encoder total 109,482,240.
    ALBERT's tables are E wide and its L layers share one set of weights (counted once);
    DistilBERT has no segment table and no pooler; only BERT has an NSP head.
    """
    V, H, L, F_, P, S, E = (
        config.vocab_size,
        config.hidden_size,
        config.num_hidden_layers,
        config.intermediate_size,
        config.max_position_embeddings,
        config.type_vocab_size,
        config.E,
    )
    albert = config.model_type == "albert"
    nsp = nsp and mlm and config.model_type == "bert"
    distinct = 1 if albert else L  # layers with their own weights
    attn = 4 * (H * H + H) + 2 * H  # Q, K, V, output projection, LayerNorm
    ffn = (H * F_ + F_) + (F_ * H + H) + 2 * H  # F_ = intermediate (feed-forward) size
    counts = {
        "word embeddings": V * E,
        "position embeddings": P * E,
        "segment embeddings": S * E,
        "embedding LayerNorm": 2 * E,
    }
    if albert:
        counts["embedding projection E -> H"] = E * H + H
    counts |= {
        "attention (all layers)": distinct * attn,
        "feed-forward (all layers)": distinct * ffn,
        "pooler": (H * H + H) if (pooler or nsp) else 0,
        "MLM head (transform + bias; decoder tied)": (H * E + E + 2 * E + V) if mlm else 0,
        "NSP head": (2 * H + 2) if nsp else 0,
    }
    counts["total"] = sum(counts.values())
    return counts

