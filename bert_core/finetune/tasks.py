"""Classification tasks for fine-tuning: the built-in WordNet tasks, your own CSV, and a bag-of-words baseline.

The baseline is what a model without BERT gets on the same split: multinomial logistic regression on the
words a text contains. A fine-tuned encoder is worth its cost where it beats this.
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import BertCoreError
from ..inspect.sentences import ranking_auc
from ..model.classifier_io import MAX_LABEL_CHARS
from ..train.corpus import labelled_glosses

PAIRS_FILE = Path(__file__).resolve().parent.parent / "data" / "wordnet_pairs.tsv.gz"  # scripts/build_similarity.py
MAX_CSV_BYTES = 1_000_000
MAX_CSV_ROWS = 5_000
MAX_CSV_LABELS = 20
MIN_CSV_ROWS = 10
MAX_EPOCHS = 20
MAX_EVAL_POOLED = 2_000  # validation rows whose pooled vectors are kept for the PCA plot


@dataclass(frozen=True)
class ClassificationTask:
    """Labelled texts with a fixed train/validation split; labels[i] names class i."""

    name: str
    labels: tuple[str, ...]
    train_texts: tuple[str, ...]
    train_labels: tuple[int, ...]
    valid_texts: tuple[str, ...]
    valid_labels: tuple[int, ...]
    description: str = ""

    def counts(self) -> dict[str, tuple[int, int]]:
        """label -> (train examples, validation examples)."""
        tr, va = np.bincount(self.train_labels, minlength=len(self.labels)), np.bincount(
            self.valid_labels, minlength=len(self.labels))
        return {lab: (int(a), int(b)) for lab, a, b in zip(self.labels, tr, va)}


TASK_DESCRIPTIONS = {
    "topic": "What is this definition about? WordNet noun definitions labelled by their lexicographer file "
             "(animal, artifact, food, location, person, plant).",
    "word class": "Does this definition define a noun, a verb, an adjective or an adverb? WordNet definitions "
                  "labelled by the file they come from.",
}


@functools.lru_cache(maxsize=1)
def builtin_tasks() -> dict[str, ClassificationTask]:
    """The built-in WordNet tasks (scripts/build_tasks.py; see data/CORPUS.md), by name."""
    return {name: ClassificationTask(name, labels, *map(tuple, zip(*tr)), *map(tuple, zip(*va)),
                                     description=TASK_DESCRIPTIONS.get(name, ""))
            for name, (labels, tr, va) in labelled_glosses().items()}


# --- your own data: CSV text,label ------------------------------------------------------------

_NUMBER = re.compile(r"^[+-]?(\d+([.,]\d*)?|[.,]\d+)([eE][+-]?\d+)?%?$")


def parse_labelled_csv(text: str) -> tuple[list[str], list[str]]:
    """CSV rows `text,label` (an optional header `text,label`) -> (texts, labels), checked.

    Blank lines are skipped; a text with commas must be in double quotes (CSV). Refuses, with the row
    number, rows without a label, and refuses files that are too big, have one class only, too many
    classes, or whose text column holds only numbers.
    Example: 'text,label\\n"a dog, barking",animal\\nan apple,food'
             -> (["a dog, barking", "an apple"], ["animal", "food"])
    """
    if text is None or not text.strip():
        raise BertCoreError("the CSV is empty: paste or upload lines like  the cat purred,animal")
    if len(text.encode("utf-8")) > MAX_CSV_BYTES:
        raise BertCoreError(f"the CSV is larger than {MAX_CSV_BYTES:,} bytes: use fewer or shorter rows")
    if "\x00" in text:
        raise BertCoreError("the CSV contains NUL bytes: is it a binary file (e.g. a spreadsheet)? Save it as CSV")
    texts, labels = [], []
    try:
        for row in csv.reader(io.StringIO(text)):
            if not any(c.strip() for c in row):
                continue  # blank line
            if not texts and not labels and [c.strip().lower() for c in row] == ["text", "label"]:
                continue  # header
            n = len(texts) + 1
            if len(row) < 2:
                raise BertCoreError(f"row {n} has no label: write each example as  text,label")
            if len(row) > 2:
                raise BertCoreError(f"row {n} has {len(row)} fields: a text with commas must be in double "
                                    'quotes, e.g.  "a dog, barking",animal')
            t, lab = row[0].strip(), row[1].strip()
            if not t or not lab:
                raise BertCoreError(f"row {n} has an empty {'text' if not t else 'label'}")
            if len(lab) > MAX_LABEL_CHARS:
                raise BertCoreError(f"row {n}'s label is longer than {MAX_LABEL_CHARS} characters: is the label "
                                    "column second?")
            texts.append(t)
            labels.append(lab)
            if len(texts) > MAX_CSV_ROWS:
                raise BertCoreError(f"the CSV has more than {MAX_CSV_ROWS:,} rows: live fine-tuning takes at most "
                                    f"{MAX_CSV_ROWS:,} examples")
    except csv.Error as e:
        raise BertCoreError(f"this is not valid CSV ({e}): check the double quotes") from e
    if len(texts) < MIN_CSV_ROWS:
        raise BertCoreError(f"the CSV has {len(texts)} examples; fine-tuning needs at least {MIN_CSV_ROWS}")
    classes = sorted(set(labels))
    if len(classes) < 2:
        raise BertCoreError(f"every row has the label {classes[0]!r}: a classifier needs at least two classes")
    if len(classes) > MAX_CSV_LABELS:
        raise BertCoreError(f"{len(classes)} different labels; at most {MAX_CSV_LABELS} (is the label column "
                            "second?)")
    if all(_NUMBER.match(t) for t in texts):
        swapped = not all(_NUMBER.match(lab) for lab in labels)
        raise BertCoreError("the text column holds only numbers; BERT classifies text"
                            + (" (are the columns swapped? text first, then label)" if swapped else ""))
    few = [c for c in classes if labels.count(c) < 2]
    if few:
        hint = " (most labels occur once: is the label column second?)" if len(few) > len(classes) / 2 else ""
        raise BertCoreError(f"the class {few[0]!r} has a single example; every class needs at least two "
                            f"(one to train on, one to check){hint}")
    return texts, labels


def task_from_csv(text: str, name: str = "your data", valid_fraction: float = 0.2,
                  seed: int = 0) -> ClassificationTask:
    """A task from CSV text: a seeded, stratified split (each class keeps >= 1 example on each side)."""
    texts, labels = parse_labelled_csv(text)
    classes = sorted(set(labels))
    ix = {c: i for i, c in enumerate(classes)}
    y = np.array([ix[lab] for lab in labels])
    rng = np.random.default_rng(seed)
    valid = np.zeros(len(y), dtype=bool)
    for c in range(len(classes)):
        rows = rng.permutation(np.flatnonzero(y == c))
        k = min(max(1, round(valid_fraction * len(rows))), len(rows) - 1)
        valid[rows[:k]] = True
    tr, va = np.flatnonzero(~valid), np.flatnonzero(valid)
    return ClassificationTask(name, tuple(classes), tuple(texts[i] for i in tr), tuple(int(y[i]) for i in tr),
                              tuple(texts[i] for i in va), tuple(int(y[i]) for i in va),
                              description=f"{len(texts)} rows of your CSV, {len(classes)} classes")


# --- the loop -----------------------------------------------------------------------------------


def task_examples(task: ClassificationTask, per_class: int = 2) -> list[dict]:
    """The first `per_class` training examples of each class, in label order: what the classifier learns from."""
    rows = []
    for c, name in enumerate(task.labels):
        texts = [t for t, y in zip(task.train_texts, task.train_labels) if y == c][:per_class]
        rows += [{"class": name, "text": t} for t in texts]
    return rows


# --- the baseline: bag-of-words logistic regression ----------------------------------------------

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


@dataclass
class BagOfWords:
    """Multinomial logistic regression on word presence, trained by full-batch gradient descent (numpy).

    Features are sparse (a definition has ~10 distinct words): kept as (row, column, value) triples,
    so X W and X^T G are sums over the non-zeros instead of dense (N, V) products.
    """

    vocab: dict[str, int]
    weights: np.ndarray  # (V + 1, C), the last row is the bias
    l2: float
    history: list[float] = field(default_factory=list)

    @staticmethod
    def features(texts, vocab: dict[str, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Sparse X (N, V + 1) as (rows, cols, vals, N): 1 per distinct known word, each row scaled to unit
        length, plus a bias column of 1."""
        rows, cols = [], []
        for i, t in enumerate(texts):
            js = sorted({vocab[w] for w in _WORD.findall(t.lower()) if w in vocab})
            rows += [i] * len(js)
            cols += js
        rows, cols = np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)
        n = len(texts)
        per_row = np.bincount(rows, minlength=n)
        vals = 1.0 / np.sqrt(np.maximum(per_row[rows], 1))  # unit-length rows
        bias = np.arange(n)
        return (np.concatenate([rows, bias]), np.concatenate([cols, np.full(n, len(vocab))]),
                np.concatenate([vals, np.ones(n)]), n)

    @staticmethod
    def _xw(x, w: np.ndarray) -> np.ndarray:
        """(N, C) = X W: each non-zero X[r, j] adds X[r, j] * W[j, :] to row r (one bincount over r*C + c)."""
        rows, cols, vals, n = x
        C = w.shape[1]
        flat = (rows[:, None] * C + np.arange(C)).ravel()
        return np.bincount(flat, weights=(vals[:, None] * w[cols]).ravel(), minlength=n * C).reshape(n, C)

    @staticmethod
    def _xtg(x, g: np.ndarray, n_features: int) -> np.ndarray:
        """(V + 1, C) = X^T G: each non-zero X[r, j] adds X[r, j] * G[r, :] to row j."""
        rows, cols, vals, _ = x
        C = g.shape[1]
        flat = (cols[:, None] * C + np.arange(C)).ravel()
        return np.bincount(flat, weights=(vals[:, None] * g[rows]).ravel(),
                           minlength=n_features * C).reshape(n_features, C)

    @classmethod
    def fit(cls, texts, y, n_classes: int, l2: float = 1e-3, steps: int = 300, lr: float = 1.0) -> BagOfWords:
        """Minimise mean cross-entropy + l2/2 |W|^2 by Nesterov's accelerated gradient descent (convex).

        v = W_k + (k-1)/(k+2) (W_k - W_{k-1});  W_{k+1} = v - lr * grad(v).  Rows of X have unit length,
        so the loss's curvature is at most 1/2 and lr = 1 is safe.
        """
        counts: dict[str, int] = {}
        for t in texts:
            for w in set(_WORD.findall(t.lower())):
                counts[w] = counts.get(w, 0) + 1
        vocab = {w: i for i, w in enumerate(sorted(w for w, n in counts.items() if n >= 2))}
        x = cls.features(texts, vocab)
        y = np.asarray(y)
        onehot = np.eye(n_classes)[y]
        w = w_prev = np.zeros((len(vocab) + 1, n_classes))
        hist = []
        for k in range(1, steps + 1):
            v = w + (k - 1) / (k + 2) * (w - w_prev)
            z = cls._xw(x, v)
            z -= z.max(1, keepdims=True)
            p = np.exp(z)
            p /= p.sum(1, keepdims=True)
            w_prev, w = w, v - lr * (cls._xtg(x, p - onehot, len(v)) / len(y) + l2 * v)
            hist.append(float(-np.log(p[np.arange(len(y)), y] + 1e-12).mean()))
        return cls(vocab, w, l2, hist)

    def predict(self, texts) -> np.ndarray:
        return self._xw(self.features(texts, self.vocab), self.weights).argmax(1)


