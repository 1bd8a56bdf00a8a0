"""The Tokenization page, driven through AppTest on the bundled model.

Inputs go in through the shared link (query parameters): AppTest in streamlit 1.67 drops the
sidebar from its element tree after `switch_page`, so `open_page(text=...)` cannot type them.
"""

from __future__ import annotations

from support.apptest import assert_ok, open_page

import bert_core

SCRIPT = "<script>alert(1)</script><b>x</b>"


def _open(text: str, pair: str | None = None):
    query = {"text": text} if pair is None else {"text": text, "pair": pair}
    at = open_page("tokenization", query=query)
    assert_ok(at)
    return at


def _tokens(at):
    """The token table (the first dataframe on the page)."""
    return at.dataframe[0].value


def test_default_input():
    at = open_page("tokenization")
    assert_ok(at)
    assert at.header[0].value == "Tokenization"
    df = _tokens(at)
    assert df["token"].iloc[0] == "[CLS]" and df["token"].iloc[-1] == "[SEP]"
    assert "[MASK]" in set(df["token"]) and set(df["segment"]) == {"A"}
    markup = at.html[0].value
    assert "[CLS]" in markup and "[MASK]" in markup and "letter" in markup
    assert not at.warning  # short text: nothing truncated
    assert any(b.label == "Download tokens (CSV)" for b in at.get("download_button"))
    # The first page's model line glosses "distilled" where the word first appears.
    said = " ".join(e.value for g in (at.caption, at.markdown) for e in g)
    assert "distilled from, i.e. trained to imitate, a BERT-base-sized teacher" in said


def test_pair_has_segment_b():
    at = _open("The cat sat.", "It was   happy.")
    df = _tokens(at)
    assert list(df["segment"][:6]) == ["A"] * 6 and df["segment"].iloc[-1] == "B"
    assert (df["token"] == "[SEP]").sum() == 2
    b_rows = df[(df["segment"] == "B") & (df["special"] == "no")]
    assert "".join(b_rows["text"]) == "Itwashappy."
    markup = at.html[0].value
    assert "It</span> <span" in markup and "was</span>   <span" in markup  # spaces kept between pieces
    words = at.dataframe[1].value
    assert set(words["sentence"]) == {"A", "B"}


def test_two_masks():
    at = _open("The [MASK] sat on the [MASK].")
    df = _tokens(at)
    masks = df[df["token"] == "[MASK]"]
    assert len(masks) == 2 and set(masks["special"]) == {"yes"} and set(masks["text"]) == {"[MASK]"}
    words = at.dataframe[1].value
    assert list(words["word"]).count("[MASK]") == 2  # kept whole, not "[", "mask", "]"


def test_pieces_and_unknown():
    at = _open("zxqvbnmw 🙂 cat")
    df = _tokens(at)
    assert "yes" in set(df["## continuation"])
    assert "[UNK]" in set(df["token"])
    assert df[df["token"] == "[UNK]"]["text"].iloc[0] == "🙂"
    assert [m.value for m in at.metric if m.label == "[UNK] pieces"] == ["1"]
    assert at.error and "[UNK]" in at.error[0].value
    # The word picker opens on the [UNK] word, with its single failed look-up.
    assert at.selectbox(key="tok_word").value == 1
    steps = at.dataframe[-1].value
    assert list(steps["candidate"]) == ["🙂"] and list(steps["in vocabulary"]) == ["no"]
    # Picking the long word shows its greedy search: pieces are the found candidates.
    at.selectbox(key="tok_word").set_value(0).run()
    assert_ok(at)
    steps = at.dataframe[-1].value
    found = list(steps[steps["in vocabulary"] != "no"]["candidate"])
    pieces = list(df[df["word index"] == 0]["token"])
    assert found == pieces and len(pieces) > 1
    assert steps["candidate"].iloc[0] == "zxqvbnmw"


def test_long_text_is_truncated_with_notice():
    m = bert_core.load_model()
    at = _open(" ".join(["the cat sat on the mat"] * (m.max_length // 6 + 10)))  # past the default model's positions
    assert at.warning and "truncated" in at.warning[0].value
    assert len(_tokens(at)) == m.max_length
    assert "line-through" in at.html[0].value


def test_html_in_text_is_escaped():
    at = _open(SCRIPT, SCRIPT)
    produced = [e.value for e in at.markdown] + [e.value for e in at.html] + [e.value for e in at.code]
    assert produced
    for v in produced:
        assert "<script>" not in v and "<b>x" not in v
    markup = at.html[0].value
    assert "&lt;" in markup and "script" in markup and "&gt;" in markup
    assert "".join(_tokens(at)["text"]) == 2 * SCRIPT  # every character kept, as typed


def test_default_sentence_offers_a_word_that_is_cut():
    """The default sentence is all one-piece words, so the page says so and offers a sentence whose words are cut,
    naming the pieces of "embeddings" from this model's own vocabulary; the button puts it into the sidebar."""
    at = open_page("tokenization")
    assert_ok(at)
    words = at.dataframe[1].value
    assert set(words["number of pieces"]) == {1}
    assert any("“embeddings” into em + ##bed + ##ding + ##s" in c.value for c in at.caption)
    at.button(key="tok-split-example").click().run()
    assert_ok(at)
    assert at.session_state["text"] == "The embeddings were unaffected by tokenization."
    split = _open("The embeddings were unaffected by tokenization.").dataframe[1].value
    assert split.set_index("word").loc["embeddings", "number of pieces"] == 4
    assert split.set_index("word").loc["tokenization", "number of pieces"] == 2
    assert not any("“embeddings” into" in c.value for c in _open("The embeddings were unaffected.").caption)
