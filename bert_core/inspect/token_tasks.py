"""What a tagger and an extractive QA model compute: a label per token, and an answer span from two distributions.

    tag:     p(label | token t) = softmax(W_c h_t + b_c)                                 (T, C)
    answer:  p_start = softmax(start logits), p_end = softmax(end logits) over all T tokens;
             score(s, e) = p_start[s] · p_end[e] for context tokens s <= e, e - s + 1 <= max_answer_tokens;
             the answer is the context's characters from token s's start to token e's end.

A question and context longer than the model's positions are split as transformers' QA pipeline
does: windows of the context (whole words) that overlap by `stride` tokens, each read after the
question; spans from every window are ranked together, and the result says how many windows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import torch

from ..errors import BertCoreError
from ..model.loaded import LoadedModel
from ..model.token_heads import BertForQuestionAnswering, BertForTokenClassification


def _softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _ids(enc) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.as_tensor(enc.input_ids)[None], torch.as_tensor(enc.token_type_ids)[None]  # (1, T) each


@dataclass
class Tagging:
    """A tagger's output for one input: tokens (specials included), label probabilities, argmax labels."""

    tokens: list[str]
    probs: np.ndarray  # (T, C) softmax over labels, in label-id order
    labels: list[str]  # (T,) the most likely label of each token
    label_names: list[str]  # the C labels, id order (config.json's id2label)
    word_ids: list[int | None]  # which word each token belongs to (None: special)
    truncation_message: str | None = None


@torch.no_grad()
def tag(m: LoadedModel, text: str, text_pair: str | None = None) -> Tagging:
    """Label every token of `text` (and `text_pair`) with `m`'s token-classification head."""
    model = m.model
    if not isinstance(model, BertForTokenClassification):
        raise BertCoreError(f"{m.name} has no token-classification head: add one and fine-tune it "
                            "(a tagger labels each token; this model was saved without such a head)")
    enc = m.tokenizer.encode(text, text_pair, max_length=m.max_length)
    ids, types = _ids(enc)
    logits = model.logits(ids, types)[0].numpy()  # (T, C)
    probs = _softmax(logits.astype(np.float64)).astype(np.float32)
    return Tagging(list(enc.tokens), probs, [model.labels[i] for i in probs.argmax(-1)], list(model.labels),
                   list(enc.word_ids), enc.truncation.message if enc.truncation else None)


@dataclass
class AnswerResult:
    """An extractive QA model's reading of one question and context (the first window, when there are several)."""

    tokens: list[str]  # [CLS] question [SEP] context [SEP] (first window)
    start_logits: np.ndarray  # (T,)
    end_logits: np.ndarray  # (T,)
    spans: list[tuple[str, int, int, float]]  # (text, start_char, end_char, score), best first, over all windows
    context_mask: np.ndarray  # (T,) True where the token is part of the context (first window)
    windows: int = 1
    notes: list[str] = field(default_factory=list)


