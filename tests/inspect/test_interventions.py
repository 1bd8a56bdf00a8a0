"""Knock-out, head importance, pruning and activation patching against transformers with forward hooks.

The reference is HF's eager BERT on the same weights: a knocked-out head is a forward pre-hook on
`attention.output.dense` that zeroes the head's slice of the context; a patch is a forward hook on the
embeddings or on `encoder.layer[l-1]` that puts the clean run's vector at one position. Each variant is
run on its own (a plain loop), ours in batched passes; fp32, 1e-5. Random tiny checkpoints, and the
bundled MiniLM.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from support.checkpoints import write_tiny_checkpoint
from support.hooks import hf_logits, knocked_out, patched

import bert_core
from bert_core.inspect import interventions

ATOL = 1e-5


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A random 3-layer, 4-head BertForPreTraining (MLM + NSP) and its HF twin; weights 10x the usual init, so
    knocking out a head moves the guess by more than rounding does."""
    d = tmp_path_factory.mktemp("knock-tiny")
    hf = write_tiny_checkpoint(d, "pretraining", seed=3, num_hidden_layers=3, initializer_range=0.2)
    return bert_core.load_model(str(d)), hf


@pytest.fixture(scope="module")
def minilm():
    from transformers import BertForPreTraining

    m = bert_core.load_model("bundled-minilm")
    hf = BertForPreTraining.from_pretrained(bert_core.MINILM_DIR, dtype=torch.float32,
                                            attn_implementation="eager").eval()
    return m, hf


