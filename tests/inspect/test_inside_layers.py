"""bert_core.inspect.inside_layers and .residual against transformers' BertLayer parts and cls head: fp32, 1e-5.

HF's submodules are called one by one on HF's own hidden states (the reference), ours through
`layer_steps` / `logit_lens` on the same weights loaded by our loader.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from support.checkpoints import write_tiny_checkpoint

import bert_core
from bert_core.inspect import inside_layers as il
from bert_core.inspect import residual

ATOL = 1e-5
TEXT, PAIR = "The cat [MASK] on the [MASK], playing.", "he went to the store and bought milk."


def close(ours, theirs, what, atol=ATOL):
    ours, theirs = torch.as_tensor(np.asarray(ours)), torch.as_tensor(theirs).detach()
    assert ours.shape == theirs.shape, f"{what}: shape {tuple(ours.shape)} != {tuple(theirs.shape)}"
    err = (ours - theirs).abs().max().item()
    assert err <= atol, f"{what}: max abs diff {err:.2e} > {atol}"


def hf_forward(hf, ids, types, mask=None):
    with torch.no_grad():
        return hf(input_ids=ids, token_type_ids=types, attention_mask=mask, output_hidden_states=True,
                  output_attentions=True)


def hf_layer_parts(hl, x, mask=None) -> dict[str, torch.Tensor]:
    """One HF BertLayer, part by part, on HF's own input x (B, T, H). mask: additive (B, 1, 1, T) or None."""
    sa = hl.attention.self
    B, T, H = x.shape
    nh, dk = sa.num_attention_heads, sa.attention_head_size
    with torch.no_grad():
        q, k, v = (lin(x).view(B, T, nh, dk).transpose(1, 2) for lin in (sa.query, sa.key, sa.value))
        scores = torch.matmul(q, k.transpose(2, 3)) * sa.scaling  # HF's eager_attention_forward
        if mask is not None:
            scores = scores + mask
        probs = scores.softmax(-1)
        context = sa(x, attention_mask=mask)[0]  # HF's module itself: (B, T, H)
        attn_out = hl.attention.output.dense(context)
        h1 = hl.attention.output(context, x)  # BertSelfOutput: LayerNorm(dense(ctx) + x)
        ffn_act = hl.intermediate(h1)
        ffn_out = hl.output.dense(ffn_act)
        out = hl.output(ffn_act, h1)  # BertOutput: LayerNorm(dense(act) + h1)
        whole = hl(x, attention_mask=mask)
    whole = whole[0] if isinstance(whole, tuple) else whole
    return dict(x=x, q=q, k=k, v=v, scores=scores, probs=probs, context=context, attn_out=attn_out, h1=h1,
                ffn_act=ffn_act, ffn_out=ffn_out, out=out, whole=whole)


def hf_encoder(hf):
    return hf.bert if hasattr(hf, "bert") else hf


