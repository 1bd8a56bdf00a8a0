"""What the pages say about their default examples, checked on the bundled MiniLM (so the words follow the numbers)."""

from __future__ import annotations

from support.apptest import assert_ok, open_page

import bert_core
from bert_core.finetune.tagging import UNIVERSAL_TAGS, builtin_pos_task
from bert_core.inspect.neighbours import build_index, nearest_words, neighbour_rows, query_words, sentences_within
from ui.state import DEFAULT_TEXT


def test_neighbours_at_layer_0_are_related_words():
    """Neighbours: "*mother* is not in the corpus, so on the bundled MiniLM (...Layer to 0) its nearest are related
    forms and family words: mothers, parents, father's, daughter, sister", on the page's default corpus (500
    held-out Brown sentences)."""
    m = bert_core.load_model()
    pos = builtin_pos_task()
    n = min(500, sentences_within(m, pos.valid_words))
    index = build_index(m, pos.valid_words[:n], pos.valid_tags[:n], UNIVERSAL_TAGS)
    q = query_words(m, DEFAULT_TEXT)
    w = q.words.index("mother")
    near = [r["word"] for r in neighbour_rows(index, nearest_words(index, q.vectors[0, w], 0, 20))]
    assert "mother" not in {w for ws in pos.valid_words[:n] for w in ws}  # so the same word cannot come first
    assert near[0] == "mothers" and {"parents", "father's", "daughter", "sister"} <= set(near[:10]), near[:10]
    at = open_page("neighbours", timeout=300)
    assert_ok(at)
    said = " ".join(e.value for e in at.markdown)
    assert "*mother* is not in the corpus" in said and "mothers, parents, father's, daughter, sister" in said
    assert "the same word comes first" not in said


def test_inside_a_layer_feed_forward_words():
    """Inside a layer, step 6: "Many neurons stay near zero for a given token, and a few large ones carry most of
    the activation", for the page's default token (the [MASK]) in every layer of the bundled MiniLM."""
    import numpy as np

    from bert_core.inspect.inside_layers import follow_token

    m = bert_core.load_model()
    for layer in range(m.config.num_hidden_layers):
        s = bert_core.layer_steps(m, DEFAULT_TEXT, layer)
        a = np.asarray(follow_token(s, 0, s.tokens.index("[MASK]")).ffn_act, dtype=np.float64)
        energy = np.sort(a**2)[::-1]
        assert (np.abs(a) < 0.1).mean() > 0.25, layer
        assert energy[: len(a) // 20].sum() > 0.5 * energy.sum(), layer  # the top 5% carry most of it
