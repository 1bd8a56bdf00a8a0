"""The built-in WordNet corpus, the held-out split, user corpora and the WordPiece trainer."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from bert_core.errors import BertCoreError
from bert_core.train.corpus import (
    BUILTIN_CORPUS_FILE,
    MAX_USER_CORPUS_BYTES,
    SPECIAL_TOKENS,
    load_builtin_corpus,
    parse_user_corpus,
    save_tokenizer,
    split_heldout,
    train_wordpiece,
)

ROOT = Path(__file__).resolve().parents[2]
SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "A large domesticated animal used for riding and for racing.",
    "She sells sea shells by the seashore; unbelievably, nobody buys them!",
]


@pytest.fixture(scope="module")
def corpus() -> list[str]:
    return load_builtin_corpus()


@pytest.fixture(scope="module")
def small_tok(corpus):
    return train_wordpiece(corpus[:20_000], vocab_size=2000)


def test_builtin_corpus_loads(corpus):
    # built by scripts/build_corpus.py: 154,962 lines, 1,435,882 words
    assert len(corpus) > 150_000
    assert sum(len(line.split()) for line in corpus) > 1_400_000
    assert len(set(corpus)) == len(corpus)
    assert all(line == line.strip() and len(line.split()) >= 3 for line in corpus)
    assert not any('"' in line for line in corpus)
    assert corpus[0].startswith("that which is perceived or known")
    assert BUILTIN_CORPUS_FILE.stat().st_size < 4_000_000
    assert load_builtin_corpus() == corpus  # cached, and a fresh list each time
    assert load_builtin_corpus() is not corpus


def test_split_deterministic_disjoint_and_about_two_percent(corpus):
    train, held = split_heldout(corpus)
    assert (train, held) == split_heldout(corpus)
    assert len(train) + len(held) == len(corpus)
    assert not set(train) & set(held)
    assert 0.015 < len(held) / len(corpus) < 0.025
    # per-line: order does not matter
    shuffled = corpus[:]
    random.Random(1).shuffle(shuffled)
    train2, held2 = split_heldout(shuffled)
    assert set(held2) == set(held) and set(train2) == set(train)
    # another seed gives another split, same size roughly
    _, held_s1 = split_heldout(corpus, seed=1)
    assert set(held_s1) != set(held) and 0.015 < len(held_s1) / len(corpus) < 0.025
    assert split_heldout(corpus[:100], fraction=0.0)[1] == []
    assert split_heldout(corpus[:100], fraction=1.0)[0] == []


def test_parse_user_corpus_bounds():
    with pytest.raises(BertCoreError, match="empty"):
        parse_user_corpus("")
    with pytest.raises(BertCoreError, match="empty"):
        parse_user_corpus(" \n\t \n")
    big = "word " * (MAX_USER_CORPUS_BYTES // 5 + 1)
    with pytest.raises(BertCoreError, match=f"{len(big.encode()):,} bytes.*{MAX_USER_CORPUS_BYTES:,}"):
        parse_user_corpus(big)
    with pytest.raises(BertCoreError, match="only 4 words"):
        parse_user_corpus("one two\n\nthree four")
    assert parse_user_corpus("a b c d e\n\n  f g   h i j  \n") == ["a b c d e", "f g h i j"]
    long_line = " ".join(["This is a sentence that goes on for a while."] * 3 + ["Really? Yes! Ok"] * 5)
    lines = parse_user_corpus("short line of words here\n" + long_line)
    assert lines[0] == "short line of words here"
    assert lines[1:4] == ["This is a sentence that goes on for a while."] * 3
    assert lines[4:7] == ["Really?", "Yes!", "Ok Really?"]
    ok = parse_user_corpus("x" * (MAX_USER_CORPUS_BYTES - 100) + "\n" + "w " * 10)
    assert len(ok) == 2


def test_train_wordpiece_small(small_tok):
    tok = small_tok
    assert tok.get_vocab_size() == 2000
    for i, t in enumerate(SPECIAL_TOKENS):
        assert tok.token_to_id(t) == i
    vocab = tok.get_vocab()
    assert sorted(vocab.values()) == list(range(len(vocab)))
    assert sum(t.startswith("##") for t in vocab) > 500
    assert {"##s", "##ed", "##ing", "the", "of"} <= set(vocab)
    enc = tok.encode("The unbelievably quick brown fox.", "It jumped!")
    assert enc.tokens[0] == "[CLS]" and enc.tokens.count("[SEP]") == 2
    assert any(t.startswith("##") for t in enc.tokens)
    assert "[UNK]" not in enc.tokens
    first_sep = enc.tokens.index("[SEP]")
    assert enc.type_ids == [0] * (first_sep + 1) + [1] * (len(enc.tokens) - first_sep - 1)
    for s in SENTENCES:
        assert tok.decode(tok.encode(s).ids).replace(" ", "") == s.lower().replace(" ", "")
    # special tokens in the text stay whole and are not lower-cased away
    assert tok.encode("a [MASK] b", add_special_tokens=False).tokens == ["a", "[MASK]", "b"]
    assert tok.encode("Zürich café").tokens[1:-1] == tok.encode("zurich cafe").tokens[1:-1]


def test_train_wordpiece_deterministic_across_processes(corpus):
    # The Rust trainer used to number "##x" in per-process hash order; see train_wordpiece.
    lines = corpus[:3000]
    here = train_wordpiece(lines, vocab_size=500).get_vocab()
    code = (
        "import json, sys\n"
        "from bert_core.train.corpus import load_builtin_corpus, train_wordpiece\n"
        "tok = train_wordpiece(load_builtin_corpus()[:3000], vocab_size=500)\n"
        "json.dump(tok.get_vocab(), sys.stdout)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == here
    assert train_wordpiece(lines, vocab_size=500).get_vocab() == here


def test_train_wordpiece_rejects_bad_input():
    with pytest.raises(BertCoreError):
        train_wordpiece([], vocab_size=100)
    with pytest.raises(BertCoreError):
        train_wordpiece(["some words here"], vocab_size=5)


def test_save_tokenizer_loads_in_tokenizers_and_transformers(small_tok, tmp_path):
    from tokenizers import Tokenizer
    from transformers import BertTokenizerFast

    out = save_tokenizer(small_tok, tmp_path / "tok", model_max_length=128)
    vocab_lines = (out / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert vocab_lines[:5] == list(SPECIAL_TOKENS)
    assert len(vocab_lines) == small_tok.get_vocab_size()
    assert all(small_tok.token_to_id(t) == i for i, t in enumerate(vocab_lines))
    cfg = json.loads((out / "tokenizer_config.json").read_text())
    assert cfg["do_lower_case"] is True and cfg["model_max_length"] == 128
    assert cfg["mask_token"] == "[MASK]" and cfg["tokenizer_class"] == "BertTokenizer"

    rust = Tokenizer.from_file(str(out / "tokenizer.json"))
    hf = BertTokenizerFast.from_pretrained(str(out))
    assert hf.model_max_length == 128
    assert (hf.pad_token_id, hf.unk_token_id, hf.cls_token_id, hf.sep_token_id, hf.mask_token_id) == (
        0, 1, 2, 3, 4
    )
    for s in SENTENCES + ["Naïve RÉSUMÉ with a [MASK] token, 12345 and 漢字."]:
        ids = small_tok.encode(s).ids
        assert rust.encode(s).ids == ids
        assert hf(s)["input_ids"] == ids
    a, b = SENTENCES[0], SENTENCES[1]
    pair_hf = hf(a, b)
    pair = small_tok.encode(a, b)
    assert pair_hf["input_ids"] == pair.ids and pair_hf["token_type_ids"] == pair.type_ids


def _build_corpus_module():
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import build_corpus
    finally:
        sys.path.pop(0)
    return build_corpus


def test_build_script_gloss_parsing():
    b = _build_corpus_module()
    assert b.gloss_to_lines(
        'cause to be alert; "Coffee and tea stimulate me"; "the evil; that men do"- Shakespeare'
    ) == ["cause to be alert", "Coffee and tea stimulate me", "the evil; that men do"]
    assert b.gloss_to_lines('a def; more def; "ex one", "ex two"; (`x\' is archaic)') == [
        "a def; more def", "ex one", "ex two", "('x' is archaic)"
    ]
    assert b.gloss_to_lines('typo; "unbalanced quote') == ["typo", "unbalanced quote"]


def test_build_script_reproduces_shipped_file(tmp_path):
    # .ci/run installs Debian's wordnet-base, the corpus's source.
    assert Path("/usr/share/wordnet/data.noun").is_file(), "apt-get install wordnet-base"
    build_corpus = _build_corpus_module()
    out = tmp_path / "c.txt.gz"
    build_corpus.main(["--out", str(out)])
    assert out.read_bytes() == BUILTIN_CORPUS_FILE.read_bytes()
