"""A small, regular corpus that a tiny model learns in about a minute on 2 CPU cores: the "farm" corpus.

Five animals, each with its own sound, food and home, in five sentence patterns that all start "the <animal>",
with six names as noise ("the dog barks at anna ."). 33 words, so a whole-word vocabulary of 110 pieces (the
words, the letters and digits to spell anything else, the 5 special tokens): the loss starts near
ln V = ln 110 ≈ 4.7 instead of ln 12,000 ≈ 9.4, and each fact is seen dozens of times per step of 128 lines. Real
BERT needed days on 3.3 billion words of free text to learn what this corpus spells out in five patterns.

Generated, not stored: `farm_lines(n, seed)` is the same list for the same arguments. The probes that name a
person never occur in it (the corpus says "the dog barks at tom ." but never "... at emma ."), so getting them
right is generalising over names; the others are facts the corpus states.
"""

from __future__ import annotations

import functools
import random
import string
from dataclasses import dataclass

from tokenizers import AddedToken, processors

from ..inspect.analysis import analyze
from ..model.loaded import LoadedModel
from ..model.tokenization import WordPieceTokenizer
from .corpus import SPECIAL_NAMES, SPECIAL_TOKENS, _pipeline, _wordpiece_model

# animal -> (its sound, its food, its home): the facts a model must learn.
ANIMALS = {
    "dog": ("barks", "bones", "kennel"),
    "cat": ("meows", "fish", "basket"),
    "cow": ("moos", "grass", "barn"),
    "bird": ("sings", "seeds", "nest"),
    "duck": ("quacks", "bread", "pond"),
}
NAMES = ("anna", "tom", "sam", "lily", "max", "emma")
# Every pattern starts "the <animal>": the animal is always the second word, so a model can find it by
# position before it learns to find it by content, and a minute of training is enough.
PATTERNS = (
    "the {a} {s} .",
    "the {a} eats {f} .",
    "the {a} sleeps in the {h} .",
    "the {a} {s} at {n} .",
    "the {a} {s} and eats {f} .",
)
FARM_LINES = 4000  # lines a run trains on (47 distinct sentences, 4000 / 47 ≈ 85 times each)

# The Training page's probes (one [MASK] each; the answer is the only word the patterns allow).
FARM_PROBES = (
    "the dog [MASK] at emma .",  # barks: the sound from the animal on the left
    "the cow eats [MASK] .",  # grass
    "the [MASK] sleeps in the nest .",  # bird: the animal from its home on the right
    "the duck quacks and eats [MASK] .",  # bread
)
FARM_ANSWERS = ("barks", "grass", "bird", "bread")


@dataclass(frozen=True)
class Cloze:
    """One fill-in probe with its right answer, and which side of the blank decides it."""

    sentence: str  # with one [MASK]
    answer: str
    side: str  # "left": the words before the blank decide it; "right": only the words after it do


# For BERT vs GPT: a causal model guesses a [MASK] from its left alone, so it can answer the "left" probes
# and must guess among the five animals on the "right" ones; a bidirectional model can answer both.
FARM_CLOZE = (
    Cloze("the [MASK] barks at tom .", "dog", "right"),
    Cloze("the [MASK] eats seeds .", "bird", "right"),
    Cloze("the [MASK] sleeps in the pond .", "duck", "right"),
    Cloze("the [MASK] meows and eats fish .", "cat", "right"),
    Cloze("the [MASK] moos .", "cow", "right"),
    Cloze("the duck eats [MASK] .", "bread", "left"),
    Cloze("the cat sleeps in the [MASK] .", "basket", "left"),
    Cloze("the cow [MASK] at lily .", "moos", "left"),
    Cloze("the bird [MASK] .", "sings", "left"),
    Cloze("the dog barks and eats [MASK] .", "bones", "left"),
)
FARM_PROMPTS = ("the dog", "the cat sleeps", "the cow moos and")  # for a causal model to continue


def _sentence(rng: random.Random) -> str:
    a = rng.choice(list(ANIMALS))
    s, f, h = ANIMALS[a]
    return rng.choice(PATTERNS).format(a=a, s=s, f=f, h=h, n=rng.choice(NAMES))


def _normal(line: str) -> str:
    return " ".join(line.replace("[MASK]", " [MASK] ").split())


@functools.lru_cache(maxsize=4)
def _farm_lines(n: int, seed: int) -> tuple[str, ...]:
    # A probe with a name is held out ("the dog barks at emma ." never occurs, "... at tom ." does): getting it
    # right is generalising over names. The others are facts the corpus states, as a class would expect.
    probes = [*(p.replace("[MASK]", a) for p, a in zip(FARM_PROBES, FARM_ANSWERS)),
              *(c.sentence.replace("[MASK]", c.answer) for c in FARM_CLOZE)]
    held_out = {_normal(x) for x in probes if set(x.split()) & set(NAMES)}
    rng = random.Random(seed)
    out: list[str] = []
    while len(out) < n:
        line = _sentence(rng)
        if _normal(line) not in held_out:
            out.append(line)
    return tuple(out)


def farm_lines(n: int = FARM_LINES, seed: int = 0) -> list[str]:
    """`n` generated sentences (the same for the same seed), none of them a probe sentence or its answer.

    Example: farm_lines(2) -> ["the bird sings at anna .", "the cow moos and eats grass ."] (seed 0).
    """
    return list(_farm_lines(n, seed))


def farm_words() -> list[str]:
    """Every word the patterns can produce, sorted."""
    words = {w for p in PATTERNS for w in p.split() if not w.startswith("{")}
    words |= set(NAMES) | set(ANIMALS) | {w for facts in ANIMALS.values() for w in facts}
    return sorted(w for w in words if w and "{" not in w)


@functools.lru_cache(maxsize=1)
def farm_tokenizer() -> WordPieceTokenizer:
    """A whole-word WordPiece tokenizer for the farm corpus: special tokens, its words, then letters and "##"
    letters (so a word outside the corpus is spelled out, not [UNK]). Shared read-only, like the bundled one."""
    letters = list(string.ascii_lowercase + string.digits)
    pieces = [*SPECIAL_TOKENS, *(w for w in farm_words() if w not in letters), *letters,
              *("##" + c for c in letters)]
    vocab = {t: i for i, t in enumerate(dict.fromkeys(pieces))}
    rust = _pipeline(_wordpiece_model(vocab))
    rust.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    rust.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return WordPieceTokenizer(rust, dict(zip(SPECIAL_NAMES, SPECIAL_TOKENS, strict=True)), model_max_length=128)


def top_guess(model: LoadedModel, sentence: str) -> tuple[str, float]:
    """The model's top token for the sentence's (first) [MASK] and its probability, dropout off.

    A causal model's guess reads only the words left of the blank (analyze's next-token prediction).
    """
    was_training = model.model.training
    model.model.eval()
    try:
        trace = analyze(model, sentence, top_k=1, embeddings=False, hidden_states=False, attentions=False)
    finally:
        model.model.train(was_training)
    return next(iter(trace.predictions.values()))[0]


def cloze_accuracy(model: LoadedModel, items=FARM_CLOZE) -> dict[str, float]:
    """Share of cloze probes whose top guess is the answer: {"left": ..., "right": ..., "all": ...}."""
    right: dict[str, list[bool]] = {"left": [], "right": []}
    for c in items:
        right[c.side].append(top_guess(model, c.sentence)[0] == c.answer)
    every = right["left"] + right["right"]
    return {k: sum(v) / max(1, len(v)) for k, v in (*right.items(), ("all", every))}
