"""Attention figure builders and helpers: shapes, unique and escaped labels, caps, bertviz layer windows."""

from __future__ import annotations

import numpy as np
import pytest

from bert_core.figures import attention as fa

L, H, T = 3, 4, 6
TOKENS = ["[CLS]", "the", "<script>", "the", "a&b", "[SEP]"]


def random_attention(layers=L, heads=H, t=T, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.random((layers, heads, t, t)) ** 4
    return a / a.sum(-1, keepdims=True)


def test_labels_unique_for_repeated_tokens():
    labels = fa.token_labels(TOKENS)
    assert len(set(labels)) == len(labels) == T
    assert labels[1] == "1 the" and labels[3] == "3 the"
    masks = fa.token_labels(["[CLS]", "[MASK]", "sat", "[MASK]", "[SEP]"])
    assert masks[1] == "1 [MASK]" and masks[3] == "3 [MASK]"


def test_labels_escape_markup():
    labels = fa.token_labels(TOKENS + ["</b><a href=x>", '"quoted"'])
    assert labels[2] == "2 &lt;script&gt;"
    assert labels[4] == "4 a&amp;b"
    assert not any("<" in s or ">" in s for s in labels)
    assert labels[-1] == '7 "quoted"'  # plotly does not decode &quot;, so quotes stay as they are


def test_capped_and_crop():
    att = random_attention()
    assert fa.capped(200, fa.ATTENTION_TOKEN_CAP) == 128 == fa.ATTENTION_TOKEN_CAP
    assert fa.capped(10, fa.ATTENTION_TOKEN_CAP) == 10
    sub, toks = fa.crop(att, TOKENS, 4)
    assert sub.shape == (L, H, 4, 4) and toks == TOKENS[:4]
    np.testing.assert_array_equal(sub, att[:, :, :4, :4])
    assert (sub.sum(-1) < 1 + 1e-9).all() and (sub.sum(-1) < 1 - 1e-9).any()  # cropped rows lose mass
    full, _ = fa.crop(att, TOKENS, T)
    np.testing.assert_allclose(full.sum(-1), 1.0)


def test_sentence_b_start():
    types = np.array([0, 0, 0, 0, 1, 1, 1])
    assert fa.sentence_b_start(types) == 4
    assert fa.sentence_b_start(types, 5) == 4
    assert fa.sentence_b_start(types, 4) is None  # B starts at the cut: no pair left to split
    assert fa.sentence_b_start(np.zeros(5, dtype=int)) is None


def test_head_average_and_special_share():
    att = random_attention()
    avg = fa.head_average(att[1])
    assert avg.shape == (T, T)
    np.testing.assert_allclose(avg, att[1].mean(0))
    np.testing.assert_allclose(avg.sum(-1), 1.0)

    special = np.array([1, 0, 0, 0, 0, 1])
    share = fa.special_share(att, special)
    assert share.shape == (L, H)
    np.testing.assert_allclose(share[2, 3], (att[2, 3, :, 0] + att[2, 3, :, 5]).mean())
    sink = np.zeros((1, 1, T, T))
    sink[..., 0] = 1.0  # every query looks at [CLS]
    assert fa.special_share(sink, special)[0, 0] == pytest.approx(1.0)


def test_bertviz_layers():
    assert fa.bertviz_layers(4, 4, 64, 2) == [0, 1, 2, 3]  # the bundled size fits whole
    # bert-large at the bertviz cap: 16 * 64 * 64 = 65,536 weights per layer -> 3 layers
    assert fa.bertviz_layers(24, 16, 64, 10) == [9, 10, 11]
    assert fa.bertviz_layers(24, 16, 64, 0) == [0, 1, 2]
    assert fa.bertviz_layers(24, 16, 64, 23) == [21, 22, 23]
    assert fa.bertviz_layers(24, 16, 64, 5, max_weights=10) == [5]  # never fewer than one layer
    for layer in range(12):
        shown = fa.bertviz_layers(12, 12, 64, layer)
        assert layer in shown and len(shown) * 12 * 64 * 64 <= fa.BERTVIZ_MAX_WEIGHTS


def test_head_heatmap():
    att = random_attention()
    fig = fa.head_heatmap(att[1, 2], TOKENS, "Layer 1, head 2")
    (tr,) = fig.data
    assert tr.type == "heatmap"
    assert np.asarray(tr.z).shape == (T, T)
    np.testing.assert_allclose(np.asarray(tr.z), att[1, 2], atol=5e-5)
    assert list(tr.x) == list(tr.y) == fa.token_labels(TOKENS)
    assert "query" in tr.hovertemplate and "key" in tr.hovertemplate
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "category"
    assert fig.layout.yaxis.autorange == "reversed"  # row 0 on top, as in the matrix
    assert (tr.zmin, tr.zmax) == (0.0, 1.0)
    assert fa.head_heatmap(att[1, 2], TOKENS, zmax=None).data[0].zmax == pytest.approx(att[1, 2].max(), rel=1e-6)
    with pytest.raises(ValueError):
        fa.head_heatmap(att[1, 2], TOKENS[:-1])


def test_escaped_labels_reach_the_figure():
    fig = fa.head_heatmap(random_attention()[0, 0], TOKENS)
    assert "2 &lt;script&gt;" in fig.data[0].x
    assert not any("<" in s or ">" in s for s in (*fig.data[0].x, *fig.data[0].y))


def test_head_average_figure():
    att = random_attention()
    fig = fa.head_average_figure(att[2], TOKENS, 2)
    np.testing.assert_allclose(np.asarray(fig.data[0].z), att[2].mean(0), atol=5e-5)
    assert "average" in fig.layout.title.text


@pytest.mark.parametrize("heads, rows", [(4, 1), (12, 3), (16, 4), (3, 1)])
def test_layer_grid(heads, rows):
    att = random_attention(heads=heads)
    fig = fa.layer_grid(att[0], TOKENS, 0)
    assert len(fig.data) == heads
    for h, tr in enumerate(fig.data):
        assert np.asarray(tr.z).shape == (T, T)
        np.testing.assert_allclose(np.asarray(tr.z), att[0, h], atol=5e-5)
        assert tr.coloraxis == "coloraxis"
        assert f"head {h}" in tr.hovertemplate
    assert [a.text for a in fig.layout.annotations] == [f"head {h}" for h in range(heads)]
    assert len({tr.yaxis for tr in fig.data}) == heads  # one subplot each
    assert fig.layout.height == 230 * rows + 80
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    assert fa.layer_grid(att[0], TOKENS, 0, zmax=None).layout.coloraxis.cmax == pytest.approx(att[0].max(), rel=1e-6)
    with pytest.raises(ValueError):
        fa.layer_grid(att[0], TOKENS[:-1], 0)


def test_special_share_figure():
    share = fa.special_share(random_attention(), np.array([1, 0, 0, 0, 0, 1]))
    (tr,) = fa.special_share_figure(share).data
    assert np.asarray(tr.z).shape == (L, H)