def hf_run(m, hf, text, pair=None, everything=True):
    """HF's pass over our tokenization of the text: (encoding, output); `everything`: hidden states and maps too."""
    enc = m.tokenizer.encode(text, pair)
    ids = torch.from_numpy(enc.input_ids)[None]
    types = torch.from_numpy(enc.token_type_ids)[None]
    with torch.inference_mode():
        out = hf(input_ids=ids, token_type_ids=types, output_hidden_states=everything, output_attentions=everything)
    return enc, out


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """One torch thread: the plain loops run hundreds of small passes, which threads on a shared machine slow."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def assert_close(ours, theirs, what):
    ours, theirs = torch.as_tensor(np.asarray(ours)), torch.as_tensor(theirs)
    assert ours.shape == theirs.shape, (what, ours.shape, theirs.shape)
    err = (ours - theirs).abs().max().item()
    assert err <= ATOL, f"{what}: max abs diff {err:.2e} > {ATOL}"


def check_ablated_trace(m, hf, text, pair, heads):
    t = bert_core.analyze(m, text, pair, ablate_heads=heads, top_k=5)
    with knocked_out(hf, heads):
        enc, out = hf_run(m, hf, text, pair)
    assert t.ablated == tuple(sorted(set(heads)))
    assert_close(t.hidden_states, torch.cat(out.hidden_states), "hidden states")
    assert_close(t.attentions, torch.cat(out.attentions), "attentions")
    probs = out.prediction_logits[0].softmax(-1)  # (T, V)
    assert t.predictions
    for pos, top in t.predictions.items():
        want = probs[pos].topk(5)
        assert [tok for tok, _ in top] == m.tokenizer.convert_ids_to_tokens(want.indices.tolist())
        assert_close([p for _, p in top], want.values, f"top-5 at {pos}")
    if t.nsp is not None:
        assert_close(t.nsp, out.seq_relationship_logits[0].softmax(-1), "NSP")
    return t


def test_ablation_is_transformers_with_the_heads_context_zeroed(tiny):
    m, hf = tiny
    base = bert_core.analyze(m, "the cat [MASK] on the mat.", "he went to the store.")
    t = check_ablated_trace(m, hf, "the cat [MASK] on the mat.", "he went to the store.", [(0, 1), (2, 3), (0, 1)])
    # The first knocked-out head is in layer 1: layer 1's maps are unchanged, its output is not.
    assert np.array_equal(t.attentions[0], base.attentions[0])
    assert np.abs(t.hidden_states[1] - base.hidden_states[1]).max() > 1e-3
    # A whole layer's heads knocked out: the attention sublayer adds only W_o's bias.
    check_ablated_trace(m, hf, "she sat on the [MASK].", None, [(1, h) for h in range(4)])


def test_no_ablation_is_the_plain_pass_bit_for_bit(tiny):
    m, _ = tiny
    a = bert_core.analyze(m, "the dog [MASK] on a mat.")
    b = bert_core.analyze(m, "the dog [MASK] on a mat.", ablate_heads=[])
    assert np.array_equal(a.hidden_states, b.hidden_states) and a.predictions == b.predictions
    ids = torch.from_numpy(m.tokenizer.encode("the dog [MASK] on a mat.").input_ids)[None]
    with torch.no_grad():
        ones = torch.ones(m.config.num_hidden_layers, m.config.num_attention_heads)
        assert torch.equal(m.model(ids), m.model(ids, head_mask=ones))


@pytest.mark.parametrize("heads", [[(3, 0)], [(0, 4)], [(-1, 0)], [("a", 0)], [(1,)]])
def test_a_head_that_does_not_exist_is_refused(tiny, heads):
    m, _ = tiny
    with pytest.raises(bert_core.BertCoreError, match="head"):
        bert_core.analyze(m, "the cat [MASK].", ablate_heads=heads)


def loop_importance(m, hf, text, pair=None):
    """head_importance as a plain loop: one HF run per knocked-out head, with hooks."""
    enc, out = hf_run(m, hf, text, pair)
    pos = np.flatnonzero(enc.input_ids == m.tokenizer.mask_token_id).tolist()
    full = out.prediction_logits[0, pos].log_softmax(-1)  # (P, V)
    top = full.argmax(-1)
    L, nh = m.config.num_hidden_layers, m.config.num_attention_heads
    imp = np.zeros((L, nh))
    for layer in range(L):
        for head in range(nh):
            with knocked_out(hf, [(layer, head)]):
                lp = hf_logits(m, hf, text, pos, pair).log_softmax(-1)  # (P, V)
            imp[layer, head] = float(np.mean([full[i, top[i]] - lp[i, top[i]] for i in range(len(pos))]))
    return imp, full, top, pos


def test_head_importance_is_a_plain_loop_of_knock_outs(tiny):
    m, hf = tiny
    text, pair = "the [MASK] sat on the [MASK].", "he went to the store."
    imp = bert_core.head_importance(m, text, pair)
    want, *_ = loop_importance(m, hf, text, pair)
    assert imp.shape == (3, 4)
    assert_close(imp, want, "head importance")
    assert np.abs(want).max() > 1e-3  # the heads do matter here: the comparison is not of zeros


def test_head_importance_on_the_bundled_minilm(minilm):
    m, hf = minilm
    text = "She [MASK] the letter to her mother."
    seen = []
    imp = bert_core.head_importance(m, text, progress=seen.append)
    want, *_ = loop_importance(m, hf, text)
    assert_close(imp, want, "head importance (MiniLM)")
    assert seen and seen[-1] == 1.0
    # The most important head, knocked out alone through analyze, loses what the importance says.
    layer, head = np.unravel_index(imp.argmax(), imp.shape)
    full = bert_core.analyze(m, text, top_k=1)
    top, p_full = full.predictions[2][0]
    ab = check_ablated_trace(m, hf, text, None, [(int(layer), int(head))])
    probs = dict(bert_core.analyze(m, text, top_k=100, ablate_heads=[(int(layer), int(head))]).predictions[2])
    assert abs(np.log(p_full) - np.log(probs[top]) - imp[layer, head]) < 1e-5
    assert ab.ablated == ((layer, head),)


def test_pruning_curve_is_a_plain_loop_of_growing_knock_outs(tiny):
    m, hf = tiny
    text = "the cat [MASK] on the mat."
    pc = bert_core.pruning_curve(m, text)
    imp, full, top, pos = loop_importance(m, hf, text)
    assert_close(pc.importance, imp, "importance")
    ranked = [imp[layer, head] for layer, head in pc.order]  # least important first, every head once
    assert sorted(pc.order) == [(a, b) for a in range(3) for b in range(4)] and ranked == sorted(ranked)
    assert len(pc.prob) == 13 and pc.removed.tolist() == list(range(13))
    for k in range(13):
        with knocked_out(hf, pc.order[:k]):
            p = hf_logits(m, hf, text, pos).softmax(-1)  # (P, V)
        assert abs(float(p[0, top[0]]) - pc.prob[k]) <= ATOL, k
        assert pc.kept_top[k] == float(p[0].argmax() == top[0])
    assert abs(pc.prob[0] - float(full[0, top[0]].exp())) <= ATOL
    assert pc.top_tokens == m.tokenizer.convert_ids_to_tokens(top.tolist())


def loop_patching(m, hf, clean, corrupt, target):
    """patch_activations as a plain loop: one HF run per (layer, position), with a hook."""
    tid = m.tokenizer.vocab[target]
    ce, co = hf_run(m, hf, clean)
    xe, xo = hf_run(m, hf, corrupt)
    mask = int(np.flatnonzero(xe.input_ids == m.tokenizer.mask_token_id)[0])
    L, T = m.config.num_hidden_layers, len(xe)
    grid = np.zeros((L + 1, T))
    for layer in range(L + 1):
        for t in range(T):
            with patched(hf, layer, t, co.hidden_states[layer][0, t]):
                grid[layer, t] = float(hf_logits(m, hf, corrupt, [mask])[0].softmax(-1)[tid])
    c_mask = int(np.flatnonzero(ce.input_ids == m.tokenizer.mask_token_id)[0])
    return grid, float(co.prediction_logits[0, c_mask].softmax(-1)[tid]), \
        float(xo.prediction_logits[0, mask].softmax(-1)[tid])


def check_patching(m, hf, clean, corrupt, target):
    r = bert_core.patch_activations(m, clean, corrupt, target)
    grid, clean_p, corrupt_p = loop_patching(m, hf, clean, corrupt, target)
    assert r.grid.shape == grid.shape == (m.config.num_hidden_layers + 1, len(r.tokens))
    assert_close(r.grid, grid, "patching grid")
    assert abs(r.clean_prob - clean_p) <= ATOL and abs(r.corrupt_prob - corrupt_p) <= ATOL
    # Patching the whole last layer's [MASK] vector gives the clean answer back exactly (same position).
    assert abs(r.grid[-1, r.mask_position] - r.clean_prob) <= ATOL
    # Patching a position where both sentences have the same token at the embeddings changes nothing.
    same = [t for t in range(len(r.tokens)) if r.tokens[t] == r.clean_tokens[t]]
    assert np.allclose(r.grid[0, same], r.corrupt_prob, atol=ATOL)
    return r


def test_patching_is_a_plain_loop_of_hooked_runs(tiny):
    m, hf = tiny
    r = check_patching(m, hf, "the cat [MASK] on the mat.", "the dog [MASK] on the mat.", "sat")
    assert r.tokens[2] == "dog" and r.clean_tokens[2] == "cat" and r.target == "sat"
    assert abs(r.grid[0, 2] - r.corrupt_prob) > 1e-4  # the changed word's vector matters


def test_patching_on_the_bundled_minilm(minilm):
    m, hf = minilm
    seen = []
    r = bert_core.patch_activations(m, "The king said that [MASK] was tired.",
                                    "The queen said that [MASK] was tired.", "he", progress=seen.append)
    grid, clean_p, corrupt_p = loop_patching(m, hf, "The king said that [MASK] was tired.",
                                             "The queen said that [MASK] was tired.", "he")
    assert_close(r.grid, grid, "patching grid (MiniLM)")
    assert r.clean_prob > r.corrupt_prob and seen[-1] == 1.0
    # "king" at the embeddings carries the answer: patching it alone restores p(he) most of the way.
    assert r.grid[0, 2] - r.corrupt_prob > 0.5 * (r.clean_prob - r.corrupt_prob)


def test_batched_passes_agree_with_one_big_pass(tiny, monkeypatch):
    m, _ = tiny
    args = ("the cat [MASK] on the mat.", "the dog [MASK] on the mat.", "sat")
    whole = bert_core.patch_activations(m, *args)
    imp = bert_core.head_importance(m, args[0])
    monkeypatch.setattr(interventions, "BATCH_TOKENS", 9)  # one variant per pass
    seen = []
    small = bert_core.patch_activations(m, *args, progress=seen.append)
    assert len(seen) == whole.grid.size and seen[-1] == 1.0
    assert_close(small.grid, whole.grid, "one pass per variant")
    assert_close(bert_core.head_importance(m, args[0]), imp, "importance, one pass per variant")


@pytest.mark.parametrize("clean, corrupt, target, match", [
    ("the cat [MASK] on the mat.", "the dog [MASK] on a big mat.", "sat", "same number of tokens"),
    ("the cat sat on the mat.", "the dog sat on the mat.", "sat", "no \\[MASK\\]"),
    ("the cat [MASK] on the mat.", "the dog sat on the mat.", "sat", "corrupt sentence has no"),
    ("the [MASK] [MASK] on the mat.", "the dog [MASK] on the mat.", "sat", "exactly one"),
    ("the cat [MASK] on the mat.", "the dog [MASK] on the mat.", "unaffable", "not one vocabulary piece"),
    ("the cat [MASK] on the mat.", "the dog [MASK] on the mat.", "€", "not in this model's vocabulary"),
    ("the cat [MASK] on the mat.", "the dog [MASK] on the mat.", "", "target"),
    ("the cat [MASK] on the mat.", "the dog [MASK] on the mat.", "he went", "one word"),
    ("", "the dog [MASK] on the mat.", "sat", "empty"),
])
def test_patching_explains_what_is_wrong(tiny, clean, corrupt, target, match):
    m, _ = tiny
    with pytest.raises(bert_core.BertCoreError, match=match):
        bert_core.patch_activations(m, clean, corrupt, target)


def test_importance_needs_a_mask_and_an_mlm_head(tiny, tiny_dirs):
    m, _ = tiny
    with pytest.raises(bert_core.BertCoreError, match="no \\[MASK\\]"):
        bert_core.head_importance(m, "the cat sat on the mat.")
    base = bert_core.load_model(str(tiny_dirs["base"][0]))
    with pytest.raises(bert_core.BertCoreError, match="masked-language-model head"):
        bert_core.head_importance(base, "the cat [MASK].")
    with pytest.raises(bert_core.BertCoreError, match="masked-language-model head"):
        bert_core.patch_activations(base, "the cat [MASK].", "the dog [MASK].", "sat")


def test_patch_rows_outside_the_batch_run_unpatched(tiny):
    m, _ = tiny
    ids = torch.from_numpy(m.tokenizer.encode("the cat sat.").input_ids)[None].expand(2, -1)
    H = m.config.hidden_size
    p = bert_core.Patch(torch.tensor([-1, 1]), torch.tensor([0, 2]), torch.ones(2, H))
    with torch.no_grad():
        tr = m.model(ids, trace=True, patch=p)
        plain = m.model(ids[:1], trace=True)
    assert torch.allclose(tr.hidden_states[-1][0], plain.hidden_states[-1][0], atol=1e-6)  # row 0: no patch
    assert torch.equal(tr.hidden_states[1][1, 2], torch.ones(H))  # row 1: layer 1's output at token 2
    assert not torch.equal(tr.hidden_states[-1][1], plain.hidden_states[-1][0])


def test_a_pass_resumed_at_a_hidden_state_is_the_whole_pass(tiny):
    m, _ = tiny
    enc = m.tokenizer.encode("the cat [MASK] on the mat.", "he went to the store.")
    ids, types = torch.from_numpy(enc.input_ids)[None], torch.from_numpy(enc.token_type_ids)[None]
    hm = torch.ones(2, 3, 4)
    hm[1, 2, 1] = 0.0
    with torch.no_grad():
        states = m.model(ids, types, trace=True).hidden_states
        whole = m.model(ids.expand(2, -1), types.expand(2, -1), head_mask=hm)
        for layer in range(4):
            resumed = m.model(ids.expand(2, -1), types.expand(2, -1), head_mask=hm, start=(layer, states[layer]))
            if layer <= 2:  # the knocked-out head is in layer 3: resuming anywhere before it changes nothing
                assert torch.allclose(resumed, whole, atol=1e-6), layer
        assert torch.allclose(resumed[0], states[3][0], atol=1e-6)  # resumed at the last state: nothing left to run
    with pytest.raises(ValueError, match="start and trace"):
        m.model(ids, types, trace=True, start=(1, states[1]))


def test_knock_out_is_analyze_with_and_without_the_head(tiny):
    m, _ = tiny
    text = "the [MASK] sat on the [MASK]."
    ko = bert_core.knock_out(m, text, heads=[(1, 2)], top_k=3)
    full = bert_core.analyze(m, text, top_k=3)
    without = bert_core.analyze(m, text, top_k=3, ablate_heads=[(1, 2)])
    assert ko.heads == ((1, 2),) and sorted(ko.guesses) == full.mask_positions
    for pos in full.mask_positions:
        tokens, p_full, p_without = ko.guesses[pos]
        for (tok, p), (tok2, p2) in zip(full.predictions[pos], without.predictions[pos]):
            assert abs(p_full[tokens.index(tok)] - p) <= ATOL and abs(p_without[tokens.index(tok2)] - p2) <= ATOL
        assert ko.top_full[pos] == full.predictions[pos][0][0]
        assert ko.top_without[pos] == without.predictions[pos][0][0]


def test_importance_of_some_layers_is_those_rows_of_the_whole(tiny):
    m, _ = tiny
    text = "the cat [MASK] on the mat."
    whole = bert_core.head_importance(m, text)
    some = bert_core.head_importance(m, text, layers=(2, 0))
    assert np.isnan(some[1]).all() and not np.isnan(some[[0, 2]]).any()
    assert_close(some[[0, 2]], whole[[0, 2]], "rows of the whole")
    for bad in ((3,), (-1,), ()):
        with pytest.raises(bert_core.BertCoreError, match="layers"):
            bert_core.head_importance(m, text, layers=bad)


def test_patching_refuses_long_sentences_with_a_message(tiny, monkeypatch):
    m, _ = tiny
    monkeypatch.setattr(interventions, "MAX_PATCH_TOKENS", 8)  # the pair below has 9 tokens
    with pytest.raises(bert_core.BertCoreError, match="9 tokens.*at most 8 tokens"):
        bert_core.patch_activations(m, "the cat [MASK] on the mat.", "the dog [MASK] on the mat.", "sat")


def _projection_before_heads_mix(hf, family, layer):
    """The module that projects family `family`'s concatenated head contexts in layer `layer`, and how many times it
    runs before that layer's call (ALBERT: one shared module, called once per layer)."""
    if family == "roberta":
        return hf.roberta.encoder.layer[layer].attention.output.dense, 0
    if family == "distilbert":
        return hf.distilbert.transformer.layer[layer].attention.out_lin, 0
    return hf.albert.encoder.albert_layer_groups[0].albert_layers[0].attention.dense, layer


