"""BERT's hyper-parameters (`config.json`'s fields) and the four families they describe."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

import torch.nn.functional as F

ACTIVATIONS = {
    "gelu": F.gelu,  # exact erf GELU, as BERT's original code
    "relu": F.relu,
    "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh"),
}


@dataclass
class BertConfig:
    """BERT hyper-parameters, with the field names of Hugging Face's `config.json`."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    initializer_range: float = 0.02
    model_type: str = "bert"  # the family: "bert", "roberta", "distilbert", "albert" or "electra"
    architectures: list[str] = field(default_factory=list)
    embedding_size: int | None = None  # ALBERT's/ELECTRA's E (embeddings E wide, projected to H if E != H); None = H
    num_hidden_groups: int = 1  # ALBERT: how many distinct layers are shared out over the L layers
    inner_group_num: int = 1  # ALBERT: layers per group
    is_decoder: bool = False  # causal attention (HF's BertLMHeadModel): position i sees positions <= i only

    def __post_init__(self):
        if self.model_type not in FAMILIES:
            raise ValueError(f"model_type {self.model_type!r} is not one of {', '.join(FAMILIES)}")
        if self.model_type == "albert" and (self.num_hidden_groups, self.inner_group_num) != (1, 1):
            raise ValueError(
                f"ALBERT with num_hidden_groups={self.num_hidden_groups}, inner_group_num={self.inner_group_num} "
                "is not supported: only the published layout (1 group of 1 layer, shared by all layers)"
            )
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not a multiple of "
                f"num_attention_heads {self.num_attention_heads}"
            )
        if self.hidden_act not in ACTIVATIONS:
            raise ValueError(f"hidden_act {self.hidden_act!r} is not supported")

    @classmethod
    def from_dict(cls, d: dict) -> BertConfig:
        """Build from a `config.json` dict (any supported family), ignoring keys BERT does not use."""
        if d.get("model_type") == "distilbert":
            # DistilBERT's config says dim/n_layers/...; it has no segment table and a fixed LayerNorm eps.
            d = {DISTILBERT_CONFIG_NAMES.get(k, k): v for k, v in d.items()}
            d.update(type_vocab_size=0, layer_norm_eps=1e-12)
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def to_dict(self) -> dict:
        return asdict(self)

    def to_hf_dict(self) -> dict:
        """The `config.json` transformers expects for this family (DistilBERT's own names)."""
        albert_only = ("embedding_size", "num_hidden_groups", "inner_group_num")
        d = {k: v for k, v in asdict(self).items() if k not in albert_only}
        if not self.is_decoder:
            d.pop("is_decoder")  # transformers' default; configs BERT Explorer wrote before stay as they were
        if self.model_type == "albert":
            d.update(embedding_size=self.E, num_hidden_groups=1, inner_group_num=1)
        if self.model_type == "electra":
            d.update(embedding_size=self.E)
        if self.model_type == "distilbert":
            back = {ours: theirs for theirs, ours in DISTILBERT_CONFIG_NAMES.items()}
            d = {back.get(k, k): v for k, v in d.items() if k not in ("type_vocab_size", "layer_norm_eps")}
        return d

    @property
    def family(self) -> str:
        return self.model_type

    @property
    def E(self) -> int:
        """Embedding width: ALBERT's embedding_size, otherwise the hidden size."""
        return self.embedding_size or self.hidden_size

    @property
    def has_segments(self) -> bool:
        """DistilBERT dropped the segment (token-type) table."""
        return self.type_vocab_size > 0

    @property
    def position_offset(self) -> int:
        """RoBERTa's first real position is padding_idx + 1 (fairseq's convention); BERT's is 0."""
        return self.pad_token_id + 1 if self.model_type == "roberta" else 0

    @property
    def head_act(self) -> str:
        """The MLM head's activation: exact GELU for RoBERTa and ELECTRA's generator, hidden_act for the others."""
        return "gelu" if self.model_type in ("roberta", "electra") else self.hidden_act


FAMILIES = ("bert", "roberta", "distilbert", "albert", "electra")
DISTILBERT_CONFIG_NAMES = {  # DistilBERT's config.json name -> BERT's
    "dim": "hidden_size",
    "n_layers": "num_hidden_layers",
    "n_heads": "num_attention_heads",
    "hidden_dim": "intermediate_size",
    "activation": "hidden_act",
    "dropout": "hidden_dropout_prob",
    "attention_dropout": "attention_probs_dropout_prob",
}
