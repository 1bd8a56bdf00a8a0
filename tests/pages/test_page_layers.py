"""The Layers and Inside-a-layer pages through AppTest: what they draw is what bert_core computed."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from support.apptest import assert_ok, open_page
from support.checkpoints import write_tiny_checkpoint

import bert_core
from bert_core.inspect.inside_layers import follow_token
from ui.state import OTHER_LABEL

TEXT, PAIR = "The cat [MASK] on the mat.", "It was happy."


def arr(v) -> np.ndarray:
    """A plotly JSON array: a list, or plotly's binary form {"dtype", "bdata", "shape"}."""
    if isinstance(v, dict):
        shape = [int(s) for s in str(v.get("shape", "-1")).split(",")]
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).reshape(shape)
    return np.asarray(v, dtype=float)


def charts(at) -> dict[str, dict]:
    return {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}


def texts(at) -> str:
    return " ".join(str(e.value) for g in (at.markdown, at.caption, at.info, at.warning) for e in g)


def use_local_model(at, monkeypatch, path):
    monkeypatch.setenv("BERT_EXPLORER_LOCAL_ROOTS", str(path.parent))
    at.sidebar.selectbox(key="model_choice").select(OTHER_LABEL).run()
    at.sidebar.text_input(key="other_model").set_value(str(path)).run()
    assert not at.sidebar.error, [e.value for e in at.sidebar.error]


# --- Layers ----------------------------------------------------------------------------------


def test_layers_page_draws_bert_core_numbers():
    m = bert_core.load_model()
    at = open_page("layers", query={"text": TEXT, "pair": PAIR})
    assert_ok(at)
    c = charts(at)
    r = bert_core.residual_stream(m, TEXT, PAIR)
    np.testing.assert_allclose(arr(c["lay-norms"]["data"][0]["z"]), r.norms, atol=1e-5)
    # Closed sections build no chart (one rerun stays cheap); opening one draws bert_core's numbers.
    assert not {"lay-attn-upd", "lay-pca", "lay-cls"} & set(c) and not any(k.startswith("lay-lens-ans") for k in c)
    np.testing.assert_allclose(arr(c["lay-tok-sim"]["data"][0]["z"]), r.token_similarity[-1], atol=1e-5)
    # The logit lens: one (states x k) map per [MASK], whose last row is analyze's predictions.
    t = bert_core.analyze(m, TEXT, PAIR)
    (pos,) = t.mask_positions
    lens = c[f"lay-lens-{pos}"]["data"][0]
    z = arr(lens["z"])
    assert z.shape == (m.config.num_hidden_layers + 1, 5)
    np.testing.assert_allclose(z[-1], [p for _, p in t.predictions[pos]], atol=1e-5)
    assert "trained on the last layer only" in texts(at)
    # Same word, two contexts: closed at first (its own pair is not the page's text); opened, the default pair has
    # "bank" (and "the") twice.
    assert "lay-same-word" not in c and not at.text_input
    at.toggle(key="lay_two").set_value(True).run()
    names = [tr["name"] for tr in charts(at)["lay-same-word"]["data"]]
    assert "bank" in names
    assert any("tanh" in e.value for e in at.latex)
    at.segmented_control(key="lay_view").set_value("Size of each update").run()
    assert_ok(at)
    np.testing.assert_allclose(arr(charts(at)["lay-attn-upd"]["data"][0]["z"]), r.attn_update, atol=1e-5)
    at.toggle(key="lay_lens_rank").set_value(True).run()
    ans = charts(at)[f"lay-lens-ans-{pos}"]["data"]
    lens = bert_core.logit_lens(m, TEXT, PAIR)
    np.testing.assert_allclose(arr(ans[0]["y"]), lens.final_prob[pos], atol=1e-5)
    at.slider(key="lay_k").set_value(3).run()  # k slices the stored top 10: same numbers, fewer columns
    np.testing.assert_allclose(arr(charts(at)[f"lay-lens-{pos}"]["data"][0]["z"]), z[:, :3], atol=1e-6)
    # PCA: specials hidden by default; one path per remaining token.
    at.toggle(key="lay_pca").set_value(True).run()
    assert_ok(at)
    assert len(charts(at)["lay-pca"]["data"]) == int((r.special_tokens_mask == 0).sum())
    at.toggle(key="lay_hide_special").set_value(False).run()
    assert len(charts(at)["lay-pca"]["data"]) == len(r.tokens)
    at.toggle(key="lay_cls").set_value(True).run()
    assert_ok(at)
    np.testing.assert_allclose(arr(charts(at)["lay-cls"]["data"][0]["z"])[0], r.cls, atol=1e-5)


