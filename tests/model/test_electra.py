"""ELECTRA checkpoints (transformers' ElectraForPreTraining / ElectraForMaskedLM) through our loader, at 1e-5."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from support.checkpoints import VOCAB, save_perturbed

import bert_core


def write_electra_checkpoint(path, kind="discriminator", seed=0, embedding_size=16, hidden_size=32):
    """A random HF ELECTRA discriminator or generator (biases and LayerNorms perturbed) with a WordPiece tokenizer."""
    from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

    torch.manual_seed(seed)
    cfg = ElectraConfig(vocab_size=len(VOCAB) + 3, embedding_size=embedding_size, hidden_size=hidden_size,
                        num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, max_position_embeddings=64,
                        hidden_act="gelu_new" if kind == "discriminator" else "gelu", attn_implementation="eager")
    return save_perturbed((ElectraForPreTraining if kind == "discriminator" else ElectraForMaskedLM)(cfg).eval(), path)


@pytest.mark.parametrize("embedding_size", [16, 32])  # E < H: embeddings_project; E == H: none
def test_discriminator_matches_electra_for_pretraining(tmp_path, embedding_size):
    hf = write_electra_checkpoint(tmp_path, "discriminator", embedding_size=embedding_size)
    m = bert_core.load_model(tmp_path)
    assert m.family == "electra" and m.model.has_rtd and not m.has_mlm
    assert (m.model.bert.encoder.embeddings_project is None) == (embedding_size == 32)
    r = bert_core.replaced_token_probs(m, "the cat sat on the mat", "she went to the store")
    enc = m.tokenizer.encode("the cat sat on the mat", "she went to the store")
    ids, types = torch.as_tensor(enc.input_ids)[None], torch.as_tensor(enc.token_type_ids)[None]
    with torch.no_grad():
        out = hf(input_ids=ids, token_type_ids=types, output_hidden_states=True)
        ours = m.model.bert(ids, types, trace=True)
    for a, b in zip(ours.hidden_states, out.hidden_states):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-5)
    assert r.tokens == enc.tokens and r.probs.shape == (len(enc.tokens),)
    np.testing.assert_allclose(r.probs, torch.sigmoid(out.logits[0]).numpy(), atol=1e-5)
    np.testing.assert_allclose(r.logits, out.logits[0].numpy(), atol=1e-5)


def test_generator_matches_electra_for_masked_lm(tmp_path):
    hf = write_electra_checkpoint(tmp_path, "generator")
    m = bert_core.load_model(tmp_path)
    assert m.family == "electra" and m.has_mlm and not m.model.has_rtd
    t = bert_core.analyze(m, "the cat [MASK] on the mat")
    ids = torch.as_tensor(m.tokenizer.encode("the cat [MASK] on the mat").input_ids)[None]
    with torch.no_grad():
        theirs = hf(input_ids=ids).logits[0]
        ours = m.model.mlm_logits(m.model.bert(ids))[0]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-5)
    pos = next(iter(t.predictions))
    best = m.tokenizer.id_to_token(int(theirs[pos].argmax()))
    assert t.predictions[pos][0][0] == best
    with pytest.raises(bert_core.BertCoreError, match="replaced-token"):
        bert_core.replaced_token_probs(m, "the cat sat")


@pytest.mark.parametrize("kind", ["discriminator", "generator"])
def test_electra_round_trip_saves_what_transformers_loads(tmp_path, kind):
    from transformers import ElectraForMaskedLM, ElectraForPreTraining

    hf = write_electra_checkpoint(tmp_path / "src", kind)
    m = bert_core.load_model(tmp_path / "src")
    bert_core.save_pretrained(m.model, m.tokenizer, tmp_path / "out")
    cls = ElectraForPreTraining if kind == "discriminator" else ElectraForMaskedLM
    back, info = cls.from_pretrained(tmp_path / "out", output_loading_info=True, attn_implementation="eager")
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    ids = torch.as_tensor(m.tokenizer.encode("he bought milk").input_ids)[None]
    with torch.no_grad():
        np.testing.assert_allclose(back.eval()(input_ids=ids).logits.numpy(), hf(input_ids=ids).logits.numpy(),
                                   atol=1e-5)


def test_a_bert_has_no_replaced_token_head(tiny_dirs):
    m = bert_core.load_model(tiny_dirs["mlm"][0])
    with pytest.raises(bert_core.BertCoreError, match="replaced-token"):
        bert_core.replaced_token_probs(m, "the cat sat")
