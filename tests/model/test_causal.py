"""The causal mask (GPT's) inside BERT's layers, and greedy generation, against transformers' BertLMHeadModel."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from support.checkpoints import VOCAB, save_perturbed

import bert_core


def write_causal_checkpoint(path, seed=0):
    """A random BertLMHeadModel (is_decoder: true), biases and LayerNorms perturbed, with a tokenizer."""
    from transformers import BertConfig, BertLMHeadModel

    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=len(VOCAB) + 3, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=37, max_position_embeddings=64, is_decoder=True, attn_implementation="eager")
    return save_perturbed(BertLMHeadModel(cfg).eval(), path)


@pytest.fixture(scope="module")
def causal(tmp_path_factory):
    d = tmp_path_factory.mktemp("causal")
    return d, write_causal_checkpoint(d)


def test_causal_hidden_states_and_logits_match_transformers(causal):
    path, hf = causal
    m = bert_core.load_model(path)
    assert m.config.is_decoder and m.has_mlm
    ids = torch.as_tensor(m.tokenizer.encode("the cat sat on the mat").input_ids)[None]
    with torch.no_grad():
        theirs = hf(input_ids=ids, output_hidden_states=True)
        ours = m.model.bert(ids, trace=True)
    for h_ours, h_theirs in zip(ours.hidden_states, theirs.hidden_states):
        np.testing.assert_allclose(h_ours.numpy(), h_theirs.numpy(), atol=1e-5)
    with torch.no_grad():
        logits = m.model.mlm_logits(ours.hidden_states[-1])
    np.testing.assert_allclose(logits.numpy(), theirs.logits.numpy(), atol=1e-5)
    # Causal: no position sees the future, so changing the last token changes nothing before it.
    other = ids.clone()
    other[0, -1] = (other[0, -1] + 1) % m.config.vocab_size
    with torch.no_grad():
        h2 = m.model.bert(other)
    np.testing.assert_allclose(h2[0, :-1].numpy(), ours.hidden_states[-1][0, :-1].numpy(), atol=1e-6)
    assert all(float(a[0, :, i, i + 1:].abs().max()) == 0.0 for a in ours.attentions for i in range(ids.shape[1] - 1))


def test_a_bidirectional_model_sees_both_sides(tiny_dirs):
    m = bert_core.load_model(tiny_dirs["mlm"][0])
    assert not m.config.is_decoder
    ids = torch.as_tensor(m.tokenizer.encode("the cat sat on the mat").input_ids)[None]
    other = ids.clone()
    other[0, -2] = (other[0, -2] + 1) % m.config.vocab_size
    with torch.no_grad():
        assert not torch.allclose(m.model.bert(ids)[0, 0], m.model.bert(other)[0, 0])
    with pytest.raises(bert_core.BertCoreError, match="bidirectional"):
        bert_core.generate(m, "the cat")


def test_greedy_generation_matches_transformers_generate(causal):
    path, hf = causal
    m = bert_core.load_model(path)
    g = bert_core.generate(m, "the cat sat", max_new_tokens=12)
    ids = torch.as_tensor([g.prompt_ids])
    assert g.prompt_ids == m.tokenizer.encode("the cat sat").input_ids[:-1].tolist()  # [CLS] + pieces, no [SEP]
    with torch.no_grad():
        out = hf.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=12, do_sample=False,
                          eos_token_id=m.tokenizer.sep_token_id, pad_token_id=0)
    assert g.new_ids == out[0, ids.shape[1]:].tolist()
    # Each step's probability is the softmax of that step's logits at the chosen token.
    seq = g.prompt_ids + g.new_ids
    with torch.no_grad():
        logits = hf(input_ids=torch.as_tensor([seq])).logits[0]
    for k, (tok, p) in enumerate(g.steps):
        row = torch.softmax(logits[len(g.prompt_ids) - 1 + k].double(), -1)
        assert p == pytest.approx(float(row.max()), abs=1e-5)
        assert tok == m.tokenizer.id_to_token(g.new_ids[k])


def test_sampling_is_seeded_and_respects_top_k(causal):
    path, _ = causal
    m = bert_core.load_model(path)
    a = bert_core.generate(m, "the cat", 8, strategy="sample", top_k=3, temperature=0.7, seed=5)
    b = bert_core.generate(m, "the cat", 8, strategy="sample", top_k=3, temperature=0.7, seed=5)
    assert a.new_ids == b.new_ids
    seq = a.prompt_ids
    for tok in a.new_ids:  # every sampled token is among the 3 most likely at its step
        with torch.no_grad():
            logits = m.model.mlm_logits(m.model.bert(torch.as_tensor([seq]))[0, -1])
        assert tok in torch.topk(logits, 3).indices.tolist()
        seq = seq + [tok]
    for bad in (dict(strategy="beam"), dict(temperature=0), dict(top_k=0), dict(max_new_tokens=0)):
        with pytest.raises(bert_core.BertCoreError):
            bert_core.generate(m, "the cat", **{"max_new_tokens": 3, **bad})


def test_the_causal_switch_runs_a_bert_as_transformers_does_with_is_decoder(tiny_dirs):
    """encoder(causal=True) on a bidirectional checkpoint = transformers' BertModel of the same weights with
    is_decoder=True; mask_comparison (the BERT vs GPT page) draws exactly these maps."""
    from transformers import BertModel

    from bert_core.inspect.objectives_view import mask_comparison

    path = tiny_dirs["mlm"][0]
    m = bert_core.load_model(path)
    hf = BertModel.from_pretrained(path, is_decoder=True, attn_implementation="eager").eval()
    ids = torch.as_tensor(m.tokenizer.encode("the cat sat on the mat").input_ids)[None]
    with torch.no_grad():
        theirs = hf(input_ids=ids, output_hidden_states=True, output_attentions=True)
        ours = m.model.bert(ids, trace=True, causal=True)
    for a, b in zip(ours.hidden_states, theirs.hidden_states):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5)
    mc = mask_comparison(m, "the cat sat on the mat")
    for k, a in enumerate(theirs.attentions):
        np.testing.assert_allclose(mc.attn_causal[k], a[0].numpy(), atol=1e-5)
    with torch.no_grad():
        bi = m.model.bert(ids, trace=True)  # the config's own (bidirectional) mask is untouched
    np.testing.assert_allclose(mc.attn_bidirectional, torch.stack([a[0] for a in bi.attentions]).numpy(), atol=1e-6)
    assert not m.config.is_decoder


def test_a_causal_model_guesses_a_mask_from_its_left(causal):
    """analyze reads a causal model's [MASK] at p from position p - 1 (transformers' logits there)."""
    path, hf = causal
    m = bert_core.load_model(path)
    text = "the cat [MASK] on the mat"
    ids = torch.as_tensor(m.tokenizer.encode(text).input_ids)[None]
    p = int((ids[0] == m.tokenizer.mask_token_id).nonzero()[0])
    with torch.no_grad():
        want = torch.softmax(hf(input_ids=ids).logits[0, p - 1].double(), -1)
    top = want.topk(5)
    expected = [(m.tokenizer.id_to_token(int(i)), float(v)) for v, i in zip(top.values, top.indices)]
    got = bert_core.analyze(m, text).predictions[p]
    assert [t for t, _ in got] == [t for t, _ in expected]
    np.testing.assert_allclose([q for _, q in got], [q for _, q in expected], atol=1e-5)
    assert any("left-to-right" in n for n in bert_core.analyze(m, text).notes)