def test_layers_page_state_slider_and_no_mask():
    at = open_page("layers", query={"text": "the cat sat on the mat."})
    assert_ok(at)
    assert "There is no [MASK]" in texts(at)
    assert not any(k.startswith("lay-lens") for k in charts(at))
    at.select_slider(key="lay_sim_state").set_value(0).run()
    assert_ok(at)
    assert charts(at)["lay-tok-sim"]["layout"]["title"]["text"] == "Token similarity at state emb"


def test_two_contexts_needs_a_repeated_word():
    at = open_page("layers")
    at.toggle(key="lay_two").set_value(True).run()
    at.text_input(key="lay_two_a").set_value("The river is wide.").run()
    at.text_input(key="lay_two_b").set_value("She opened an account.").run()
    assert_ok(at)
    assert "needs one word that appears twice" in texts(at)
    assert "lay-same-word" not in charts(at)
    at.text_input(key="lay_two_a").set_value("   ").run()
    assert_ok(at)
    assert "needs a word that occurs twice" in texts(at)


def test_two_contexts_try_buttons_put_their_pairs():
    at = open_page("layers")
    at.toggle(key="lay_two").set_value(True).run()
    assert at.text_input(key="lay_two_a").value == "We walked along the bank of the river."
    at.button(key="lay_two_one_the").click().run()
    assert_ok(at)
    assert (at.text_input(key="lay_two_a").value, at.text_input(key="lay_two_b").value) == (
        "We walked along the bank of a river.", "She works at the bank in town.")
    at.button(key="lay_two_same").click().run()
    assert_ok(at)
    assert at.text_input(key="lay_two_b").value == "She sat on the bank of the stream."
    assert "lay-same-word" in charts(at)


def test_encoder_only_model_says_why_there_is_no_lens(tiny_dirs, monkeypatch):
    at = open_page("layers", query={"text": "the cat [MASK] on the mat."})
    use_local_model(at, monkeypatch, tiny_dirs["base"][0])
    assert_ok(at)
    assert any("no masked-language-model head" in i.value for i in at.info)
    assert not any(k.startswith("lay-lens") for k in charts(at))
    at.toggle(key="lay_cls").set_value(True).run()
    c = charts(at)
    assert len(c["lay-cls"]["data"][0]["y"]) == 2  # [CLS] and the pooler (BertModel has one)


