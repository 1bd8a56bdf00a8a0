"""Build the built-in word-sense probing task from WordNet 3.0's example sentences: `python scripts/build_senses.py`.

A synset's example sentences show one meaning of a word. For every single-word lemma with at least
MIN_SENSES senses (same part of speech) that each have at least MIN_EXAMPLES example sentences containing
the word (whole word, case-insensitive, e.g. "line" in "he got out of line" and in "the line of soldiers
advanced"), the script writes each such example, one a line:

    split <TAB> part of speech <TAB> word <TAB> synset (file:offset) <TAB> word index <TAB> words <TAB> definition

`words` are the sentence split as Brown splits words (`bert_core.inspect.token_tasks.split_words`),
space-separated; `word index` is the first of them that is the word. The last example of each sense is
"validation", the others "train", so every sense is seen in training and tested on a sentence the probe
never saw. (Both bundled models read WordNet's examples in pretraining, though never the sense labels.)
Licence: WordNet 3.0's, see bert_core/data/CORPUS.md. Byte-for-byte reproducible (gzip level 9, mtime 0).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from build_corpus import iter_synsets, write_gzip  # noqa: E402

from bert_core.inspect.token_tasks import split_words  # noqa: E402

DEFAULT_OUT = ROOT / "bert_core" / "data" / "wordnet_senses.tsv.gz"
MIN_SENSES, MIN_EXAMPLES = 2, 2
POS = {"data.noun": "noun", "data.verb": "verb", "data.adj": "adj", "data.adv": "adv"}


def _offsets(wordnet_dir: Path):
    """The synset offset of every synset line, in the order `iter_synsets` reads them."""
    for name in POS:
        for line in (wordnet_dir / name).read_text(encoding="utf-8").splitlines():
            if line and not line.startswith("  "):
                yield f"{name.split('.')[1]}:{line.split()[0]}"


def build(wordnet_dir: Path) -> list[str]:
    senses: dict[tuple[str, str], list[tuple[str, str, list[tuple[int, list[str]]]]]] = {}
    for (name, lemmas, lines), offset in zip(iter_synsets(wordnet_dir), _offsets(wordnet_dir), strict=True):
        definition = next((t for k, t in lines if k == "definition"), "")
        examples = [t for k, t in lines if k == "example" and "\t" not in t and len(t.split()) >= 3]
        for lemma in dict.fromkeys(w.lower() for w in lemmas):
            if not lemma.isalpha():
                continue
            found = []
            for e in examples:
                words = [w for w, _, _ in split_words(e)]
                ix = next((i for i, w in enumerate(words) if w.lower() == lemma), None)
                if ix is not None:
                    found.append((ix, words))
            if len(found) >= MIN_EXAMPLES:
                senses.setdefault((POS[name], lemma), []).append((offset, definition.replace("\t", " "), found))
    rows = []
    for (pos, lemma), by_sense in senses.items():
        if len(by_sense) < MIN_SENSES:
            continue
        for offset, definition, found in by_sense:
            for k, (ix, words) in enumerate(found):
                split = "validation" if k == len(found) - 1 else "train"
                rows.append(f"{split}\t{pos}\t{lemma}\t{offset}\t{ix}\t{' '.join(words)}\t{definition}")
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wordnet-dir", default="/usr/share/wordnet", type=Path)
    ap.add_argument("--out", default=DEFAULT_OUT, type=Path)
    args = ap.parse_args(argv)
    rows = build(args.wordnet_dir)
    write_gzip(rows, args.out)
    words = {tuple(r.split("\t")[1:3]) for r in rows}
    senses = {r.split("\t")[3] + r.split("\t")[2] for r in rows}
    print(f"{len(rows)} examples ({sum(r.startswith('validation') for r in rows)} validation) of {len(senses)} "
          f"senses of {len(words)} words -> {args.out}")


if __name__ == "__main__":
    main()
