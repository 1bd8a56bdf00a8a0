"""What the Lesson calls the model on screen: "BERT-base" when it is BERT-base-sized BERT, otherwise "this model"
with what it is (MiniLM: 6 layers, 384 wide, ...), read from the loaded model's config, family and name."""

from __future__ import annotations

from dataclasses import dataclass

from ..model.loaded import LoadedModel
from ..model.loading import BUNDLED_NAME, MINILM_NAME

FAMILY_NAMES = {"bert": "BERT", "roberta": "RoBERTa", "distilbert": "DistilBERT", "albert": "ALBERT"}
# (layers, width, heads, feed-forward) of the paper's two sizes (Devlin et al. 2019, section 3).
PAPER_SIZES = {"BERT-base": (12, 768, 12, 3072), "BERT-large": (24, 1024, 16, 4096)}


@dataclass(frozen=True)
class ModelName:
    """How a slide names the model it runs."""

    short: str  # "BERT-base", "MiniLM", "this model": inside a sentence ("MiniLM's guess")
    long: str  # "BERT-base", or "this model (MiniLM: 6 layers, 384 wide, distilled from a BERT-sized model)"
    paper: bool  # True: the model on screen has the shape of the paper's BERT-base or BERT-large

    @property
    def possessive(self) -> str:
        """"BERT-base's", "MiniLM's", "this model's"."""
        return f"{self.short}'s"


def model_name(m: LoadedModel) -> ModelName:
    """The name the slides use for `m`, from its family and config (and, for the bundled models, their name)."""
    c = m.config
    shape = f"{c.num_hidden_layers} layers, {c.hidden_size} wide"
    if m.family == "bert":
        for name, size in PAPER_SIZES.items():
            if (c.num_hidden_layers, c.hidden_size, c.num_attention_heads, c.intermediate_size) == size:
                return ModelName(name, name, True)
    if m.name == MINILM_NAME or "minilm" in m.name.lower():
        return ModelName("MiniLM", f"this model (MiniLM: {shape}, distilled from a BERT-sized model)", False)
    if m.name == BUNDLED_NAME:
        return ModelName("this model", f"this model (a tiny BERT: {shape}, pre-trained here from random "
                                       "weights on WordNet and Brown)", False)
    fam = FAMILY_NAMES.get(m.family, m.family)
    return ModelName("this model", f"this model ({'an' if fam[:1] in 'AEIOU' else 'a'} {fam}: {shape})", False)