@pytest.fixture(scope="module")
def long_model(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny-512")
    write_tiny_checkpoint(d, "mlm", max_position_embeddings=512)
    return d


LONG = "the cat sat on the mat and the dog went to the store . " * 50 + "[MASK]"


def test_512_tokens_layers_page_caps_and_says_so(long_model, monkeypatch):
    at = open_page("layers", query={"text": LONG})
    use_local_model(at, monkeypatch, long_model)
    assert_ok(at)
    assert any("512 tokens" in w.value and "first 256" in w.value for w in at.warning)
    c = charts(at)
    assert arr(c["lay-norms"]["data"][0]["z"]).shape[1] == 256
    assert len(c["lay-tok-sim"]["data"][0]["x"]) == 128
    at.toggle(key="lay_pca").set_value(True).run()
    assert_ok(at)
    assert len(charts(at)["lay-pca"]["data"]) == 40


# --- Inside a layer --------------------------------------------------------------------------


def strip(c, key: str) -> dict[str, np.ndarray]:
    """A vector_strip figure's rows by name."""
    tr = c[key]["data"][0]
    z = arr(tr["z"])
    return {name: row[~np.isnan(row)] for name, row in zip(tr["y"], z)}


def test_inside_layer_follows_the_numbers_of_layer_steps():
    m = bert_core.load_model()
    at = open_page("inside_layer", query={"text": TEXT, "pair": PAIR})
    assert_ok(at)
    t = bert_core.analyze(m, TEXT, PAIR)
    (pos,) = t.mask_positions
    assert at.selectbox(key="in_token").value == pos  # starts at the [MASK]
    at.selectbox(key="in_layer").select(2).run()
    at.selectbox(key="in_head").select(1).run()
    assert_ok(at)
    assert at.query_params["layer"] == "3" and at.query_params["head"] == "2"  # index 2 is layer 3 for users
    c = charts(at)
    s = bert_core.layer_steps(m, TEXT, 2, PAIR)
    p = follow_token(s, 1, pos)
    np.testing.assert_allclose(strip(c, "in-x")["x"], t.hidden_states[2][pos], atol=1e-5)
    np.testing.assert_allclose(strip(c, "in-qkv")["q (query)"], p.q, atol=1e-5)
    weights = arr(c["in-scores"]["data"][2]["y"])
    np.testing.assert_allclose(weights, t.attentions[2, 1, pos], atol=1e-5)  # the Attention page's row
    np.testing.assert_allclose(arr(c["in-scores"]["data"][1]["y"]), s.scores[1, pos], atol=1e-5)
    out = strip(c, "in-resid2")["x' = LayerNorm(…)"]
    np.testing.assert_allclose(out, t.hidden_states[3][pos], atol=1e-5)  # = the Layers page's state L3
    assert len(strip(c, "in-ffn-out")["ffn_out"]) == m.config.hidden_size
    assert sum(arr(c["in-ffn-hist"]["data"][0]["x"]).shape) == m.config.intermediate_size
    assert len([e for e in at.latex]) >= 6
    said = texts(at)  # head 2 (from 1) holds dimensions 32-63 (from 0) of q, k and v: the page says both
    dk = m.config.hidden_size // m.config.num_attention_heads
    assert f"Head 2 uses numbers {dk}–{2 * dk - 1} of each (numbers, i.e. dimensions, count from 0" in said
    at.selectbox(key="in_token").select(0).run()
    assert_ok(at)
    np.testing.assert_allclose(strip(charts(at), "in-x")["x"], t.hidden_states[2][0], atol=1e-5)


def test_inside_layer_token_choice_survives_a_shorter_text():
    at = open_page("inside_layer", query={"text": TEXT})
    at.selectbox(key="in_token").select(7).run()
    assert_ok(at)
    at.sidebar.text_area(key="text").set_value("hi").run()
    assert_ok(at)
    box = at.selectbox(key="in_token")
    assert box.value == len(box.options) - 1 < 7  # clamped to the new text's last token


def test_inside_layer_512_tokens_and_encoder_only(long_model, tiny_dirs, monkeypatch):
    at = open_page("inside_layer", query={"text": LONG})
    use_local_model(at, monkeypatch, long_model)
    assert_ok(at)
    assert any("512 tokens" in w.value and "first 128 keys" in w.value for w in at.warning)
    assert len(charts(at)["in-scores"]["data"][0]["x"]) == 128
    use_local_model(at, monkeypatch, tiny_dirs["base"][0])  # no MLM head: the layer is still there
    assert_ok(at)
    assert "in-resid2" in charts(at)


def test_the_page_words_hold_on_the_bundled_minilm():
    """Layers' prose about its defaults: she and her are alike already at the embeddings' output; in the default
    two contexts both start near 0.9, bank (one in each sentence) falls to about 0.6 mid-way and ends near 0.75,
    the two the's (both in sentence A) stay near 0.9; with the once in each sentence, the drifts as far as bank;
    bank of a river and bank of a stream end near 0.9."""
    import ast
    from pathlib import Path

    from ui.state import DEFAULT_TEXT

    page = ast.parse((Path(__file__).parents[2] / "views" / "layers.py").read_text())  # a page runs on import
    pairs = {n.targets[0].id: ast.literal_eval(n.value) for n in page.body
             if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
             and n.targets[0].id in ("TWO_CONTEXTS", "ONE_THE_EACH", "SAME_SENSE")}
    m = bert_core.load_model()
    r = bert_core.residual_stream(m, DEFAULT_TEXT, None, pca=False)
    she, her = r.tokens.index("she"), r.tokens.index("her")
    assert r.token_similarity[0, she, her] > 0.5

    def curves(pair):
        found = bert_core.same_word(m, *pair).words
        return {w.word: np.asarray(w.cos) for w in found}, {w.word: (w.first, w.second) for w in found}

    words, where = curves(pairs["TWO_CONTEXTS"])
    bank, the = words["bank"], words["the"]
    a_len = len(m.tokenizer.encode(pairs["TWO_CONTEXTS"][0]))  # [CLS] A [SEP]: positions 0..a_len-1
    assert max(where["the"][1]) < a_len <= min(where["bank"][1])  # the: both in A; bank: the second in B
    assert 0.85 < bank[0] < 0.95 and 0.85 < the[0] < 0.95  # "begin close (cos about 0.9 at emb)"
    assert 0.55 < bank.min() < 0.68 and 0 < bank.argmin() < len(bank) - 1  # "fall to about 0.6 in the middle"
    assert 0.7 < bank[-1] < 0.8 and the.min() > 0.8 and the[-1] > 0.85  # "end near 0.75", "stay near 0.9"
    one_the, _ = curves(pairs["ONE_THE_EACH"])
    assert one_the["the"][-1] <= one_the["bank"][-1] + 0.02  # "it drifts as far as bank does"
    same, _ = curves(pairs["SAME_SENSE"])
    assert same["bank"][-1] > 0.85 and same["bank"][-1] > bank[-1] + 0.1  # "end near 0.9"


def test_token_similarity_line_says_what_this_model_shows():
    """The default sentence at the last state: some pairs of different tokens score <= 0 on the MiniLM, and the
    line under the map says so from bert_core's numbers (no claim that every pair is above 0)."""
    m = bert_core.load_model()
    at = open_page("layers")
    assert_ok(at)
    S = bert_core.residual_stream(m, at.session_state["text"]).token_similarity[-1]
    off = S[np.triu_indices(S.shape[0], k=1)]
    assert (off <= 0).sum() > 0  # the reason the cone sentence was wrong for this model
    line = next(e.value for e in at.caption if "pairs of different tokens" in e.value)
    assert f"the {off.size} pairs" in line and f"{(off <= 0).sum()} of them at or below 0" in line
    assert f"from {off.min():.2f} to {off.max():.2f}" in line
    page = texts(at)
    assert "BERT-base's upper layers" in page and "so even unrelated tokens score above 0" not in page
    at.select_slider(key="lay_sim_state").set_value(5).run()  # after layer 5: every pair above 0 on this model
    S5 = bert_core.residual_stream(m, at.session_state["text"]).token_similarity[5]
    off5 = S5[np.triu_indices(S5.shape[0], k=1)]
    line = next(e.value for e in at.caption if "pairs of different tokens" in e.value)
    assert f"median {np.median(off5):.2f}" in line
    assert ("none of them" in line) == (not (off5 <= 0).any())