def best_spans(start_logits: np.ndarray, end_logits: np.ndarray, context: np.ndarray, top_k: int,
               max_answer_tokens: int) -> list[tuple[int, int, float]]:
    """(s, e, score) of the `top_k` best spans: context tokens s <= e < s + max_answer_tokens, best first.

    score = softmax(start)[s] * softmax(end)[e], the softmaxes over every token of the window.
    """
    ps, pe = _softmax(np.asarray(start_logits, np.float64)), _softmax(np.asarray(end_logits, np.float64))
    scores = np.outer(ps, pe)  # (T, T): [s, e]
    t = len(ps)
    s_idx, e_idx = np.indices((t, t))
    ok = (e_idx >= s_idx) & (e_idx - s_idx < max_answer_tokens) & context[:, None] & context[None, :]
    flat = np.where(ok, scores, -1.0).ravel()
    k = min(top_k, int(ok.sum()))
    if k == 0:
        return []
    best = np.argsort(-flat, kind="stable")[:k]
    return [(int(i // t), int(i % t), float(flat[i])) for i in best]


def _windows(m: LoadedModel, question: str, context: str, stride: int) -> list[tuple[int, str]]:
    """(character offset, text) of the context windows that fit beside the question (whole words, overlapping)."""
    full = m.tokenizer.encode(context, max_length=10**6)
    probe, alone = m.tokenizer.encode(question, "a", max_length=10**6), m.tokenizer.encode("a", max_length=10**6)
    room = m.max_length - len(probe.input_ids) + sum(w is not None for w in alone.word_ids)  # for the context
    q_len = len(probe.input_ids)
    pieces = [(w, off) for w, off in zip(full.word_ids, full.offsets) if w is not None]
    if len(pieces) <= room:
        return [(0, context)]
    if room < 8:
        raise BertCoreError(f"the question takes {q_len} of the model's {m.max_length} positions: shorten it")
    out, start = [], 0
    while start < len(pieces):
        end = min(start + room, len(pieces))
        while end < len(pieces) and end > start + 1 and pieces[end][0] == pieces[end - 1][0]:
            end -= 1  # do not cut inside a word
        a, b = pieces[start][1][0], pieces[end - 1][1][1]
        out.append((a, context[a:b]))
        if end == len(pieces):
            break
        nxt = max(end - stride, start + 1)
        while nxt > start + 1 and pieces[nxt][0] == pieces[nxt - 1][0]:
            nxt -= 1
        start = nxt
    return out


@torch.no_grad()
def answer(m: LoadedModel, question: str, context: str, top_k: int = 3, max_answer_tokens: int = 30,
           stride: int = 128) -> AnswerResult:
    """The best answer spans of `context` for `question` with `m`'s QA head (module docstring)."""
    model = m.model
    if not isinstance(model, BertForQuestionAnswering):
        raise BertCoreError(f"{m.name} has no question-answering head (qa_outputs): add one and fine-tune it, "
                            "or load a SQuAD checkpoint")
    if not question.strip() or not context.strip():
        raise BertCoreError("type a question and a context passage")
    if top_k < 1 or max_answer_tokens < 1:
        raise BertCoreError("top_k and max_answer_tokens must be at least 1")
    windows = _windows(m, question, context, stride)
    found, first = [], None
    for offset, chunk in windows:
        enc = m.tokenizer.encode(question, chunk, max_length=m.max_length)
        ids, types = _ids(enc)
        start, end = (x[0].numpy() for x in model.logits(ids, types))  # (T,) each
        ctx = np.array([s == 1 for s in enc.sequence_ids])
        for s, e, score in best_spans(start, end, ctx, top_k, max_answer_tokens):
            a, b = offset + enc.offsets[s][0], offset + enc.offsets[e][1]
            found.append((context[a:b], a, b, score))
        if first is None:
            first = AnswerResult(list(enc.tokens), start, end, [], ctx, len(windows))
    best = {}
    for span in sorted(found, key=lambda x: -x[3]):  # the same span from two overlapping windows: keep the best
        best.setdefault((span[1], span[2]), span)
    first.spans = list(best.values())[:top_k]
    if len(windows) > 1:
        first.notes.append(f"The question and context are longer than the model's {m.max_length} positions: the "
                           f"context was read in {len(windows)} overlapping windows (stride {stride} tokens), as "
                           "transformers' QA pipeline does; spans from every window are ranked together. The "
                           "start and end scores shown are the first window's.")
    return first


# --- tagging words: the label of a word is the label of its first piece ----------------------------------

# Words as Brown splits them: letters/digits with inner - ' . , (don't, Atlanta's, 1,000, 3.5), or one mark.
_WORD = re.compile(r"\w+(?:[-'’.,/]\w+)*|--|\.\.\.|[^\w\s]")


def split_words(text: str) -> list[tuple[str, int, int]]:
    """(word, start, end) of each word of `text` as Brown splits words: punctuation apart, don't and 3.5 whole.

    Example: "Don't stop, Mr. Smith." -> Don't, stop, ",", Mr, ".", Smith, "."
    """
    return [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(text)]


def first_pieces(offsets: list[tuple[int, int] | None], words: list[str]) -> list[int | None]:
    """For each token of " ".join(words) (offsets, None for specials): the word it starts, or None.

    A token starts word i when it is the first token whose characters begin inside word i (a byte-level
    BPE token's offsets may include the space before the word; that space counts as the next word's).
    """
    owner = []  # character -> word index
    for i, w in enumerate(words):
        owner += [i] * len(w) + [i + 1]  # the space after word i belongs to word i + 1
    out, seen = [], set()
    for off in offsets:
        w = None if off is None or off[0] >= len(owner) else owner[off[0]]
        if w is not None and w < len(words) and w not in seen and off[1] > off[0]:
            seen.add(w)
            out.append(w)
        else:
            out.append(None)
    return out


@dataclass
class WordTagging:
    """A tagger's reading of a text split into words: each word's label from its first piece."""

    words: list[tuple[str, int, int]]  # (word, start, end) in the typed text
    labels: list[str | None]  # per word (None: the word got no piece, e.g. cut by the length limit)
    probs: np.ndarray  # (W, C) each word's first piece's label probabilities (NaN rows: no piece)
    tokens: Tagging  # the per-piece reading of " ".join(words), specials included
    first: list[int | None]  # per token: the word it starts, or None


def tag_words(m: LoadedModel, text: str) -> WordTagging:
    """Split `text` into words (as Brown does), tag " ".join(words), and read each word off its first piece.

    This is how the tagger was trained (`finetune.tagging`): words joined by single spaces, the label on
    each word's first piece, so a typed "stop." reads as the two words "stop" and ".".
    """
    words = split_words(text)
    if not words:
        raise BertCoreError("type a sentence with some words")
    joined = " ".join(w for w, _, _ in words)
    r = tag(m, joined)
    enc = m.tokenizer.encode(joined, max_length=m.max_length)
    first = first_pieces(enc.offsets, [w for w, _, _ in words])
    C = r.probs.shape[1]
    probs = np.full((len(words), C), np.nan, dtype=np.float32)
    for t, w in enumerate(first):
        if w is not None:
            probs[w] = r.probs[t]
    labels = [None if np.isnan(p[0]) else r.label_names[int(p.argmax())] for p in probs]
    return WordTagging(words, labels, probs, r, first)


def passage_probabilities(r: AnswerResult, max_answer_tokens: int = 30):
    """The first window's passage tokens, p_start and p_end there (softmax over the whole window), and its best span.

    Returns (tokens, p_start, p_end, best) with best = (s, e) indices into these tokens, or None.
    """
    ps, pe = _softmax(r.start_logits.astype(np.float64)), _softmax(r.end_logits.astype(np.float64))
    idx = np.flatnonzero(r.context_mask)
    found = best_spans(r.start_logits, r.end_logits, r.context_mask, 1, max_answer_tokens)
    pos = {int(t): i for i, t in enumerate(idx)}
    best = (pos[found[0][0]], pos[found[0][1]]) if found else None
    return [r.tokens[t] for t in idx], ps[idx].astype(np.float32), pe[idx].astype(np.float32), best
