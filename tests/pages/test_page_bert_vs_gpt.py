"""The BERT vs GPT page through AppTest: masks and maps on the sidebar text, three live runs, what each can do."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from support.apptest import assert_ok, open_page

from bert_core.runs.settings import CORPUS_CHOICES

pytestmark = pytest.mark.usefixtures("slots")  # conftest: a fresh slot manager per test
FARM, WORDNET = CORPUS_CHOICES["farm"], CORPUS_CHOICES["wordnet"]


def chart_specs(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def arr(v) -> np.ndarray:
    """A plotly array from a figure's JSON: plain lists, or numpy's binary form {dtype, bdata, shape}."""
    if isinstance(v, dict):
        shape = tuple(int(x) for x in str(v.get("shape", "-1")).split(","))
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).reshape(shape)
    return np.asarray(v)


def test_masks_visibility_and_loss_positions_on_the_sidebar_text():
    at = open_page("bert_vs_gpt", text="the cat sat on the [MASK] .")
    assert_ok(at)
    specs = chart_specs(at)
    assert len(specs) == 4  # masks, attention under each mask, visibility, loss positions
    bi, causal = arr(specs[0]["data"][0]["z"]), arr(specs[0]["data"][1]["z"])
    T = bi.shape[0]
    assert T == 9 and (bi == 1).all()  # BERT: every cell open
    assert (causal == np.tril(np.ones((T, T)))).all()  # GPT: j <= i only
    causal_attn = arr(specs[1]["data"][1]["z"])
    assert (np.triu(causal_attn, 1) == 0).all() and np.allclose(causal_attn.sum(1), 1, atol=1e-4)
    assert causal_attn[0, 0] == pytest.approx(1.0)  # the first token can only attend to itself
    # The [MASK] (position 6) is the default token to predict: GPT cannot see position 7 ('.'), BERT can.
    assert at.selectbox(key="bvg_pos").value == 6
    vis = arr(specs[2]["data"][0]["z"])
    assert vis[0, 7] == 1 and vis[1, 7] == 0 and vis[0, 6] == vis[1, 6] == vis[2, 6] == 2
    # Section 3 never makes a typed [MASK] a word to recover or GPT's next word: it uses its own sentence.
    ticks = specs[3]["layout"]["xaxis"]["ticktext"]
    assert not any("[MASK]" in t for t in ticks) and any("letter" in t for t in ticks)  # the tokens of the columns
    assert "→[MASK]" not in json.dumps(specs[3]["data"][0]["text"])  # GPT is never asked for a [MASK]
    assert any("typed [MASK]" in c.value for c in at.caption)
    at.selectbox(key="bvg_pos").select(2).run()
    assert_ok(at)
    assert arr(chart_specs(at)[2]["data"][0]["z"])[1, 3] == 0
    at.selectbox(key="bvg_layer").select(1).run()
    at.selectbox(key="bvg_head").select(3).run()
    assert_ok(at)
    assert any("Press **Train the models**" in i.value for i in at.info)


def test_loss_positions_use_a_text_without_mask():
    at = open_page("bert_vs_gpt", text="the cat sat on the mat .")
    assert_ok(at)
    assert any("mat" in t for t in chart_specs(at)[3]["layout"]["xaxis"]["ticktext"])
    assert not any("typed [MASK]" in c.value for c in at.caption)


def test_three_runs_train_and_each_does_its_job():
    """The WordNet corpus with ELECTRA: the long comparison, as before the farm corpus became the default."""
    at = open_page("bert_vs_gpt", text="the cat sat on the [MASK] .")
    at.radio(key="bvg_corpus").set_value(WORDNET.label).run()
    assert at.checkbox(key="bvg_electra").value  # WordNet brings all three objectives
    at.selectbox(key="bvg_preset").select("tiny (2 layers, 64 wide)")
    at.number_input(key="bvg_steps").set_value(10)
    at.run()
    at.button(key="bvg_train").click().run(timeout=240)
    assert_ok(at)
    comp = at.session_state["bvg_runs"]
    assert comp.done and {o: s.step for o, s in comp.sessions.items()} == {"mlm": 10, "clm": 10, "rtd": 10}
    assert at.button(key="bvg_train").disabled and at.number_input(key="bvg_steps").disabled
    specs = chart_specs(at)
    losses = next(s for s in specs if len(s["data"]) == 5)  # mlm, clm, rtd total + discriminator + generator
    assert len(arr(losses["data"][0]["y"])) == 10
    probe = next(s for s in specs if s["layout"]["yaxis"].get("title", {}).get("text") == "probe accuracy (held out)")
    assert [len(arr(d["x"])) for d in probe["data"]] == [5, 5, 5]  # step 0 and every quarter, for each objective
    assert at.dataframe[0].value["objective"].tolist() == ["mlm", "clm", "rtd"]
    # What each can do: BERT and GPT both guess the [MASK]; GPT continues; ELECTRA scores every token.
    assert len(at.dataframe[1].value) == 1 and at.dataframe[1].value["GPT (left only)"][0]
    assert len(at.dataframe[2].value) >= 1
    assert any("P(replaced)" in json.dumps(s) for s in specs)
    for key, bad in (("bvg_fill", ""), ("bvg_prompt", "   "), ("bvg_spot", "<script>x</script>")):
        at.text_input(key=key).input(bad).run()
        assert_ok(at)
    assert any("empty" in w.value or "type a sentence" in w.value for w in at.warning)
    at.button(key="bvg_reset").click().run()
    assert_ok(at)
    assert "bvg_runs" not in at.session_state
    assert comp.sessions == {}


def test_farm_default_trains_bert_and_gpt_and_shows_the_fill_in_probes():
    """The default: the farm corpus, BERT and GPT only, the fill-in probe table with both sides' blanks."""
    at = open_page("bert_vs_gpt", text="the cat sat on the [MASK] .")
    assert at.radio(key="bvg_corpus").value == FARM.label and not at.checkbox(key="bvg_electra").value
    assert at.selectbox(key="bvg_preset").value == FARM.preset
    at.number_input(key="bvg_steps").set_value(10).run()
    at.button(key="bvg_train").click().run(timeout=240)
    assert_ok(at)
    comp = at.session_state["bvg_runs"]
    assert comp.done and comp.cloze and set(comp.sessions) == {"mlm", "clm"}
    cloze = next(d.value for d in at.dataframe if "decided by the words" in d.value.columns)
    assert set(cloze["decided by the words"]) == {"left", "right"} and {"mlm", "clm"} <= set(cloze.columns)
    assert len(at.tabs) == 2  # no ELECTRA tab without its run
    assert at.text_input(key="bvg_fill").value == "the [MASK] barks at tom ."
    assert_ok(at)
