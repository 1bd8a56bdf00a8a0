"""Predict-then-reveal questions for the lesson, each answered by running the model on the step's sentence.

Every function takes the loaded model and the step's text and returns a `Question` whose `answer` is
the index of the choice the model's numbers pick, and whose `reveal` says what was computed. Nothing
here knows an answer in advance: a different sentence, model or seed gives a different answer.
A question that cannot be asked of this input raises `BertCoreError` with what to change.

A question's model work goes through `run(fn, *args, **kwargs)`, which computes `fn(model, *args, **kwargs)`:
by default directly; the Lesson page passes its shared cache, and asks for the same analyses its views
draw (`PREDICTIONS`, `ATTENTION`), so a step's question and view share one forward pass.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from ..errors import BertCoreError
from ..finetune.finetuning import default_pooling
from ..finetune.qa import STOPWORDS
from ..inspect.analysis import analyze
from ..inspect.input_tables import split_words
from ..inspect.masking_view import masking_stats
from ..inspect.objectives_view import loss_targets
from ..inspect.residual import RepeatedWord, SameWord, logit_lens, same_word
from ..model.classifier_io import new_classifier
from ..model.classifiers import SEQUENCE_CLASSIFIERS
from ..model.config import BertConfig
from ..model.counts import param_counts
from ..model.loaded import LoadedModel
from ..model.loading import MINILM_NAME
from ..model.token_heads import BertForTokenClassification
from ..train.trainer import PRESETS, evaluate_mlm, new_model
from . import attention
from .naming import model_name


@dataclass(frozen=True)
class Question:
    """One multiple-choice question; `answer` indexes `choices` and was computed from the model."""

    prompt: str  # may hold user text: draw it as plain text, never as HTML
    choices: tuple[str, ...]
    answer: int
    reveal: str  # what the model computed, with its numbers
    # Who computed the answer, for its label ("the model's answer"): "" for a rule, a count or a shape.
    answered_by: str = "the model"


Run = Callable[..., Any]  # run(fn, *args, **kwargs) -> fn(model, *args, **kwargs), perhaps from a cache

# The analyses a step's view draws; its question asks for the same, so a shared cache holds one of each.
PREDICTIONS = dict(top_k=5, embeddings=False, hidden_states=False, attentions=False)
ATTENTION = dict(top_k=5, embeddings=False, hidden_states=False)


def direct(m: LoadedModel) -> Run:
    """A `run` that computes fn(m, ...) itself, with no cache."""
    return lambda fn, *args, **kwargs: fn(m, *args, **kwargs)


def _nearest(values: list[float], x: float, log: bool = False) -> int:
    """Index of the value closest to x (on a log scale if `log`)."""
    f = (lambda v: math.log(max(v, 1e-12))) if log else (lambda v: v)
    return int(np.argmin([abs(f(v) - f(x)) for v in values]))


def _words(m: LoadedModel, text: str) -> list:
    """The pre-tokenized words of `text` that hold a letter or digit (no special tokens, no punctuation)."""
    specials = set(m.tokenizer.specials.values()) | {"[MASK]"}
    return [w for w in split_words(m.tokenizer, text) if w.word not in specials and any(c.isalnum() for c in w.word)]


def _need_mlm(m: LoadedModel) -> None:
    """A clear error for a model without a masked-language-model head."""
    if not m.has_mlm:
        raise BertCoreError("this model has no masked-language-model head, so it cannot fill a [MASK]: "
                            "pick a model with one in the sidebar (both bundled models have one)")


def _first_mask(m: LoadedModel, text: str, text_pair: str | None, run: Run | None):
    """A trace with the top 5 predictions and its first [MASK] position; clear errors when either is missing."""
    _need_mlm(m)
    t = (run or direct(m))(analyze, text, text_pair, **PREDICTIONS)
    if not t.mask_positions:
        raise BertCoreError("this question needs a [MASK] in the sentence: type [MASK] where a word should be")
    return t, t.mask_positions[0]


# ----------------------------------------------------------------------------------------- 1. tokens
def pieces(m: LoadedModel, text: str, *, run: Run | None = None) -> Question:
    """Into how many pieces does the sentence's longest word split?"""
    m.tokenizer.encode(text, max_length=m.max_length)  # an empty or all-special text: the tokenizer's own message
    words = _words(m, text)
    if not words:
        raise BertCoreError("this question needs a word in the sentence (letters or digits)")
    w = max(words, key=lambda s: (len(s.word), len(s.pieces)))
    n = len(w.pieces)
    choices = tuple(str(i) for i in range(1, max(5, n) + 1))
    return Question(
        prompt=f"Into how many pieces does {model_name(m).possessive} tokenizer cut the word “{w.word}”?",
        choices=choices, answer=n - 1, answered_by="the tokenizer",
        reveal=f"“{w.word}” → {' + '.join(w.pieces)}: {n} piece{'s' * (n != 1)} "
               f"(the vocabulary has {m.tokenizer.vocab_size:,} entries).")


