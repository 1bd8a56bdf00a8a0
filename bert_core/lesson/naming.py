"""What the Lesson calls the model on screen: "BERT-base" when it is BERT-base-sized BERT, otherwise "this model"
with what it is (MiniLM: 6 layers, 384 wide, ...), read from the loaded model's config, family and name."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

from ..model.loaded import LoadedModel
from ..model.loading import BUNDLED_NAME, MINILM_DIR, MINILM_NAME

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
        return ModelName("MiniLM", f"this model (MiniLM: {shape}, distilled from a BERT-base-sized teacher)", False)
    if m.name == BUNDLED_NAME:
        return ModelName("this model", f"this model (a tiny BERT: {shape}, pre-trained here from random "
                                       "weights on WordNet and Brown)", False)
    fam = FAMILY_NAMES.get(m.family, m.family)
    return ModelName("this model", f"this model ({'an' if fam[:1] in 'AEIOU' else 'a'} {fam}: {shape})", False)


@functools.cache  # a small file that ships with the app
def minilm_trained_tokens() -> int | None:
    """Word pieces the bundled MiniLM's heads (and encoder) were trained on by this project, from its export.json."""
    path = MINILM_DIR / "export.json"
    value = json.loads(path.read_text()).get("total_tokens_seen") if path.is_file() else None
    return value if isinstance(value, int) else None


def model_line(m: LoadedModel, bert_base_offered: bool = False) -> str:
    """One short line naming the model whose guesses a slide shows, and, where it differs, the paper's BERT:
    "On screen: MiniLM, 6 layers x 384 (the paper's BERT-base: 12 x 768), distilled from a BERT-base-sized
    teacher, then its encoder and new fill-in and NSP heads trained here on 27.2M pieces of Brown + WordNet (the
    paper's: 3.3B words, books and Wikipedia)." (here: by this project) `bert_base_offered`: the
    "Use BERT-base" button is on the same screen (the side column or the sidebar, not a projector's slide)."""
    c, name = m.config, model_name(m)
    shape = f"{c.num_hidden_layers} layers × {c.hidden_size}"
    books = "the paper's: 3.3B words, books and Wikipedia"
    if name.paper:
        return f"On screen: {name.short} ({m.name}), {shape}: the paper's {name.short} shape."
    paper = "(the paper's BERT-base: 12 × 768)"
    if m.name == MINILM_NAME:
        tokens = minilm_trained_tokens()
        on = f" on {tokens / 1e6:.1f}M pieces of Brown + WordNet" if tokens else " on Brown + WordNet"
        line = (f"On screen: MiniLM, {shape} {paper}, distilled from a BERT-base-sized teacher, then its encoder "
                f"and new fill-in and NSP heads trained here{on} ({books}).")
    elif m.name == BUNDLED_NAME:
        line = (f"On screen: a tiny BERT, {shape} {paper}, pre-trained from random weights by this project on "
                f"Brown + WordNet ({books}).")
    else:
        line = f"On screen: {name.long.removeprefix('this model (').removesuffix(')')} {paper}."
    return line + (" BERT-base: one click away (“Use BERT-base”)." if bert_base_offered else "")
