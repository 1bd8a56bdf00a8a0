"""Model anatomy from a config alone: parameter counts per component and per layer part."""

from __future__ import annotations

from ..model.config import BertConfig
from ..model.counts import param_counts

# Published configs, so the anatomy page can show them without downloading any weights.
KNOWN_CONFIGS = {
    "bert-base-uncased": BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12,
                                    num_attention_heads=12, intermediate_size=3072),
    "bert-base-cased": BertConfig(vocab_size=28996, hidden_size=768, num_hidden_layers=12,
                                  num_attention_heads=12, intermediate_size=3072),
    "bert-large-uncased": BertConfig(vocab_size=30522, hidden_size=1024, num_hidden_layers=24,
                                     num_attention_heads=16, intermediate_size=4096),
    # The family: DistilBERT halves the depth and drops segments and pooler; RoBERTa keeps BERT's shape with
    # a 50k byte-level BPE vocabulary and 514 positions; ALBERT shares one layer 12 times and embeds in E=128.
    "distilbert-base-uncased": BertConfig(model_type="distilbert", vocab_size=30522, num_hidden_layers=6,
                                          type_vocab_size=0),
    "roberta-base": BertConfig(model_type="roberta", vocab_size=50265, max_position_embeddings=514,
                               type_vocab_size=1, pad_token_id=1, layer_norm_eps=1e-5),
    "albert-base-v2": BertConfig(model_type="albert", vocab_size=30000, embedding_size=128, hidden_act="gelu_new"),
}


def anatomy_rows(config: BertConfig, mlm: bool = True, nsp: bool = True, pooler: bool | None = None) -> list[dict]:
    """Rows of (component, parameters, share of total, formula) for a table.

    `pooler` None: as the family's published MLM checkpoint (BERT has one; RoBERTa, DistilBERT and
    ALBERT's masked-LM models do not).

    Example: bert-base -> word embeddings 23,440,896 (= 30522 x 768), total 110,106,428 with both heads.
    """
    c = config
    H, L, F_ = c.hidden_size, c.num_hidden_layers, c.intermediate_size
    formulas = {
        "word embeddings": f"V x H = {c.vocab_size} x {H}",
        "position embeddings": f"P x H = {c.max_position_embeddings} x {H}",
        "segment embeddings": f"S x H = {c.type_vocab_size} x {H}" if c.has_segments else "none (DistilBERT)",
        "embedding LayerNorm": f"2H = 2 x {H}",
        "embedding projection E -> H": f"E x H + H = {c.E} x {H} + {H}",
        "attention (all layers)": f"L x (4(H^2 + H) + 2H), L = {L}" if c.model_type != "albert"
        else f"4(H^2 + H) + 2H once: the {L} layers share it",
        "feed-forward (all layers)": f"L x (2 H F + F + H + 2H), F = {F_}" if c.model_type != "albert"
        else f"2 H F + F + H + 2H once, F = {F_}",
        "pooler": "H^2 + H",
        "MLM head (transform + bias; decoder tied)": "H^2 + H + 2H + V" if c.E == H else "H E + E + 2E + V",
        "NSP head": "2H + 2",
        "total": "",
    }
    if pooler is None:
        pooler = config.model_type == "bert"
    counts = param_counts(config, mlm=mlm, nsp=nsp, pooler=pooler)
    total = counts["total"]
    return [{"component": k, "parameters": v, "share": v / total, "formula": formulas[k]} for k, v in counts.items()]
