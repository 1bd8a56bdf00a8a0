"""Probing and Neighbours pages on the tiny bundled model: the numbers drawn are bert_core's, behind their buttons."""

from __future__ import annotations

import json

import numpy as np
import pytest
from support.apptest import assert_ok, open_page
from support.plotly_json import arr

import bert_core
from bert_core.finetune.tagging import UNIVERSAL_TAGS, builtin_pos_task
from bert_core.inspect import neighbours as nb
from bert_core.probe import probing


@pytest.fixture
def small_probe(monkeypatch):
    """12 training and 6 held-out Brown sentences instead of 300 and 300 (the page reads them through probing)."""
    task = probing.pos_probe_task(12, 6)
    monkeypatch.setattr(probing, "probe_task", lambda name, n_train=12: task)
    return task


def test_probing_page_fits_behind_its_button_and_draws_bert_cores_numbers(small_probe):
    at = open_page("probing", query={"model": "bundled"}, timeout=600)
    assert_ok(at)
    assert not at.get("plotly_chart")  # nothing is fitted on a plain visit
    assert any("Fit the probes" in i.value for i in at.info)
    at.button(key="pr_fit").click().run()
    assert_ok(at)
    m = bert_core.load_model("bundled")
    want = probing.probe_layers(m, probing.POS, 12, seed=0)
    df = at.dataframe[0].value
    assert list(df["layer"]) == ["0 (embeddings)"] + [str(i) for i in range(1, m.config.num_hidden_layers + 1)]
    for row in probing.ROWS:
        np.testing.assert_allclose(df[f"{row} (held-out)"], want.accuracy[row].round(4), atol=1e-9)
    fig = json.loads(at.get("plotly_chart")[0].proto.spec)
    np.testing.assert_allclose(arr(fig["data"][0]["y"]), want.accuracy["pretrained"] * 100, atol=1e-6)
    at.sidebar.text_area(key="text").set_value("another sentence").run()  # a rerun keeps the result, no refit
    assert_ok(at)
    assert at.dataframe and "Layers are numbered" in " ".join(c.value for c in at.caption)
    said = " ".join(e.value for e in at.markdown)
    assert "the majority label (always answering the label most frequent in training" in said
    assert f"gets {want.majority:.1%}" in said


def test_neighbours_page_lists_bert_cores_nearest_words():
    at = open_page("neighbours", text="He sat on the bank of the river.", query={"model": "bundled"}, timeout=600)
    assert_ok(at)
    assert not at.dataframe  # no index until the button
    at.selectbox(key="nb_n_i").set_value(0).run()  # the smallest corpus: 200 sentences
    at.button(key="nb_build").click().run()
    assert_ok(at)
    assert at.pills(key="nb_word").value == "bank"  # the first word longer than three letters
    at.pills(key="nb_word").set_value("bank").run()
    at.slider(key="nb_layer_slider").set_value(2).run()
    assert_ok(at)
    m = bert_core.load_model("bundled")
    pos = builtin_pos_task()
    index = nb.build_index(m, pos.valid_words[:200], pos.valid_tags[:200], UNIVERSAL_TAGS)
    q = nb.query_words(m, "He sat on the bank of the river.")
    assert q.words[4] == "bank"
    res = nb.nearest_words(index, q.vectors[2, 4], 2, 20)
    df = at.dataframe[0].value
    assert list(df["word"]) == [index.word_text(i) for i in res.ids]
    np.testing.assert_allclose(df["cosine"], res.cosines.round(4), atol=1e-4)
    hist = json.loads(next(c for c in at.get("plotly_chart") if "Parts of speech" in c.proto.spec).proto.spec)
    assert arr(hist["data"][0]["y"]).sum() == 20
    # The projection: a sense word's examples, coloured by sense.
    assert any("principal components" in md.value for md in at.markdown)
    assert len(at.dataframe) == 2
