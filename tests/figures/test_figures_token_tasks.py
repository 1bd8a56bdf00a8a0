"""Tagging and QA figures: user text escaped everywhere; the passage view's numbers are the reader's own."""

from __future__ import annotations

import numpy as np

from bert_core.figures.qa import highlighted_passage_html, span_probabilities_figure
from bert_core.figures.tagging import legend_html, per_label_figure, tagged_html
from bert_core.inspect.token_tasks import AnswerResult, best_spans, passage_probabilities

EVIL = "<script>alert(1)</script>"


def test_tagged_html_escapes_words_labels_and_the_text_between():
    text = f"a {EVIL} cat"
    words = [("a", 0, 1), ("cat", len(text) - 3, len(text))]
    out = tagged_html(text, words, [EVIL, None], [EVIL, "N"])
    assert "<script>" not in out and "&lt;script&gt;" in out and ">cat<" in out and "–" in out
    assert "<script>" not in legend_html([EVIL, "N"])


def test_per_label_figure_escapes_labels_and_groups_model_and_baseline():
    fig = per_label_figure([EVIL, "N"], np.array([0.5, 1.0]), np.array([0.25, np.nan]), np.array([4, 2]))
    assert len(fig.data) == 2 and list(fig.data[0].x) == ["&lt;script&gt;alert(1)&lt;/script&gt;", "N"]
    assert list(fig.data[1].y[:1]) == [0.25]


def test_highlighted_passage_marks_spans_and_escapes():
    passage = f"{EVIL} the cat sat"
    a = passage.index("cat")
    out = highlighted_passage_html(passage, [(a, a + 3), (a - 4, a + 3)])  # overlapping second span dropped
    assert out.count("<mark") == 1 and ">cat</mark>" in out and "<script>" not in out


def test_passage_probabilities_are_the_softmax_over_the_window_and_the_best_span():
    rng = np.random.default_rng(0)
    start, end = rng.normal(size=9).astype(np.float32), rng.normal(size=9).astype(np.float32)
    ctx = np.array([False, False, False, True, True, True, True, True, False])
    r = AnswerResult([f"t{i}" for i in range(9)], start, end, [], ctx)
    tokens, ps, pe, best = passage_probabilities(r, max_answer_tokens=3)
    full_s = np.exp(start - start.max()) / np.exp(start - start.max()).sum()
    full_e = np.exp(end - end.max()) / np.exp(end - end.max()).sum()
    assert tokens == ["t3", "t4", "t5", "t6", "t7"]
    assert np.allclose(ps, full_s[3:8], atol=1e-6) and np.allclose(pe, full_e[3:8], atol=1e-6)
    brute = max(((s, e) for s in range(3, 8) for e in range(s, min(s + 3, 8))),
                key=lambda se: full_s[se[0]] * full_e[se[1]])
    assert best == (brute[0] - 3, brute[1] - 3)
    assert best_spans(start, end, ctx, 1, 3)[0][:2] == brute
    fig = span_probabilities_figure([EVIL, *tokens[1:]], ps, pe, best)
    assert "<script>" not in str(fig.data[0].hovertext)
