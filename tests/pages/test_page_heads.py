"""The Heads & patching page under AppTest: what it draws is what bert_core computes, numbered 1-based, and bad
input gets a message."""

from __future__ import annotations

import gc
from pathlib import Path

import numpy as np
from support.apptest import ROOT, assert_ok, open_page

import bert_core
from ui import heads_ui

TEXT = "She [MASK] the letter to her mother."


def captions(at) -> list[str]:
    return [c.value for c in at.caption]


def test_importance_knock_out_and_pruning_are_bert_cores():
    at = open_page("heads", text=TEXT, timeout=300)
    assert_ok(at)
    m = bert_core.load_model("bundled-minilm")
    assert any("Layers are numbered 1–6 (layer 0 = the embeddings' output); heads 1–12." == c for c in captions(at))
    assert not at.get("plotly_chart") or len(at.get("plotly_chart")) == 2  # before ranking: the bars and the grid
    at.toggle(key="heads_rank").set_value(True).run()
    assert_ok(at)
    imp = bert_core.head_importance(m, TEXT)
    layer, head = np.unravel_index(imp.argmax(), imp.shape)
    best = f"The most important head is layer {layer + 1}, head {head + 1} ({imp.max():.3f} nats)."
    assert any(best in c for c in captions(at)), captions(at)
    # "Knock out the most important" puts that head (0-based values, 1-based labels) in the selectboxes.
    at.button(key="heads_best").click().run()
    assert_ok(at)
    assert (at.selectbox(key=heads_ui.LAYER_KEY).value, at.selectbox(key=heads_ui.HEAD_KEY).value) == (layer, head)
    ko = bert_core.knock_out(m, TEXT, heads=[(int(layer), int(head))])
    _, p_full, p_without = ko.guesses[2]
    said = (f"without layer {layer + 1}, head {head + 1}: its probability goes from {p_full[0]:.3f} to "
            f"{p_without[0]:.3f}")
    assert any(said in c for c in captions(at)), captions(at)
    # The Data expander names the head knocked out (1-based, as the selectboxes) apart from the [MASK]'s position.
    data = f"Data: without layer {layer + 1}, head {head + 1}, the [MASK] at position 2"
    assert data in [e.label for e in at.expander], [e.label for e in at.expander]
    # The CSVs hold the same numbers, 1-based.
    df = at.dataframe[0].value
    row = df[(df["layer"] == layer + 1) & (df["head"] == head + 1)]
    assert abs(float(row["importance (nats)"].iloc[0]) - imp.max()) < 1e-5  # fp32; thread counts differ
    pc = bert_core.pruning_curve(m, TEXT)
    assert np.allclose(at.dataframe[1].value["p(guess)"].to_numpy(), pc.prob, atol=1e-5)


def test_a_click_on_the_map_picks_that_head():
    assert heads_ui.clicked_head({"points": [{"x": "head 3", "y": "layer 2", "customdata": 0.1}]}) == (1, 2)
    assert heads_ui.clicked_head({"points": []}) is None
    assert heads_ui.clicked_head(None) is None
    assert heads_ui.clicked_head({"points": [{"x": "?", "y": "layer 2"}]}) is None


def test_patching_grid_and_its_messages():
    at = open_page("heads", text=TEXT, timeout=300)
    m = bert_core.load_model("bundled-minilm")
    r = bert_core.patch_activations(m, "The king said that [MASK] was tired.", "The queen said that [MASK] was tired.",
                                    "he")
    said = f"**{r.clean_prob:.3f}** in the clean run, **{r.corrupt_prob:.3f}** in the corrupt run"
    assert any(said in md.value for md in at.markdown)
    grid = at.dataframe[0].value  # before ranking, the only table: the patching grid
    assert list(grid["hidden state"]) == ["embeddings"] + [f"layer {i}" for i in range(1, 7)]
    assert np.allclose(grid.drop(columns="hidden state").to_numpy(), r.grid, atol=1e-5)
    for key, value, message in [
        ("heads_corrupt", "The old queen said that [MASK] was tired.", "same number of tokens"),
        ("heads_corrupt", "The queen said that he was tired.", "no [MASK]"),
        ("heads_target", "tiredness", "not one vocabulary piece"),
        ("heads_target", "", "type the target word"),
        ("heads_clean", "<script>alert(1)</script> [MASK]", "same number of tokens"),
    ]:
        at = open_page("heads", text=TEXT, timeout=300)
        at.text_input(key=key).set_value(value).run()
        assert_ok(at)
        assert any(message in w.value for w in at.warning), (key, value, [w.value for w in at.warning])


def test_without_a_mask_the_page_says_so():
    at = open_page("heads", text="The cat sat on the mat.", timeout=300)
    assert_ok(at)
    assert any("Put [MASK]" in i.value for i in at.info)
    assert not at.get("toggle") or all(t.key != "heads_rank" for t in at.toggle)


def live_page_namespaces() -> dict[int, str]:
    """{id: file name} of the page scripts' namespaces still alive (as tests/app/test_page_namespaces.py reads them)."""
    gc.collect()
    return {id(o): Path(o["__file__"]).name for o in gc.get_objects()
            if type(o) is dict and isinstance(o.get("__file__"), str) and Path(o["__file__"]).parent == ROOT / "views"}


def test_the_ranked_page_namespace_is_freed_after_its_run():
    """The importance map's click callback is a ui function: it keeps nothing of the page alive."""
    before = live_page_namespaces()
    at = open_page("heads", text=TEXT, timeout=300)
    at.toggle(key="heads_rank").set_value(True).run()
    assert_ok(at)
    at.switch_page("views/anatomy.py").run()
    assert_ok(at)
    assert sorted(n for i, n in live_page_namespaces().items() if i not in before) == []
