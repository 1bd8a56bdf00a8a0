"""Tokenization: offsets map back to the text, pieces, [UNK], pairs, truncation reported."""

from __future__ import annotations

import pytest

import bert_core
from bert_core import BertCoreError, wordpiece_steps


@pytest.fixture(scope="module")
def tok(tiny_dirs):
    return bert_core.load_model(str(tiny_dirs["pretraining"][0])).tokenizer


def pieces_match_text(enc, texts):
    for token, off, seq in zip(enc.tokens, enc.offsets, enc.sequence_ids):
        if off is None:
            assert token in ("[CLS]", "[SEP]") and seq is None
            continue
        span = texts[seq][off[0]:off[1]]
        if token == "[UNK]":
            assert span  # an unknown character still maps to the characters it came from
        else:
            assert token.removeprefix("##") == span.lower().replace("é", "e"), (token, span)


def test_offsets_map_back_to_the_text(tok):
    text = "The Café sat, unaffable! Playing€"
    enc = tok.encode(text)
    assert enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]"
    assert "##aff" in enc.tokens and "[UNK]" in enc.tokens  # a split word and an unknown character
    assert "cafe" in enc.tokens  # accent stripped by the uncased normaliser, offsets still on "Café"
    pieces_match_text(enc, [text])
    i = enc.tokens.index("cafe")
    assert text[slice(*enc.offsets[i])] == "Café"
    # pieces of one word share a word id
    j = enc.tokens.index("un")
    assert enc.word_ids[j] == enc.word_ids[j + 1] == enc.word_ids[j + 2]
    assert enc.special_tokens_mask.tolist() == [1] + [0] * (len(enc) - 2) + [1]


def test_sentence_pair_segments_and_offsets(tok):
    a, b = "he went to the store.", "she bought milk."
    enc = tok.encode(a, b)
    sep = [i for i, t in enumerate(enc.tokens) if t == "[SEP]"]
    assert len(sep) == 2
    assert enc.token_type_ids[: sep[0] + 1].tolist() == [0] * (sep[0] + 1)
    assert enc.token_type_ids[sep[0] + 1:].tolist() == [1] * (len(enc) - sep[0] - 1)
    pieces_match_text(enc, [a, b])


def test_truncation_is_reported(tok):
    long = " ".join(["the cat sat on the mat."] * 30)
    enc = tok.encode(long, "he went to the store.")
    assert len(enc) == 64  # the tiny model's max_position_embeddings
    assert enc.truncation is not None
    assert enc.truncation.kept[0] < enc.truncation.original[0]
    assert enc.truncation.kept[1] == enc.truncation.original[1]
    assert "truncated" in enc.truncation.message and "64" in enc.truncation.message
    assert tok.encode("the cat sat.").truncation is None


def test_matches_hf_fast_tokenizer(tiny_dirs, tok):
    from transformers import BertTokenizerFast

    hf = BertTokenizerFast.from_pretrained(tiny_dirs["pretraining"][0])
    for a, b in [("The Café sat, unaffable!", None), ("he went.", "she bought milk, €5.")]:
        ours = tok.encode(a, b)
        theirs = hf(a, b, return_offsets_mapping=True)
        assert ours.input_ids.tolist() == theirs["input_ids"]
        assert ours.token_type_ids.tolist() == theirs["token_type_ids"]


def test_wordpiece_steps_replays_the_greedy_search(tok):
    split = wordpiece_steps("unaffable", {"un", "##aff", "##able"})
    assert split.pieces == ["un", "##aff", "##able"]
    assert split.steps[0].candidate == "unaffable" and not split.steps[0].found
    assert [s.candidate for s in split.steps if s.found] == ["un", "##aff", "##able"]
    assert wordpiece_steps("xyz", {"x"}).pieces == ["[UNK]"]
    # The replay agrees with the real tokenizer on every word.
    text = "The Café sat, [mask] unaffable! Playing€ zzq[MASK]"
    replay = [p for w in tok.split_words(text) for p in w.pieces]
    assert replay == tok.encode(text).tokens[1:-1]


@pytest.mark.parametrize("bad", ["", "   \n\t", "x" * (bert_core.MAX_TEXT_CHARS + 1)])
def test_bad_text_raises_the_documented_error(tok, bad):
    with pytest.raises(BertCoreError):
        tok.encode(bad)