def check_layer_steps(m, hf, text, pair):
    """Every field of layer_steps, every layer, against HF's parts; plus analyze's hidden states and maps."""
    t = bert_core.analyze(m, text, pair)
    ids, types = torch.from_numpy(t.input_ids)[None], torch.from_numpy(t.token_type_ids)[None]
    ref = hf_forward(hf, ids, types)
    for layer in range(m.config.num_hidden_layers):
        s = bert_core.layer_steps(m, text, layer, pair)
        theirs = hf_layer_parts(hf_encoder(hf).encoder.layer[layer], ref.hidden_states[layer])
        for name in il.STEP_NAMES:
            close(getattr(s, name), theirs[name][0], f"layer {layer} {name}")
        close(theirs["whole"][0], ref.hidden_states[layer + 1][0], f"layer {layer}: HF's parts = HF's layer")
        close(s.out, ref.hidden_states[layer + 1][0], f"layer {layer} out = HF hidden_states[layer+1]")
        close(s.probs, ref.attentions[layer][0], f"layer {layer} probs = HF attentions[layer]")
        # The explorer's own numbers agree too: the same x as analyze, the same maps.
        close(s.x, t.hidden_states[layer], f"layer {layer} x = analyze hidden_states[layer]")
        close(s.out, t.hidden_states[layer + 1], f"layer {layer} out = analyze hidden_states[layer+1]")
        close(s.probs, t.attentions[layer], f"layer {layer} probs = analyze attentions[layer]")
        T, H = s.x.shape
        nh = m.config.num_attention_heads
        assert s.q.shape == (nh, T, H // nh) and s.scores.shape == (nh, T, T)
        assert s.ffn_act.shape == (T, m.config.intermediate_size)
        assert s.tokens == t.tokens and s.d_k == H // nh


@pytest.mark.parametrize("kind", ["mlm", "pretraining", "base"])
def test_layer_steps_match_transformers_parts(tiny_dirs, kind):
    path, hf = tiny_dirs[kind]
    m = bert_core.load_model(str(path))
    check_layer_steps(m, hf, TEXT, PAIR)
    check_layer_steps(m, hf, "the dog sat on the mat.", None)


def test_layer_steps_match_transformers_on_a_deeper_relu_model(tmp_path):
    """Another activation, more heads, 3 layers: nothing is BERT-base specific."""
    hf = write_tiny_checkpoint(tmp_path, "mlm", seed=3, num_hidden_layers=3, num_attention_heads=8,
                               hidden_size=48, intermediate_size=50, hidden_act="relu")
    m = bert_core.load_model(str(tmp_path))
    check_layer_steps(m, hf, TEXT, PAIR)


def test_layer_steps_match_transformers_on_the_bundled_model():
    from transformers import BertForMaskedLM

    m = bert_core.load_model("bundled")
    hf = BertForMaskedLM.from_pretrained(bert_core.BUNDLED_DIR, attn_implementation="eager").eval()
    check_layer_steps(m, hf, "The cat [MASK] on the mat because it was tired.", "Then it [MASK] away.")
    lens = bert_core.logit_lens(m, "The cat [MASK] on the mat.")
    check_lens(m, hf, lens, "The cat [MASK] on the mat.", None, 5)


def test_block_steps_handle_padding_like_transformers(tiny_dirs):
    """A padded batch (a pair and a short sentence): the padding mask enters the scores as HF's does."""
    path, hf = tiny_dirs["mlm"]
    m = bert_core.load_model(str(path))
    a = m.tokenizer.encode("he went to the store.", "he bought milk and cafe au lait in paris.")
    b = m.tokenizer.encode("the dog sat.")
    T = len(a)
    ids, types, keep = (torch.zeros(2, T, dtype=torch.long) for _ in range(3))
    for row, e in enumerate((a, b)):
        ids[row, : len(e)] = torch.from_numpy(e.input_ids)
        types[row, : len(e)] = torch.from_numpy(e.token_type_ids)
        keep[row, : len(e)] = 1
    ref = hf_forward(hf, ids, types, keep)
    mask = torch.zeros(2, 1, 1, T).masked_fill(~keep[:, None, None, :].bool(), torch.finfo(torch.float32).min)
    real = keep.bool()
    for layer in range(m.config.num_hidden_layers):
        x = ref.hidden_states[layer]
        with torch.no_grad():
            ours = il.block_steps(m.model.bert.encoder.layer[layer], x, mask)
        theirs = hf_layer_parts(hf.bert.encoder.layer[layer], x, mask)
        for name in il.STEP_NAMES:
            close(ours[name], theirs[name], f"padded layer {layer} {name}")
        close(ours["probs"], ref.attentions[layer], f"padded layer {layer} probs = HF attentions")
        # Padding rows of `out` are not compared with HF's model (they are garbage there too); real rows are.
        close(ours["out"][real], ref.hidden_states[layer + 1][real], f"padded layer {layer} out")
        assert float(ours["probs"][1, :, :, len(b):].abs().max()) == 0.0  # padding gets no attention
    # And the unpadded pair through layer_steps gives the padded batch's real rows.
    s = bert_core.layer_steps(m, "he went to the store.", 1, "he bought milk and cafe au lait in paris.")
    close(s.out, ref.hidden_states[2][0], "layer_steps(pair) = padded batch row 0")


def check_lens(m, hf, lens, text, pair, top_k):
    """Each state's top-k = HF's cls head on HF's hidden_states[l]; the last state = analyze's predictions."""
    t = bert_core.analyze(m, text, pair, top_k=top_k)
    ref = hf_forward(hf, torch.from_numpy(t.input_ids)[None], torch.from_numpy(t.token_type_ids)[None])
    head = hf.cls if type(hf).__name__ == "BertForMaskedLM" else hf.cls.predictions
    L = m.config.num_hidden_layers
    assert lens.mask_positions == t.mask_positions and lens.mask_positions
    for pos in lens.mask_positions:
        states = lens.predictions[pos]
        assert len(states) == L + 1
        for layer, cands in enumerate(states):
            with torch.no_grad():
                probs = head(ref.hidden_states[layer][0, pos]).softmax(-1)  # (V,)
            p, ix = probs.topk(top_k)
            assert [tok for tok, _ in cands] == m.tokenizer.convert_ids_to_tokens(ix.tolist()), (pos, layer)
            close([q for _, q in cands], p, f"lens pos {pos} state {layer}")
            answer = m.tokenizer.vocab[lens.final_token[pos]]
            close(lens.final_prob[pos][layer], probs[answer], f"final prob pos {pos} state {layer}")
            assert lens.final_rank[pos][layer] == int((probs > probs[answer]).sum()) + 1
        assert [tok for tok, _ in states[-1]] == [tok for tok, _ in t.predictions[pos]]
        close([q for _, q in states[-1]], torch.tensor([q for _, q in t.predictions[pos]]), "last state = analyze")
        assert lens.final_token[pos] == t.predictions[pos][0][0] and lens.final_rank[pos][-1] == 1


@pytest.mark.parametrize("kind", ["mlm", "pretraining"])
def test_logit_lens_matches_transformers_cls_head(tiny_dirs, kind):
    path, hf = tiny_dirs[kind]
    m = bert_core.load_model(str(path))
    lens = bert_core.logit_lens(m, TEXT, PAIR, top_k=4)
    check_lens(m, hf, lens, TEXT, PAIR, 4)
    assert lens.skipped == 0


@pytest.mark.parametrize("kind", ["mlm", "pretraining"])
def test_residual_stream_reads_the_lens_from_its_own_forward_pass(tiny_dirs, kind):
    path, hf = tiny_dirs[kind]
    m = bert_core.load_model(str(path))
    r = bert_core.residual_stream(m, TEXT, PAIR, lens_top_k=4, pca=False)
    check_lens(m, hf, r.lens, TEXT, PAIR, 4)  # the same parity as logit_lens, one forward pass for both
    lens = bert_core.logit_lens(m, TEXT, PAIR, top_k=4)
    assert r.lens.predictions.keys() == lens.predictions.keys()
    for pos in lens.predictions:
        for mine, ref in zip(r.lens.predictions[pos], lens.predictions[pos]):
            assert [t for t, _ in mine] == [t for t, _ in ref]
            np.testing.assert_allclose([p for _, p in mine], [p for _, p in ref], atol=1e-6)
        np.testing.assert_array_equal(r.lens.final_rank[pos], lens.final_rank[pos])
    assert r.pca is None and r.pca_explained is None
    assert bert_core.residual_stream(m, TEXT, PAIR).lens is None  # lens_top_k=0: no lens


def test_logit_lens_caps_the_positions_it_reads(tiny_dirs):
    m = bert_core.load_model(str(tiny_dirs["mlm"][0]))
    text = " ".join(["[MASK]"] * 20)
    lens = bert_core.logit_lens(m, text, max_positions=3)
    assert lens.mask_positions == [1, 2, 3] and lens.skipped == 17
    assert any("first 3 of 20" in n for n in lens.notes)


def test_model_without_mlm_head_has_no_lens_but_has_the_rest(tiny_dirs):
    m = bert_core.load_model(str(tiny_dirs["base"][0]))
    with pytest.raises(bert_core.BertCoreError, match="no masked-language-model head"):
        bert_core.logit_lens(m, TEXT)
    r = bert_core.residual_stream(m, TEXT, lens_top_k=5)
    assert r.pooled is not None and r.lens is None  # HF's BertModel has a pooler


def test_residual_stream_matches_transformers(tiny_dirs):
    path, hf = tiny_dirs["pretraining"]
    m = bert_core.load_model(str(path))
    r = bert_core.residual_stream(m, TEXT, PAIR)
    t = bert_core.analyze(m, TEXT, PAIR)
    ref = hf_forward(hf, torch.from_numpy(t.input_ids)[None], torch.from_numpy(t.token_type_ids)[None])
    h = torch.stack(ref.hidden_states)[:, 0]  # (L+1, T, H)
    L1, T, H = h.shape
    close(r.norms, h.norm(dim=-1), "norms")
    # Plain loops for the similarities and update sizes.
    for layer in range(L1):
        for i in range(T):
            for j in (0, i, T - 1):
                c = float(h[layer, i] @ h[layer, j] / (h[layer, i].norm() * h[layer, j].norm()))
                assert abs(r.token_similarity[layer, i, j] - c) < ATOL
            if layer:
                c = float(h[layer, i] @ h[layer - 1, i] / (h[layer, i].norm() * h[layer - 1, i].norm()))
                assert abs(r.self_similarity[layer - 1, i] - c) < ATOL
    for layer in range(L1 - 1):
        parts = hf_layer_parts(hf.bert.encoder.layer[layer], ref.hidden_states[layer])
        close(r.attn_update[layer], parts["attn_out"][0].norm(dim=-1) / parts["x"][0].norm(dim=-1), "attn update")
        close(r.ffn_update[layer], parts["ffn_out"][0].norm(dim=-1) / parts["h1"][0].norm(dim=-1), "ffn update")
    close(r.cls, h[-1, 0], "[CLS] vector")
    with torch.no_grad():
        close(r.pooled, hf.bert.pooler(ref.hidden_states[-1])[0], "pooler output")
    # PCA: coordinates are the centred points on orthonormal axes; the first axis holds the most variance.
    flat = h.reshape(-1, H).double().numpy()
    coords = r.pca.reshape(-1, 2).astype(np.float64)
    centred = flat - flat.mean(0)
    _, sv, vt = np.linalg.svd(centred, full_matrices=False)
    np.testing.assert_allclose(np.abs(coords), np.abs(centred @ vt[:2].T), atol=1e-4)
    np.testing.assert_allclose(r.pca_explained, (sv[:2] ** 2) / (sv**2).sum(), atol=1e-5)
    assert r.pca.shape == (L1, T, 2) and r.attn_update.shape == (L1 - 1, T)


def test_pca_2d_worked_example():
    pts = np.array([[0.0, 0.0], [1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    coords, explained = residual.pca_2d(pts)
    np.testing.assert_allclose(explained, [1.0, 0.0], atol=1e-6)
    np.testing.assert_allclose(coords[:, 0], (np.arange(4) - 1.5) * np.sqrt(5), atol=1e-5)
    assert coords[-1, 0] > 0  # sign fixed: the largest loading is positive


@pytest.mark.parametrize("n, h", [(12, 40), (40, 12)])
def test_pca_2d_both_ways_match_svd(n, h):
    """Fewer points than dimensions (the N x N route) and more (the H x H route): the SVD's axes and shares."""
    pts = np.random.default_rng(n).standard_normal((n, h)) * np.linspace(3, 0.1, h)
    coords, explained = residual.pca_2d(pts)
    centred = pts - pts.mean(0)
    _, sv, vt = np.linalg.svd(centred, full_matrices=False)
    np.testing.assert_allclose(np.abs(coords), np.abs(centred @ vt[:2].T), atol=1e-5)
    np.testing.assert_allclose(explained, (sv[:2] ** 2) / (sv**2).sum(), atol=1e-6)
    same, none = residual.pca_2d(np.ones((3, h)))
    assert not same.any() and not none.any()


def test_same_word_two_contexts(tiny_dirs):
    path, hf = tiny_dirs["mlm"]
    m = bert_core.load_model(str(path))
    sw = bert_core.same_word(m, "the cat sat on the mat.", "he went to the store.")
    assert [w.word for w in sw.words] == ["the"]
    w = sw.words[0]
    assert [sw.tokens[p] for p in w.first + w.second] == ["the", "the"]
    t = bert_core.analyze(m, "the cat sat on the mat.", "he went to the store.")
    h = torch.from_numpy(t.hidden_states)
    ref = [float(torch.cosine_similarity(h[layer, w.first[0]], h[layer, w.second[0]], dim=0))
           for layer in range(h.shape[0])]
    close(w.cos, torch.tensor(ref), "same-word cosine")
    # A word of several pieces is the mean of its pieces; no repeated word -> no entries.
    occ = residual.word_occurrences(["[CLS]", "play", "##ing", ",", "play", "##ing", "[SEP]"],
                                    [None, 0, 0, 0, 0, 0, None], [None, 0, 0, 1, 2, 2, None])
    assert occ == {"playing": [[1, 2], [4, 5]]}
    assert bert_core.same_word(m, "the cat sat.", "he went.").words == []


def test_shared_block_reused_for_every_layer(tiny_dirs):
    """ALBERT-style: one block object for every layer. Layer n is the block's n-th call."""
    m = bert_core.load_model(str(tiny_dirs["mlm"][0]))
    enc = m.model.bert.encoder
    block = enc.layer[0]
    enc.layer = torch.nn.ModuleList([block] * m.config.num_hidden_layers)
    t = bert_core.analyze(m, TEXT)
    for layer in range(m.config.num_hidden_layers):
        s = bert_core.layer_steps(m, TEXT, layer)
        close(s.x, t.hidden_states[layer], f"shared block: x of layer {layer}")
        close(s.out, t.hidden_states[layer + 1], f"shared block: out of layer {layer}")
    r = bert_core.residual_stream(m, TEXT)
    close(r.norms, np.linalg.norm(t.hidden_states, axis=-1), "shared block: norms")


def test_bad_layer_is_a_clear_error(tiny_dirs):
    m = bert_core.load_model(str(tiny_dirs["mlm"][0]))
    for bad in (-1, m.config.num_hidden_layers, "1", 1.5):
        with pytest.raises(bert_core.BertCoreError, match="layer must be between"):
            bert_core.layer_steps(m, TEXT, bad)
    with pytest.raises(bert_core.BertCoreError, match="empty"):
        bert_core.layer_steps(m, "   ", 0)


def test_follow_token_slices_are_the_steps(tiny_dirs):
    """The Inside-a-layer page's numbers: q·k / sqrt(d_k) = the scores row, weights @ v = the head's context."""
    m = bert_core.load_model(str(tiny_dirs["mlm"][0]))
    s = bert_core.layer_steps(m, TEXT, 1, PAIR)
    nh, T, dk = s.q.shape
    for head in range(nh):
        for tok in (0, 3, T - 1):
            p = il.follow_token(s, head, tok, n_neurons=5)
            np.testing.assert_allclose(p.dots / np.sqrt(dk), s.scores[head, tok], atol=ATOL)
            np.testing.assert_allclose(p.weights, s.probs[head, tok])
            np.testing.assert_allclose(p.weights @ p.values, p.head_context, atol=ATOL)
            assert list(p.ffn_act[p.top_neurons]) == sorted(s.ffn_act[tok], reverse=True)[:5]
            np.testing.assert_allclose(p.out, s.out[tok])
            # The two LayerNorms, recomputed by hand from the sums the page shows.
            blk = m.model.bert.encoder.layer[1]
            for resid, ln, after in ((p.resid1, blk.attention.output.LayerNorm, p.h1),
                                     (p.resid2, blk.output.LayerNorm, p.out)):
                z = (resid - resid.mean()) / np.sqrt(resid.var() + ln.eps)
                np.testing.assert_allclose(z * ln.weight.detach().numpy() + ln.bias.detach().numpy(), after,
                                           atol=ATOL)
    with pytest.raises(bert_core.BertCoreError):
        il.follow_token(s, nh, 0)