# ------------------------------------------------------------------------------------ 2. embeddings
COSINE_BANDS = (("exactly 1: identical", 1.0), ("between 0.9 and 1", 0.9), ("between 0.5 and 0.9", 0.5),
                ("between 0 and 0.5", 0.0), ("below 0", -1.0))


def _band(c: float) -> int:
    """Index of the cosine band that holds c."""
    if c >= 1 - 1e-6:
        return 0
    return next(i for i, (_, lo) in enumerate(COSINE_BANDS) if i > 0 and c >= lo)


DETERMINERS = frozenset("a an the this that these those my your his her its our their".split())
MOVED = 0.05  # a change of cosine smaller than this from input to last layer: "about as alike as at the input"


def topic_words(m: LoadedModel, sw: SameWord) -> list[RepeatedWord]:
    """The repeated words of `sw` that are words of the text: no special token (a typed [MASK], an [UNK])."""
    specials = {s.lower() for s in m.tokenizer.specials.values()} | {"[mask]", "[unk]"}
    return [r for r in sw.words if r.word.lower() not in specials and any(c.isalnum() for c in r.word)]


def topic_word(sw: SameWord, words: list[RepeatedWord] | None = None) -> RepeatedWord:
    """The repeated word the sentences are about, of `words` (default: all of sw's): a content word (no stop word),
    used as a noun (a determiner before both occurrences: "the bank" ... "the bank"), then the longest; the first
    one on a tie."""
    def key(r: RepeatedWord) -> tuple[bool, bool, int]:
        before = [sw.tokens[p[0] - 1].lower() for p in (r.first, r.second)]
        return r.word.lower() not in STOPWORDS, all(b in DETERMINERS for b in before), len(r.word)
    return max(sw.words if words is None else words, key=key)


def context_effect(c0: float, cl: float) -> str:
    """What the layers did to two vectors, in words that follow the numbers (MOVED: the margin)."""
    if cl < c0 - MOVED:
        return "the context has pulled them apart"
    if cl > c0 + MOVED:
        return "the context has made them more alike"
    return "they stay about as alike as at the input"


def input_cosine(m: LoadedModel, text: str, text_pair: str | None = None, *, run: Run | None = None) -> Question:
    """A word that occurs twice: cosine of its two input vectors (state 0, LayerNorm of the three embeddings)."""
    sw = (run or direct(m))(same_word, text, text_pair)
    words = topic_words(m, sw)
    if not words:
        raise BertCoreError("this question needs a word that occurs twice (e.g. “bank” in two contexts; "
                            "[MASK] and unknown pieces do not count)")
    w = topic_word(sw, words)
    c0, cl = float(w.cos[0]), float(w.cos[-1])
    L = len(w.cos) - 1
    return Question(
        prompt=f"“{w.word}” occurs twice, with the same token embedding both times. After the position "
               f"(and segment) embeddings are added and LayerNorm applied, what is the cosine similarity "
               f"of its two input vectors?",
        choices=tuple(name for name, _ in COSINE_BANDS), answer=_band(c0),
        reveal=f"cos = {c0:.3f} at the input (only position and segment differ); after {model_name(m).possessive} "
               f"last layer (layer {L}) cos = {cl:.3f}: {context_effect(c0, cl)} ({cl - c0:+.3f}).")


# --------------------------------------------------------------------------------------- 3. masking
KEPT_CHOICES = (("about 0%", 0.0), ("about 10%", 0.10), ("about 15%", 0.15), ("about 50%", 0.5),
                ("about 80%", 0.8))


