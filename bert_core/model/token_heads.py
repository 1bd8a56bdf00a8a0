"""Heads on every token: HF's `BertForTokenClassification` (tagging) and `BertForQuestionAnswering` (spans).

Both read the last hidden state h_t of every token (no pooler: transformers builds these models
with add_pooling_layer=False) through one linear layer:

    tagging:   logits_t = W_c · dropout(h_t) + b_c              (T, C)   HF: `classifier`
    QA:        [start_t, end_t] = W_qa · h_t + b_qa             (T, 2)   HF: `qa_outputs`

RoBERTa, DistilBERT and ALBERT name and shape these heads exactly as BERT does; only the encoder's
key prefix (`roberta.`, `distilbert.`, `albert.`: checkpoint.py's key maps) and the config's name
for the head's dropout differ (DROPOUT_KEYS below), so one class serves every family.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from .config import BertConfig
from .encoder import BertModel

# config.json's name for the head's dropout, per family and head (None: the hidden dropout).
DROPOUT_KEYS = {
    ("bert", "token"): "classifier_dropout", ("roberta", "token"): "classifier_dropout",
    ("albert", "token"): "classifier_dropout_prob", ("distilbert", "token"): "dropout",
    ("distilbert", "qa"): "qa_dropout",
}


class _TokenHead(nn.Module):
    """What both heads share: the encoder (`bert`, HF's `bert.*` / `roberta.*` / ...) and its dropout."""

    has_mlm = False  # the pages ask; these models have neither pretraining head
    has_nsp = False
    kind = ""

    def __init__(self, config: BertConfig, bert: BertModel | None = None, dropout: float | None = None):
        super().__init__()
        self.config = config
        self.bert = bert if bert is not None else BertModel(config, add_pooling_layer=False)
        self.head_dropout = dropout  # as config.json says it (None: the hidden dropout)
        self.dropout = nn.Dropout(config.hidden_dropout_prob if dropout is None else dropout)

    def _init_head(self, layer: nn.Linear) -> None:
        """HF's initialisation for a new head: N(0, initializer_range) weights, zero bias."""
        nn.init.normal_(layer.weight, std=self.config.initializer_range)
        nn.init.zeros_(layer.bias)

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, trace: bool = False, **interventions):
        """Run the encoder; see `BertModel.forward` (the pages explore these models' encoders too)."""
        return self.bert(input_ids, token_type_ids, attention_mask, trace=trace, **interventions)  # head_mask, ...

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        raise ValueError(f"this checkpoint is a {self.kind} model: it has no masked-language-model head")

    def nsp_logits(self, pooled: torch.Tensor) -> torch.Tensor:
        raise ValueError(f"this checkpoint is a {self.kind} model: it has no next-sentence-prediction head")

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


class BertForTokenClassification(_TokenHead):
    """One label per token (HF's keys: the encoder's, then `classifier.*`); `labels[i]` names label i."""

    kind = "token-classification"

    def __init__(self, config: BertConfig, labels: list[str], bert: BertModel | None = None,
                 dropout: float | None = None):
        super().__init__(config, bert, dropout)
        self.labels = list(labels)
        self.classifier = nn.Linear(config.hidden_size, len(self.labels))
        self._init_head(self.classifier)

    def logits(self, input_ids, token_type_ids=None, attention_mask=None) -> torch.Tensor:
        """(B, T) ids -> (B, T, C) label logits per token."""
        return self.head(self.bert(input_ids, token_type_ids, attention_mask))

    def head(self, hidden: torch.Tensor) -> torch.Tensor:
        """(B, T, H) last hidden states -> (B, T, C) label logits."""
        return self.classifier(self.dropout(hidden))


class BertForQuestionAnswering(_TokenHead):
    """A start and an end logit per token (HF's keys: the encoder's, then `qa_outputs.*`)."""

    kind = "question-answering"
    labels = ("start", "end")

    def __init__(self, config: BertConfig, bert: BertModel | None = None, dropout: float | None = None):
        super().__init__(config, bert, dropout)
        self.qa_outputs = nn.Linear(config.hidden_size, 2)
        self._init_head(self.qa_outputs)

    def logits(self, input_ids, token_type_ids=None, attention_mask=None) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T) ids -> start and end logits, each (B, T). (HF applies no dropout here, except DistilBERT.)"""
        return self.head(self.bert(input_ids, token_type_ids, attention_mask))

    def head(self, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T, H) last hidden states -> start and end logits, each (B, T)."""
        if self.config.model_type == "distilbert":
            hidden = self.dropout(hidden)
        start, end = self.qa_outputs(hidden).split(1, dim=-1)  # (B, T, 1) each
        return start.squeeze(-1), end.squeeze(-1)


# transformers' class names per family, for config.json's "architectures" when saving.
ARCHITECTURES = {
    "token": {"bert": "BertForTokenClassification", "roberta": "RobertaForTokenClassification",
              "distilbert": "DistilBertForTokenClassification", "albert": "AlbertForTokenClassification"},
    "qa": {"bert": "BertForQuestionAnswering", "roberta": "RobertaForQuestionAnswering",
           "distilbert": "DistilBertForQuestionAnswering", "albert": "AlbertForQuestionAnswering"},
}
