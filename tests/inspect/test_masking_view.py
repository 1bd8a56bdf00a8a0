"""bert_core.inspect.masking_view: seeded draws, many-draw statistics, and the [MASK] text edits; plus their figures."""

from __future__ import annotations

import math

import numpy as np
import pytest

import bert_core
from bert_core.figures.masking import chips_html, position_figure, rates_figure
from bert_core.figures.predictions import candidates_figure, nsp_figure
from bert_core.inspect.masking_view import (
    default_word,
    draw_loss,
    draw_rows,
    draw_seed,
    fill_at,
    fill_mask,
    mask_context,
    mask_input,
    mask_word,
    masking_draw,
    masking_stats,
    rank_of,
    stats_rows,
    unique_word_ids,
    words_of,
)
from ui.markdown import md_literal

LONG = "unaffable playing bookkeeper cafés the cat sat on the mat and the dog was happy"


@pytest.fixture(scope="module")
def m():
    return bert_core.load_model("bundled")  # the tiny model: the pieces pinned below are its 12,000-piece vocabulary's


def test_draw_seed_is_a_pure_function_of_seed_and_draw():
    assert draw_seed(0, 3) == draw_seed(0, 3)
    assert len({draw_seed(0, 1), draw_seed(1, 0), draw_seed(0, 2), draw_seed(0, 0)}) == 4


def test_unique_word_ids_offsets_sentence_b():
    w = unique_word_ids([None, 0, 1, 1, None, 0, 1, None], [None, 0, 0, 0, None, 1, 1, None])
    assert w.tolist() == [-1, 0, 1, 1, -1, 2, 3, -1]
    assert unique_word_ids([None, 0, None], [None, 0, None]).tolist() == [-1, 0, -1]


def test_mask_input_marks_typed_specials_and_segments(m):
    inp = mask_input(m, "the cat [MASK] .", "it was happy")
    i = inp.tokens.index("[MASK]")
    assert inp.special[i] and inp.special[0] and inp.special[-1] and not inp.special[1]
    assert inp.segments[0] == "A" and inp.segments[-1] == "B" and inp.segments.count("B") == 4  # it was happy [SEP]


def test_same_seed_and_draw_same_result_other_draws_differ(m):
    a = masking_draw(m, LONG, seed=7, draw=3, mlm_probability=0.5)
    b = masking_draw(m, LONG, seed=7, draw=3, mlm_probability=0.5)
    assert np.array_equal(a.outcome, b.outcome) and np.array_equal(a.corrupted_ids, b.corrupted_ids)
    others = [masking_draw(m, LONG, seed=7, draw=d, mlm_probability=0.5).outcome for d in (4, 5, 6)]
    assert any(not np.array_equal(a.outcome, o) for o in others)
    assert not np.array_equal(a.outcome, masking_draw(m, LONG, seed=8, draw=3, mlm_probability=0.5).outcome)


def test_draw_is_consistent_with_ids_and_labels(m):
    v = masking_draw(m, "the cat [MASK] sat " + LONG, "it was happy", seed=0, draw=1, mlm_probability=0.6)
    sel = v.outcome != bert_core.NOT_SELECTED
    assert sel.any()
    assert not (sel & v.inp.special).any()  # [CLS], [SEP] and the typed [MASK] are never picked
    assert np.array_equal(v.labels[sel], v.inp.input_ids[sel]) and (v.labels[~sel] == -100).all()
    assert (v.corrupted_ids[v.outcome == bert_core.MASKED] == m.tokenizer.mask_token_id).all()
    assert np.array_equal(v.corrupted_ids[v.outcome == bert_core.KEPT], v.inp.input_ids[v.outcome == bert_core.KEPT])
    rows = draw_rows(v)
    assert [r["selected"] for r in rows] == sel.tolist()
    for r, kind, read in zip(rows, v.kinds, v.corrupted_tokens):
        assert r["model reads"] == read
        if kind == "random":
            assert r["outcome"] == f"random → {read}"
        assert (r["label id"] == -100) == (not r["selected"])