def kept_share(m: LoadedModel, text: str, text_pair: str | None = None, seed: int = 0,
               n_draws: int = 1000, run: Run | None = None) -> Question:
    """Over `n_draws` seeded draws, what share of the selected tokens is left unchanged?"""
    s = (run or direct(m))(masking_stats, text, text_pair, seed=seed, n_draws=n_draws)
    if s.counts["selected"] == 0:
        raise BertCoreError("no token was selected in any draw: the sentence needs ordinary words")
    sel = s.counts["selected"]
    kept, masked, rnd = (s.counts[f"{k}_rate"] for k in ("kept", "mask", "random"))
    return Question(
        prompt=f"BERT selects 15% of the tokens to predict. In {n_draws:,} masking draws of this sentence "
               f"({model_name(m).possessive} pieces), "
               "what share of the selected tokens does the model read unchanged?",
        choices=tuple(name for name, _ in KEPT_CHOICES), answer=_nearest([v for _, v in KEPT_CHOICES], kept),
        answered_by="the masking rule",
        reveal=f"{sel:,} tokens selected in {n_draws:,} draws: {masked:.1%} [MASK], {rnd:.1%} random, {kept:.1%} "
               "unchanged (the rule: 80/10/10). The paper's reasons (Sec. 3.1, A.1): [MASK] never appears at "
               "fine-tuning, a mismatch with pre-training; not knowing which tokens were replaced, the model keeps a "
               "distributional representation of every input token; 1.5% random does not seem to harm. Table 8 "
               "(80/10/10 vs 100% [MASK]): MNLI 84.2 vs 84.3; NER 95.4 vs 94.9 fine-tuned, 94.9 vs 94.0 feature-based.")


# ----------------------------------------------------------------------------------- 4. predictions
def top_guess(m: LoadedModel, text: str, text_pair: str | None = None, *, run: Run | None = None) -> Question:
    """Which of the model's four best candidates at the first [MASK] does it rank first?"""
    t, pos = _first_mask(m, text, text_pair, run)
    cands = t.predictions[pos][:4]  # the top 4 of the top 5, in the model's order
    shown = sorted(tok for tok, _ in cands)
    best = cands[0][0]
    which = "the first [MASK]" if len(t.mask_positions) > 1 else "the [MASK]"  # "first" only where there are two
    return Question(
        prompt=f"Here are {model_name(m).possessive} four best candidates for {which}, in alphabetical "
               "order. Which one does it rank first?",
        choices=tuple(shown), answer=shown.index(best),
        reveal="The model's probabilities: " + ", ".join(f"{tok} {p:.1%}" for tok, p in cands) + ".")


def right_context(m: LoadedModel, text: str, text_pair: str | None = None, *, run: Run | None = None) -> Question:
    """Does the top guess at the first [MASK] change when everything after it is cut off?"""
    t, pos = _first_mask(m, text, text_pair, run)
    if t.sequence_ids[pos] != 0 or t.offsets[pos] is None:
        raise BertCoreError("put the [MASK] in the first sentence")
    left = text[: t.offsets[pos][1]]
    full_tok, full_p = t.predictions[pos][0]
    t2, pos2 = _first_mask(m, left, None, run)
    left_tok, left_p = t2.predictions[pos2][0]
    same = left_tok == full_tok
    return Question(
        prompt=f"With the whole sentence {model_name(m).possessive} top guess is “{full_tok}”. Now it reads only "
               f"the words up to the [MASK] (“{left}”), as a left-to-right model must. Does its top guess stay "
               "the same?",
        choices=("yes, the same word", "no, a different word"), answer=0 if same else 1,
        reveal=f"With both sides: “{full_tok}” ({full_p:.1%}); with the left side only: “{left_tok}” "
               f"({left_p:.1%}). " + (f"The words after the gap changed {model_name(m).possessive} top guess: it "
                                      "reads both sides." if not same else
                                      "Here the words after the gap did not change the top guess; they still "
                                      "move its probabilities."))


# ------------------------------------------------------------------------------------- 5. attention
def attention_head(m: LoadedModel, text: str, text_pair: str | None = None, *,
                   run: Run | None = None) -> tuple[int, int]:
    """(layer, head), 0-based: the head the attention step shows for this sentence (`attention.linking_head`)."""
    return attention.linking_head((run or direct(m))(analyze, text, text_pair, **ATTENTION))


