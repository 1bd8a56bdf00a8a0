"""Attention figure builders and helpers: shapes, unique and escaped labels, caps, bertviz layer windows."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
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
    assert fig.layout.title.text.startswith("Layer 3, average")  # index 2 is the third layer


@pytest.mark.parametrize("heads, rows", [(4, 1), (12, 3), (16, 4), (3, 1)])
def test_layer_grid(heads, rows):
    att = random_attention(heads=heads)
    fig = fa.layer_grid(att[0], TOKENS, 0)
    assert len(fig.data) == heads
    for h, tr in enumerate(fig.data):
        assert np.asarray(tr.z).shape == (T, T)
        np.testing.assert_allclose(np.asarray(tr.z), att[0, h], atol=5e-5)
        assert tr.coloraxis == "coloraxis"
        assert f"head {h + 1}" in tr.hovertemplate  # users count heads from 1
    assert [a.text for a in fig.layout.annotations] == [f"head {h + 1}" for h in range(heads)]
    assert len({tr.yaxis for tr in fig.data}) == heads  # one subplot each
    assert fig.layout.height == 250 * rows + 130
    # Token labels: rows on the first column, columns on the lowest plot of each column; none elsewhere.
    cols = min(4, heads)
    for h, tr in enumerate(fig.data):
        xa = fig.layout["xaxis" + tr.xaxis[1:]]
        ya = fig.layout["yaxis" + tr.yaxis[1:]]
        assert bool(ya.showticklabels) == (h % cols == 0), h
        assert bool(xa.showticklabels) == (h + cols >= heads), h
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    assert fa.layer_grid(att[0], TOKENS, 0, zmax=None).layout.coloraxis.cmax == pytest.approx(att[0].max(), rel=1e-6)
    with pytest.raises(ValueError):
        fa.layer_grid(att[0], TOKENS[:-1], 0)


def reference_layer_grid(att, tokens, layer, cols=4, zmax=1.0):
    """The grid built the plain way (make_subplots, validated updates): what the fast builder must equal."""
    from plotly.subplots import make_subplots

    nh = att.shape[0]
    cols = min(cols, nh)
    rows = -(-nh // cols)
    labels = fa.token_labels(tokens)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[f"head {h + 1}" for h in range(nh)],
                        horizontal_spacing=0.03, vertical_spacing=0.06 if rows > 1 else 0.1)
    for h in range(nh):
        fig.add_trace(go.Heatmap(z=att[h].astype(np.float32), x=labels, y=labels, coloraxis="coloraxis",
                                 name=f"head {h + 1}", hovertemplate=f"head {h + 1}<br>" + fa.HOVER),
                      row=h // cols + 1, col=h % cols + 1)
    fig.update_layout(title={"text": f"Layer {layer + 1}: all {nh} heads"}, height=int(250 * rows + 130),
                      coloraxis={"colorscale": fa.COLORSCALE, "cmin": 0.0, "cmax": fa._top(att, zmax),
                                 "colorbar": {"title": {"text": "weight"}}},
                      margin={"l": 10, "r": 10, "t": 70, "b": 10})
    fig.update_xaxes(type="category", showticklabels=False)
    fig.update_yaxes(type="category", showticklabels=False, autorange="reversed")
    small = {"showticklabels": True, "tickfont": {"size": 12}}
    for h in range(nh):
        r, c = h // cols + 1, h % cols + 1
        if c == 1:
            fig.update_yaxes(small, row=r, col=c)
        if h + cols >= nh:
            fig.update_xaxes({**small, "tickangle": -60}, row=r, col=c)
    return fig


def _plain(x):
    """A figure's JSON with arrays as lists and floats rounded, for comparing two builds."""
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    if isinstance(x, float):
        return round(x, 9)
    return x


@pytest.mark.parametrize("heads", [1, 3, 4, 12, 16])
@pytest.mark.parametrize("zmax", [1.0, None])
def test_layer_grid_equals_make_subplots(heads, zmax):
    """The unvalidated fast grid is the very figure make_subplots builds, and it passes plotly's validation."""
    att = random_attention(heads=heads)[0]
    fast = fa.layer_grid(att, TOKENS, 3, zmax=zmax).to_dict()
    assert _plain(fast) == _plain(reference_layer_grid(att, TOKENS, 3, zmax=zmax).to_dict())
    assert _plain(go.Figure(fast).to_dict()) == _plain(fast)  # validation changes nothing: no invalid property


def test_grid_domains():
    assert fa.grid_domains(1, 0.1) == [(0.0, 1.0)]
    np.testing.assert_allclose(fa.grid_domains(2, 0.1), [(0.0, 0.45), (0.55, 1.0)])


def test_special_share_figure():
    share = fa.special_share(random_attention(), np.array([1, 0, 0, 0, 0, 1]))
    (tr,) = fa.special_share_figure(share).data
    assert np.asarray(tr.z).shape == (L, H)


def _validated_equals_fast(fig):
    """Validating the fast figure's JSON changes nothing: every property it carries is valid and canonical."""
    fast = fig.to_dict()
    assert _plain(go.Figure(fast).to_dict()) == _plain(fast)


def test_one_pass_heatmaps_are_what_validation_gives():
    att = random_attention()
    stats = [{"layer": layer, "head": h, "prev": 0.2, "entropy": 1.3} for layer in range(L) for h in range(H)]
    rollout = att.mean(1)  # (L, T, T), any rows will do
    for fig in (fa.head_heatmap(att[0, 1], TOKENS, "t"), fa.head_heatmap(att[0, 1], TOKENS, "t", zmax=None),
                fa.head_heatmap(random_attention(t=20)[0, 0], [f"w{i}" for i in range(20)], "big"),
                fa.special_share_figure(att.mean(-1)), fa.head_stats_figure(stats, "prev"),
                fa.head_stats_figure(stats, "entropy"), fa.rollout_row_figure(rollout, TOKENS, 2)):
        _validated_equals_fast(fig)


def test_head_heatmap_equals_the_step_by_step_build():
    z = random_attention()[1, 2]
    labels = fa.token_labels(TOKENS)
    ref = go.Figure(go.Heatmap(z=z.astype(np.float32), x=labels, y=labels, hovertemplate=fa.HOVER, zmin=0.0,
                               zmax=1.0, colorscale=fa.COLORSCALE, colorbar={"title": {"text": "weight"}},
                               texttemplate="%{z:.2f}"))
    ref.update_layout(title={"text": "t"}, height=int(min(max(18 * T + 160, 420), 900)),
                      margin={"l": 10, "r": 10, "t": 50, "b": 10})
    ref.update_xaxes(type="category", title={"text": "key (attended to)"}, side="top", tickangle=-60,
                     tickmode="linear", dtick=1)  # every token labelled
    ref.update_yaxes(type="category", title={"text": "query (attending)"}, autorange="reversed", tickmode="linear",
                     dtick=1,
                     scaleanchor="x", constrain="domain")
    assert _plain(fa.head_heatmap(z, TOKENS, "t").to_dict()) == _plain(ref.to_dict())


def test_cosine_heatmap_is_what_validation_gives():
    from bert_core.figures.similarity import cosine_heatmap

    texts = ["a <b>bold</b> sentence", "another one that is rather long and gets cut in its label", "x"]
    fig = cosine_heatmap(np.eye(3) * 0.5 + 0.5, texts, "t")
    _validated_equals_fast(fig)
    assert "&lt;b&gt;" in fig.data[0].x[0] and fig.layout.yaxis.autorange == "reversed"
