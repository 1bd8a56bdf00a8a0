"""The Predictions page's salience, several-masks and "which sentence is more natural?" sections, through AppTest.

Each section is behind a toggle (it runs the model once per token or per [MASK]); the numbers on the
page are checked against bert_core's own functions on the bundled model. The hostile inputs reach every section
in tests/pages/test_hostile_pages.py, which turns them all on.
"""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from support.apptest import assert_ok, open_page

import bert_core
from bert_core.inspect import attribution

TOGGLES = ("pred_salience", "pred_fill", "pred_pll")


@pytest.fixture(scope="module")
def bundled():
    return bert_core.load_model()


def figures(at) -> list[dict]:
    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def by_title(at, start: str) -> dict:
    return next(f for f in figures(at) if str(f["layout"].get("title", {}).get("text", "")).startswith(start))


def arr(v) -> np.ndarray:
    if isinstance(v, dict):
        shape = [int(s) for s in str(v.get("shape", "-1")).split(",")]
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).reshape(shape)
    return np.asarray(v, dtype=np.float64)


def strip_values(fig: dict, n: int) -> np.ndarray:
    """The first n cells of a token strip, in reading order."""
    return arr(fig["data"][0]["z"]).astype(np.float64).ravel()[:n]


def turn_on(at, *keys):
    for k in keys:
        at.toggle(key=k).set_value(True).run()
        assert_ok(at)


def test_sections_are_off_by_default_and_explained():
    at = open_page("predictions")
    assert_ok(at)
    assert [t.value for t in at.toggle if t.key in TOGGLES] == [False, False, False]
    heads = [h.value for h in at.subheader]
    assert "Which words did the prediction rely on? (salience)" in heads and "Which sentence is more natural?" in heads
    latex = " ".join(e.value for e in at.latex)
    assert "occlusion" in latex and "PLL" in latex
    assert len(at.get("plotly_chart")) == 1  # only the [MASK]'s candidates: nothing heavy ran


def test_salience_both_methods_match_bert_core(bundled):
    text = "The cat [MASK] on the mat."
    at = open_page("predictions", text=text)
    turn_on(at, "pred_salience")
    cand = at.selectbox(key="pred_sal_cand").value
    t = bert_core.analyze(bundled, text)
    pos = t.mask_positions[0]
    assert cand == next(tok for tok, _ in t.predictions[pos] if tok not in bundled.tokenizer.specials.values())
    occ, grad = by_title(at, "Occlusion"), by_title(at, "Gradient")
    n = len(t.tokens)
    np.testing.assert_allclose(strip_values(occ, n), bert_core.salience(bundled, text, pos, cand), atol=1e-5)
    np.testing.assert_allclose(strip_values(grad, n), bert_core.salience(bundled, text, pos, cand, method="gradient"),
                               rtol=1e-4, atol=1e-6)
    assert occ["data"][0]["text"][0][:3] == ["[CLS]", "the", "cat"]
    assert any("Gradient × input estimates it" in c.value for c in at.caption)
    # Another candidate, then a typed word of one piece, then one of several pieces.
    other = at.selectbox(key="pred_sal_cand").options[2]
    at.selectbox(key="pred_sal_cand").select(other).run()
    assert_ok(at)
    assert f"({other})" in by_title(at, "Occlusion")["layout"]["title"]["text"]
    at.text_input(key="pred_sal_word").set_value("Dog").run()
    assert_ok(at)
    assert "(Dog)" in by_title(at, "Occlusion")["layout"]["title"]["text"]
    at.text_input(key="pred_sal_word").set_value("unbelievably").run()
    assert_ok(at)
    (w,) = [w for w in at.warning if "word pieces" in w.value]
    assert "One [MASK] predicts one piece" in w.value


def test_salience_for_a_picked_word_offers_its_first_piece():
    at = open_page("predictions", text="The cat sat on the mat.")
    turn_on(at, "pred_salience")
    assert at.selectbox(key="pred_sal_cand").options[0] == "mat"  # the hidden word, first
    assert by_title(at, "Occlusion")["data"][0]["text"][0][6] == "[MASK]"


def test_salience_says_when_the_batched_pass_was_capped(monkeypatch):
    monkeypatch.setattr(attribution, "MAX_WORK_TOKENS", 4 * 16)  # 4 rows of 16 tokens
    at = open_page("predictions", text="a dog and a cat sat on the big mat near the [MASK] door .")
    turn_on(at, "pred_salience")
    (info,) = [i for i in at.info if "occlusion masked only" in i.value]
    assert "stay blank" in info.value


def test_three_fill_strategies_match_bert_core(bundled):
    text = "The [MASK] [MASK] sat on the [MASK]."
    at = open_page("predictions", text=text)
    turn_on(at, "pred_fill")
    fills = [bert_core.fill_masks(bundled, text, strategy=s) for s in bert_core.inspect.mask_filling.FILL_STRATEGIES]
    assert [c.value for c in at.code] == [f.text for f in fills]
    tables = at.dataframe[-3:]
    for f, df in zip(fills, tables):
        assert df.value["token"].tolist() == [tok for _, tok, _ in f.steps]
        assert df.value["position"].tolist() == [q for q, _, _ in f.steps]
    md = " ".join(m.value for m in at.markdown)
    assert "**independent** · 1 pass" in md and "**left to right** · 3 passes" in md


def test_one_mask_explains_and_offers_an_example():
    at = open_page("predictions")
    turn_on(at, "pred_fill")
    assert any("can only differ with two or more" in i.value for i in at.info)
    at.button(key="pred-fill-example").click().run()
    assert_ok(at)
    assert at.sidebar.text_area(key="text").value == "The [MASK] [MASK] sat on the mat."
    assert len(at.code) == 3


def test_which_sentence_is_more_natural(bundled):
    at = open_page("predictions")
    turn_on(at, "pred_pll")
    a, b = (bert_core.pseudo_log_likelihood(bundled, s) for s in ("The cat sat on the mat.", "The mat sat on the cat."))
    fig = by_title(at, "log p(token")
    assert len(fig["data"]) == 2
    np.testing.assert_allclose(arr(fig["data"][0]["y"]), [v for _, v in a.per_token], atol=1e-4)
    df = at.dataframe[-1].value
    np.testing.assert_allclose(df["PLL"], [a.total, b.total], atol=1e-3)
    best = 1 if a.total >= b.total else 2
    assert at.success and f"sentence {best} the most natural" in at.success[0].value
    at.text_area(key="pred_pll_text").set_value("only one sentence").run()
    assert_ok(at)
    assert any("at least two sentences" in i.value for i in at.info)
    at.text_area(key="pred_pll_text").set_value("[SEP] [CLS]\nthe cat .\n" + "the mat " * 3000).run()
    assert_ok(at)
    assert any("Sentence 1" in w.value and "only special tokens" in w.value for w in at.warning)
    assert any("truncated" in c.value for c in at.caption)
