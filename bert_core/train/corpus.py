"""The built-in English corpus (WordNet 3.0 glosses), user corpora, and a WordPiece trainer.

Pure Python plus the `tokenizers` library: no page code here. The corpus ships gzip-compressed
in `bert_core/data/` (see `data/CORPUS.md` for source, licence and how it was built by
`scripts/build_corpus.py`).
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, normalizers, pre_tokenizers, processors, trainers
from tokenizers.models import WordPiece

from ..errors import BertCoreError

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
BUILTIN_CORPUS_FILE = DATA_DIR / "wordnet_glosses.txt.gz"
BROWN_FILE = DATA_DIR / "brown.txt.gz"
LABELLED_FILE = DATA_DIR / "finetune_tasks.tsv.gz"  # scripts/build_tasks.py: the built-in classification tasks

MAX_USER_CORPUS_BYTES = 2_000_000
MIN_USER_CORPUS_WORDS = 10
MAX_WORD_CHARS = 100  # longer words become [UNK], as in BERT
LONG_LINE_CHARS = 200  # lines longer than this are cut into sentences

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")  # ids 0..4 in this order
SPECIAL_NAMES = ("pad_token", "unk_token", "cls_token", "sep_token", "mask_token")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WS = re.compile(r"[ \t\f\v\u00a0]+")


@functools.lru_cache(maxsize=1)
def _builtin_lines() -> tuple[str, ...]:
    with gzip.open(BUILTIN_CORPUS_FILE, "rt", encoding="utf-8") as f:
        return tuple(line.strip() for line in f if line.strip())


def load_builtin_corpus() -> list[str]:
    """All lines of the built-in WordNet gloss corpus, in file order (a fresh list each call)."""
    return list(_builtin_lines())


Labelled = tuple[tuple[str, ...], list[tuple[str, int]], list[tuple[str, int]]]


@functools.lru_cache(maxsize=1)
def labelled_glosses() -> dict[str, Labelled]:
    """The built-in labelled WordNet definitions, by task: (labels sorted, train [(text, label index)], validation).

    Read here, below fine-tuning, because pretraining's frozen linear probe (`linear_probe.py`) is scored on the
    "topic" task too; `finetune.tasks.builtin_tasks` makes them `ClassificationTask`s.
    """
    rows: dict[str, list[tuple[str, str, str]]] = {}
    with gzip.open(LABELLED_FILE, "rt", encoding="utf-8") as f:
        for line in f:
            task, split, label, text = line.rstrip("\n").split("\t")
            rows.setdefault(task, []).append((split, label, text))
    out = {}
    for name, rs in rows.items():
        labels = tuple(sorted({lab for _, lab, _ in rs}))
        ix = {lab: i for i, lab in enumerate(labels)}
        out[name] = (labels, [(t, ix[lab]) for s, lab, t in rs if s == "train"],
                     [(t, ix[lab]) for s, lab, t in rs if s == "validation"])
    return out


@dataclass(frozen=True)
class Document:
    """One Brown text: its file id, genre and sentences in their original order."""

    doc_id: str
    genre: str
    sentences: tuple[str, ...]


@functools.lru_cache(maxsize=1)
def _brown() -> tuple[Document, ...]:
    docs: list[Document] = []
    with gzip.open(BROWN_FILE, "rt", encoding="utf-8") as f:
        for block in f.read().split("\n\n"):
            head, *sentences = block.strip("\n").split("\n")
            _, doc_id, genre = head.split(" ", 2)
            docs.append(Document(doc_id, genre, tuple(sentences)))
    return tuple(docs)


def load_brown_documents() -> list[Document]:
    """The 500 Brown-corpus texts (15 genres), sentences in order (see data/CORPUS.md)."""
    return list(_brown())


# Dictionary shorthand that a model trained on glosses learns to predict everywhere:
# "e.g." and "i.e." become words, "etc." and parenthesised asides go.
_ABBREVIATIONS = ((re.compile(r"\be\.g\.,?", re.I), "for example"), (re.compile(r"\bi\.e\.,?", re.I), "that is"))
_ETC = re.compile(r",?\s*\betc\b\.?", re.I)
_PARENS = re.compile(r"\s*\([^()]*\)")


def clean_gloss(line: str) -> str:
    """A WordNet line without dictionary artefacts.

    Example: "a hoofed mammal (e.g., a horse), etc." -> "a hoofed mammal"
    Example: "any of various fruits; i.e. apples and pears" -> "any of various fruits; that is apples and pears"
    """
    line = _PARENS.sub("", line)
    for pattern, words in _ABBREVIATIONS:
        line = pattern.sub(words, line)
    line = _ETC.sub("", line)
    return _WS.sub(" ", line).strip(" ;,")


def load_pretraining_corpus(seed: int = 0, fraction: float = 0.02):
    """The bundled model's corpus, split per line into (train, heldout) by `split_heldout`.

    Returns (train_lines, train_documents, heldout_lines, heldout_documents): cleaned WordNet lines
    (one sentence each, no order) and Brown texts whose held-out sentences are cut out, so a
    document's sentence pairs never cross the split. Lines shorter than 3 words are dropped.
    """
    lines = [c for c in (clean_gloss(x) for x in _builtin_lines()) if len(c.split()) >= 3]
    train, heldout = split_heldout(dict.fromkeys(lines), fraction, seed)
    train_docs, heldout_docs = [], []
    for d in _brown():
        keep, out = split_heldout(d.sentences, fraction, seed)
        train_docs.append(Document(d.doc_id, d.genre, tuple(keep)))
        heldout_docs.append(Document(d.doc_id, d.genre, tuple(out)))
    return train, train_docs, heldout, heldout_docs


def _heldout_score(line: str, seed: int) -> float:
    """A number in [0, 1) that depends only on the line's text and the seed."""
    h = hashlib.blake2b(line.encode("utf-8"), digest_size=8, salt=seed.to_bytes(8, "little", signed=True))
    return int.from_bytes(h.digest(), "big") / 2.0**64


