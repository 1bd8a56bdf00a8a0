"""A full page opened from a link shows what the link names: the head (?layer=&head=, 1-based), the section
(?section=nsp); and the small things a lecturer's rehearsal found on the pages the Lesson links to."""

from __future__ import annotations

import numpy as np
from support.apptest import assert_ok, open_page

from bert_core.figures.probing import accuracy_by_layer_figure
from ui import heads_ui

MASKED = "She [MASK] the letter to her mother."


def test_heads_page_opens_on_the_linked_layer_and_head():
    at = open_page("heads", text=MASKED, query={"layer": "3", "head": "2"})
    assert_ok(at)
    assert (at.selectbox(key=heads_ui.LAYER_KEY).value, at.selectbox(key=heads_ui.HEAD_KEY).value) == (2, 1)
    assert any("without layer 3, head 2" in c.value for c in at.caption), [c.value for c in at.caption]
    assert at.query_params["layer"] in ("3", ["3"]) and at.query_params["head"] in ("2", ["2"])


def test_heads_page_without_a_link_starts_at_the_last_layer():
    at = open_page("heads", text=MASKED)
    assert_ok(at)
    L = at.session_state["current"].model.config.num_hidden_layers
    assert (at.selectbox(key=heads_ui.LAYER_KEY).value, at.selectbox(key=heads_ui.HEAD_KEY).value) == (L - 1, 0)
    at.selectbox(key=heads_ui.HEAD_KEY).set_value(4).run()  # a change goes into the URL, for a shared link
    assert at.query_params["head"] in ("5", ["5"])


def test_bert_vs_gpt_opens_on_the_linked_layer_and_head():
    at = open_page("bert_vs_gpt", text="The cat sat on the mat because it was warm.", query={"layer": "4",
                                                                                           "head": "3"})
    assert_ok(at)
    assert (at.selectbox(key="bvg_layer").value, at.selectbox(key="bvg_head").value) == (3, 2)
    assert any("layer 4, head 3" in c.value for c in at.caption), [c.value for c in at.caption]


def test_predictions_shows_nsp_first_when_the_link_asks_for_it():
    at = open_page("predictions", text="She opened the door of the house.", pair="The room inside was dark and cold.",
                   query={"section": "nsp"})
    assert_ok(at)
    assert at.subheader[0].value == "Next sentence prediction (NSP)", [s.value for s in at.subheader]
    first_chart = at.get("plotly_chart")[0].proto.spec
    assert "Next sentence prediction" in first_chart  # the pair's verdict is the first chart on the page
    subheads = [s.value for s in at.subheader]
    assert subheads.index("Next sentence prediction (NSP)") < subheads.index("Masked-word predictions")


def test_predictions_without_a_mask_points_a_pair_to_its_nsp():
    at = open_page("predictions", text="She opened the door of the house.", pair="The room inside was dark and cold.")
    assert_ok(at)
    assert at.subheader[-1].value == "Next sentence prediction (NSP)"
    msg = next(i.value for i in at.info if i.value.startswith("There is no [MASK]"))
    assert "next-sentence prediction is at the end of this page" in msg


def test_neighbours_keeps_mask_one_word():
    at = open_page("neighbours", text=MASKED)
    assert_ok(at)
    options = at.get("button_group")[0].proto.options if at.get("button_group") else None
    labels = [o.content for o in options] if options is not None else []
    assert "[MASK]" in labels and "MASK" not in labels and "[" not in labels, labels


def test_finetuning_formula_is_set_on_lines_that_fit():
    at = open_page("finetuning")
    assert_ok(at)
    formula = next(x.value for x in at.latex if "softmax" in x.value and "tanh" in x.value)
    assert formula.count(r"\\") == 3 and "gathered" in formula  # four lines: none runs past a phone's page


def test_probing_chart_has_layer_0_like_its_table():
    fig = accuracy_by_layer_figure({"pretrained": np.array([0.5, 0.6, 0.7])}, 0.2, "t")
    assert fig.layout.xaxis.type == "category"  # else plotly reads "1", "2" as numbers and drops "0 (embeddings)"
    assert list(fig.data[0].x) == ["0 (embeddings)", "1", "2"]
