"""The knock-out step's answer against transformers with forward hooks: the bundled MiniLM folder read by HF's
BertForPreTraining, each head knocked out in a plain loop, fp32, eager attention."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from support.hooks import hf_logits, knocked_out

import bert_core
from bert_core.lesson import QUESTIONS
from bert_core.lesson import heads as H


@pytest.fixture(scope="module")
def m():
    return bert_core.load_model("bundled-minilm")


@pytest.fixture(scope="module")
def hf():
    from transformers import BertForPreTraining

    before = torch.get_num_threads()
    torch.set_num_threads(1)  # a loop of small passes: threads on a shared machine only slow it
    yield BertForPreTraining.from_pretrained(bert_core.MINILM_DIR, dtype=torch.float32,
                                             attn_implementation="eager").eval()
    torch.set_num_threads(before)


def hf_answer(m, hf, text):
    """The question's numbers from HF: each last-layer head knocked out alone, the worst one, the guess without it."""
    enc = m.tokenizer.encode(text)
    pos = np.flatnonzero(enc.input_ids == m.tokenizer.mask_token_id).tolist()
    full = hf_logits(m, hf, text, pos).log_softmax(-1)  # (P, V)
    top = full.argmax(-1)
    L, nh = m.config.num_hidden_layers, m.config.num_attention_heads
    imp = np.full((L, nh), np.nan)
    for layer in (L - 1,):
        for head in range(nh):
            with knocked_out(hf, [(layer, head)]):
                lp = hf_logits(m, hf, text, pos).log_softmax(-1)
            imp[layer, head] = float((full[range(len(pos)), top] - lp[range(len(pos)), top]).mean())
    layer, head = np.unravel_index(np.nanargmax(imp), imp.shape)
    with knocked_out(hf, [(int(layer), int(head))]):
        p_without = hf_logits(m, hf, text, pos[:1]).softmax(-1)[0]  # (V,)
    p_full = full[0].exp()
    guess = m.tokenizer.id_to_token(int(top[0]))
    changed = int(p_without.argmax()) != int(top[0])
    less = float(p_without[top[0]]) < H.LESS_SURE * float(p_full[top[0]])
    return dict(layer=int(layer), head=int(head), imp=imp, guess=guess, p_full=float(p_full[top[0]]),
                p_without=float(p_without[top[0]]), answer=2 if changed else int(less),
                other=m.tokenizer.id_to_token(int(p_without.argmax())))


@pytest.mark.parametrize("text", ["She [MASK] the letter to her mother.", "The cat sat on the [MASK].",
                                  "The capital of France is [MASK]."])
def test_knockout_question_is_transformers_with_the_head_zeroed(m, hf, text):
    q = QUESTIONS["knockout_head"](m, text)
    want = hf_answer(m, hf, text)
    assert q.answer == want["answer"], (q.reveal, want)
    assert f"(layer {want['layer'] + 1}, head {want['head'] + 1})" in q.prompt and want["layer"] == 5
    assert f"“{want['guess']}” ({want['p_full']:.1%})" in q.prompt
    assert f"{want['p_full']:.1%} → {want['p_without']:.1%}" in q.reveal
    assert f"falls by {np.nanmax(want['imp']):.2f}" in q.reveal
    assert f"{int((np.abs(want['imp'][5]) < H.SMALL).sum())} of the 12 heads of that layer" in q.reveal
    if want["answer"] == 2:
        assert f"becomes “{want['other']}”" in q.reveal


def test_the_three_answers_all_occur(m):
    """The answer is read from the model, not fixed: different sentences give different ones."""
    answers = {QUESTIONS["knockout_head"](m, t).answer for t in
               ("She [MASK] the letter to her mother.", "The capital of France is [MASK].",
                "I drank a cup of [MASK] this morning.", "He opened the [MASK] and walked in.",
                "The [MASK] barked at the cat.")}
    assert len(answers) >= 2, answers


def test_knockout_question_needs_a_mask_and_a_head(m, tiny_dirs):
    with pytest.raises(bert_core.BertCoreError, match="MASK"):
        QUESTIONS["knockout_head"](m, "The cat sat on the mat.")
    base = bert_core.load_model(str(tiny_dirs["base"][0]))
    with pytest.raises(bert_core.BertCoreError, match="masked-language-model head"):
        QUESTIONS["knockout_head"](base, "The cat [MASK].")
