"""Build the built-in extractive QA task from WordNet 3.0: `python scripts/build_qa.py`.

For a synset whose example sentence contains one of its own words (the `bank` of "they pulled the
canoe up on the bank"), the question is "Which word here means <the synset's definition>?", the
context is that example among CONTEXT_SENTENCES - 1 other WordNet examples (none containing the word),
and the answer is the word's occurrence: its text and character offset in the context. Written to
`bert_core/data/wordnet_qa.tsv.gz`, one example a line:

    split <TAB> question <TAB> context <TAB> answer start (characters) <TAB> answer text

Validation examples are those whose example sentence (cleaned as the corpus cleans lines,
`clean_gloss`) `bert_core.train.corpus.load_pretraining_corpus(seed=0)` holds out, so the bundled models
never read it; training examples never share an example sentence or a definition with a validation one.
Which examples, distractors and positions are taken is fixed by hashes of the text (seed 2): the build
is byte-for-byte reproducible (gzip level 9, mtime 0).
"""

from __future__ import annotations

import argparse
import gzip
import io
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from build_corpus import iter_synsets  # noqa: E402

from bert_core.train.corpus import _heldout_score, clean_gloss, load_pretraining_corpus  # noqa: E402

DEFAULT_OUT = ROOT / "bert_core" / "data" / "wordnet_qa.tsv.gz"
TRAIN_EXAMPLES, VALID_EXAMPLES = 5_000, 400
CONTEXT_SENTENCES = 4
MAX_DEFINITION_WORDS, MAX_EXAMPLE_WORDS = 20, 25
SEED = 2


def synsets(wordnet_dir: Path):
    """(words, definition, examples) of every synset that has a definition and an example."""
    for _, words, lines in iter_synsets(wordnet_dir):
        definition = next((t for k, t in lines if k == "definition"), "")
        examples = [t for k, t in lines if k == "example"]
        if definition and examples:
            yield words, definition, examples


def _find(word: str, text: str) -> list[re.Match]:
    return list(re.finditer(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text, flags=re.IGNORECASE))


def candidates(wordnet_dir: Path):
    """(definition, example, word) where the example holds exactly one occurrence of one of the synset's words."""
    for words, definition, examples in synsets(wordnet_dir):
        if len(definition.split()) > MAX_DEFINITION_WORDS:
            continue
        for ex in examples:
            if len(ex.split()) > MAX_EXAMPLE_WORDS:
                continue
            hits = [w for w in dict.fromkeys(words) if len(_find(w, ex)) == 1]
            if len(hits) == 1:  # one of the synset's words, once: the answer is not ambiguous
                yield definition, ex, hits[0]
                break


def build(wordnet_dir: Path, out: Path) -> dict:
    heldout = set(load_pretraining_corpus(seed=0)[2])
    cands = list(candidates(wordnet_dir))
    pool = sorted({ex for _, ex, _ in cands} | set(), key=lambda t: _heldout_score(t, SEED))
    cands.sort(key=lambda c: _heldout_score(c[1], SEED))
    valid = [c for c in cands if clean_gloss(c[1]) in heldout][:VALID_EXAMPLES]
    taken_ex = {c[1] for c in valid}
    taken_def = {c[0] for c in valid}
    train = [c for c in cands if c[1] not in taken_ex and c[0] not in taken_def
             and clean_gloss(c[1]) not in heldout][:TRAIN_EXAMPLES]
    buf = io.StringIO()
    for split, rows in (("train", train), ("validation", valid)):
        for i, (definition, ex, word) in enumerate(rows):
            # distractors: the next examples in hash order after this one's place that do not contain the word
            start = int(_heldout_score(f"{split}{i}{ex}", SEED) * len(pool))
            others = []
            j = start
            while len(others) < CONTEXT_SENTENCES - 1:
                cand = pool[j % len(pool)]
                j += 1
                if cand != ex and not _find(word, cand) and cand not in others:
                    others.append(cand)
            at = int(_heldout_score(f"pos{ex}", SEED) * CONTEXT_SENTENCES)
            sentences = [s if s[-1] in ".!?" else s + "." for s in others[:at] + [ex] + others[at:]]
            context = " ".join(sentences)
            ex_start = sum(len(s) + 1 for s in sentences[:at])
            (m,) = _find(word, sentences[at])
            a = ex_start + m.start()
            answer = context[a:a + len(m.group(0))]
            assert len(_find(word, context)) == 1 and answer.lower() == word.lower()
            question = f"Which word here means {definition}?"
            buf.write(f"{split}\t{question}\t{context}\t{a}\t{answer}\n")
    data = buf.getvalue().encode("utf-8")
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=9, mtime=0) as g:
        g.write(data)
    return {"candidates": len(cands), "train": len(train), "validation": len(valid), "bytes": out.stat().st_size}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wordnet-dir", type=Path, default=Path("/usr/share/wordnet"))
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    print(build(args.wordnet_dir, args.out))


if __name__ == "__main__":
    main()
