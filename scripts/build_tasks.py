"""Build the built-in fine-tuning tasks from WordNet 3.0: `python scripts/build_tasks.py`.

Two labelled tasks of WordNet definitions (the definition line of a synset's gloss, exactly as
`scripts/build_corpus.py` extracts it), written to `bert_core/data/finetune_tasks.tsv.gz`, one
example a line: task <TAB> split <TAB> label <TAB> text.

- topic: "what is this definition about?" Noun synsets labelled by their lexicographer file
  (the two-digit number after the synset offset in data.noun): animal, artifact, food, location,
  person, plant.
- word class: "does this define a noun, a verb, an adjective or an adverb?" (data.noun/verb/adj/adv;
  adjective satellites count as adjectives).

Each class gets TRAIN_PER_CLASS training and VALID_PER_CLASS validation examples (balanced). A
validation example is a definition whose cleaned text (`bert_core.train.corpus.clean_gloss`, as the
corpus cleans it) is one of the lines `bert_core.train.corpus.load_pretraining_corpus(seed=0)` holds out,
so the bundled model never read it in pretraining; training examples may come from anywhere, but
never share a cleaned text with a validation example. Definitions that occur under two classes are
dropped. Which examples are taken is fixed by a hash of the text (seed 1), so the build is
reproducible byte for byte.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from build_corpus import MIN_WORDS, gloss_to_kinded_lines  # noqa: E402

from bert_core.train.corpus import _heldout_score, clean_gloss, load_pretraining_corpus  # noqa: E402

DEFAULT_OUT = ROOT / "bert_core" / "data" / "finetune_tasks.tsv.gz"
TRAIN_PER_CLASS = 500
VALID_PER_CLASS = 50
# Lexicographer file numbers of data.noun (lexnames(5WN)) -> the topic task's labels.
TOPICS = {"05": "animal", "06": "artifact", "13": "food", "15": "location", "18": "person", "20": "plant"}
POS = {"data.noun": "noun", "data.verb": "verb", "data.adj": "adjective", "data.adv": "adverb"}


def definitions(path: Path):
    """(lexicographer file number, definition line) for every synset in one WordNet data file."""
    with open(path, encoding="utf-8") as f:
        for raw in f:
            if raw.startswith("  "):  # licence header
                continue
            head, sep, gloss = raw.partition(" | ")
            if not sep:
                continue
            lex = head.split()[1]
            for kind, line in gloss_to_kinded_lines(gloss.strip()):
                if kind == "definition" and len(line.split()) >= MIN_WORDS:
                    yield lex, line


def balanced(by_label: dict[str, list[str]], heldout: set[str]) -> list[tuple[str, str, str]]:
    """(split, label, text) rows: per class the first N train / M validation texts in hash order.

    Validation texts are those whose cleaned text is in `heldout` (the pretraining corpus's held-out lines).
    """
    seen = Counter(t for texts in by_label.values() for t in set(texts))
    rows = []
    for label, texts in by_label.items():
        texts = sorted({t for t in texts if seen[t] == 1}, key=lambda t: _heldout_score(t, 1))
        valid = [t for t in texts if clean_gloss(t) in heldout][:VALID_PER_CLASS]
        taken = {clean_gloss(t) for t in valid}
        train = [t for t in texts if clean_gloss(t) not in taken][:TRAIN_PER_CLASS]
        if len(valid) < VALID_PER_CLASS or len(train) < TRAIN_PER_CLASS:
            raise SystemExit(f"{label}: only {len(train)} train / {len(valid)} validation definitions")
        rows += [("train", label, t) for t in train] + [("validation", label, t) for t in valid]
    return rows


def build(wordnet_dir: Path) -> list[str]:
    topic: dict[str, list[str]] = {v: [] for v in TOPICS.values()}
    for lex, line in definitions(wordnet_dir / "data.noun"):
        if lex in TOPICS:
            topic[TOPICS[lex]].append(line)
    pos = {label: [line for _, line in definitions(wordnet_dir / name)] for name, label in POS.items()}
    _, _, heldout, _ = load_pretraining_corpus(seed=0)  # cleaned lines the bundled model never trained on
    lines = []
    for task, by_label in (("topic", topic), ("word class", pos)):
        for split, label, text in balanced(by_label, set(heldout)):
            assert "\t" not in text and "\n" not in text
            lines.append(f"{task}\t{split}\t{label}\t{text}")
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wordnet-dir", type=Path, default=Path("/usr/share/wordnet"))
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    lines = build(args.wordnet_dir)
    data = ("\n".join(lines) + "\n").encode("utf-8")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(data)  # no file name, mtime 0: reproducible bytes
    args.out.write_bytes(buf.getvalue())
    counts = Counter(tuple(line.split("\t")[:2]) for line in lines)
    for (task, split), n in sorted(counts.items()):
        print(f"{task:12s} {split:10s} {n:5d}")
    print(f"text bytes: {len(data)}  gz bytes: {len(buf.getvalue())}  ({args.out})")
    print(f"gz sha256: {hashlib.sha256(buf.getvalue()).hexdigest()}")


if __name__ == "__main__":
    main()
