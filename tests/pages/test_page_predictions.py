"""The Predictions page through AppTest: charts per [MASK], click-to-fill, the word picker, NSP."""

from __future__ import annotations

from support.apptest import assert_ok, open_page

from ui.state import OTHER_LABEL

HOSTILE = "<script>alert(1)</script> [MASK]"


def charts(at):
    return at.get("plotly_chart")


def fill_buttons(at, pos):
    return [b for b in at.button if b.key and b.key.startswith(f"fill-{pos}-")]


def click_first_enabled(at, pos):
    b = next(b for b in fill_buttons(at, pos) if not b.disabled)  # special tokens cannot be put in
    b.click().run()


def test_default_input():
    at = open_page("predictions")
    assert_ok(at)
    assert len(charts(at)) == 1 and len(fill_buttons(at, 2)) == 5  # "She [MASK] the letter ..." -> position 2
    assert any("Add a second sentence" in i.value for i in at.info)  # the bundled model has an NSP head
    assert at.latex and "softmax" in at.latex[0].value


def test_two_masks_two_charts_and_click_fills_that_mask():
    at = open_page("predictions", text="The cat [MASK] on the [MASK].")
    assert_ok(at)
    assert len(charts(at)) == 2 and fill_buttons(at, 3) and fill_buttons(at, 6)
    click_first_enabled(at, 6)
    assert_ok(at)
    text = at.sidebar.text_area(key="text").value
    assert text.startswith("The cat [MASK] on the") and text.count("[MASK]") == 1 and text != "The cat [MASK] on the."
    assert len(charts(at)) == 1  # the page follows the edited text


def test_mask_in_sentence_b_edits_the_pair():
    at = open_page("predictions", text="The cat sat on the mat.", pair="It [MASK] very happy.")
    assert_ok(at)
    assert len(charts(at)) == 2  # the [MASK] and NSP (the bundled model has both heads)
    pos = int(next(b for b in at.button if b.key.startswith("fill-")).key.split("-")[1])
    click_first_enabled(at, pos)
    assert_ok(at)
    assert at.sidebar.text_area(key="text").value == "The cat sat on the mat."
    pair = at.sidebar.text_area(key="pair").value
    assert pair.startswith("It") and pair.endswith("very happy.") and "[MASK]" not in pair


def test_no_mask_offers_the_word_picker():
    at = open_page("predictions", text="The cat sat on the mat.")
    assert_ok(at)
    sb = at.selectbox(key="pred_word")
    assert sb.value == 5  # the last word with letters: "mat"
    assert any("[MASK]" in c.value for c in at.code)
    sb.select(1).run()  # "cat"
    assert_ok(at)
    assert at.code[0].value == "The [MASK] sat on the mat."
    assert len(charts(at)) == 1
    assert any("cat" in el.value for el in [*at.success, *at.info])
    at.button(key="pred-use-mask").click().run()
    assert at.sidebar.text_area(key="text").value == "The [MASK] sat on the mat."
    assert fill_buttons(at, 2)  # now the page predicts at the new [MASK]


def test_k_slider_and_url():
    at = open_page("predictions", query={"k": "3"})
    assert at.slider(key="pred_k").value == 3 and len(fill_buttons(at, 2)) == 3
    at.slider(key="pred_k").set_value(12).run()
    assert_ok(at)
    assert len(fill_buttons(at, 2)) == 12 and at.query_params["k"] == "12"


def use_local_model(at, monkeypatch, path):
    """Pick a local checkpoint folder through the sidebar's "other" box (allowed under LOCAL_ROOTS)."""
    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(path.parent))
    at.sidebar.selectbox(key="model_choice").select(OTHER_LABEL).run()
    at.sidebar.text_input(key="other_model").set_value(str(path)).run()
    assert not at.sidebar.error, [e.value for e in at.sidebar.error]


def test_sentence_pair_without_and_with_nsp_head(tiny_dirs, monkeypatch):
    at = open_page("predictions", text="the cat sat on the [MASK] .", pair="it was happy .")
    assert_ok(at)
    assert len(charts(at)) == 2  # the bundled model: the [MASK] and NSP
    use_local_model(at, monkeypatch, tiny_dirs["mlm"][0])
    assert_ok(at)
    assert any("no NSP head" in i.value for i in at.info)
    use_local_model(at, monkeypatch, tiny_dirs["pretraining"][0])
    assert_ok(at)
    assert len(charts(at)) == 2  # the [MASK] and NSP
    at.sidebar.checkbox(key="use_pair").uncheck().run()
    assert any("Add a second sentence" in i.value for i in at.info)


def test_encoder_only_model_says_why(tiny_dirs, monkeypatch):
    at = open_page("predictions")
    use_local_model(at, monkeypatch, tiny_dirs["base"][0])
    assert_ok(at)
    assert any("Predictions are unavailable" in w.value and "masked-language-model" in w.value for w in at.warning)
    assert not charts(at)


def test_hostile_text():
    at = open_page("predictions", text=HOSTILE)
    assert_ok(at)
    assert len(charts(at)) == 1
    for el in [*at.markdown, *at.caption, *at.info, *at.success, *at.warning, *at.subheader]:
        assert "<script" not in el.value.lower()
