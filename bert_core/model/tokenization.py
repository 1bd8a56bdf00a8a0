"""Tokenization with everything a student wants to see: pieces, ids, segments, offsets.

A thin wrapper over the `tokenizers` library (the same Rust code HF's fast tokenizers run), plus
`wordpiece_steps`, a plain-Python replay of WordPiece's greedy longest-match-first search.
The shared tokenizer is never mutated (no `enable_truncation`), because sessions share it.

Three schemes, one per family (see SCHEMES): BERT/DistilBERT's WordPiece marks a piece that
continues a word with `##`; RoBERTa's byte-level BPE marks a piece that starts after a space with
`Ġ` (the byte 0x20 shown as a printable character); ALBERT's SentencePiece (Unigram) marks it with `▁`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer as _RustTokenizer

from ..errors import BertCoreError

MAX_TEXT_CHARS = 20_000  # longer text is refused before tokenization, with this number in the message
SPECIAL_NAMES = ("pad_token", "unk_token", "cls_token", "sep_token", "mask_token")
DEFAULT_SPECIALS = {
    "pad_token": "[PAD]",
    "unk_token": "[UNK]",
    "cls_token": "[CLS]",
    "sep_token": "[SEP]",
    "mask_token": "[MASK]",
}
# Each family's special tokens when a folder has no tokenizer_config.json to say (roberta-base, albert-base-v2).
FAMILY_SPECIALS = {
    "bert": DEFAULT_SPECIALS,
    "distilbert": DEFAULT_SPECIALS,
    "electra": DEFAULT_SPECIALS,
    "roberta": {"pad_token": "<pad>", "unk_token": "<unk>", "cls_token": "<s>", "sep_token": "</s>",
                "mask_token": "<mask>"},
    "albert": {"pad_token": "<pad>", "unk_token": "<unk>", "cls_token": "[CLS]", "sep_token": "[SEP]",
               "mask_token": "[MASK]"},
}
TOKENIZER_CLASSES = {"bert": "BertTokenizer", "distilbert": "DistilBertTokenizer", "roberta": "RobertaTokenizer",
                     "albert": "AlbertTokenizer", "electra": "ElectraTokenizer"}
USER_MASK = "[MASK]"  # what the user types, whatever the model's own mask token is
SCHEMES = {
    "wordpiece": ("WordPiece", "##", "a piece that continues a word starts with ##: tokenization -> token ##ization"),
    "bpe": ("byte-level BPE", "Ġ",
            "a piece that follows a space starts with Ġ (the space byte): ' playing' -> Ġplaying"),
    "unigram": ("SentencePiece (Unigram)", "▁", "a piece that starts a word starts with ▁ (the space): ▁play ing"),
}


@dataclass
class Truncation:
    """What was cut to fit the model's positions: token counts before and after, per sentence."""

    max_length: int
    original: tuple[int, ...]  # word pieces per sentence before cutting (no specials)
    kept: tuple[int, ...]  # word pieces per sentence kept

    @property
    def message(self) -> str:
        parts = [
            f"sentence {'AB'[i]}: kept {k} of {o} word pieces"
            for i, (o, k) in enumerate(zip(self.original, self.kept))
            if k < o
        ]
        return f"Input truncated to the model's {self.max_length} positions ({'; '.join(parts)})."


@dataclass
class Encoding:
    """One tokenized input: [CLS] A [SEP] (B [SEP])."""

    tokens: list[str]
    input_ids: np.ndarray  # (T,) int64
    token_type_ids: np.ndarray  # (T,) 0 for sentence A (and [CLS]), 1 for sentence B
    special_tokens_mask: np.ndarray  # (T,) 1 for [CLS]/[SEP]
    offsets: list[tuple[int, int] | None]  # (start, end) into its own sentence; None for specials
    sequence_ids: list[int | None]  # 0 = text, 1 = text_pair, None = special
    word_ids: list[int | None]  # pieces of one word share an id (per sentence); None for specials
    truncation: Truncation | None = None
    notes: list[str] = field(default_factory=list)  # what the tokenizer changed or read specially

    def __len__(self) -> int:
        return len(self.tokens)