def attention_target(m: LoadedModel, text: str, text_pair: str | None = None, *,
                     run: Run | None = None) -> Question:
    """From the last word of sentence A, which content word away from it does the head that links it most clearly
    to one (`attention.linking_head`) attend to most? The choices are such words only (no [CLS], [SEP],
    punctuation, stop word, neighbour or the word itself): each is a possible answer as the prompt words it."""
    t = (run or direct(m))(analyze, text, text_pair, **ATTENTION)
    q = attention.query_token(t)
    layer, head = attention.linking_head(t)
    row = t.attentions[layer, head, q]  # (T,)
    far = attention.far_content(t, q)
    order = [int(i) for i in np.argsort(-row, kind="stable")]
    picks = sorted([i for i in order if far[i]][:4])  # the answer and the content words it weighs most after it
    best, runner = [i for i in order if far[i]][:2]
    L, nh = t.attentions.shape[:2]
    word = t.tokens[q]
    top = order[:3]
    sink = [i for i in top[:1] if t.word_ids[i] is None]  # its largest weight on [CLS] or [SEP]
    return Question(
        prompt=f"Of {model_name(m).possessive} {L * nh} heads, layer {layer + 1}, head {head + 1} links “{word}” "
               f"(position {q}; [CLS] is 0) most clearly to one content word that is not next to it. Which "
               "one?",
        choices=tuple(f"{t.tokens[i]} (position {i})" for i in picks), answer=picks.index(best),
        reveal=f"From “{word}”, its largest weights: " + ", ".join(f"{t.tokens[i]} ({i}) {row[i]:.1%}" for i in top)
               + f"; of the content words, {t.tokens[best]} ({best}) gets the most, {row[best]:.1%}; the next "
               f"content word, {t.tokens[runner]} ({runner}), gets {row[runner]:.1%}."
               + (f" Many heads park much of their attention on {t.tokens[sink[0]]} when they have nothing useful "
                  "to read (a sink): a large weight there means the head is idle for this token, not that "
                  f"{t.tokens[sink[0]]} matters to it." if sink else ""))


# --------------------------------------------------------------------------------------- 6. NSP / [CLS]
def next_sentence(m: LoadedModel, text: str, text_pair: str | None, *, run: Run | None = None) -> Question:
    """IsNext or NotNext, from the NSP head on [CLS]; for a model without one, how many segments it has."""
    if not m.has_nsp:
        cfg = m.config
        n = cfg.type_vocab_size if cfg.has_segments else 0
        choices = tuple(str(i) for i in range(0, max(2, n) + 1))
        return Question(
            prompt=f"This {m.family} model was pre-trained without next-sentence prediction, so sentence B needs "
                   "no segment of its own. How many segment (token-type) embeddings does it have?",
            choices=choices, answer=n,
            reveal=f"type_vocab_size = {n} in its config" + (": it tells A from B only by the separator." if n < 2
                                                              else "."))
    if not text_pair:
        raise BertCoreError("next-sentence prediction needs a sentence B")
    t = (run or direct(m))(analyze, text, text_pair, **PREDICTIONS)
    p_next, p_not = t.nsp
    return Question(
        prompt=f"{cap(model_name(m).possessive)} NSP head reads the final [CLS] vector: does it take sentence B "
               "to follow sentence A?",
        choices=("IsNext", "NotNext"), answer=0 if p_next >= p_not else 1,
        reveal=f"p(IsNext) = {p_next:.1%}, p(NotNext) = {p_not:.1%}: the model's verdict, not the truth. "
               + nsp_note(m))


def nsp_note(m: LoadedModel) -> str:
    """How good the model's NSP head is known to be: the paper's number, and where the model on screen differs."""
    if m.name == MINILM_NAME:
        return ("MiniLM was distilled without an NSP head: this one was learned in this project on Brown sentence "
                "pairs, so its verdicts are not the paper's (97-98% right).")
    if model_name(m).paper:
        return "The paper's BERT-base was right on 97-98% of its NSP pairs."
    return "The paper's BERT was right on 97-98% of its NSP pairs; this model's head was trained elsewhere."


def cap(s: str) -> str:
    """The first letter upper-cased (a name at the start of a sentence)."""
    return s[:1].upper() + s[1:]


# ---------------------------------------------------------------------------------------- 7. layers
RANK_BANDS = (("1st: already the top guess", 1), ("2nd to 10th", 10), ("11th to 100th", 100),
              ("below 100th", math.inf))


