"""The Embeddings page, driven through AppTest on the bundled model.

Inputs go in through the shared link (query parameters): AppTest in streamlit 1.67 drops the
sidebar from its element tree after `switch_page`, so `open_page(text=...)` cannot type them.
"""

from __future__ import annotations

import json

from support.apptest import assert_ok, open_page

import bert_core
from ui.state import DEFAULT_TEXT

PARTS = ("word", "segment", "position", "sum", "normed")


def _open(text: str | None = None, pair: str | None = None):
    query = {k: v for k, v in {"text": text, "pair": pair}.items() if v is not None}
    at = open_page("embeddings", query=query)
    assert_ok(at)
    return at


def _charts(at) -> dict[str, dict]:
    """Each plotly chart's figure spec, by widget key."""
    return {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def test_default_input():
    m = bert_core.load_model()
    at = _open()
    charts = _charts(at)
    assert {f"chart-emb-{p}" for p in PARTS} | {"chart-emb-norms", "chart-pos-sim"} <= set(charts)
    t = bert_core.analyze(m, DEFAULT_TEXT)
    heat = charts["chart-emb-word"]["data"][0]
    assert heat["y"] == [f"{i}: {tok}" for i, tok in enumerate(t.tokens)]
    assert len(heat["x"]) == min(64, m.config.hidden_size)
    assert len(charts["chart-emb-norms"]["data"]) == 5
    n = min(64, m.config.max_position_embeddings)
    assert len(charts["chart-pos-sim"]["data"][0]["x"]) == n
    assert any("LayerNorm" in x.value for x in at.latex)
    norms = at.dataframe[0].value
    assert len(norms) == len(t.tokens)
    assert abs(norms["|normed|"].iloc[1] - float(((t.embeddings.normed[1] ** 2).sum()) ** 0.5)) < 1e-3


def test_sliders_change_the_figures():
    at = _open()
    at.slider(key="emb_dims").set_value(16)
    at.slider(key="pos_n").set_value(10)
    at.run()
    assert_ok(at)
    charts = _charts(at)
    assert all(len(charts[f"chart-emb-{p}"]["data"][0]["x"]) == 16 for p in PARTS)
    assert len(charts["chart-pos-sim"]["data"][0]["x"]) == 10


def test_pair_shows_segments():
    at = _open("the cat sat", "it was happy")
    charts = _charts(at)
    strip = charts["chart-emb-segment"]["data"][0]
    assert strip["x"] == ["segment"] and [r[0] for r in strip["text"]][-1] == "B"
    assert {r[0] for r in strip["text"]} == {"A", "B"}
    seg = at.dataframe[0].value
    assert list(seg["segment"]) == ["A", "B"] and list(seg["distinct vectors"]) == [1, 1]
    assert any("share **one** segment vector" in x.value for x in at.markdown)


def test_two_masks_repeated_token_labels():
    at = _open("the [MASK] and the [MASK]")
    ys = _charts(at)["chart-emb-sum"]["data"][0]["y"]
    assert len(ys) == len(set(ys))  # repeated tokens keep distinct rows
    assert sum(y.endswith(": [MASK]") for y in ys) == 2 and sum(y.endswith(": the") for y in ys) == 2


def test_long_text_and_unknowns():
    m = bert_core.load_model()
    at = _open("zxqvbnm 🙂 " + " ".join(["the cat sat on the mat"] * 100))
    assert at.warning and "truncated" in at.warning[0].value
    assert len(_charts(at)["chart-emb-normed"]["data"][0]["y"]) == m.max_length


def test_html_in_text_is_escaped(markup_default_model):
    at = _open("<b>x</b> <script>alert(1)</script>")
    for v in [e.value for e in at.markdown]:
        assert "<script>" not in v
    ys = _charts(at)["chart-emb-word"]["data"][0]["y"]
    assert "1: &lt;" in ys and not any("<" in y for y in ys)
