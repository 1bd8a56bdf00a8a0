"""Build the built-in sentence-similarity pairs from WordNet 3.0's example sentences.

    python scripts/build_similarity.py [--wordnet-dir /usr/share/wordnet] [--out bert_core/data/wordnet_pairs.tsv.gz]

A synset's example sentences share one meaning of a word. For every lemma with examples in at least
two of its senses (same part of speech), the script writes:
  - label 1: two examples of the same sense (the first two of a synset that has two or more);
  - label 0: an example of one sense and an example of another sense of the same word, both containing
    the word (a hard pair: the same word, a different meaning, e.g. "bank" of a river and of money).
  - label 0 with an empty word: two examples of unrelated synsets (different words): the easy negatives.
A seeded sample of PAIRS of each kind, shuffled, one pair a line: label TAB word TAB sentence a TAB
sentence b (deterministic gzip). Licence: WordNet 3.0's, see bert_core/data/CORPUS.md.
"""

from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

from build_corpus import iter_synsets, write_gzip

PAIRS = 600  # of each label
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "bert_core" / "data" / "wordnet_pairs.tsv.gz"


def synsets(wordnet_dir: Path):
    """(part of speech, [lemmas], [example sentences]) for every synset, in file order."""
    for name, words, lines in iter_synsets(wordnet_dir):
        examples = [t for kind, t in lines if kind == "example"]
        yield name, [w.lower() for w in words], [e for e in examples if "\t" not in e and len(e.split()) >= 3]


def contains(sentence: str, word: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", sentence.lower()) is not None


def build(wordnet_dir: Path, seed: int = 0) -> list[tuple[int, str, str, str]]:
    positives, negatives, pool = [], [], []
    senses: dict[tuple[str, str], list[list[str]]] = {}
    for pos, lemmas, examples in synsets(wordnet_dir):
        if examples:
            pool.append((lemmas[0], examples[0]))
        if len(examples) >= 2:
            positives.append((1, lemmas[0], examples[0], examples[1]))
        for lemma in lemmas:
            with_word = [e for e in examples if contains(e, lemma)]
            if with_word:
                senses.setdefault((pos, lemma), []).append(with_word)
    for (_, lemma), by_sense in senses.items():
        if len(by_sense) >= 2:
            negatives.append((0, lemma, by_sense[0][0], by_sense[1][0]))
    rng = random.Random(seed)
    rows = rng.sample(positives, PAIRS) + rng.sample(negatives, PAIRS)
    unrelated = []
    while len(unrelated) < PAIRS:
        (w1, a), (w2, b) = rng.sample(pool, 2)
        if w1 != w2 and not contains(a, w2) and not contains(b, w1):
            unrelated.append((0, "", a, b))
    rows += unrelated
    rng.shuffle(rows)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wordnet-dir", default="/usr/share/wordnet", type=Path)
    ap.add_argument("--out", default=DEFAULT_OUT, type=Path)
    args = ap.parse_args()
    rows = build(args.wordnet_dir)
    write_gzip([f"{label}\t{word}\t{a}\t{b}" for label, word, a, b in rows], args.out)
    print(f"{len(rows)} pairs ({sum(r[0] for r in rows)} same sense, {sum(not r[1] for r in rows)} unrelated) "
          f"-> {args.out}")


if __name__ == "__main__":
    main()