def _rank_band(rank: int) -> int:
    """Index of the band of RANK_BANDS that holds `rank` (1 = top)."""
    return next(i for i, (_, hi) in enumerate(RANK_BANDS) if rank <= hi)


def lens_layer(m: LoadedModel, text: str, text_pair: str | None = None, *, run: Run | None = None) -> Question:
    """Halfway up the layers, read with the MLM head: where does the final answer at the first [MASK] rank?"""
    _need_mlm(m)
    lens = (run or direct(m))(logit_lens, text, text_pair, top_k=1)
    if not lens.mask_positions:
        raise BertCoreError("this question needs a [MASK] in the sentence: type [MASK] where a word should be")
    pos = lens.mask_positions[0]
    rank = lens.final_rank[pos]  # (L+1,): rank[l] after layer l, rank[0] at the embeddings
    L = len(rank) - 1
    half = max(L // 2, 1)
    top = rank == 1
    first = L
    while first > 0 and top[first - 1]:
        first -= 1
    names = ["the embeddings"] + [f"layer {i}" for i in range(1, L + 1)]
    tok = lens.final_token[pos]
    V = m.tokenizer.vocab_size
    return Question(
        prompt=f"{cap(model_name(m).possessive)} final answer at the [MASK] is “{tok}”. Read the [MASK]'s "
               f"vector halfway up, after layer {half} of {L}, with the same MLM head (the logit lens): where "
               f"does “{tok}” rank among the {V:,} pieces?",
        choices=tuple(name for name, _ in RANK_BANDS), answer=_rank_band(int(rank[half])),
        reveal=f"After layer {half}: rank {int(rank[half]):,}. Its rank after each layer: "
               + ", ".join(f"{n}: {int(r):,}" for n, r in zip(names, rank))
               + f"; it is the top guess from {names[first]} on. The MLM head was trained on the last layer's "
               "vectors only, so reading earlier layers with it is a rough view.")


# ---------------------------------------------------------------------------------------- 8. anatomy
def bert_base_config() -> BertConfig:
    """bert-base-uncased's shape: 12 layers, 768 wide, 12 heads, 3,072 feed-forward, 30,522 pieces."""
    return BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                      intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2)


def bert_large_config() -> BertConfig:
    """bert-large-uncased's shape: 24 layers, 1,024 wide, 16 heads, 4,096 feed-forward."""
    return BertConfig(vocab_size=30522, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                      intermediate_size=4096, max_position_embeddings=512, type_vocab_size=2)


SIZE_CHOICES = (("about 11 million", 11e6), ("about 110 million", 110e6), ("about 340 million", 340e6),
                ("about 1.1 billion", 1.1e9))


def bert_base_size(m: LoadedModel, *, run: Run | None = None) -> Question:
    """How many parameters has BERT-base's encoder (counted from its config)?"""
    n = param_counts(bert_base_config(), mlm=False, nsp=False)["total"]
    mine = param_counts(m.config, mlm=m.has_mlm, nsp=m.has_nsp, pooler=m.model.bert.pooler is not None)
    emb = sum(v for k, v in mine.items() if "embeddings" in k or k == "embedding LayerNorm")
    heads = sum(v for k, v in mine.items() if k.startswith(("MLM head", "NSP head")))
    name = model_name(m)
    here = ("BERT-base is the model on screen." if name.short == "BERT-base" else
            f"A fact of BERT-base, not of the model on screen: {name.long} has {mine['total'] / 1e6:.1f} million.")
    return Question(
        prompt=f"How many parameters does the paper's BERT-base (12 layers, 768 wide, 12 heads) have? {here}",
        choices=tuple(name for name, _ in SIZE_CHOICES), answer=_nearest([v for _, v in SIZE_CHOICES], n, log=True),
        answered_by="the paper",
        reveal=f"The paper: 110M. BERT-base's encoder with its pooler, from its config: {n:,}. "
               f"{cap(name.short)}: {mine['total']:,} in all ({emb / mine['total']:.0%} embedding tables)"
               + (f", of which {heads:,} are the pre-training heads (MLM transform and output bias, its output "
                  f"matrix tied to the token embeddings; NSP's 2-way layer): {mine['total'] - heads:,} without them"
                  if heads else "") + ".")


