"""Tagging and QA heads against transformers' *ForTokenClassification / *ForQuestionAnswering, every family."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from support.family import write_family_checkpoint
from support.heads import LABELS, hf_head_folder

import bert_core
from bert_core.inspect.token_tasks import best_spans
from bert_core.model.loaded import LoadedModel
from bert_core.model.token_heads_io import new_token_model, save_token_model

FAMILIES = ["bert", "roberta", "distilbert", "albert"]
QUESTION = "Where is the cat?"
CONTEXT = "The cat sat on the mat."  # question and context fit the families' 40 positions




@pytest.mark.parametrize("family", FAMILIES)
def test_tag_matches_transformers(tmp_path, family):
    path, hf, hf_tok = hf_head_folder(tmp_path, family, "token")
    m = bert_core.load_model(path)
    r = bert_core.tag(m, "The cat sat on the mat.", "She sent the letter.")
    enc = m.tokenizer.encode("The cat sat on the mat.", "She sent the letter.")  # the same ids into both models
    with torch.no_grad():
        logits = hf(input_ids=torch.as_tensor(enc.input_ids)[None],
                    token_type_ids=torch.as_tensor(enc.token_type_ids)[None]).logits[0]
    if family == "bert":  # and our tokenizer is transformers' on this pair
        assert enc.input_ids.tolist() == hf_tok("The cat sat on the mat.", "She sent the letter.")["input_ids"]
    np.testing.assert_allclose(r.probs, torch.softmax(logits, -1).numpy(), atol=1e-5)
    assert r.label_names == LABELS
    assert r.labels == [LABELS[i] for i in logits.argmax(-1).tolist()]
    assert len(r.tokens) == logits.shape[0]
    with pytest.raises(bert_core.BertCoreError, match="question-answering"):
        bert_core.answer(m, QUESTION, CONTEXT)


@pytest.mark.parametrize("family", FAMILIES)
def test_answer_matches_transformers_and_a_brute_force_search(tmp_path, family):
    path, hf, hf_tok = hf_head_folder(tmp_path, family, "qa")
    m = bert_core.load_model(path)
    a = bert_core.answer(m, QUESTION, CONTEXT, top_k=5, max_answer_tokens=4)
    enc = m.tokenizer.encode(QUESTION, CONTEXT)  # the same ids into both models
    offsets = enc.offsets
    with torch.no_grad():
        out = hf(input_ids=torch.as_tensor(enc.input_ids)[None],
                 token_type_ids=torch.as_tensor(enc.token_type_ids)[None])
    np.testing.assert_allclose(a.start_logits, out.start_logits[0].numpy(), atol=1e-5)
    np.testing.assert_allclose(a.end_logits, out.end_logits[0].numpy(), atol=1e-5)
    assert a.windows == 1
    # Brute force over every (s, e) of context tokens, e >= s, at most 4 tokens long.
    ps = torch.softmax(out.start_logits[0].double(), -1).numpy()
    pe = torch.softmax(out.end_logits[0].double(), -1).numpy()
    ctx = [i for i, s in enumerate(enc.sequence_ids) if s == 1]
    brute = sorted(((ps[s] * pe[e], s, e) for s in ctx for e in ctx if s <= e < s + 4), key=lambda x: -x[0])[:5]
    assert [x[3] for x in a.spans] == pytest.approx([b[0] for b in brute], abs=1e-7)
    for (text, c0, c1, _), (_, s, e) in zip(a.spans, brute):
        assert text == CONTEXT[c0:c1]
        assert (c0, c1) == (offsets[s][0], offsets[e][1])
    with pytest.raises(bert_core.BertCoreError, match="token-classification"):
        bert_core.tag(m, CONTEXT)


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("kind", ["token", "qa"])
def test_a_new_head_exports_what_transformers_loads(tmp_path, family, kind):
    import transformers as T

    base_dir = tmp_path / "base"
    if family == "bert":
        from support.checkpoints import write_tiny_checkpoint

        write_tiny_checkpoint(base_dir, "pretraining")  # with a pooler and both heads: dropped for these models
    else:
        write_family_checkpoint(base_dir, family, "mlm")
    base = bert_core.load_model(base_dir)
    model = new_token_model(base, kind, LABELS[:3] if kind == "token" else None, seed=3)
    out = save_token_model(LoadedModel(model, base.tokenizer, "new", "session"), tmp_path / "out")
    cls = T.AutoModelForTokenClassification if kind == "token" else T.AutoModelForQuestionAnswering
    hf, info = cls.from_pretrained(out, output_loading_info=True, attn_implementation="eager")
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    ids = torch.as_tensor(base.tokenizer.encode("The cat sat on the mat.").input_ids)[None]
    with torch.no_grad():
        theirs = hf.eval()(input_ids=ids)
        ours = model.logits(ids)
    if kind == "token":
        np.testing.assert_allclose(ours.numpy(), theirs.logits.numpy(), atol=1e-5)
        assert hf.config.id2label == dict(enumerate(LABELS[:3]))
    else:
        np.testing.assert_allclose(ours[0].numpy(), theirs.start_logits.numpy(), atol=1e-5)
        np.testing.assert_allclose(ours[1].numpy(), theirs.end_logits.numpy(), atol=1e-5)
    again = bert_core.load_model(out)  # and our loader reads it back as the same kind of model
    assert type(again.model) is type(model)


def test_a_long_context_is_read_in_windows(tmp_path):
    path, _, _ = hf_head_folder(tmp_path, "bert", "qa")
    m = bert_core.load_model(path)  # 64 positions
    context = " ".join(["The cat sat on the mat and she sent the letter to her mother."] * 12)
    a = bert_core.answer(m, QUESTION, context, top_k=3)
    assert a.windows > 1 and "windows" in a.notes[0]
    for text, c0, c1, score in a.spans:
        assert text == context[c0:c1] and text.strip() and 0 < score <= 1
    assert [s[3] for s in a.spans] == sorted((s[3] for s in a.spans), reverse=True)


def test_best_spans_respects_the_rules():
    rng = np.random.default_rng(0)
    s, e = rng.normal(size=10), rng.normal(size=10)
    ctx = np.array([False] * 3 + [True] * 6 + [False])
    for i, j, _ in best_spans(s, e, ctx, top_k=50, max_answer_tokens=3):
        assert ctx[i] and ctx[j] and i <= j < i + 3
    assert best_spans(s, e, np.zeros(10, bool), 3, 3) == []