def bow_baseline(task: ClassificationTask, l2_grid=(1e-5, 1e-4, 1e-3, 1e-2)) -> dict:
    """Validation accuracy of bag-of-words logistic regression, l2 picked on a fifth of the training set."""
    t0 = time.perf_counter()
    n = len(task.train_texts)
    rng = np.random.default_rng(0)
    order = rng.permutation(n)
    dev, fit = order[: n // 5], order[n // 5:]
    tt, ty = np.array(task.train_texts, dtype=object), np.array(task.train_labels)
    C = len(task.labels)
    scores = {}
    for l2 in l2_grid:
        m = BagOfWords.fit(list(tt[fit]), ty[fit], C, l2=l2)
        scores[l2] = float((m.predict(list(tt[dev])) == ty[dev]).mean())
    best = max(l2_grid, key=lambda v: (scores[v], v))
    model = BagOfWords.fit(task.train_texts, task.train_labels, C, l2=best)
    acc = float((model.predict(task.valid_texts) == np.array(task.valid_labels)).mean())
    return {"accuracy": acc, "l2": best, "dev_accuracy": scores, "vocabulary": len(model.vocab),
            "seconds": time.perf_counter() - t0}


@functools.lru_cache(maxsize=1)
def similarity_pairs() -> tuple[tuple[str, str, int, str], ...]:
    """The built-in sentence pairs: (sentence a, sentence b, 1 same sense / 0 not, word).

    1,800 pairs of WordNet example sentences (scripts/build_similarity.py): 600 two examples of one
    sense (label 1); 600 an example of one sense and one of another sense of the same word (label 0,
    the word given); 600 two examples of unrelated words (label 0, word "").
    """
    rows = []
    with gzip.open(PAIRS_FILE, "rt", encoding="utf-8") as f:
        for line in f:
            label, word, a, b = line.rstrip("\n").split("\t")
            rows.append((a, b, int(label), word))
    return tuple(rows)


NEGATIVE_KINDS = ("another sense of the same word", "an unrelated sentence")


def similarity_pair_sets() -> dict[str, list[tuple[str, str, int, str]]]:
    """The same-sense pairs against each kind of negative pair: {kind: positives + those negatives}."""
    pairs = similarity_pairs()
    pos = [p for p in pairs if p[2] == 1]
    return {NEGATIVE_KINDS[0]: pos + [p for p in pairs if p[2] == 0 and p[3]],
            NEGATIVE_KINDS[1]: pos + [p for p in pairs if p[2] == 0 and not p[3]]}


SEARCH_PAIRS = 400  # the search corpus: the sentences of the first 400 pairs (~800 sentences, seconds to embed)


def search_sentences(n_pairs: int = SEARCH_PAIRS) -> list[str]:
    """The distinct sentences of the first `n_pairs` built-in pairs, in file order: the Similarity page's corpus."""
    return list(dict.fromkeys(s for a, b, _, _ in similarity_pairs()[:n_pairs] for s in (a, b)))


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of two sentences' lower-cased words: |A & B| / |A | B| (the baseline: no model at all)."""
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    return len(wa & wb) / max(len(wa | wb), 1)


def word_overlap_auc(pairs) -> float:
    """The baseline's AUC on `pairs` (a, b, label, ...): how well word overlap alone tells same sense from not."""
    return ranking_auc(np.array([word_overlap(p[0], p[1]) for p in pairs]), np.array([p[2] for p in pairs]))