# ------------------------------------------------------------------------------------ 9. pre-training
@functools.lru_cache(maxsize=1)  # one tiny model: V x 64 floats twice (~16 MB for a 30,522-piece vocabulary)
def fresh_model(vocab_size: int, pad_token_id: int, seed: int):
    """A tiny BERT with random weights for a vocabulary of this size (building one takes ~0.1 s)."""
    sizes = SimpleNamespace(vocab_size=vocab_size, pad_token_id=pad_token_id)  # all new_model reads of a tokenizer
    return new_model(sizes, PRESETS["tiny (2 layers, 64 wide)"], seed=seed).eval()


def untrained_loss(m: LoadedModel, text: str, seed: int = 0, repeats: int = 20) -> tuple[float, int]:
    """MLM loss of a freshly initialised tiny model with this tokenizer on `repeats` masked copies of text."""
    fresh = fresh_model(m.tokenizer.vocab_size, m.tokenizer.pad_token_id, seed)
    with torch.no_grad():
        r = evaluate_mlm(fresh, m.tokenizer, [text] * repeats, seed=seed, seq_len=min(128, m.max_length))
    if r["masked_tokens"] == 0:
        raise BertCoreError("no token was masked: the sentence needs ordinary words")
    return r["loss"], r["masked_tokens"]


def initial_loss(m: LoadedModel, text: str, seed: int = 0, *, run: Run | None = None) -> Question:
    """What is the MLM loss of a model that has learned nothing? (measured: about ln V)"""
    if not text.strip():
        raise BertCoreError("the text is empty: type a sentence")
    V, repeats = m.tokenizer.vocab_size, 20
    loss, n = (run or direct(m))(untrained_loss, text, seed=seed, repeats=repeats)
    values = (math.log(2), 1.0, math.log(V), float(V))
    choices = (f"about {values[0]:.2f}", "about 1", f"about {values[2]:.1f}", f"about {V:,}")
    return Question(
        prompt=f"Before any training a model spreads its guess over all V = {V:,} pieces of "
               f"{model_name(m).possessive} vocabulary. What is its masked-LM loss (cross-entropy in nats) at a "
               "masked token?",
        choices=choices, answer=_nearest(list(values), loss, log=True), answered_by="a fresh model",
        reveal=f"A freshly initialised model with this tokenizer, on {repeats} masked copies of your sentence "
               f"({n} masked tokens in all): loss {loss:.2f}, close to ln V = ln {V:,} = {math.log(V):.2f}: a "
               "uniform guess gives each piece 1/V, and −ln(1/V) = ln V. Training pushes it down from there.")


# ------------------------------------------------------------------------------------- 10. fine-tuning
NER_LABELS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")  # CoNLL-2003


def head_outputs(m: LoadedModel, text: str) -> tuple[int, int, int]:
    """(tokens, scores of a 2-label sentence classifier, scores of a 9-label tagger): both heads run on `m`."""
    if m.family not in SEQUENCE_CLASSIFIERS:
        raise BertCoreError(f"this app has no sentence-classifier head for the {m.family} family yet")
    enc = m.tokenizer.encode(text, None, max_length=m.max_length)
    ids = torch.from_numpy(enc.input_ids)[None]  # (1, T)
    types = torch.from_numpy(enc.token_type_ids)[None]
    # New heads on the shared encoder (no copy of its weights): the shapes are the lesson, not the values.
    clf, _ = new_classifier(m, ["negative", "positive"], seed=0, copy_encoder=False)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        tagger = BertForTokenClassification(m.config, list(NER_LABELS), bert=m.model.bert)
    with torch.no_grad():
        hidden = m.model.bert(ids, types)  # (1, T, H): one pass of the shared encoder feeds both heads
        c = clf.eval().head(clf.pooled(hidden))  # (1, 2), as clf.logits(ids, types)
        g = tagger.eval().classifier(hidden)  # (1, T, 9), as tagger.logits(ids, types)
    return len(enc), int(c.numel()), int(g.numel())


def classifier_reads(m: LoadedModel) -> str:
    """What a classifier fine-tuned on `m` reads by default (the Fine-tuning page's pooling for it)."""
    return "the mean of its tokens' vectors" if default_pooling(m) == "mean" else "[CLS] through the pooler"


