"""The Attention page: heatmaps, the head grid, URL state, token caps, and the offline bertviz iframe.

Inputs go in through the shared link (query parameters), so these tests also check that a
link reopens the same view.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.apptest import assert_ok, open_page
from support.checkpoints import write_tiny_checkpoint
from support.plotly_json import arr

import bert_core
from bert_core.figures import attention as fa

BUNDLED_LAYERS, BUNDLED_HEADS = 6, 12  # the default offline model (the bundled MiniLM)
HOSTILE = "<script>alert(1)</script>"


def figures(at) -> list[dict]:
    """The plotly figures on the page, in order: main map, head grid, [CLS]/[SEP] share, head statistics,
    rollout map, rollout row."""
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def main_map(at) -> dict:
    return figures(at)[0]["data"][0]


def bertviz_docs(at) -> list[str]:
    """The srcdoc of each iframe: bertviz's head view, then its model view."""
    return [frame.proto.srcdoc for frame in at.get("iframe")]


def bertviz_doc(at) -> str:
    """The head view's document."""
    head, model = bertviz_docs(at)
    assert "bertviz head view" in head and "bertviz model view" in model
    return head


def bertviz_params(doc: str) -> dict:
    start = doc.index("const params = ") + len("const params = ")
    return json.JSONDecoder().raw_decode(doc, start)[0]


def texts(at) -> str:
    return " ".join(str(e.value) for group in (at.warning, at.info, at.caption, at.markdown) for e in group)


def test_default_input():
    at = open_page("attention")
    assert_ok(at)
    assert at.selectbox(key="attn_layer").value == 0 and at.selectbox(key="attn_head").value == 0
    assert at.query_params["layer"] == "1" and at.query_params["head"] == "1"  # links count from 1, as users do
    assert any("softmax" in e.value for e in at.latex)
    main, grid, share = figures(at)[:3]
    tr = main["data"][0]
    t = len(tr["x"])
    assert arr(tr["z"]).shape == (t, t) and tr["y"] == tr["x"]
    assert tr["x"][0] == "0 [CLS]" and tr["x"][-1] == f"{t - 1} [SEP]"
    np.testing.assert_allclose(arr(tr["z"]).sum(-1), 1.0, atol=1e-3)  # rows sum to 1 (4 decimals)
    assert main["layout"]["title"]["text"] == "Layer 1, head 1"
    assert any("Layers are numbered 1–" in c.value for c in at.caption)  # the convention, said once
    assert len(grid["data"]) == BUNDLED_HEADS
    assert arr(share["data"][0]["z"]).shape == (BUNDLED_LAYERS, BUNDLED_HEADS)
    assert not at.warning and not at.info  # no cap, no truncation
    # bertviz's head view: a self-contained document with every layer and no sentence split.
    doc = bertviz_doc(at)
    assert doc.startswith("<!DOCTYPE html>") and "bertviz head view" in doc
    assert "cdnjs" not in doc
    params = bertviz_params(doc)
    assert params["include_layers"] == list(range(BUNDLED_LAYERS))
    assert len(params["attention"]) == 1  # no sentence-pair filter
    assert len(params["attention"][0]["left_text"]) == t
    model = bertviz_params(bertviz_docs(at)[1])
    assert model["include_layers"] == list(range(BUNDLED_LAYERS)) and model["total_heads"] == BUNDLED_HEADS
    assert all(frame.proto.scrolling for frame in at.get("iframe"))


def test_switch_layer_head_and_average():
    at = open_page("attention")
    z0 = main_map(at)["z"]
    doc0 = bertviz_doc(at)
    at.selectbox(key="attn_layer").select(2).run()
    assert_ok(at)
    at.selectbox(key="attn_head").select(3).run()
    assert_ok(at)
    assert figures(at)[0]["layout"]["title"]["text"] == "Layer 3, head 4"  # indices 2 and 3, shown from 1
    assert not np.array_equal(arr(main_map(at)["z"]), arr(z0))
    assert figures(at)[1]["layout"]["title"]["text"].startswith("Layer 3")
    assert at.query_params["layer"] == "3" and at.query_params["head"] == "4"
    assert bertviz_params(bertviz_doc(at))["layer"] == 2 and bertviz_doc(at) != doc0

    at.switch_page("views/anatomy.py").run()  # away and back: the chosen layer and head are kept
    at.switch_page("views/attention.py").run()
    assert_ok(at)
    assert at.selectbox(key="attn_layer").value == 2 and at.selectbox(key="attn_head").value == 3

    at.toggle(key="attn_average").set_value(True).run()
    assert_ok(at)
    assert "average" in figures(at)[0]["layout"]["title"]["text"]
    assert at.selectbox(key="attn_head").disabled
    top = main_map(at)["zmax"]
    assert top == pytest.approx(arr(main_map(at)["z"]).max(), rel=1e-5)  # 0 to the largest weight
    at.toggle(key="attn_fixed").set_value(True).run()
    assert_ok(at)
    assert main_map(at)["zmax"] == 1.0 and figures(at)[1]["layout"]["coloraxis"]["cmax"] == 1.0

    at.toggle(key="attn_bertviz").set_value(False).run()
    assert_ok(at)
    assert not at.get("iframe") and len(figures(at)) == 6