def split_heldout(lines: Iterable[str], fraction: float = 0.02, seed: int = 0) -> tuple[list[str], list[str]]:
    """Split into (train, heldout): a line is held out iff blake2b(line, salt=seed) < fraction.

    Per-line hashing makes the split independent of order and of the other lines: the same line
    always lands on the same side, so adding text never moves existing lines across.
    """
    if not 0.0 <= fraction <= 1.0:
        raise BertCoreError(f"held-out fraction must be between 0 and 1, got {fraction}")
    train: list[str] = []
    heldout: list[str] = []
    for line in lines:
        (heldout if _heldout_score(line, seed) < fraction else train).append(line)
    return train, heldout


def parse_user_corpus(text: str) -> list[str]:
    """Split pasted/uploaded text into training lines: one per line, long lines cut at sentence ends.

    Refuses (BertCoreError) text that is empty, larger than MAX_USER_CORPUS_BYTES (UTF-8), or has
    fewer than MIN_USER_CORPUS_WORDS words.
    """
    if text is None or not text.strip():
        raise BertCoreError("the corpus is empty: paste or upload some text, e.g. one sentence a line")
    size = len(text.encode("utf-8"))
    if size > MAX_USER_CORPUS_BYTES:
        raise BertCoreError(
            f"the corpus is {size:,} bytes, more than the limit of {MAX_USER_CORPUS_BYTES:,} bytes: "
            "use a smaller text"
        )
    lines: list[str] = []
    for raw in text.splitlines():
        line = _WS.sub(" ", raw).strip()
        if not line:
            continue
        if len(line) > LONG_LINE_CHARS:
            lines.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
        else:
            lines.append(line)
    words = sum(len(line.split()) for line in lines)
    if words < MIN_USER_CORPUS_WORDS:
        raise BertCoreError(
            f"the corpus has only {words} word{'s' if words != 1 else ''}; "
            f"at least {MIN_USER_CORPUS_WORDS} are needed"
        )
    return lines


def _wordpiece_model(vocab: dict[str, int] | None = None) -> WordPiece:
    kw = {"unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": MAX_WORD_CHARS}
    return WordPiece(vocab, **kw) if vocab is not None else WordPiece(**kw)


def _pipeline(model: WordPiece) -> Tokenizer:
    tok = Tokenizer(model)
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=True, lowercase=True
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    return tok


def new_wordpiece_tokenizer() -> Tokenizer:
    """An untrained BERT-style (uncased) WordPiece tokenizer pipeline."""
    return _pipeline(_wordpiece_model())