@dataclass
class WordPieceStep:
    """One look-up of WordPiece's greedy search: the candidate tried and whether the vocab has it."""

    start: int
    end: int
    candidate: str
    found: bool


@dataclass
class WordSplit:
    """How one pre-tokenized word became pieces."""

    word: str
    pieces: list[str]
    steps: list[WordPieceStep] = field(default_factory=list)


class WordPieceTokenizer:
    """A tokenizer of the BERT family: the Rust `tokenizers` model plus the special tokens and the model's limit.

    (Named for BERT's WordPiece; it also wraps RoBERTa's byte-level BPE and ALBERT's SentencePiece.
    `scheme` says which; `family` decides the input frame: RoBERTa's pairs are <s> A </s></s> B </s>,
    and RoBERTa and DistilBERT use no segment ids.)
    """

    def __init__(self, tokenizer: _RustTokenizer, specials: dict[str, str], model_max_length: int = 512,
                 family: str = "bert"):
        self.family = family
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tok = tokenizer
        self.specials = specials
        self.model_max_length = model_max_length
        ids = {}
        for name, tok in specials.items():
            i = tokenizer.token_to_id(tok)
            if i is None:
                raise BertCoreError(f"the tokenizer's vocabulary has no {tok} token")
            ids[name] = i
        self.pad_token_id = ids["pad_token"]
        self.unk_token_id = ids["unk_token"]
        self.cls_token_id = ids["cls_token"]
        self.sep_token_id = ids["sep_token"]
        self.mask_token_id = ids["mask_token"]
        self.all_special_ids = sorted(set(ids.values()))
        self.vocab = tokenizer.get_vocab()  # token -> id
        self._id_to_token = {i: t for t, i in self.vocab.items()}
        self.vocab_size = tokenizer.get_vocab_size()
        self.unk_token = specials["unk_token"]
        self.mask_token = specials["mask_token"]
        # The user always types [MASK] (any case); the model's own mask token (e.g. <mask>) works too.
        self._mask_re = re.compile("|".join(re.escape(t) for t in dict.fromkeys([USER_MASK, self.mask_token])),
                                   re.IGNORECASE)
        kind = type(tokenizer.model).__name__.lower()
        self.scheme = "bpe" if kind == "bpe" else "unigram" if kind == "unigram" else "wordpiece"

    @property
    def segments(self) -> bool:
        """Does this family give sentence B its own segment id? (RoBERTa and DistilBERT do not.)"""
        return self.family in ("bert", "albert", "electra")

    @classmethod
    def from_dir(cls, path: str | Path, model_max_length: int = 512, family: str = "bert") -> WordPieceTokenizer:
        """Load `tokenizer.json`, or build from RoBERTa's `vocab.json` + `merges.txt` or BERT's `vocab.txt`."""
        path = Path(path)
        cfg = {}
        if (path / "tokenizer_config.json").is_file():
            try:
                cfg = json.loads((path / "tokenizer_config.json").read_text())
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise BertCoreError(f"{path.name}: tokenizer_config.json is not valid JSON") from e
        defaults = FAMILY_SPECIALS.get(family, DEFAULT_SPECIALS)
        specials = {n: _token_str(cfg.get(n)) or defaults[n] for n in SPECIAL_NAMES}
        limit = cfg.get("model_max_length")
        if isinstance(limit, int) and 0 < limit < model_max_length:
            model_max_length = limit
        if (path / "tokenizer.json").is_file():
            try:
                tok = _RustTokenizer.from_file(str(path / "tokenizer.json"))
            except Exception as e:
                raise BertCoreError(f"{path.name}: tokenizer.json is not one the `tokenizers` library reads") from e
        elif (path / "vocab.json").is_file() or (path / "merges.txt").is_file():
            # RoBERTa's byte-level BPE needs both: the vocabulary and the ranked merges that build it.
            if not ((path / "vocab.json").is_file() and (path / "merges.txt").is_file()):
                have, need = ("vocab.json", "merges.txt") if (path / "vocab.json").is_file() else ("merges.txt",
                                                                                                    "vocab.json")
                raise BertCoreError(
                    f"cannot tokenize for {path.name}: it has {have} but no {need} (and no tokenizer.json); "
                    "a byte-level BPE tokenizer needs both vocab.json and merges.txt"
                )
            from tokenizers import AddedToken
            from tokenizers.implementations import ByteLevelBPETokenizer

            try:
                impl = ByteLevelBPETokenizer(str(path / "vocab.json"), str(path / "merges.txt"),
                                             add_prefix_space=bool(cfg.get("add_prefix_space", False)))
            except Exception as e:
                raise BertCoreError(f"{path.name}: vocab.json / merges.txt are not a readable BPE vocabulary") from e
            tok = impl._tokenizer
            # As transformers' RobertaTokenizer builds it from these two files (roberta-base's own
            # tokenizer.json, read above when present, makes <mask> swallow the space before it).
            tok.add_special_tokens([AddedToken(t, normalized=False) for t in specials.values()])
        elif (path / "vocab.txt").is_file():
            from tokenizers.implementations import BertWordPieceTokenizer

            lower = bool(cfg.get("do_lower_case", True))
            impl = BertWordPieceTokenizer(
                str(path / "vocab.txt"),
                lowercase=lower,
                strip_accents=cfg.get("strip_accents"),
                handle_chinese_chars=cfg.get("tokenize_chinese_chars", True),
                unk_token=specials["unk_token"],
                sep_token=specials["sep_token"],
                cls_token=specials["cls_token"],
                pad_token=specials["pad_token"],
                mask_token=specials["mask_token"],
            )
            tok = impl._tokenizer
        elif (path / "spiece.model").is_file():
            raise BertCoreError(
                f"cannot tokenize for {path.name}: it has only SentencePiece's spiece.model; "
                "BERT Explorer reads tokenizer.json (save one with the tokenizer's save_pretrained in transformers)"
            )
        else:
            raise BertCoreError(
                f"no tokenizer in {path.name}: expected tokenizer.json, vocab.json + merges.txt, or vocab.txt"
            )
        return cls(tok, specials, model_max_length, family)

    def save(self, out_dir: str | Path) -> None:
        """Write tokenizer.json, vocab.txt and tokenizer_config.json (HF's BertTokenizerFast reads them)."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        self._tok.save(str(out / "tokenizer.json"))
        if self.scheme == "wordpiece":
            vocab = "\n".join(t for t, _ in sorted(self.vocab.items(), key=lambda kv: kv[1])) + "\n"
            (out / "vocab.txt").write_text(vocab, encoding="utf-8")
        lower = self._lowercases()
        cfg = {"tokenizer_class": TOKENIZER_CLASSES.get(self.family, "BertTokenizer"), "do_lower_case": lower,
               "model_max_length": self.model_max_length, **self.specials}
        (out / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2))

    def _lowercases(self) -> bool:
        return self._tok.normalizer is not None and self._tok.normalizer.normalize_str("A") == "a"

    def id_to_token(self, i: int) -> str:
        return self._id_to_token.get(int(i), self.unk_token)

    def convert_ids_to_tokens(self, ids) -> list[str]:
        return [self.id_to_token(i) for i in ids]

    def encode(self, text: str, text_pair: str | None = None, max_length: int | None = None) -> Encoding:
        """Tokenize one sentence or a pair into [CLS] A [SEP] (B [SEP]), cutting to `max_length`.

        RoBERTa: <s> A </s> (</s> B </s>), all segment ids 0. A typed [MASK] becomes the model's own
        mask token (<mask> for RoBERTa), with offsets still into the text as typed.
        Example: "The cat sat." -> [CLS] the cat sat . [SEP], offsets (0,3) (4,7) (8,11) (11,12).
        Truncation cuts the longer sentence first, one piece at a time (HF's "longest_first"),
        and is reported in `Encoding.truncation`, never silent.
        """
        texts = [text] if text_pair is None else [text, text_pair]
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise BertCoreError(f"sentence {'AB'[i]} must be text, not {type(t).__name__}")
            if len(t) > MAX_TEXT_CHARS:
                raise BertCoreError(
                    f"sentence {'AB'[i]} has {len(t):,} characters; the limit is {MAX_TEXT_CHARS:,}"
                )
            if not t.strip():
                raise BertCoreError(f"sentence {'AB'[i]} is empty: type some text")
        max_length = min(max_length or self.model_max_length, self.model_max_length)
        notes = []
        # "[mask]" and "[Mask]" mean [MASK] to a student; the tokenizer matches special tokens
        # case-sensitively, so spell them its way (same length: offsets stay valid).
        fixed, back = zip(*(self._fix_masks(t) for t in texts))
        if list(fixed) != texts:
            typed = sorted({m.group(0) for t in texts for m in self._mask_re.finditer(t)} - {self.mask_token})
            notes.append(f"Read {', '.join(typed)} as this model's mask token {self.mask_token}.")
        encs = [self._tok.encode(t, add_special_tokens=False) for t in fixed]
        frame = {self.cls_token_id, self.sep_token_id, self.pad_token_id}
        for i, e in enumerate(encs):
            if not e.ids:
                raise BertCoreError(f"sentence {'AB'[i]} has no tokens after normalisation: type some words")
            if set(e.ids) <= frame:
                raise BertCoreError(
                    f"sentence {'AB'[i]} holds only special tokens ({' '.join(dict.fromkeys(e.tokens))}); "
                    "type some words"
                )
        lengths = [len(e.ids) for e in encs]
        roberta_pair = self.family == "roberta" and len(texts) == 2
        kept = _longest_first(lengths, max_length - (len(texts) + 1 + roberta_pair))
        truncation = Truncation(max_length, tuple(lengths), tuple(kept)) if kept != lengths else None

        tokens, ids, types, special, offsets, seq_ids, word_ids = [], [], [], [], [], [], []

        def add_special(tok_id: int, seg: int):
            tokens.append(self.id_to_token(tok_id))
            ids.append(tok_id)
            types.append(seg)
            special.append(1)
            offsets.append(None)
            seq_ids.append(None)
            word_ids.append(None)

        add_special(self.cls_token_id, 0)
        for seq, (e, n) in enumerate(zip(encs, kept)):
            seg = seq if self.segments else 0
            if seq and roberta_pair:
                add_special(self.sep_token_id, 0)  # RoBERTa separates a pair with </s></s>
            tokens += e.tokens[:n]
            ids += e.ids[:n]
            types += [seg] * n
            special += [0] * n
            offsets += [(back[seq][a], back[seq][b]) for a, b in e.offsets[:n]]
            seq_ids += [seq] * n
            word_ids += e.word_ids[:n]
            add_special(self.sep_token_id, seg)
        return Encoding(
            tokens=tokens,
            input_ids=np.asarray(ids, dtype=np.int64),
            token_type_ids=np.asarray(types, dtype=np.int64),
            special_tokens_mask=np.asarray(special, dtype=np.int64),
            offsets=offsets,
            sequence_ids=seq_ids,
            word_ids=word_ids,
            truncation=truncation,
            notes=notes,
        )

    def _fix_masks(self, text: str) -> tuple[str, list[int]]:
        """Spell every typed mask ([MASK], [mask], <mask>) as the model's own mask token.

        Returns the new text and, for each of its character positions (and its end), the position in
        the typed text, so offsets stay valid when the two tokens differ in length.
        Example (RoBERTa): "a [MASK]." -> "a <mask>.", back = [0, 1, 2, ..., 9].
        """
        out, back, cursor = [], [], 0
        for m in self._mask_re.finditer(text):
            out.append(text[cursor:m.start()])
            back += range(cursor, m.start())
            out.append(self.mask_token)
            n = len(self.mask_token)
            back += [m.start() + min(i * len(m.group(0)) // n, len(m.group(0)) - 1) for i in range(n)]
            cursor = m.end()
        out.append(text[cursor:])
        back += range(cursor, len(text) + 1)
        return "".join(out), back

    def encode_plain(self, text: str) -> list[int]:
        """Ids of `text` without special tokens (for corpora; no length limit applied)."""
        return self._tok.encode(text, add_special_tokens=False).ids

    def encode_batch_plain(self, texts: list[str]) -> list[list[int]]:
        return [e.ids for e in self._tok.encode_batch(texts, add_special_tokens=False)]

    def encode_batch_offsets(self, texts: list[str]) -> list[tuple[list[int], list[tuple[int, int]]]]:
        """(ids, character offsets) of each text, without special tokens (no length limit applied)."""
        return [(e.ids, e.offsets) for e in self._tok.encode_batch(texts, add_special_tokens=False)]

    def words(self, text: str) -> list[tuple[str, tuple[int, int]]]:
        """The words WordPiece sees: normalised (e.g. lower-cased) and split on spaces/punctuation.

        Offsets are into the normalised text, which differs from the input when accents are
        stripped; `encode` gives offsets into the original text.
        """
        norm = self._tok.normalizer.normalize_str(text) if self._tok.normalizer else text
        pre = self._tok.pre_tokenizer
        return pre.pre_tokenize_str(norm) if pre is not None else [(norm, (0, len(norm)))]

    @property
    def continuation_prefix(self) -> str:
        """What starts a WordPiece piece that continues a word ("##")."""
        return getattr(self._tok.model, "continuing_subword_prefix", "##")

    def split_words(self, text: str) -> list[WordSplit]:
        """Each word of `text` with the greedy search that split it (see `wordpiece_steps`)."""
        prefix = self.continuation_prefix
        max_chars = getattr(self._tok.model, "max_input_chars_per_word", 100)
        out = []
        # Special tokens typed in the text ([MASK], [SEP]...) are matched before WordPiece runs,
        # as the real tokenizer does: they stay whole, with no search.
        specials = "|".join(re.escape(t) for t in sorted(set(self.specials.values()), key=len, reverse=True))
        for part in re.split(f"({specials})", self._mask_re.sub(self.mask_token, text)):
            if part in self.specials.values():
                out.append(WordSplit(part, [part]))
            elif part and self.scheme == "wordpiece":
                out += [wordpiece_steps(w, self.vocab, self.unk_token, prefix, max_chars) for w, _ in self.words(part)]
            elif part:
                # BPE and Unigram: the pieces the real model gives each pre-tokenized word (no greedy replay).
                for w, _ in self.words(part):
                    pieces = self._tok.model.tokenize(w)
                    out.append(WordSplit(w, [p.value for p in pieces]))
        return out


def wordpiece_steps(word: str, vocab, unk_token: str = "[UNK]", prefix: str = "##",
                    max_chars: int = 100) -> WordSplit:
    """Greedy longest-match-first WordPiece, recording every look-up.

    From the current start, try the longest remaining substring, then shorter ones, until the
    vocabulary has it (with `##` in front unless at the word's start); a word with a stretch no
    entry matches becomes one [UNK].
    Example: vocab {un, ##aff, ##able}, "unaffable" -> tries unaffable, unaffabl, ... un (found),
    then ##affable, ... ##aff (found), then ##able (found) -> [un, ##aff, ##able].
    """
    steps: list[WordPieceStep] = []
    if len(word) > max_chars:
        return WordSplit(word, [unk_token], steps)
    pieces, start = [], 0
    while start < len(word):
        end, match = len(word), None
        while start < end:
            cand = (prefix if start > 0 else "") + word[start:end]
            found = cand in vocab
            steps.append(WordPieceStep(start, end, cand, found))
            if found:
                match = cand
                break
            end -= 1
        if match is None:
            return WordSplit(word, [unk_token], steps)
        pieces.append(match)
        start = end
    return WordSplit(word, pieces, steps)


def _longest_first(lengths: list[int], budget: int) -> list[int]:
    """Cut the longer sentence one piece at a time until the total fits the budget.

    Example: lengths [10, 4], budget 8 -> [4, 4]; lengths [3], budget 8 -> [3].
    """
    kept = list(lengths)
    while sum(kept) > max(budget, 0):
        i = max(range(len(kept)), key=lambda j: (kept[j], -j))
        kept[i] -= 1
    return kept


def _token_str(v) -> str | None:
    """tokenizer_config.json stores special tokens as a string or as an AddedToken dict."""
    if isinstance(v, str):
        return v
    if isinstance(v, dict) and isinstance(v.get("content"), str):
        return v["content"]
    return None