def test_probability_one_selects_every_ordinary_token(m):
    v = masking_draw(m, LONG, seed=0, draw=1, mlm_probability=1.0)
    assert ((v.outcome != bert_core.NOT_SELECTED) == ~v.inp.special).all()
    v0 = masking_draw(m, LONG, seed=0, draw=1, mlm_probability=0.0)
    assert v0.n_selected == 0 and draw_loss(m, v0)[1] is None


def test_whole_word_selects_all_pieces_and_keeps_sentences_apart(m):
    text, pair = "unaffable bookkeeper", "unaffable bookkeeper"  # same words: A's word 0 and B's word 0
    split_ab = False
    for d in range(1, 40):
        v = masking_draw(m, text, pair, seed=1, draw=d, mlm_probability=0.5, whole_word=True)
        sel = v.outcome != bert_core.NOT_SELECTED
        for w in set(v.inp.word_ids[~v.inp.special].tolist()):
            group = sel[v.inp.word_ids == w]
            assert group.all() or not group.any(), (d, w)
        a0, b0 = sel[1], sel[v.inp.segments.index("B") + 1]  # first piece of "unaffable" in A and in B
        split_ab |= bool(a0 != b0)
    assert split_ab  # with shared word ids, A and B would always be picked together


def test_draw_loss_is_cross_entropy_at_selected_positions(m):
    v = masking_draw(m, "the cat sat on the mat", seed=0, draw=2, mlm_probability=0.5)
    p, loss = draw_loss(m, v)
    sel = v.labels != -100
    assert sel.any() and np.isnan(p[~sel]).all()
    assert ((p[sel] > 0) & (p[sel] <= 1)).all()
    assert loss == pytest.approx(-np.log(p[sel]).mean(), rel=1e-5)


@pytest.mark.parametrize("whole_word", [False, True])
def test_statistics_within_three_sigma(m, whole_word):
    s = masking_stats(m, LONG, "it was happy", seed=0, n_draws=4000, whole_word=whole_word)
    assert s.counts["draws"] == 4000 and s.counts["eligible"] == 4000 * s.n_eligible
    assert all(r["within 3 sigma"] for r in stats_rows(s)), stats_rows(s)
    assert abs(s.observed[0] - 0.15) < 0.01 and abs(s.observed[1] - 0.8) < 0.03
    assert (s.position_rate[s.special] == 0).all()
    rates = s.position_rate[~s.special]
    assert (np.abs(rates - 0.15) <= 4 * s.position_sigma).all()
    assert s.position_sigma == pytest.approx(math.sqrt(0.15 * 0.85 / 4000))


def test_whole_word_sigma_is_wider_and_chunks_join(m):
    plain = masking_stats(m, LONG, seed=0, n_draws=100)
    whole = masking_stats(m, LONG, seed=0, n_draws=100, whole_word=True)
    assert whole.sigma[0] > plain.sigma[0]  # multi-piece words are one coin flip for several pieces
    big = masking_stats(m, "the cat", seed=0, n_draws=4500)  # three chunks of STATS_CHUNK
    assert big.counts["draws"] == 4500 and big.counts["eligible"] == 9000
    with pytest.raises(ValueError):
        masking_stats(m, "the cat", seed=0, n_draws=0)


def test_bad_text_is_a_readable_error(m):
    with pytest.raises(bert_core.BertCoreError):
        masking_draw(m, "   ", seed=0, draw=1)


# ---- text edits for the Predictions page ----


def test_fill_mask_examples():
    t = "The cat [MASK] on the [MASK]."
    assert fill_mask(t, (22, 28), "mat") == "The cat [MASK] on the mat."
    assert fill_mask(t, (8, 14), "sat") == "The cat sat on the [MASK]."
    assert fill_mask("The dog [MASK] happy", (8, 14), "##s") == "The dogs happy"
    assert fill_mask("[MASK] cat", (0, 6), "##s") == "s cat"
    assert fill_mask("a [MASK]", (2, 8), "##") == "a ##"  # the bare "##" token is a word, not a prefix


