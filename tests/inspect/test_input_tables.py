"""bert_core.input_tables (the data behind the Tokenization and Embeddings pages) and their figures."""

from __future__ import annotations

import html
import re

import numpy as np
import pytest

import bert_core
from bert_core.figures.embeddings import embedding_heatmap, norms_figure, position_similarity_figure
from bert_core.figures.tokens import pieces_per_word_figure
from bert_core.inspect import input_tables
from bert_core.model.tokenization import WordSplit

TEXTS = [
    "The cat sat on the mat.",
    "  leading and   several\nspaces,\n\n newlines\tand tabs  ",
    "unaffable playing cafe paris",
    "Café ﬁne e\u0301 🙂 東京 x",
    "the [MASK] sat [MASK][MASK]x",
    "<script>alert(1)</script><b>x</b>",
]


@pytest.fixture(scope="module")
def tiny(tiny_dirs):
    """The pretraining-kind tiny model of conftest (a known vocabulary)."""
    return bert_core.load_model(str(tiny_dirs["pretraining"][0]))


def _visible_text(markup: str) -> str:
    """What a browser shows of our HTML: tags dropped, entities decoded."""
    return html.unescape(re.sub(r"<[^>]*>", "", markup))


@pytest.mark.parametrize("text", TEXTS)
def test_spans_reconstruct_text_and_cover_every_piece(tiny, text):
    enc = tiny.tokenizer.encode(text)
    pieces = [(i, o) for i, o in enumerate(enc.offsets) if o is not None]
    spans = input_tables.highlight_spans(text, pieces)
    assert "".join(s.text for s in spans) == text
    covered = [p for s in spans for p in s.positions]
    assert covered == [i for i, _ in pieces]  # every piece exactly once, in order
    for s in spans:
        if s.kind == "piece" and s.text:
            start, end = enc.offsets[s.positions[0]]
            assert s.text == text[start:end]
        if s.kind == "gap":
            assert not s.positions


def test_spans_overlapping_offsets_join_and_truncated_tail_is_cut():
    spans = input_tables.highlight_spans("ﬁ ab cd", [(1, (0, 1)), (2, (0, 1)), (3, (2, 4))], truncated=True)
    assert [(s.text, s.kind, s.positions) for s in spans] == [
        ("ﬁ", "piece", [1, 2]), (" ", "gap", []), ("ab", "piece", [3]), (" cd", "cut", [])]
    # Without truncation the same tail is an ordinary gap.
    assert input_tables.highlight_spans("ab cd", [(1, (0, 2))])[-1].kind == "gap"


@pytest.mark.parametrize("text", TEXTS)
def test_tokens_html_shows_exactly_the_text(tiny, text):
    tok = tiny.tokenizer
    t = bert_core.analyze(tiny, text)
    markup = input_tables.tokens_html(t, tok.all_special_ids, tok.unk_token_id, tok.mask_token_id)
    assert _visible_text(markup) == "A[CLS]" + text + "[SEP]"
    if "<" in text:
        assert "<script>" not in markup and "<b>x" not in markup
        assert "&lt;" in markup


def test_tokens_html_pair_and_truncation(tiny):
    tok = tiny.tokenizer
    t = bert_core.analyze(tiny, "the cat sat", "he went  to the store")
    text = _visible_text(input_tables.tokens_html(t, tok.all_special_ids, tok.unk_token_id, tok.mask_token_id))
    assert text == "A[CLS]the cat sat[SEP]Bhe went  to the store[SEP]"
    long = " ".join(["the cat sat on the mat"] * 30)  # 180 pieces > 64 positions
    t = bert_core.analyze(tiny, long)
    assert t.truncation is not None
    spans = input_tables.sentence_spans(t, 0)
    assert spans[-1].kind == "cut" and "".join(s.text for s in spans) == long
    markup = input_tables.tokens_html(t, tok.all_special_ids, tok.unk_token_id)
    assert "line-through" in markup


def test_token_rows(tiny):
    tok = tiny.tokenizer
    t = bert_core.analyze(tiny, "playing [MASK] 🙂", "the cat")
    rows = input_tables.token_rows(t, tok.all_special_ids, tok.unk_token_id)
    assert [r["token"] for r in rows] == ["[CLS]", "play", "##ing", "[MASK]", "[UNK]", "[SEP]", "the", "cat", "[SEP]"]
    assert [r["position"] for r in rows] == list(range(9))
    assert [r["segment"] for r in rows] == list("AAAAAABBB")
    assert [r["## continuation"] for r in rows] == ["no", "no", "yes", "no", "no", "no", "no", "no", "no"]
    assert [r["special"] for r in rows] == ["yes", "no", "no", "yes", "no", "yes", "no", "no", "yes"]
    assert [r["word index"] for r in rows] == [None, 0, 0, 1, 2, None, 0, 1, None]
    assert rows[2]["characters"] == "4-7" and rows[2]["text"] == "ing"
    assert rows[4]["text"] == "🙂" and rows[7]["text"] == "cat" and rows[0]["text"] == ""
    assert [r["id"] for r in rows] == t.input_ids.tolist()
    assert input_tables.token_counts(t, tok.all_special_ids, tok.unk_token_id) == {
        "words": 5, "pieces": 6, "unknown": 1, "tokens": 9, "special": 4}


