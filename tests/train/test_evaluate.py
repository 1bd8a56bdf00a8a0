"""The evaluation docs/models.md reports: batched NSP equals the page's one-pair analysis; held-out sets stay out."""

from __future__ import annotations

import numpy as np
import pytest

import bert_core
from bert_core.train import evaluate
from bert_core.train.corpus import clean_gloss, load_pretraining_corpus
from bert_core.train.evaluate import (
    CLOZE_FILE,
    CLOZE_SECOND,
    CLOZE_THIRD,
    PAIRS_FILE,
    PAIRS_SECOND,
    everyday_nsp,
    everyday_nsp_pairs,
    nsp_pairs,
    nsp_probabilities,
    previous_heldout_lines,
    read_cloze,
    read_pairs,
)


def test_batched_nsp_matches_analyze_pair_by_pair(tiny_dirs):
    m = bert_core.load_model(str(tiny_dirs["pretraining"][0]))
    assert m.has_nsp
    pairs = [("the cat sat on the mat .", "it was warm ."), ("a dog ran .", "the sea is wide and very deep today ."),
             ("one", "two three four five six")]
    got = nsp_probabilities(m, pairs, batch_size=2).numpy()  # two batches, padded rows
    want = np.array([bert_core.analyze(m, a, b).nsp[0] for a, b in pairs])
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_nsp_pairs_are_half_real_successors_from_held_out_sentences():
    pairs = nsp_pairs()
    assert len(pairs) > 1000 and sum(label for *_, label in pairs) == len(pairs) // 2
    heldout = {s for d in load_pretraining_corpus()[3] for s in d.sentences}
    assert all(a in heldout for a, _, _ in pairs)


def test_previous_heldout_set_has_nothing_the_new_corpus_trains_on():
    trained = set(load_pretraining_corpus()[0])
    lines = previous_heldout_lines()
    assert len(lines) > 2500 and not any(clean_gloss(g) in trained for g in lines)


def test_cloze_lists_are_everyday_and_not_from_the_corpus():
    """The three everyday lists: one [MASK] a sentence, no filled-in sentence is a line of the pretraining corpus."""
    rows = read_cloze() + read_cloze(CLOZE_SECOND) + read_cloze(CLOZE_THIRD)
    assert len(rows) == 190 and all(t.count("[MASK]") == 1 for t, _ in rows)
    train, docs, _, _ = load_pretraining_corpus()
    seen = {x.lower() for x in train} | {s.lower() for d in docs for s in d.sentences}
    assert not [t for t, a in rows if t.replace("[MASK]", a).lower() in seen]


def test_the_later_cloze_lists_are_apart_from_the_earlier_ones():
    """everyday_cloze_dev.tsv and everyday_cloze_third.tsv: 60 sentences each, single-word answers, no repeats."""
    first, second, third = read_cloze(), read_cloze(CLOZE_SECOND), read_cloze(CLOZE_THIRD)
    for later in (second, third):
        assert len(later) == 60 and all(a and " " not in a for _, a in later)
    texts = [t for rows in (first, second, third) for t, _ in rows]
    assert len(set(texts)) == len(texts) == 190


@pytest.mark.parametrize("path", [PAIRS_FILE, PAIRS_SECOND], ids=["first", "second"])
def test_everyday_pairs_are_a_derangement_and_not_from_the_corpus(path):
    """60 written pairs -> 120: each A with its own B and with another row's B (no row keeps its own)."""
    rows = read_pairs(path)
    assert len(rows) == 60 and len({a for a, _ in rows}) == 60 and all(a and b for a, b in rows)
    pairs = everyday_nsp_pairs(path=path)
    assert len(pairs) == 120 and [label for *_, label in pairs] == [0, 1] * 60
    own = dict(rows)
    assert all((b == own[a]) == (label == 0) for a, b, label in pairs)
    assert sorted(b for _, b, label in pairs if label) == sorted(own.values())  # every B used once as NotNext
    assert everyday_nsp_pairs(seed=1, path=path) != pairs
    train, docs, _, _ = load_pretraining_corpus()
    seen = {x.lower() for x in train} | {s.lower() for d in docs for s in d.sentences}
    assert not [x for r in rows for x in r if x.lower() in seen]


def test_the_two_pairs_lists_share_no_sentence():
    first, second = read_pairs(), read_pairs(PAIRS_SECOND)
    assert not {x for r in first for x in r} & {x for r in second for x in r}


def test_the_three_cloze_lists_together_are_their_counts_added(monkeypatch):
    """The report's 'three lists' row: right answers of each list added, over 190 sentences."""
    right = {CLOZE_FILE: (7, 30), CLOZE_SECOND: (5, 19), CLOZE_THIRD: (2, 17)}  # (top-1, top-5) per list

    def fake_cloze(m, path=CLOZE_FILE):
        n = len(read_cloze(path))
        return {"sentences": n, "top1": right[path][0] / n, "top5": right[path][1] / n, "rows": []}

    monkeypatch.setattr(evaluate, "everyday_cloze", fake_cloze)
    r = evaluate.everyday_cloze_lists(None)
    names = ("everyday_cloze", "everyday_cloze_second", "everyday_cloze_third")
    assert [r[k]["sentences"] for k in names] == [70, 60, 60]
    assert r["everyday_cloze_all"] == pytest.approx({"sentences": 190, "top1": 14 / 190, "top5": 66 / 190})
    assert "rows" not in r["everyday_cloze"]


def test_everyday_nsp_equals_a_plain_loop_of_analyze(tiny_dirs, tmp_path):
    """The accuracy and its IsNext / NotNext halves, recounted pair by pair from the page's own analysis."""
    m = bert_core.load_model(str(tiny_dirs["pretraining"][0]))
    path = tmp_path / "pairs.tsv"
    path.write_text("# a comment\nthe cat sat on the mat .\tit was warm .\na dog ran .\tthe sea is wide .\n"
                    "one two three\tfour five\n")
    got = everyday_nsp(m, path=path)
    pairs = everyday_nsp_pairs(path=path)
    right = [(bert_core.analyze(m, a, b).nsp[0] >= 0.5) == (label == 0) for a, b, label in pairs]
    assert got == {"pairs": 6, "accuracy": sum(right) / 6, "is_next": sum(right[0::2]) / 3,
                   "not_next": sum(right[1::2]) / 3}
