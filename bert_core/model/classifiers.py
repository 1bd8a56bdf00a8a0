"""Sentence classifiers: HF's `BertForSequenceClassification` and each family's lines that differ."""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .config import BertConfig
from .encoder import BertModel


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """(B, T, H), (B, T) -> (B, H): the mean of the real tokens' vectors (sentence-transformers' pooling)."""
    if mask is None:
        return hidden.mean(1)
    w = mask.to(hidden.dtype)[..., None]  # (B, T, 1)
    return (hidden * w).sum(1) / w.sum(1).clamp(min=1)


# --- Fine-tuning head: Hugging Face's BertForSequenceClassification ---------------------------


class BertForSequenceClassification(nn.Module):
    """BERT + a linear classifier on the pooled [CLS] vector (HF's keys: `bert.*`, `classifier.*`).

    logits = W_c · dropout(tanh(W_p h_[CLS] + b_p)) + b_c, shape (B, C) for C labels; the pooler is
    BERT's own (`bert.pooler.dense`). `labels[i]` names class i (HF's `id2label`).
    Every family's classifier is this class with `pooled` (and RoBERTa's `head`) changed: see below.
    """

    has_mlm = False  # the pages ask; a classifier has neither pretraining head
    has_nsp = False
    encoder_pooler = True  # BERT and ALBERT pool with the encoder's pooler; RoBERTa and DistilBERT have none
    # "cls": the family's own pooling (transformers'); "mean": a head fine-tuned here on the tokens' mean
    # (a sentence-transformers model's pooling), which transformers' classifier classes cannot express.
    pooling = "cls"

    def __init__(self, config: BertConfig, labels: list[str], classifier_dropout: float | None = None,
                 bert: BertModel | None = None):
        super().__init__()
        self.config = config
        self.labels = list(labels)
        self.bert = bert if bert is not None else BertModel(config, add_pooling_layer=self.encoder_pooler)
        self.classifier_dropout = classifier_dropout  # as config.json says it (None: the family's default)
        self.dropout = nn.Dropout(self.default_dropout(config) if classifier_dropout is None else classifier_dropout)
        self.build_head(config, len(self.labels))
        # HF's initialisation for a new head: N(0, initializer_range) weights, zero bias.
        for name, module in self.named_modules():
            if isinstance(module, nn.Linear) and not name.startswith("bert."):
                nn.init.normal_(module.weight, std=config.initializer_range)
                nn.init.zeros_(module.bias)

    @staticmethod
    def default_dropout(config: BertConfig) -> float:
        """The head's dropout when config.json names none (HF: classifier_dropout or hidden_dropout_prob)."""
        return config.hidden_dropout_prob

    def build_head(self, config: BertConfig, num_labels: int) -> None:
        self.classifier = nn.Linear(config.hidden_size, num_labels)

    def pooling_layer(self) -> nn.Linear:
        """The H -> H layer that makes the vector the classifier reads (trained anew when the base lacks it)."""
        return self.bert.pooler.dense

    def forward(self, input_ids, token_type_ids=None, attention_mask=None, trace: bool = False, **interventions):
        """Run the encoder; see `BertModel.forward` (the pages explore a classifier's encoder too)."""
        return self.bert(input_ids, token_type_ids, attention_mask, trace=trace, **interventions)  # head_mask, ...

    def pooled(self, hidden: torch.Tensor) -> torch.Tensor:
        """(B, T, H) last hidden states -> (B, H) pooled [CLS]: the vector the classifier reads."""
        return self.bert.pooler(hidden)

    def head(self, pooled: torch.Tensor) -> torch.Tensor:
        """(B, H) pooled -> (B, C) logits (dropout active only in train mode)."""
        return self.classifier(self.dropout(pooled))

    def logits(self, input_ids, token_type_ids=None, attention_mask=None) -> torch.Tensor:
        """(B, T) ids -> (B, C) class logits (dropout active only in train mode)."""
        return self.head(self.pool(self.bert(input_ids, token_type_ids, attention_mask), attention_mask))  # (B, C)

    def pool(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T, H) -> (B, H) by this classifier's pooling: `pooled` ([CLS]), or the mean of the real tokens."""
        return mean_pool(hidden, attention_mask) if self.pooling == "mean" else self.pooled(hidden)

    def mlm_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        raise ValueError("this checkpoint is a sequence classifier: it has no masked-language-model head")

    def nsp_logits(self, pooled: torch.Tensor) -> torch.Tensor:
        raise ValueError("this checkpoint is a sequence classifier: it has no next-sentence-prediction head")

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())


class AlbertForSequenceClassification(BertForSequenceClassification):
    """ALBERT: BERT's head exactly (`albert.pooler`, dropout, `classifier`); only the dropout's default differs."""

    @staticmethod
    def default_dropout(config: BertConfig) -> float:
        return 0.1  # HF's classifier_dropout_prob default (ALBERT's hidden dropout defaults to 0)


class DistilBertForSequenceClassification(BertForSequenceClassification):
    """DistilBERT has no pooler: its head makes its own from the first token, with ReLU instead of tanh.

    logits = W_c · dropout(ReLU(W_pre h_[CLS] + b_pre)) + b_c   (HF's `pre_classifier`, `classifier`)
    """

    encoder_pooler = False

    @staticmethod
    def default_dropout(config: BertConfig) -> float:
        return 0.2  # HF's seq_classif_dropout default

    def build_head(self, config: BertConfig, num_labels: int) -> None:
        self.pre_classifier = nn.Linear(config.hidden_size, config.hidden_size)
        self.classifier = nn.Linear(config.hidden_size, num_labels)

    def pooling_layer(self) -> nn.Linear:
        return self.pre_classifier

    def pooled(self, hidden: torch.Tensor) -> torch.Tensor:
        return F.relu(self.pre_classifier(hidden[:, 0]))  # (B, H)


class RobertaClassificationHead(nn.Module):
    """RoBERTa's `classifier`: its own pooler `dense` (H -> H, tanh) and `out_proj` (H -> C), HF's names.

    (The model's `pooled` and `head` run them, so the pooled vector can be shown and trained apart.)
    """

    def __init__(self, config: BertConfig, num_labels: int):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.out_proj = nn.Linear(config.hidden_size, num_labels)


class RobertaForSequenceClassification(BertForSequenceClassification):
    """RoBERTa has no pooler in its encoder: the head holds one, with dropout on both sides.

    logits = W_o · dropout(tanh(W_d · dropout(h_<s>) + b_d)) + b_o   (HF's `classifier.dense`, `.out_proj`)
    """

    encoder_pooler = False

    def build_head(self, config: BertConfig, num_labels: int) -> None:
        self.classifier = RobertaClassificationHead(config, num_labels)

    def pooling_layer(self) -> nn.Linear:
        return self.classifier.dense

    def pooled(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.classifier.dense(self.dropout(hidden[:, 0])))  # (B, H)

    def head(self, pooled: torch.Tensor) -> torch.Tensor:
        return self.classifier.out_proj(self.dropout(pooled))  # (B, C)


SEQUENCE_CLASSIFIERS = {"bert": BertForSequenceClassification, "albert": AlbertForSequenceClassification,
                        "distilbert": DistilBertForSequenceClassification,
                        "roberta": RobertaForSequenceClassification}
