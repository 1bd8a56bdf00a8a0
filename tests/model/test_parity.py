"""Our encoder against transformers' eager BERT: same weights, fp32, every intermediate within 1e-5."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import bert_core

ATOL = 1e-5


def hf_forward(hf_model, ids, types, mask=None):
    """Run the HF model with every intermediate returned."""
    with torch.no_grad():
        return hf_model(input_ids=ids, token_type_ids=types, attention_mask=mask,
                        output_hidden_states=True, output_attentions=True)


def assert_close(ours, theirs, what):
    ours, theirs = torch.as_tensor(ours), torch.as_tensor(theirs)
    assert ours.shape == theirs.shape, f"{what}: shape {tuple(ours.shape)} != {tuple(theirs.shape)}"
    err = (ours - theirs).abs().max().item()
    assert err <= ATOL, f"{what}: max abs diff {err:.2e} > {ATOL}"


def compare_batch(m, hf, ids, types, mask, kind):
    out = hf_forward(hf, ids, types, mask)
    with torch.no_grad():
        tr = m.model(ids, types, mask, trace=True)
    assert len(tr.hidden_states) == len(out.hidden_states) == m.config.num_hidden_layers + 1
    for i, (a, b) in enumerate(zip(tr.hidden_states, out.hidden_states)):
        assert_close(a, b, f"hidden state {i}")
    assert len(tr.attentions) == len(out.attentions) == m.config.num_hidden_layers
    for i, (a, b) in enumerate(zip(tr.attentions, out.attentions)):
        assert_close(a, b, f"attention {i}")
    if kind == "pretraining":
        assert_close(m.model.mlm_logits(tr.hidden_states[-1]), out.prediction_logits, "MLM logits")
        assert_close(m.model.nsp_logits(tr.pooled), out.seq_relationship_logits, "NSP logits")
    elif kind == "mlm":
        assert_close(m.model.mlm_logits(tr.hidden_states[-1]), out.logits, "MLM logits")
    else:
        assert_close(tr.pooled, out.pooler_output, "pooler output")
    return tr


@pytest.mark.parametrize("kind", ["pretraining", "mlm", "base"])
def test_single_sentence_matches_transformers(tiny_dirs, kind):
    path, hf = tiny_dirs[kind]
    m = bert_core.load_model(str(path))
    assert (m.has_mlm, m.has_nsp) == {"pretraining": (True, True), "mlm": (True, False), "base": (False, False)}[kind]
    enc = m.tokenizer.encode("The cat sat on the mat, playing.")
    ids = torch.from_numpy(enc.input_ids)[None]
    types = torch.from_numpy(enc.token_type_ids)[None]
    tr = compare_batch(m, hf, ids, types, None, kind)
    # The embedding parts the Embeddings page shows, against HF's own modules.
    emb = hf.bert.embeddings if kind != "base" else hf.embeddings
    T = ids.shape[1]
    assert_close(tr.word, emb.word_embeddings(ids), "word embeddings")
    assert_close(tr.position, emb.position_embeddings(torch.arange(T))[None], "position embeddings")
    assert_close(tr.segment, emb.token_type_embeddings(types), "segment embeddings")
    assert_close(emb.LayerNorm(tr.sum), tr.hidden_states[0], "LayerNorm(sum)")


@pytest.mark.parametrize("kind", ["pretraining", "mlm", "base"])
def test_padded_batch_and_sentence_pair_match_transformers(tiny_dirs, kind):
    path, hf = tiny_dirs[kind]
    m = bert_core.load_model(str(path))
    a = m.tokenizer.encode("he went to the store.", "he bought milk and cafe au lait in paris.")
    b = m.tokenizer.encode("the dog sat.")
    assert set(a.token_type_ids.tolist()) == {0, 1}
    T = len(a)
    ids = torch.zeros(2, T, dtype=torch.long)  # [PAD] = 0
    types = torch.zeros(2, T, dtype=torch.long)
    mask = torch.zeros(2, T, dtype=torch.long)
    for row, e in enumerate((a, b)):
        ids[row, : len(e)] = torch.from_numpy(e.input_ids)
        types[row, : len(e)] = torch.from_numpy(e.token_type_ids)
        mask[row, : len(e)] = 1
    tr = compare_batch(m, hf, ids, types, mask, kind)
    # Padding receives no attention at all.
    assert float(tr.attentions[0][1, :, :, len(b):].abs().max()) == 0.0


def test_analyze_returns_what_the_model_computes(tiny_dirs):
    path, hf = tiny_dirs["pretraining"]
    m = bert_core.load_model(str(path))
    t = bert_core.analyze(m, "The cat [MASK] on the [MASK].", "he went to the store.", top_k=3)
    out = hf_forward(hf, torch.from_numpy(t.input_ids)[None], torch.from_numpy(t.token_type_ids)[None])
    L, nh = m.config.num_hidden_layers, m.config.num_attention_heads
    T = len(t.tokens)
    assert t.hidden_states.shape == (L + 1, T, m.config.hidden_size)
    assert t.attentions.shape == (L, nh, T, T)
    np.testing.assert_allclose(t.attentions.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(t.hidden_states, torch.stack(out.hidden_states)[:, 0].numpy(), atol=ATOL)
    np.testing.assert_allclose(t.embeddings.normed, t.hidden_states[0])
    np.testing.assert_allclose(t.embeddings.sum, t.embeddings.word + t.embeddings.segment + t.embeddings.position,
                               atol=1e-6)
    masks = [i for i, tok in enumerate(t.tokens) if tok == "[MASK]"]
    assert t.mask_positions == masks and len(masks) == 2
    probs = out.prediction_logits[0].softmax(-1)
    for pos in masks:
        p, ix = probs[pos].topk(3)
        assert [tok for tok, _ in t.predictions[pos]] == m.tokenizer.convert_ids_to_tokens(ix.tolist())
        np.testing.assert_allclose([q for _, q in t.predictions[pos]], p.numpy(), atol=1e-6)
    nsp = out.seq_relationship_logits[0].softmax(-1).numpy()
    np.testing.assert_allclose(t.nsp, nsp, atol=1e-6)


def test_missing_heads_are_reported_not_invented(tiny_dirs):
    base = bert_core.load_model(str(tiny_dirs["base"][0]))
    t = bert_core.analyze(base, "the [MASK] sat.")
    assert t.predictions == {} and t.nsp is None
    assert any("no masked-language-model head" in n for n in t.notes)
    mlm = bert_core.load_model(str(tiny_dirs["mlm"][0]))
    t = bert_core.analyze(mlm, "the [MASK] sat.", "he went.")
    assert len(t.predictions) == 1 and t.nsp is None
    assert any("next-sentence" in n for n in t.notes)


@pytest.mark.parametrize("kind", ["pretraining", "mlm", "base"])
def test_save_pretrained_round_trip_loads_in_transformers(tiny_dirs, tmp_path, kind):
    """What we save, HF loads to the same numbers (and so do we)."""
    from transformers import AutoModel, BertForMaskedLM, BertForPreTraining

    m = bert_core.load_model(str(tiny_dirs[kind][0]))
    bert_core.save_pretrained(m.model, m.tokenizer, tmp_path)
    again = bert_core.load_model(str(tmp_path))
    cls = {"pretraining": BertForPreTraining, "mlm": BertForMaskedLM, "base": AutoModel}[kind]
    hf = cls.from_pretrained(tmp_path, attn_implementation="eager").eval()
    ids = torch.from_numpy(m.tokenizer.encode("the cat sat.").input_ids)[None]
    compare_batch(again, hf, ids, torch.zeros_like(ids), None, kind)


def test_fused_qkv_cache_follows_weight_changes(tiny_dirs):
    """The inference-time [W_q; W_k; W_v] cache is rebuilt when a weight changes in place."""
    path = str(tiny_dirs["pretraining"][0])
    m, fresh = bert_core.load_model(path), bert_core.load_model(path)
    before = bert_core.analyze(m, "the cat sat.")
    for model in (m.model, fresh.model):
        with torch.no_grad():
            model.bert.encoder.layer[0].attention.self.query.weight.mul_(3.0)
    after, expected = bert_core.analyze(m, "the cat sat."), bert_core.analyze(fresh, "the cat sat.")
    assert not np.allclose(before.attentions, after.attentions)
    np.testing.assert_array_equal(after.attentions, expected.attentions)