def _continuation_chars(tok: Tokenizer, lines: Sequence[str]) -> list[str]:
    """Characters that can follow another character inside a pre-tokenized word, sorted.

    Decided per distinct raw character c from how "a"+c normalizes and pre-tokenizes, so it is a
    superset of what the trainer would find (a letter seen only as a one-letter word still counts).
    """
    raw: set[str] = set()
    for line in lines:
        raw.update(line)
    out: set[str] = set()
    for c in raw:
        words = tok.pre_tokenizer.pre_tokenize_str(tok.normalizer.normalize_str("a" + c))
        if len(words) == 1:
            out.update(words[0][0][1:])
    return sorted(out)


def train_wordpiece(lines: Sequence[str] | Iterable[str], vocab_size: int = 8000,
                    min_frequency: int = 2) -> Tokenizer:
    """Train an uncased BERT WordPiece tokenizer; [PAD]=0 [UNK]=1 [CLS]=2 [SEP]=3 [MASK]=4.

    Vocabulary order: the 5 special tokens, the single characters (by code point), the "##"
    characters (by code point), then the learned pieces in the order the trainer merged them.

    Deterministic: the Rust trainer numbers the "##x" alphabet in hash-map order, which varies per
    process and changes how equal-count merges are tie-broken (so the learned vocabulary itself
    could differ by a token or two between runs). Pre-registering the sorted "##x" alphabet as
    extra special tokens fixes their ids and with them every tie-break; the model is then rebuilt
    with only the 5 real special tokens.
    """
    if vocab_size <= len(SPECIAL_TOKENS):
        raise BertCoreError(f"vocab_size must be larger than {len(SPECIAL_TOKENS)}, got {vocab_size}")
    if min_frequency < 1:
        raise BertCoreError(f"min_frequency must be at least 1, got {min_frequency}")
    lines = [line for line in lines if line and not line.isspace()]
    if not lines:
        raise BertCoreError("the corpus is empty: nothing to train a tokenizer on")
    tok = new_wordpiece_tokenizer()
    cont = ["##" + c for c in _continuation_chars(tok, lines)]
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS) + cont,
        continuing_subword_prefix="##",
        show_progress=False,
    )
    tok.train_from_iterator(lines, trainer=trainer)
    trained = tok.get_vocab(with_added_tokens=False)
    by_id = sorted(trained, key=trained.__getitem__)
    if len(by_id) <= len(SPECIAL_TOKENS) + len(cont):
        raise BertCoreError("the corpus is too small to learn a vocabulary")
    if tuple(by_id[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
        raise BertCoreError(f"unexpected special-token order after training: {by_id[:5]}")
    rest = by_id[len(SPECIAL_TOKENS):]
    cont_set = set(cont)
    singles = [t for t in rest if len(t) == 1]
    order = list(SPECIAL_TOKENS) + singles + cont + [t for t in rest if len(t) != 1 and t not in cont_set]
    if len(order) != len(by_id):
        raise BertCoreError("internal error: vocabulary reordering lost tokens")
    vocab = {t: i for i, t in enumerate(order)}

    out = _pipeline(_wordpiece_model(vocab))
    out.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS])
    out.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    return out


def save_tokenizer(tok: Tokenizer, out_dir: str | Path, model_max_length: int = 512) -> Path:
    """Write tokenizer.json, vocab.txt (id order) and tokenizer_config.json to out_dir.

    Loadable by `tokenizers.Tokenizer.from_file(out_dir / "tokenizer.json")` and by
    `transformers.BertTokenizerFast.from_pretrained(out_dir)`.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tok.save(str(out / "tokenizer.json"))
    id_to_token = {i: t for t, i in tok.get_vocab(with_added_tokens=True).items()}
    n = tok.get_vocab_size(with_added_tokens=True)
    missing = [i for i in range(n) if i not in id_to_token]
    if missing:
        raise BertCoreError(f"the tokenizer's ids are not contiguous (missing {missing[:5]})")
    (out / "vocab.txt").write_text("".join(id_to_token[i] + "\n" for i in range(n)), encoding="utf-8")
    cfg = {
        "tokenizer_class": "BertTokenizer",
        "do_lower_case": True,
        "strip_accents": True,
        "tokenize_chinese_chars": True,
        "model_max_length": int(model_max_length),
        **dict(zip(SPECIAL_NAMES, SPECIAL_TOKENS, strict=True)),
    }
    (out / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2) + "\n", encoding="utf-8")
    return out