def test_fill_at_uses_the_trace(m):
    t = bert_core.analyze(m, "The cat [MASK] on the [MASK].")
    assert fill_at(t, t.mask_positions[1], "mat") == ("text", "The cat [MASK] on the mat.")
    assert fill_at(t, t.mask_positions[0], "##s") == ("text", "The cats on the [MASK].")
    t2 = bert_core.analyze(m, "The cat sat.", "It [MASK] happy.")
    assert fill_at(t2, t2.mask_positions[0], "was") == ("pair", "It was happy.")
    with pytest.raises(ValueError):
        fill_at(t2, 0, "x")  # [CLS]


def test_words_mask_word_and_rank(m):
    t = bert_core.analyze(m, "The Bookkeeper sat.")
    words = words_of(t)
    assert [w.text for w in words] == ["The", "Bookkeeper", "sat", "."]
    assert words[1].pieces == ["book", "##ke", "##eper"] and words[1].span == (4, 14)
    assert default_word(words) == 2
    assert mask_word(t.text, words[1].span) == "The [MASK] sat."
    assert rank_of([("sat", 0.5), ("lay", 0.2)], ["lay"]) == ("lay", 2, 0.2)
    assert rank_of([("sat", 0.5)], ["book", "##ke"]) == ("book", None, None)
    tp = bert_core.analyze(m, "a b", "c d e")
    assert [w.text for w in words_of(tp, 1)] == ["c", "d", "e"]


def test_mask_context_and_md_literal():
    toks = ["[CLS]", "the", "cat", "[MASK]", "on", "the", "mat", ".", "[SEP]"]
    assert mask_context(toks, 3) == "the cat ___ on the mat ."
    assert mask_context(["[CLS]", "the", "dog", "[MASK]", "##s", "[SEP]"], 3) == "the dog ___s"
    long = ["[CLS]"] + [f"w{i}" for i in range(20)] + ["[SEP]"]
    assert mask_context(long, 10, width=2) == "… w7 w8 ___ w10 w11 …"
    assert md_literal("*a* [b]") == r"\*a\* \[b\]"
    assert md_literal(":red[x]") == r"\:red\[x\]"


# ---- figures ----


def test_chips_escape_every_token():
    html = chips_html(["<script>", "ok"], ['<img src=x onerror="alert(1)">', "ok"], ["random", "not selected"])
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;" in html and "&lt;img" in html


def test_figures_build():
    f = rates_figure(["a", "b"], np.array([0.1, 0.8]), np.array([0.15, 0.8]), np.array([0.01, 0.02]), 100)
    assert list(f.data[1].error_y.array) == pytest.approx([0.03, 0.06])
    f = position_figure(["[CLS]", "<b>", "[SEP]"], np.array([0, 0.2, 0]), np.array([True, False, True]), 0.15,
                        0.01, 100)
    assert list(f.data[0].x) == ["0 [CLS]", "1 &lt;b&gt;", "2 [SEP]"]
    f = candidates_figure([("sat", 0.5), ("<b>", 0.2)], "t <i>", highlight="<b>")
    assert list(f.data[0].y) == ["&lt;b&gt;", "sat"]  # most likely on top (plotly draws bottom-up)
    assert f.data[0].marker.color[0] != f.data[0].marker.color[1] and "<i>" not in f.layout.title.text
    assert list(nsp_figure(0.7, 0.3).data[0].x) == [0.7, 0.3]
    # Bars say "50.0%": the axis speaks in percent too, not in fractions beside them.
    assert list(f.data[0].text) == ["20.0%", "50.0%"] and f.layout.xaxis.tickformat == ".0%"
    assert nsp_figure(0.7, 0.3).layout.xaxis.tickformat == ".0%"
