"""Model anatomy from a config alone: parameter counts per component and per layer part."""

from __future__ import annotations

from .model import BertConfig, param_counts

# Published configs, so the anatomy page can show them without downloading any weights.
KNOWN_CONFIGS = {
    "bert-base-uncased": BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12,
                                    num_attention_heads=12, intermediate_size=3072),
    "bert-base-cased": BertConfig(vocab_size=28996, hidden_size=768, num_hidden_layers=12,
                                  num_attention_heads=12, intermediate_size=3072),
    "bert-large-uncased": BertConfig(vocab_size=30522, hidden_size=1024, num_hidden_layers=24,
                                     num_attention_heads=16, intermediate_size=4096),
}


def anatomy_rows(config: BertConfig, mlm: bool = True, nsp: bool = True, pooler: bool = True) -> list[dict]:
    """Rows of (component, parameters, share of total, formula) for a table.

    Example: bert-base -> word embeddings 23,440,896 (= 30522 x 768), total 110,106,428 with both heads.
    """
    c = config
    H, L, F_ = c.hidden_size, c.num_hidden_layers, c.intermediate_size
    formulas = {
        "word embeddings": f"V x H = {c.vocab_size} x {H}",
        "position embeddings": f"P x H = {c.max_position_embeddings} x {H}",
        "segment embeddings": f"S x H = {c.type_vocab_size} x {H}",
        "embedding LayerNorm": f"2H = 2 x {H}",
        "attention (all layers)": f"L x (4(H^2 + H) + 2H), L = {L}",
        "feed-forward (all layers)": f"L x (2 H F + F + H + 2H), F = {F_}",
        "pooler": "H^2 + H",
        "MLM head (transform + bias; decoder tied)": "H^2 + H + 2H + V",
        "NSP head": "2H + 2",
        "total": "",
    }
    counts = param_counts(config, mlm=mlm, nsp=nsp, pooler=pooler)
    total = counts["total"]
    return [{"component": k, "parameters": v, "share": v / total, "formula": formulas[k]} for k, v in counts.items()]