def classifier_note(m: LoadedModel) -> str:
    """What a classifier on `m` reads, said against the paper's: the same, or different and how."""
    name = model_name(m)
    if default_pooling(m) == "mean":
        return (f"Here the two differ: the paper's classifier reads the final [CLS] vector, {name.possessive} "
                f"{classifier_reads(m)}, as it was trained.")
    return f"{cap(name.possessive)} classifier reads {classifier_reads(m)}, as the paper's does ([CLS])."


def head_sizes(m: LoadedModel, text: str, seed: int = 0, *, run: Run | None = None) -> Question:
    """How many scores do a sentence classifier and a token tagger give for this sentence? (choices shuffled)"""
    if not text.strip():
        raise BertCoreError("the text is empty: type a sentence")
    T, n_clf, n_tag = (run or direct(m))(head_outputs, text)
    combos = [(n_clf, n_tag), (n_clf, len(NER_LABELS)), (n_clf * T, n_tag), (1, T)]
    uniq = []
    for c in combos:
        if c not in uniq:
            uniq.append(c)
    order = list(range(len(uniq)))
    random.Random(f"{seed}|{text}").shuffle(order)  # the right choice's place: seeded, not always first
    n_words = len(_words(m, text))
    name = model_name(m)
    return Question(
        prompt=f"On {name.short}, a sentiment classifier (2 labels) reads one vector for the whole sentence; a "
               f"named-entity tagger (9 labels) reads every token's. Your sentence is {T} tokens with [CLS] and "
               "[SEP]. How many scores does each output?",
        choices=tuple(f"classifier {uniq[i][0]}, tagger {uniq[i][1]}" for i in order), answer=order.index(0),
        answered_by="",
        reveal=f"Run on {name.short}: the classifier gives ({n_clf},), one score per label; the tagger "
               f"({T}, {len(NER_LABELS)}) = {n_tag}, one row per token (the paper labels only each word's first "
               f"piece: {n_words} words here). " + classifier_note(m))


# ------------------------------------------------------------------------------------- 11. BERT vs GPT
def learning_signal(m: LoadedModel, text: str, seed: int = 0, *, run: Run | None = None) -> Question:
    """How many positions does each objective learn from in one pass over this sentence?"""
    t = (run or direct(m))(loss_targets, text, seed)  # the BERT vs GPT page's own numbers
    T, mlm, rtd = len(t.tokens), int(t.mlm.sum()), int(t.rtd.sum())
    # GPT reads the text without BERT's [CLS] and [SEP]: every piece but the last has a next one to predict.
    # A typed [MASK] or an [UNK] is a piece of the text: only the two the tokenizer adds are left out.
    added = {m.tokenizer.specials["cls_token"], m.tokenizer.specials["sep_token"]}
    n = T - sum(tok in added for tok in t.tokens)
    clm = max(n - 1, 0)
    combos = []
    for c in ((mlm, clm), (clm, mlm), (mlm, mlm), (n, n)):
        if c not in combos:
            combos.append(c)
    order = sorted(range(len(combos)), key=lambda i: combos[i])
    choices = tuple(f"BERT {combos[i][0]}, GPT {combos[i][1]}" for i in order)
    return Question(
        prompt=f"Your sentence is {n} WordPiece pieces here ({T} with [CLS] and [SEP]; GPT pre-trains without those, "
               f"and its BPE splits differently). In one pass (seed {seed}), on how many positions is BERT's "
               "masked-LM loss computed, and on how many GPT's next-token loss?",
        choices=choices, answer=order.index(0), answered_by="",
        reveal=f"BERT: the {mlm} position{'s' * (mlm != 1)} this draw selected (each ordinary token with p = 15%); "
               f"GPT: {clm}, every piece with a next one. ELECTRA (BERT vs GPT page) learns from all {rtd}: the "
               "model judges each input token, original or replaced by a small generator.")


# Each question: its function and which of the step's inputs it reads.
QUESTIONS = {
    "pieces": pieces,
    "input_cosine": input_cosine,
    "kept_share": kept_share,
    "top_guess": top_guess,
    "right_context": right_context,
    "attention_target": attention_target,
    "next_sentence": next_sentence,
    "lens_layer": lens_layer,
    "bert_base_size": bert_base_size,
    "initial_loss": initial_loss,
    "head_sizes": head_sizes,
    "learning_signal": learning_signal,
}
