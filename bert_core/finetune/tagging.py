"""Tagging tasks for token classification: the built-in Brown part-of-speech task, your own CoNLL file, a baseline.

A tagging task is sentences already split into words, one label per word. BERT reads word pieces, so
(as the course and transformers' token-classification examples do) each word's label goes on the
word's FIRST piece; the other pieces, [CLS] and [SEP] get the label -100, which the loss ignores:

    words   The      jury   said  antidisestablishment    .
    pieces  [CLS] the  jury  said  anti ##dis ##establish ...  .  [SEP]
    labels  -100  DET  NOUN  VERB  ADJ  -100 -100 ...         .  -100

The baseline is what a tagger without context gets: each word's most frequent tag in the training
sentences (an unseen word: the most frequent tag overall).
"""

from __future__ import annotations

import functools
import gzip
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import BertCoreError
from ..model.classifier_io import MAX_LABEL_CHARS, MAX_LABELS
from ..train.corpus import _heldout_score

POS_FILE = Path(__file__).resolve().parent.parent / "data" / "pos_brown.tsv.gz"  # scripts/build_pos.py
UNIVERSAL_TAGS = ("NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "NUM", "CONJ", "PRT", ".", "X")
POS_DESCRIPTION = ("Part of speech of every word of the Brown corpus (American English printed in 1961), in "
                   "the 12 universal tags of Petrov et al.: NOUN VERB ADJ ADV PRON DET ADP (prepositions) NUM "
                   "CONJ PRT (particles: infinitive to, up and out after a verb, existential there; Petrov et al.'s "
                   "map of Brown's tags also puts here all, half and such before a noun phrase (Brown's "
                   "pre-quantifiers and pre-qualifiers), and this data's mapping contractions such as it's and "
                   "I'm and interjections such as oh) . (punctuation) X (foreign words). Validation "
                   "sentences are ones both bundled models never read in pretraining.")
IGNORE = -100  # the label of pieces the loss skips (F.cross_entropy's ignore_index)
MAX_CONLL_BYTES = 1_000_000
MAX_CONLL_SENTENCES = 5_000
MIN_CONLL_SENTENCES = 10
MAX_SENTENCE_WORDS = 200


@dataclass(frozen=True)
class TaggingTask:
    """Sentences split into words with a label id per word; a fixed train/validation split."""

    name: str
    labels: tuple[str, ...]
    train_words: tuple[tuple[str, ...], ...]
    train_tags: tuple[tuple[int, ...], ...]
    valid_words: tuple[tuple[str, ...], ...]
    valid_tags: tuple[tuple[int, ...], ...]
    description: str = ""

    @property
    def train_texts(self) -> tuple[str, ...]:
        """Each training sentence as the model reads it: its words joined by single spaces."""
        return tuple(" ".join(w) for w in self.train_words)

    @property
    def valid_texts(self) -> tuple[str, ...]:
        return tuple(" ".join(w) for w in self.valid_words)

    def counts(self) -> dict[str, tuple[int, int]]:
        """label -> (training words, validation words)."""
        C = len(self.labels)
        tr = np.bincount([t for s in self.train_tags for t in s], minlength=C)
        va = np.bincount([t for s in self.valid_tags for t in s], minlength=C)
        return {lab: (int(a), int(b)) for lab, a, b in zip(self.labels, tr, va)}


def first_sentences(task: TaggingTask, n: int) -> TaggingTask:
    """The task with only its first `n` training sentences (the built-in file is in hash order: a fixed sample)."""
    if n >= len(task.train_words):
        return task
    return replace(task, train_words=task.train_words[:n], train_tags=task.train_tags[:n])


def _task(name: str, labels, train: list[tuple[list[str], list[str]]], valid: list[tuple[list[str], list[str]]],
          description: str = "") -> TaggingTask:
    ix = {lab: i for i, lab in enumerate(labels)}

    def side(rows):
        return (tuple(tuple(w) for w, _ in rows), tuple(tuple(ix[t] for t in tags) for _, tags in rows))

    return TaggingTask(name, tuple(labels), *side(train), *side(valid), description=description)


@functools.lru_cache(maxsize=1)
def builtin_pos_task() -> TaggingTask:
    """Brown part-of-speech tagging, universal tags (scripts/build_pos.py; data/CORPUS.md)."""
    rows: dict[str, list] = {"train": [], "validation": []}
    with gzip.open(POS_FILE, "rt", encoding="utf-8") as f:
        for line in f:
            split, words, tags = line.rstrip("\n").split("\t")
            rows[split].append((words.split(" "), tags.split(" ")))
    return _task("part of speech", UNIVERSAL_TAGS, rows["train"], rows["validation"], POS_DESCRIPTION)


# --- your own data: CoNLL -------------------------------------------------------------------------


def parse_conll(text: str) -> list[tuple[list[str], list[str]]]:
    """CoNLL-style text -> sentences of (words, labels), checked.

    One word a line, `word <TAB> label` (or more tab- or space-separated columns, as CoNLL-2003's
    `word POS chunk NER`: the first is the word, the last the label); a blank line ends a sentence;
    `-DOCSTART-` lines are skipped. Every line must have as many columns as the first.
    Example: "EU\\tB-ORG\\nrejects\\tO\\n\\nPeter\\tB-PER\\n"
             -> [(["EU", "rejects"], ["B-ORG", "O"]), (["Peter"], ["B-PER"])]
    """
    if text is None or not text.strip():
        raise BertCoreError("the file is empty: one word and its label a line (word TAB label), a blank line "
                            "between sentences")
    if len(text.encode("utf-8")) > MAX_CONLL_BYTES:
        raise BertCoreError(f"the file is larger than {MAX_CONLL_BYTES:,} bytes: use fewer sentences")
    if "\x00" in text:
        raise BertCoreError("the file contains NUL bytes: is it a binary file? Save it as plain text")
    out: list[tuple[list[str], list[str]]] = []
    words: list[str] = []
    labels: list[str] = []
    columns = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("-DOCSTART-"):
            if words:
                out.append((words, labels))
                words, labels = [], []
            continue
        cols = line.split("\t") if "\t" in line else line.split()
        cols = [c.strip() for c in cols]
        if len(cols) < 2:
            raise BertCoreError(f"line {n} ({line[:40]!r}) has no label: write each word as  word<TAB>label")
        if columns is None:
            columns = len(cols)
        elif len(cols) != columns:
            raise BertCoreError(f"line {n} has {len(cols)} columns, but the first word line has {columns}: every "
                                "line needs the same columns (word TAB label)")
        word, label = cols[0], cols[-1]
        if not word or not label:
            raise BertCoreError(f"line {n} has an empty {'word' if not word else 'label'}")
        if len(label) > MAX_LABEL_CHARS:
            raise BertCoreError(f"line {n}'s label is longer than {MAX_LABEL_CHARS} characters: is the label "
                                "the last column?")
        words.append(word)
        labels.append(label)
        if len(words) > MAX_SENTENCE_WORDS:
            raise BertCoreError(f"the sentence ending near line {n} has more than {MAX_SENTENCE_WORDS} words: "
                                "put a blank line between sentences")
        if len(out) > MAX_CONLL_SENTENCES:
            raise BertCoreError(f"more than {MAX_CONLL_SENTENCES:,} sentences: live fine-tuning takes at most "
                                f"{MAX_CONLL_SENTENCES:,}")
    if words:
        out.append((words, labels))
    if len(out) < MIN_CONLL_SENTENCES:
        raise BertCoreError(f"the file has {len(out)} sentence(s); fine-tuning needs at least "
                            f"{MIN_CONLL_SENTENCES} (a blank line between sentences)")
    classes = {lab for _, labs in out for lab in labs}
    if len(classes) < 2:
        raise BertCoreError(f"every word has the label {next(iter(classes))!r}: a tagger needs at least two labels")
    if len(classes) > MAX_LABELS:
        raise BertCoreError(f"{len(classes)} different labels; at most {MAX_LABELS} (is the label the last column?)")
    return out


def task_from_conll(text: str, name: str = "your data", valid_fraction: float = 0.2, seed: int = 0) -> TaggingTask:
    """A task from CoNLL text: a seeded split by sentence (a hash of the sentence's words and the seed)."""
    sentences = parse_conll(text)
    order = sorted(range(len(sentences)), key=lambda i: _heldout_score(f"{i}\t{' '.join(sentences[i][0])}", seed))
    n_valid = min(max(1, round(valid_fraction * len(sentences))), len(sentences) - 2)
    valid_ix = set(order[:n_valid])
    labels = sorted({lab for _, labs in sentences for lab in labs})
    train = [s for i, s in enumerate(sentences) if i not in valid_ix]
    valid = [s for i, s in enumerate(sentences) if i in valid_ix]
    return _task(name, labels, train, valid, f"Your {len(sentences):,} sentences, {len(labels)} labels.")


# --- the baseline ---------------------------------------------------------------------------------


def most_frequent_tag_baseline(task: TaggingTask) -> dict:
    """Each word's most frequent training tag (unseen: the most frequent tag overall); accuracy on validation.

    Ties go to the lower label id. Returns accuracy, the (C, C) confusion (row: true, column: predicted),
    the fallback tag and the share of validation words never seen in training.
    """
    C = len(task.labels)
    by_word: dict[str, Counter] = {}
    overall: Counter = Counter()
    for ws, ts in zip(task.train_words, task.train_tags):
        for w, t in zip(ws, ts):
            by_word.setdefault(w, Counter())[t] += 1
            overall[t] += 1
    fallback = min(overall, key=lambda t: (-overall[t], t))
    best = {w: min(c, key=lambda t: (-c[t], t)) for w, c in by_word.items()}
    true = np.array([t for ts in task.valid_tags for t in ts], dtype=np.int64)
    words = [w for ws in task.valid_words for w in ws]
    pred = np.array([best.get(w, fallback) for w in words], dtype=np.int64)
    confusion = np.bincount(true * C + pred, minlength=C * C).reshape(C, C)
    return {"accuracy": float((pred == true).mean()), "confusion": confusion, "fallback": task.labels[fallback],
            "unseen": float(np.mean([w not in best for w in words])), "words": len(words)}


def per_label_accuracy(confusion: np.ndarray) -> np.ndarray:
    """(C,) the share of each true label's words tagged right (NaN for a label with no words)."""
    rows = confusion.sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(rows > 0, np.diag(confusion) / np.maximum(rows, 1), np.nan)
