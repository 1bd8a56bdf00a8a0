"""`LoadedModel`: a model ready to explore (weights, tokenizer, where they came from)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .config import BertConfig
from .heads import BertForPreTraining
from .tokenization import WordPieceTokenizer

Progress = Callable[[str, float], None]  # (what is happening, fraction done in [0, 1])


@dataclass
class LoadedModel:
    """A model ready to explore: weights (eval mode), tokenizer, and where they came from."""

    model: BertForPreTraining
    tokenizer: WordPieceTokenizer
    name: str
    source: str  # "bundled" | "local" | "hub" | "session"
    notes: list[str] = field(default_factory=list)  # e.g. which head is missing and why
    # A sentence-transformers folder's pooling ("mean", "cls", "max") and whether it normalises; None: not one.
    pooling: str | None = None
    normalize: bool | None = None

    @property
    def config(self) -> BertConfig:
        return self.model.config

    @property
    def family(self) -> str:
        """"bert", "roberta", "distilbert" or "albert"."""
        return self.model.config.model_type

    @property
    def has_mlm(self) -> bool:
        return self.model.has_mlm

    @property
    def has_nsp(self) -> bool:
        return self.model.has_nsp

    @property
    def max_length(self) -> int:
        """Tokens that fit: RoBERTa's first padding_idx + 1 positions are never used (514 -> 512)."""
        return min(self.config.max_position_embeddings - self.config.position_offset, self.tokenizer.model_max_length)