def test_url_opens_with_layer_and_head():
    at = open_page("attention", query={"layer": "1", "head": "2"})
    assert_ok(at)
    assert at.selectbox(key="attn_layer").value == 0 and at.selectbox(key="attn_head").value == 1  # 0-based inside
    assert figures(at)[0]["layout"]["title"]["text"] == "Layer 1, head 2"
    assert bertviz_params(bertviz_doc(at))["layer"] == 0


def test_url_values_are_clamped_to_the_model():
    at = open_page("attention", query={"layer": "99", "head": "99"})
    assert_ok(at)
    assert at.selectbox(key="attn_layer").value == BUNDLED_LAYERS - 1
    assert at.selectbox(key="attn_head").value == BUNDLED_HEADS - 1


def test_sentence_pair():
    at = open_page("attention", query={"text": "The cat sat on the mat.", "pair": "It was very happy."})
    assert_ok(at)
    x = main_map(at)["x"]
    assert sum(label.endswith("[SEP]") for label in x) == 2
    params = bertviz_params(bertviz_doc(at))
    names = [d["name"] for d in params["attention"]]
    assert [d["name"] for d in bertviz_params(bertviz_docs(at)[1])["attention"]] == names
    assert names[0] == "All" and "Sentence A -> Sentence B" in names
    b_start = x.index(next(label for label in x if label.endswith("[SEP]"))) + 1  # just after the first [SEP]
    a_to_b = params["attention"][names.index("Sentence A -> Sentence B")]
    assert len(a_to_b["left_text"]) == b_start and len(a_to_b["right_text"]) == len(x) - b_start
    assert "Sentence pair" in texts(at)


def test_two_masks_get_distinct_labels():
    at = open_page("attention", query={"text": "The [MASK] sat on the [MASK]."})
    assert_ok(at)
    x = main_map(at)["x"]
    masks = [label for label in x if label.endswith(" [MASK]")]
    assert len(masks) == 2 and len(set(x)) == len(x)
    assert len([label for label in x if label.endswith(" the")]) == 2


def test_hostile_text_is_escaped(markup_default_model):
    at = open_page("attention", query={"text": f"Hello {HOSTILE} world"})
    assert_ok(at)
    x = main_map(at)["x"]
    assert any("&lt;" in label for label in x)
    assert not any("<" in label or ">" in label for label in x)
    for fig in figures(at):
        for tr in fig["data"]:
            assert not any("<" in str(v) for v in tr.get("x", []) + tr.get("y", []))
    for doc in bertviz_docs(at):
        assert HOSTILE not in doc and "<script>alert" not in doc
    assert "<script" not in texts(at)


def test_bertviz_is_capped_for_longer_inputs():
    # The bundled model has 128 positions: 100 word pieces fit, but bertviz draws only the first 64.
    at = open_page("attention", query={"text": " ".join(["the cat sat on the mat ."] * 14)})
    assert_ok(at)
    t = len(main_map(at)["x"])
    assert fa.BERTVIZ_TOKEN_CAP < t <= fa.ATTENTION_TOKEN_CAP
    assert f"first {fa.BERTVIZ_TOKEN_CAP} of the {t} tokens" in texts(at)
    assert len(bertviz_params(bertviz_doc(at))["attention"][0]["left_text"]) == fa.BERTVIZ_TOKEN_CAP
    assert not at.warning  # the plotly maps are not capped


def test_text_longer_than_the_model_is_truncated():
    at = open_page("attention", query={"text": " ".join(["the cat sat on the mat ."] * 80)})  # 562 pieces
    assert_ok(at)
    assert any("truncated" in e.value for e in at.info)  # to the default model's 512 positions
    assert len(main_map(at)["x"]) == fa.ATTENTION_TOKEN_CAP == 128  # then the plotly views' cap


@pytest.fixture(scope="module")
def long_model(tmp_path_factory):
    """A tiny random BERT with 256 positions, so an input can exceed the 128-token cap."""
    d = tmp_path_factory.mktemp("tiny-256")
    write_tiny_checkpoint(d, "mlm", max_position_embeddings=256)
    return d


def test_plotly_views_capped_at_128_tokens(long_model, monkeypatch):
    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(long_model.parent))  # allow loading it by path
    at = open_page("attention", query={"model": str(long_model), "text": " ".join(["the cat sat on the mat ."] * 30)})
    assert_ok(at)
    (warning,) = at.warning
    assert f"show only the first {fa.ATTENTION_TOKEN_CAP} tokens" in warning.value
    assert "212 tokens" in warning.value  # 30 x 7 word pieces + [CLS] + [SEP]
    main, grid, share = figures(at)[:3]
    assert arr(main["data"][0]["z"]).shape == (fa.ATTENTION_TOKEN_CAP, fa.ATTENTION_TOKEN_CAP)
    assert all(arr(tr["z"]).shape == (128, 128) for tr in grid["data"])
    assert arr(share["data"][0]["z"]).shape == (2, 4)  # the tiny model: 2 layers x 4 heads
    assert len(bertviz_params(bertviz_doc(at))["attention"][0]["left_text"]) == fa.BERTVIZ_TOKEN_CAP


