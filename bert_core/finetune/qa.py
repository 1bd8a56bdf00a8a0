"""The built-in extractive question-answering task (WordNet), SQuAD's metrics, and a heuristic baseline.

Each example: a question "Which word here means <definition>?", a context of several WordNet example
sentences, and the answer: the one word of the context that the definition defines, as text and a
character offset (scripts/build_qa.py). Metrics as SQuAD's evaluation script computes them, on
normalised text (lower case, no punctuation, no articles a / an / the, single spaces):

    exact match = [norm(prediction) == norm(answer)]
    token F1    = 2 P R / (P + R),  P = |common tokens| / |prediction tokens|,  R = |common tokens| / |answer tokens|
"""

from __future__ import annotations

import functools
import gzip
import re
import string
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

QA_FILE = Path(__file__).resolve().parent.parent / "data" / "wordnet_qa.tsv.gz"  # scripts/build_qa.py
QA_DESCRIPTION = ("Which word of a short passage does a WordNet definition define? The passage is four WordNet "
                  "example sentences; one holds a word of the defined synset (exactly once), the others do not. "
                  "Validation examples use sentences both bundled models never read in pretraining.")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)
STOPWORDS = frozenset("a an the of to in on at for by with from as and or but is are was were be been being that "
                      "this these those it its which who whom what when where how than then so such not no into "
                      "out up down over under about any some all each other more most very can could will would "
                      "should may might must do does did has have had he she they we you i his her their our your "
                      "my me him them us one".split())


@dataclass(frozen=True)
class QAExample:
    """One question, its context and the answer span (characters [start, start + len(text)) of the context)."""

    question: str
    context: str
    answer_start: int
    answer_text: str


@dataclass(frozen=True)
class QATask:
    """Extractive QA examples with a fixed train/validation split."""

    name: str
    train: tuple[QAExample, ...]
    valid: tuple[QAExample, ...]
    description: str = ""
    labels: tuple[str, ...] = ("start", "end")

    @property
    def train_texts(self) -> tuple[str, ...]:
        """Each training example's text (question and context), for sizing the run."""
        return tuple(f"{e.question} {e.context}" for e in self.train)

    @property
    def valid_texts(self) -> tuple[str, ...]:
        return tuple(f"{e.question} {e.context}" for e in self.valid)


@functools.lru_cache(maxsize=1)
def builtin_qa_task() -> QATask:
    """The WordNet definition-to-word task (scripts/build_qa.py; data/CORPUS.md)."""
    rows: dict[str, list[QAExample]] = {"train": [], "validation": []}
    with gzip.open(QA_FILE, "rt", encoding="utf-8") as f:
        for line in f:
            split, q, c, start, text = line.rstrip("\n").split("\t")
            rows[split].append(QAExample(q, c, int(start), text))
    return QATask("WordNet definitions", tuple(rows["train"]), tuple(rows["validation"]), QA_DESCRIPTION)


def first_examples(task: QATask, n: int) -> QATask:
    """The task with only its first `n` training examples (the file is in hash order: a fixed sample)."""
    return task if n >= len(task.train) else replace(task, train=task.train[:n])


# --- SQuAD's metrics ------------------------------------------------------------------------------


def normalize_answer(s: str) -> str:
    """Lower case, punctuation and the articles a / an / the removed, whitespace collapsed (SQuAD v1.1)."""
    s = "".join(ch for ch in s.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def exact_match(prediction: str, truth: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(truth))


def token_f1(prediction: str, truth: str) -> float:
    """Harmonic mean of token precision and recall on normalised text (0 when nothing is shared)."""
    p, t = normalize_answer(prediction).split(), normalize_answer(truth).split()
    common = sum((Counter(p) & Counter(t)).values())
    if not p or not t:
        return float(p == t)
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(t)
    return 2 * precision * recall / (precision + recall)


def qa_scores(predictions: list[str], examples) -> dict:
    """Mean exact match and token F1 of `predictions` against the examples' answers."""
    em = [exact_match(p, e.answer_text) for p, e in zip(predictions, examples)]
    f1 = [token_f1(p, e.answer_text) for p, e in zip(predictions, examples)]
    return {"exact_match": float(np.mean(em)), "f1": float(np.mean(f1)), "examples": len(em)}


# --- a heuristic baseline -------------------------------------------------------------------------

_SENTENCE = re.compile(r"[^.!?]+[.!?]?")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")


def _content(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in STOPWORDS}


def heuristic_answer(question: str, context: str) -> str:
    """A reader without a model: the sentence sharing the most content words with the question (word prefixes
    of 4+ letters count: 'horizontal' ~ 'horizontally'), then in it the word sharing the longest prefix with a
    question word, else its longest content word."""
    q = _content(question)
    best, best_score = "", -1.0
    for m in _SENTENCE.finditer(context):
        words = _content(m.group(0))
        score = sum(1 for w in words for v in q if w[:4] == v[:4] and len(w) >= 4) + 0.01 * len(words)
        if score > best_score:
            best, best_score = m.group(0), score
    words = [w for w in _WORD.findall(best) if w.lower() not in STOPWORDS] or _WORD.findall(best) or [""]

    def prefix(w: str) -> int:
        return max((len(_common_prefix(w.lower(), v)) for v in q), default=0)

    top = max(words, key=lambda w: (prefix(w) >= 4, prefix(w), len(w)))
    return top


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def heuristic_baseline(task: QATask) -> dict:
    """Exact match and F1 of `heuristic_answer` on the validation examples."""
    return qa_scores([heuristic_answer(e.question, e.context) for e in task.valid], task.valid)
