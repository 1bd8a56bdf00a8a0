"""BERT's pre-training heads (MLM, NSP, ELECTRA's replaced-token head) and `BertForPreTraining`, the model every
page explores."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..errors import BertCoreError
from .config import ACTIVATIONS, BertConfig
from .encoder import BertModel


def init_weights(module: nn.Module, std: float) -> None:
    """One module's fresh weights, as transformers' `_init_weights` does (apply it to every module).

    Linear, Embedding weights ~ N(0, std^2); Linear biases 0; the padding token's embedding row 0;
    LayerNorm weight 1, bias 0; any other bias Parameter 0 (BertLMPredictionHead's output bias: its decoder
    is tied to the word embeddings, so the bias is a Parameter of the head, not of a Linear).
    """
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=std)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)
    if isinstance(module, nn.Embedding) and module.padding_idx is not None:
        with torch.no_grad():
            module.weight[module.padding_idx].zero_()
    if isinstance(module, nn.LayerNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)
    bias = getattr(module, "bias", None)
    if not isinstance(module, (nn.Linear, nn.LayerNorm)) and isinstance(bias, nn.Parameter):
        nn.init.zeros_(bias)


class BertPredictionHeadTransform(nn.Module):
    """LayerNorm(act(W h + b)), H -> E (ALBERT's head maps back to its embedding width)."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.E)
        self.act = ACTIVATIONS[config.head_act]
        self.LayerNorm = nn.LayerNorm(config.E, eps=config.layer_norm_eps)

    def forward(self, x):
        return self.LayerNorm(self.act(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    """MLM logits = E_word · LayerNorm(act(W h)) + b: the decoder shares the word embeddings."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = nn.Linear(config.E, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, h):
        return F.linear(self.transform(h), self.decoder.weight, self.bias)  # (..., V)


class BertPreTrainingHeads(nn.Module):
    """`cls`: the MLM head (`predictions`) and, when present, the NSP head (`seq_relationship`)."""

    def __init__(self, config: BertConfig, nsp: bool = True):
        super().__init__()
        self.predictions = BertLMPredictionHead(config)
        self.seq_relationship = nn.Linear(config.hidden_size, 2) if nsp else None


class ElectraDiscriminatorPredictions(nn.Module):
    """ELECTRA's replaced-token head: logit_i = w . act(W h_i + b) + c, one number per token (> 0: "replaced")."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACTIVATIONS[config.hidden_act]
        self.dense_prediction = nn.Linear(config.hidden_size, 1)

    def forward(self, h):
        return self.dense_prediction(self.act(self.dense(h))).squeeze(-1)  # (..., H) -> (...)


class BertForPreTraining(nn.Module):
    """BERT with whichever heads a checkpoint has: MLM + NSP, MLM only, or none (encoder only).

    Example: BertForPreTraining(cfg, mlm=True, nsp=False) has the keys of HF's BertForMaskedLM.
    Every family (config.model_type) is this class: RoBERTa, DistilBERT and ALBERT differ only inside
    their embeddings and encoder (`families.py`) and the head's widths; `checkpoint.py` maps their key names onto ours.
    Only BERT has an NSP head. `rtd` adds ELECTRA's discriminator head (`discriminator_predictions`, HF's name):
    BertForPreTraining(electra_cfg, mlm=False, nsp=False, rtd=True) has the keys of HF's ElectraForPreTraining.
    """

    def __init__(self, config: BertConfig, mlm: bool = True, nsp: bool = True, pooler: bool | None = None,
                 rtd: bool = False):
        super().__init__()
        self.config = config
        nsp = nsp and mlm and config.model_type == "bert"
        pooler = nsp if pooler is None else (pooler or nsp)  # NSP reads the pooler
        self.bert = BertModel(config, add_pooling_layer=pooler)
        self.cls = BertPreTrainingHeads(config, nsp=nsp) if mlm else None
        self.discriminator_predictions = ElectraDiscriminatorPredictions(config) if rtd else None
        self.apply(lambda module: init_weights(module, config.initializer_range))
        if self.cls is not None:
            self.tie_weights()

    @property
    def family(self) -> str:
        return self.config.model_type

    @property
    def has_mlm(self) -> bool:
        return self.cls is not None

    @property
    def has_nsp(self) -> bool:
        return self.cls is not None and self.cls.seq_relationship is not None

    @property
    def has_rtd(self) -> bool:
        """ELECTRA's discriminator head: is each token original or replaced?"""
        return self.discriminator_predictions is not None

    def tie_weights(self):
        """The MLM decoder reads the word-embedding matrix: one tensor, two uses."""
        self.cls.predictions.decoder.weight = self.bert.embeddings.word_embeddings.weight

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., H) hidden states -> (..., V) vocabulary logits. Pass only the rows you need."""
        if self.cls is None:
            raise BertCoreError("this checkpoint has no masked-language-model head")
        return self.cls.predictions(hidden)

    def nsp_logits(self, pooled: torch.Tensor) -> torch.Tensor:
        """(B, H) pooled [CLS] -> (B, 2) logits for (is next, is not next)."""
        if not self.has_nsp:
            raise BertCoreError("this checkpoint has no next-sentence-prediction head")
        return self.cls.seq_relationship(pooled)

    def rtd_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., H) hidden states -> (...) replaced-token logits (sigmoid: the probability a token was replaced)."""
        if self.discriminator_predictions is None:
            raise BertCoreError("this checkpoint has no replaced-token-detection (ELECTRA discriminator) head")
        return self.discriminator_predictions(hidden)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, trace: bool = False, rows=None,
                head_mask=None, patch=None, start=None, inputs_embeds=None):
        """Run the encoder; see `BertModel.forward`. Heads are applied by the caller, where needed."""
        return self.bert(input_ids, token_type_ids, attention_mask, trace=trace, rows=rows, head_mask=head_mask,
                         patch=patch, start=start, inputs_embeds=inputs_embeds)

    def num_parameters(self) -> int:
        """Distinct parameters (the tied decoder weight counted once)."""
        return sum(p.numel() for p in self.parameters())