def test_head_statistics_grid_finders_table_and_open_head():
    at = open_page("attention")
    assert_ok(at)
    stats_fig = figures(at)[3]
    assert stats_fig["layout"]["title"]["text"] == "Every head: weight on the previous token"  # the first statistic
    z = arr(stats_fig["data"][0]["z"])
    assert z.shape == (BUNDLED_LAYERS, BUNDLED_HEADS) and ((z >= 0) & (z <= 1)).all()
    md = " ".join(m.value for m in at.markdown)
    assert "Heads that look at the previous token" in md and "Sink heads on [CLS], [SEP] or punctuation" in md
    assert "of all attention parked on [CLS]" in md  # the bundled MiniLM parks on [CLS], not [SEP]
    assert any(c.value.endswith("on [CLS] (layers 2, 3, 4, 5, 6).") for c in at.caption)
    df = at.dataframe[-1].value
    assert list(df.columns) == ["layer", "head", "entropy", "distance", "cls", "sep", "self", "prev", "next"]
    assert len(df) == BUNDLED_LAYERS * BUNDLED_HEADS
    np.testing.assert_allclose(z, df["prev"].to_numpy().reshape(BUNDLED_LAYERS, BUNDLED_HEADS), atol=1e-3)
    at.selectbox(key="attn_stat").select("entropy").run()
    assert_ok(at)
    assert "entropy" in figures(at)[3]["layout"]["title"]["text"]
    # The open-head list is ranked by the colour statistic: open the one with the most spread-out attention.
    best = df.sort_values("entropy", ascending=False).iloc[0]
    at.selectbox(key="attn_open_pick").select(0).run()
    at.button(key="attn_open").click().run()
    assert_ok(at)
    # The table counts from 1, as the titles do; the selectors hold 0-based indices.
    assert at.selectbox(key="attn_layer").value == best["layer"] - 1
    assert at.selectbox(key="attn_head").value == best["head"] - 1
    assert figures(at)[0]["layout"]["title"]["text"] == f"Layer {int(best['layer'])}, head {int(best['head'])}"
    assert bertviz_params(bertviz_doc(at))["layer"] == best["layer"] - 1


def test_rollout_views():
    at = open_page("attention", query={"text": "The cat sat on the mat."})
    assert_ok(at)
    assert any("R_l" in e.value for e in at.latex)
    rollout_map, row = figures(at)[4:6]
    assert rollout_map["layout"]["title"]["text"] == f"Rollout after layer {BUNDLED_LAYERS}"  # starts at the last
    z = arr(rollout_map["data"][0]["z"])
    t = len(rollout_map["data"][0]["x"])
    np.testing.assert_allclose(z.sum(-1), 1.0, atol=1e-4)  # nothing cropped: rollout rows sum to 1
    assert arr(row["data"][0]["z"]).shape == (BUNDLED_LAYERS, t)
    # No [MASK]: the query starts at the first word (position 1), not [CLS], which draws on itself.
    np.testing.assert_allclose(arr(row["data"][0]["z"])[-1], z[1], atol=1e-6)  # its row after the last layer
    assert "1 the" in row["layout"]["title"]["text"]
    at.selectbox(key="attn_rollout_layer").select(0).run()
    at.selectbox(key="attn_rollout_query").select(3).run()
    assert_ok(at)
    rollout_map, row = figures(at)[4:6]
    assert rollout_map["layout"]["title"]["text"] == "Rollout after layer 1"
    assert "3 sat" in row["layout"]["title"]["text"]
    assert any("After layer 1, 3 sat draws most from" in c.value for c in at.caption)


def test_rollout_starts_at_the_mask():
    """The default sentence's rollout row is its [MASK]'s (position 2), the token whose sources are worth asking."""
    at = open_page("attention")
    assert_ok(at)
    assert at.selectbox(key="attn_rollout_query").value == 2
    assert "2 [MASK]" in figures(at)[5]["layout"]["title"]["text"]


def test_head_statistics_and_rollout_cached_across_reruns(monkeypatch):
    """A rerun that only changes a widget reuses them (process-wide cache), so a long input stays responsive."""
    at = open_page("attention", query={"text": "The dog ran to the park."})
    assert_ok(at)
    before = figures(at)[3:6]

    def fail(*args, **kwargs):
        raise AssertionError("recomputed on a widget-only rerun")

    monkeypatch.setattr(bert_core, "head_stats", fail)
    monkeypatch.setattr(bert_core, "attention_rollout", fail)
    at.toggle(key="attn_fixed").set_value(True).run()
    assert_ok(at)
    assert figures(at)[3:6] == before