@pytest.mark.parametrize("text", TEXTS)
def test_split_words_replays_the_tokenizer(tiny, text):
    """Greedy longest-match replay (with specials kept whole) gives the pieces `encode` gives."""
    splits = input_tables.split_words(tiny.tokenizer, text)
    enc = tiny.tokenizer.encode(text)
    assert [p for s in splits for p in s.pieces] == enc.tokens[1:-1]


def test_word_split_rows_and_steps(tiny):
    tok = tiny.tokenizer
    splits = input_tables.split_words(tok, "unaffable [MASK] 🙂")
    rows = input_tables.word_split_rows(splits, tok.unk_token, set(tok.specials.values()), sentence="B")
    assert [(r["word"], r["pieces"], r["[UNK]"], r["special"]) for r in rows] == [
        ("unaffable", "un ##aff ##able", "no", "no"), ("[MASK]", "[MASK]", "no", "yes"),
        ("🙂", "[UNK]", "yes", "no")]
    assert rows[0]["sentence"] == "B" and rows[0]["look-ups"] == len(splits[0].steps)
    steps = input_tables.step_rows(splits[0])
    assert steps[0]["candidate"] == "unaffable" and steps[0]["in vocabulary"] == "no"
    assert [s["candidate"] for s in steps if s["in vocabulary"] != "no"] == ["un", "##aff", "##able"]
    assert [s["try"] for s in steps] == list(range(1, len(steps) + 1))
    assert input_tables.step_rows(splits[1]) == []


def test_pieces_per_word():
    splits = [WordSplit("the", ["the"]), WordSplit("unaffable", ["un", "##aff", "##able"]), WordSplit("a", ["a"])]
    assert input_tables.pieces_per_word(splits) == {1: 2, 3: 1}
    fig = pieces_per_word_figure(input_tables.pieces_per_word(splits))
    assert list(fig.data[0].x) == ["1", "3"] and list(fig.data[0].y) == [2, 1]


def test_token_labels_unique():
    labels = input_tables.token_labels(["[CLS]", "the", "the", "[SEP]"])
    assert labels == ["0: [CLS]", "1: the", "2: the", "3: [SEP]"]


def test_norms_match_numpy(tiny):
    t = bert_core.analyze(tiny, "the cat sat on the mat", "it was")
    norms = input_tables.token_norms(t.embeddings)
    assert list(norms) == list(input_tables.EMBEDDING_PARTS)
    for name, vals in norms.items():
        arr = getattr(t.embeddings, name)
        assert vals.shape == (len(t.tokens),)
        np.testing.assert_allclose(vals, [np.sqrt((row.astype(np.float64) ** 2).sum()) for row in arr], rtol=1e-5)
    rows = input_tables.norm_rows(t)
    assert len(rows) == len(t.tokens) and rows[3]["token"] == "3: sat"
    assert rows[3]["|normed|"] == round(float(np.linalg.norm(t.embeddings.normed[3])), 4)
    assert rows[-1]["segment"] == "B"
    # The sum really is the sum of the three parts, and LayerNorm's output is what layer 1 reads.
    e = t.embeddings
    np.testing.assert_allclose(e.sum, e.word + e.segment + e.position, atol=1e-5)
    np.testing.assert_allclose(e.normed, t.hidden_states[0], atol=0)


def test_segment_rows(tiny):
    t = bert_core.analyze(tiny, "the cat sat", "he went")
    rows = input_tables.segment_rows(t)
    assert [(r["segment"], r["tokens"], r["distinct vectors"]) for r in rows] == [("A", 5, 1), ("B", 3, 1)]
    seg = tiny.model.bert.embeddings.token_type_embeddings.weight.detach().numpy()
    assert rows[1]["L2 norm"] == round(float(np.linalg.norm(seg[1])), 4)
    assert [r["segment"] for r in input_tables.segment_rows(bert_core.analyze(tiny, "the cat"))] == ["A"]


def test_heatmap_labels_escaped_and_dims_cut():
    vals = np.arange(3 * 10, dtype=np.float32).reshape(3, 10)
    labels = input_tables.token_labels(["[CLS]", "<b>x</b>", "[SEP]"])
    fig = embedding_heatmap(vals, labels, 4, "t")
    assert np.asarray(fig.data[0].z).shape == (3, 4)
    assert list(fig.data[0].y) == ["0: [CLS]", "1: &lt;b&gt;x&lt;/b&gt;", "2: [SEP]"]
    fig = embedding_heatmap(vals, labels, 4, "t", segments=np.array([0, 0, 1]))
    assert len(fig.data) == 2 and [t[0] for t in fig.data[0].text] == ["A", "A", "B"]
    nf = norms_figure({"word": np.ones(3), "sum": np.zeros(3)}, labels, segments=np.array([0, 0, 1]))
    assert len(nf.data) == 2 and "<b>" not in "".join(nf.data[0].x)


def test_position_similarity_figure(tiny):
    sim = bert_core.position_similarity(tiny, 10)
    assert sim.shape == (10, 10)
    np.testing.assert_allclose(np.diag(sim), 1, atol=1e-5)
    fig = position_similarity_figure(sim)
    assert np.asarray(fig.data[0].z).shape == (10, 10)