@pytest.mark.parametrize("family", ["roberta", "distilbert", "albert"])
def test_ablation_in_every_family_is_transformers_with_the_heads_context_zeroed(tmp_path, family):
    """RoBERTa, DistilBERT and ALBERT (one layer reused L times) knock a head out at the same place as HF."""
    from support.family import write_family_checkpoint

    hf = write_family_checkpoint(tmp_path / family, family, "mlm", seed=1).eval()
    m = bert_core.load_model(str(tmp_path / family))
    text = "the cat [MASK] on the mat."
    heads = [(1, 2), (2, 0)]
    hs = m.config.hidden_size // m.config.num_attention_heads
    handles = []
    for layer, head in heads:
        module, before = _projection_before_heads_mix(hf, family, layer)
        calls = {"n": 0}

        def pre(mod, args, head=head, before=before, calls=calls):
            calls["n"] += 1
            if calls["n"] - 1 != before:  # ALBERT: only this layer's call of the shared module
                return None
            ctx = args[0].clone()
            ctx[..., head * hs:(head + 1) * hs] = 0.0
            return (ctx, *args[1:])
        handles.append(module.register_forward_pre_hook(pre))
    enc = m.tokenizer.encode(text)
    try:
        with torch.inference_mode():
            out = hf(input_ids=torch.from_numpy(enc.input_ids)[None], output_hidden_states=True)
    finally:
        for h in handles:
            h.remove()
    t = bert_core.analyze(m, text, ablate_heads=heads)
    assert_close(t.hidden_states, torch.cat(out.hidden_states), f"{family} hidden states")
    pos = t.mask_positions[0]
    p = out.logits[0, pos].softmax(-1)
    assert_close([q for _, q in t.predictions[pos]], p.topk(5).values, f"{family} top-5")
    assert np.abs(t.hidden_states[-1] - bert_core.analyze(m, text).hidden_states[-1]).max() > 1e-4
