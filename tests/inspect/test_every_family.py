"""Every feature a page offers, on every family, against transformers (or a plain loop over it) at 1e-5.

One tiny random checkpoint per family (tests/family_util.py: BERT, RoBERTa, DistilBERT, ALBERT, ELECTRA's
generator; hidden 32, 2 layers, tokenizers made in the test), loaded by our loader and by transformers (eager,
fp32). Each test is parametrized over the families; a feature a family cannot run must raise a BertCoreError
whose message says why (the pages show it). Interventions (knock-out, patching) are run on transformers with
forward hooks at the same place: the projection after the heads, a block's input or output.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as np
import pytest
import torch
from support.family import write_family_checkpoint

import bert_core
from bert_core.inspect import (
    compare,
    inside_layers,
    interventions,
    masking_view,
    neighbours,
    objectives_view,
    sentences,
)
from bert_core.inspect.mask_filling import FILL_STRATEGIES
from bert_core.probe import probing

ATOL = 1e-5
FAMILIES = ("bert", "roberta", "distilbert", "albert", "electra")
L = 2  # layers of every tiny checkpoint


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """{family: (LoadedModel, transformers' model)}; ELECTRA's is the generator (an MLM head)."""
    out = {}
    for fam in FAMILIES:
        d = tmp_path_factory.mktemp(fam)
        hf = write_family_checkpoint(d, fam, "mlm", seed=3, num_hidden_layers=L, max_position_embeddings=130)
        out[fam] = (bert_core.load_model(str(d)), hf.eval())
    return out


@pytest.fixture(params=FAMILIES)
def fam(request, models):
    return request.param, *models[request.param]


# --- transformers' side, per family --------------------------------------------------------------------


def close(ours, theirs, what, atol=ATOL):
    ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(torch.as_tensor(theirs).detach(), dtype=np.float64)
    assert ours.shape == theirs.shape, f"{what}: shape {ours.shape} != {theirs.shape}"
    err = np.nanmax(np.abs(ours - theirs)) if ours.size else 0.0
    assert err <= atol, f"{what}: max abs diff {err:.2e} > {atol}"


def text_of(m):
    k = m.tokenizer.mask_token
    return f"the cat {k} on the mat, playing.", "he went to the store."


def encode(m, text, pair=None):
    enc = m.tokenizer.encode(text, pair)
    return enc, torch.from_numpy(enc.input_ids)[None], torch.from_numpy(enc.token_type_ids)[None]


def hf_out(name, hf, ids, types=None, mask=None, **kw):
    """transformers' forward with every hidden state and attention map (DistilBERT takes no token types)."""
    if name != "distilbert" and types is not None:
        kw["token_type_ids"] = types
    with torch.no_grad():
        return hf(input_ids=ids, attention_mask=mask, output_hidden_states=True, output_attentions=True, **kw)


def hf_head(name, hf):
    """transformers' MLM head as a function of hidden states (the logit lens reads every layer through it)."""
    if name == "bert":
        return hf.cls
    if name == "roberta":
        return hf.lm_head
    if name == "albert":
        return hf.predictions
    if name == "electra":
        return lambda h: hf.generator_lm_head(hf.generator_predictions(h))
    return lambda h: hf.vocab_projector(hf.vocab_layer_norm(hf.activation(hf.vocab_transform(h))))


def hf_blocks(name, hf):
    """(module, which call of it) that runs layer l, for l = 0..L-1 (ALBERT: one group module, called L times)."""
    base = hf.base_model
    if name == "distilbert":
        return [(b, 0) for b in base.transformer.layer]
    if name == "albert":
        return [(base.encoder.albert_layer_groups[0], i) for i in range(L)]
    return [(b, 0) for b in base.encoder.layer]


def hf_heads_mix(name, hf):
    """(module, which call) that projects layer l's concatenated head contexts."""
    base = hf.base_model
    if name == "distilbert":
        return [(b.attention.out_lin, 0) for b in base.transformer.layer]
    if name == "albert":
        return [(base.encoder.albert_layer_groups[0].albert_layers[0].attention.dense, i) for i in range(L)]
    return [(b.attention.output.dense, 0) for b in base.encoder.layer]


def hf_sublayers(name, hf, layer):
    """{step: (module, which call)} whose output is that step of layer `layer`: h1 = LayerNorm(x + attn_out) and
    ffn_out = W_2 act(W_1 h1 + b_1) + b_2 (before its residual), in each family's own module names."""
    base = hf.base_model
    if name == "distilbert":
        b = base.transformer.layer[layer]
        return {"h1": (b.sa_layer_norm, 0), "ffn_out": (b.ffn.lin2, 0), "attn_out": (b.attention.out_lin, 0)}
    if name == "albert":
        b = base.encoder.albert_layer_groups[0].albert_layers[0]
        return {"h1": (b.attention.LayerNorm, layer), "ffn_out": (b.ffn_output, layer),
                "attn_out": (b.attention.dense, layer)}
    b = base.encoder.layer[layer]
    return {"h1": (b.attention.output.LayerNorm, 0), "ffn_out": (b.output.dense, 0),
            "attn_out": (b.attention.output.dense, 0)}


def hf_steps(name, hf, ids, types):
    """[{step: (1, T, H)} for each layer]: transformers' h1, ffn_out and attn_out, read by forward hooks."""
    out = []
    for layer in range(L):
        got = {}
        with contextlib.ExitStack() as stack:
            for step, (module, call) in hf_sublayers(name, hf, layer).items():
                def keep(x, step=step, got=got):
                    got[step] = x.clone()
                    return x
                stack.enter_context(hooked(module, call, keep, pre=False))
            hf_out(name, hf, ids, types)
        out.append(got)
    return out


@contextlib.contextmanager
def hooked(module, call, change, pre=True):
    """Run `change` on the first argument (pre) or the output of `module`'s `call`-th call in each forward."""
    seen = {"n": 0}

    def first(x):
        return x[0] if isinstance(x, tuple) else x

    def pre_hook(mod, args, kwargs):
        seen["n"] += 1
        if seen["n"] - 1 != call:
            return None
        if args:
            return (change(args[0]), *args[1:]), kwargs
        return args, {**kwargs, "hidden_states": change(kwargs["hidden_states"])}

    def post_hook(mod, args, out):
        seen["n"] += 1
        if seen["n"] - 1 != call:
            return None
        new = change(first(out))
        return (new, *out[1:]) if isinstance(out, tuple) else new

    h = (module.register_forward_pre_hook(pre_hook, with_kwargs=True) if pre
         else module.register_forward_hook(post_hook))
    try:
        yield
    finally:
        h.remove()


@contextlib.contextmanager
def knocked_out(name, hf, m, heads):
    """transformers with each (layer, head)'s context zeroed before the heads are mixed (our head_mask)."""
    hs = m.config.hidden_size // m.config.num_attention_heads
    mixes = hf_heads_mix(name, hf)
    with contextlib.ExitStack() as stack:
        for layer in sorted({layer for layer, _ in heads}):
            cut = [h for la, h in heads if la == layer]

            def zero(ctx, cut=cut):
                ctx = ctx.clone()
                for h in cut:
                    ctx[..., h * hs:(h + 1) * hs] = 0.0
                return ctx
            module, call = mixes[layer]
            stack.enter_context(hooked(module, call, zero))
        yield


def hf_probs(name, hf, ids, types, position):
    return hf_out(name, hf, ids, types).logits[0, position].softmax(-1)


def non_special_argmax(m, probs) -> int:
    for i in probs.argsort(descending=True).tolist():
        if i not in m.tokenizer.all_special_ids:
            return i
    raise AssertionError("no candidate")


def one_piece(m, words):
    """The first of `words` the tokenizer reads as one known piece (a patching target)."""
    for w in words:
        try:
            interventions.target_id(m, w)
            return w
        except bert_core.BertCoreError:
            continue
    raise AssertionError(f"none of {words} is one piece for {m.family}")


# --- the forward pass, the embeddings and the fill-in ----------------------------------------------------


def test_forward_fill_in_and_embedding_parts(fam):
    name, m, hf = fam
    text, pair = text_of(m)
    enc, ids, types = encode(m, text, pair)
    sums, normed = {}, {}
    ln = hf.base_model.embeddings.LayerNorm
    h1 = ln.register_forward_pre_hook(lambda mod, args: sums.update(x=args[0].clone()))  # None: input unchanged
    h2 = ln.register_forward_hook(lambda mod, args, out: normed.update(x=out.clone()))
    try:
        out = hf_out(name, hf, ids, types)
    finally:
        h1.remove()
        h2.remove()
    t = bert_core.analyze(m, text, pair)
    close(t.hidden_states, torch.cat(out.hidden_states), f"{name} hidden states")
    close(t.attentions, torch.cat(out.attentions), f"{name} attentions")
    close(t.embeddings.sum, sums["x"][0], f"{name} embedding sum")
    close(t.embeddings.normed, normed["x"][0], f"{name} LayerNorm(sum)")
    pos = t.mask_positions[0]
    top = out.logits[0, pos].softmax(-1).topk(5)
    assert [tok for tok, _ in t.predictions[pos]] == m.tokenizer.convert_ids_to_tokens(top.indices.tolist())
    close([p for _, p in t.predictions[pos]], top.values, f"{name} top-5")
    run = compare.run_model(m, text, repeats=1)  # the Compare page's run
    close([p for _, p in run.predictions[0]], hf_out(name, hf, *encode(m, text)[1:]).logits[0, pos].softmax(-1)
          .topk(5).values, f"{name} Compare page's top-5")


def test_the_tokenizers_are_not_degenerate(fam):
    """Each family's tokenizer (trained or built in the test) merges characters into pieces and knows the words."""
    name, m, hf = fam
    text = "the cat sat on the mat, playing."
    enc = m.tokenizer.encode(text)
    pieces = [t for t, sp in zip(enc.tokens, enc.special_tokens_mask) if not sp]
    assert m.tokenizer.unk_token not in pieces, (name, pieces)
    assert len(pieces) < len(text.replace(" ", "")) and max(len(p.strip("Ġ▁#")) for p in pieces) >= 3, (name, pieces)
    assert m.config.vocab_size == hf.config.vocab_size > 50
    enc2 = m.tokenizer.encode(text_of(m)[0])
    assert list(enc2.input_ids).count(m.tokenizer.mask_token_id) == 1  # the family's own mask token, one piece


def test_inputs_embeds_are_read_the_family_way(fam):
    """Given word vectors (not the table's), the model adds its own positions, segments and projection, as HF does."""
    name, m, hf = fam
    text, pair = text_of(m)
    _, ids, types = encode(m, text, pair)
    torch.manual_seed(0)
    word = hf.base_model.embeddings.word_embeddings(ids).detach() + 0.1 * torch.randn(*ids.shape, m.config.E)
    kw = {} if name == "distilbert" else {"token_type_ids": types}
    with torch.no_grad():
        theirs = hf(inputs_embeds=word, output_hidden_states=True, **kw).hidden_states[-1]
        ours = m.model(ids, types, inputs_embeds=word)
        close(m.model(ids, types, inputs_embeds=m.model.bert.embeddings.word_embeddings(ids)), m.model(ids, types),
              f"{name} the table's own rows")
    close(ours, theirs, f"{name} last hidden state from inputs_embeds")


def test_position_similarity(fam):
    name, m, hf = fam
    w = hf.base_model.embeddings.position_embeddings.weight.detach()
    w = w[hf.config.pad_token_id + 1:] if name == "roberta" else w  # RoBERTa's positions start at padding_idx + 1
    w = torch.nn.functional.normalize(w[:12], dim=-1)
    close(bert_core.position_similarity(m, 12), w @ w.T, f"{name} position similarity")


# --- attention: rollout and head statistics --------------------------------------------------------------


def test_rollout_and_head_stats(fam):
    name, m, hf = fam
    text, pair = text_of(m)
    enc, ids, types = encode(m, text, pair)
    att = torch.cat(hf_out(name, hf, ids, types).attentions).double().numpy()  # (L, nh, T, T)
    t = bert_core.analyze(m, text, pair)
    T = att.shape[-1]
    r, want = np.eye(T), []
    for layer in range(L):
        a = 0.5 * att[layer].mean(0) + 0.5 * np.eye(T)
        r = (a / a.sum(-1, keepdims=True)) @ r
        want.append(r)
    close(bert_core.attention_rollout(t.attentions), np.stack(want), f"{name} rollout")
    stats = bert_core.head_stats(t)
    special = np.flatnonzero(enc.special_tokens_mask)
    for s in stats:
        a = att[s["layer"], s["head"]]
        close(s["entropy"], -(a * np.log(np.maximum(a, 1e-30))).sum(-1).mean(), f"{name} entropy")
        close(s["prev"], np.mean([a[i, i - 1] for i in range(1, T)]), f"{name} prev")
        close(s["cls"], a[:, 0].mean(), f"{name} cls")
        close(s["sep"], a[:, [p for p in special if p != 0]].sum(-1).mean(), f"{name} sep")


# --- salience ---------------------------------------------------------------------------------------------


def test_occlusion_salience(fam):
    name, m, hf = fam
    text, pair = text_of(m)
    enc, ids, types = encode(m, text, pair)
    pos = enc.tokens.index(m.tokenizer.mask_token)
    base = hf_probs(name, hf, ids, types, pos)
    target = non_special_argmax(m, base)
    ours = bert_core.salience(m, text, pos, None, pair, method="occlusion")
    want = np.zeros(len(enc))
    for i in np.flatnonzero(~enc.special_tokens_mask.astype(bool)):
        occluded = ids.clone()
        occluded[0, i] = m.tokenizer.mask_token_id
        want[i] = float(base[target] - hf_probs(name, hf, occluded, types, pos)[target])
    close(ours, want, f"{name} occlusion salience")


def test_gradient_salience_is_autograd_on_transformers(fam):
    """d p(target) / d(inputs_embeds) from transformers' own model, times the sum its embeddings LayerNorm reads."""
    name, m, hf = fam
    text, pair = text_of(m)
    enc, ids, types = encode(m, text, pair)
    pos = enc.tokens.index(m.tokenizer.mask_token)
    target = non_special_argmax(m, hf_probs(name, hf, ids, types, pos))
    sums = {}
    ln = hf.base_model.embeddings.LayerNorm
    hook = ln.register_forward_pre_hook(lambda mod, args: sums.update(x=args[0].detach().clone()))
    try:
        word = hf.base_model.embeddings.word_embeddings(ids).detach().requires_grad_(True)  # (1, T, E)
        kw = {} if name == "distilbert" else {"token_type_ids": types}
        p = hf(inputs_embeds=word, **kw).logits[0, pos].softmax(-1)[target]
        (g,) = torch.autograd.grad(p, word)
    finally:
        hook.remove()
    want = (g * sums["x"])[0].norm(dim=-1).numpy()
    want[enc.special_tokens_mask.astype(bool)] = 0.0
    ours = bert_core.salience(m, text, pos, target, pair, method="gradient")
    close(ours, want, f"{name} gradient salience")
    assert (ours[~enc.special_tokens_mask.astype(bool)] > 0).all()


# --- heads: knock-out, importance, pruning, patching -------------------------------------------------------


def test_knock_out(fam):
    name, m, hf = fam
    text, pair = text_of(m)
    enc, ids, types = encode(m, text, pair)
    heads = [(0, 1), (1, 3)]
    ko = bert_core.knock_out(m, text, pair, heads=heads)
    pos = enc.tokens.index(m.tokenizer.mask_token)
    full = hf_probs(name, hf, ids, types, pos)
    with knocked_out(name, hf, m, heads):
        without = hf_probs(name, hf, ids, types, pos)
    toks, p_full, p_without = ko.guesses[pos]
    got = [m.tokenizer.vocab[t] for t in toks]
    close(p_full, full[got], f"{name} p full")
    close(p_without, without[got], f"{name} p without")
    assert (full - without).abs().max() > 1e-6  # the hooks knocked something out


def test_head_importance_and_pruning_curve(fam):
    name, m, hf = fam
    text, pair = text_of(m)
    enc, ids, types = encode(m, text, pair)
    pos = enc.tokens.index(m.tokenizer.mask_token)
    nh = m.config.num_attention_heads
    full = hf_probs(name, hf, ids, types, pos)
    top = int(full.argmax())
    want = np.zeros((L, nh))
    for layer in range(L):
        for h in range(nh):
            with knocked_out(name, hf, m, [(layer, h)]):
                want[layer, h] = float(full[top].log() - hf_probs(name, hf, ids, types, pos)[top].log())
    pc = bert_core.pruning_curve(m, text, pair)
    close(pc.importance, want, f"{name} head importance")
    for k in (L * nh // 2, L * nh):
        with knocked_out(name, hf, m, pc.order[:k]):
            close(pc.prob[k], hf_probs(name, hf, ids, types, pos)[top], f"{name} p(top-1) with {k} heads removed")


def test_activation_patching(fam):
    """grid[l, t]: transformers' corrupt run with its hidden state l at t replaced by its clean run's."""
    name, m, hf = fam
    k = m.tokenizer.mask_token
    words = ("cat", "dog", "mat", "she", "he", "the")  # two that split into as many pieces: patching's condition
    clean, corrupt = next((f"the {a} sat on the {k}.", f"the {b} sat on the {k}.") for a in words for b in words
                          if a != b and len(m.tokenizer.encode(f"the {a} sat on the {k}.")) ==
                          len(m.tokenizer.encode(f"the {b} sat on the {k}.")))
    target = one_piece(m, ["the", "cat", "mat", "he", "a"])
    r = bert_core.patch_activations(m, clean, corrupt, target)
    _, c_ids, c_types = encode(m, clean)
    _, x_ids, x_types = encode(m, corrupt)
    clean_h = hf_out(name, hf, c_ids, c_types).hidden_states  # L+1 x (1, T, H)
    blocks = hf_blocks(name, hf)
    want = np.zeros_like(r.grid)
    for layer in range(L + 1):
        for t in range(x_ids.shape[1]):
            def put(x, layer=layer, t=t):
                x = x.clone()
                x[0, t] = clean_h[layer][0, t]
                return x
            module, call = blocks[min(layer, L - 1)]
            # state l < L is block l's input; state L is the last block's output
            with hooked(module, call, put, pre=layer < L):
                want[layer, t] = float(hf_probs(name, hf, x_ids, x_types, r.mask_position)[r.target_id])
    close(r.grid, want, f"{name} patching grid")
    close(r.corrupt_prob, hf_probs(name, hf, x_ids, x_types, r.mask_position)[r.target_id], f"{name} corrupt p")


# --- fill-in strategies and pseudo-log-likelihood ------------------------------------------------------------


@pytest.mark.parametrize("strategy", FILL_STRATEGIES)
def test_fill_masks(fam, strategy):
    name, m, hf = fam
    k = m.tokenizer.mask_token
    text = f"the {k} sat on the {k}, playing."
    r = bert_core.fill_masks(m, text, None, strategy=strategy)
    enc, ids, types = encode(m, text)
    remaining = [i for i, v in enumerate(enc.input_ids) if v == m.tokenizer.mask_token_id]
    steps = []
    while remaining:
        cands = []
        for pos in remaining:
            p = hf_probs(name, hf, ids, types, pos)
            best = non_special_argmax(m, p)
            cands.append((pos, best, float(p[best])))
        if strategy == "independent":
            steps = [(c[0], m.tokenizer.id_to_token(c[1]), c[2]) for c in cands]
            break
        pick = cands[0] if strategy == "left_to_right" else max(cands, key=lambda c: c[2])
        ids[0, pick[0]] = pick[1]
        remaining.remove(pick[0])
        steps.append((pick[0], m.tokenizer.id_to_token(pick[1]), pick[2]))
    assert [(p, t) for p, t, _ in r.steps] == [(p, t) for p, t, _ in steps]
    close([q for *_, q in r.steps], [q for *_, q in steps], f"{name} {strategy} fill")


def test_pseudo_log_likelihood(fam):
    name, m, hf = fam
    text = "the cat sat on the mat."
    enc, ids, types = encode(m, text)
    r = bert_core.pseudo_log_likelihood(m, text)
    want = []
    for i in np.flatnonzero(~enc.special_tokens_mask.astype(bool)):
        masked = ids.clone()
        masked[0, i] = m.tokenizer.mask_token_id
        want.append(float(hf_probs(name, hf, masked, types, i)[ids[0, i]].log()))
    close([v for _, v in r.per_token], want, f"{name} PLL")


# --- across the layers: logit lens, residual stream, same word, inside a layer ---------------------------


def test_logit_lens_and_residual_stream(fam):
    name, m, hf = fam
    text, pair = text_of(m)
    enc, ids, types = encode(m, text, pair)
    hs = torch.cat(hf_out(name, hf, ids, types).hidden_states)  # (L+1, T, H)
    head = hf_head(name, hf)
    pos = enc.tokens.index(m.tokenizer.mask_token)
    with torch.no_grad():
        p = head(hs[:, pos]).softmax(-1)  # (L+1, V)
    lens = bert_core.logit_lens(m, text, pair)
    final = m.tokenizer.vocab[lens.final_token[pos]]
    assert final == non_special_argmax(m, p[-1]) or final == int(p[-1].argmax())
    close(lens.final_prob[pos], p[:, final], f"{name} lens p(final) per state")
    rs = bert_core.residual_stream(m, text, pair, lens_top_k=3, pca=False)
    close(rs.norms, hs.norm(dim=-1), f"{name} norms")
    close(rs.self_similarity, torch.cosine_similarity(hs[1:], hs[:-1], dim=-1), f"{name} self similarity")
    u = torch.nn.functional.normalize(hs, dim=-1)
    close(rs.token_similarity, u @ u.transpose(-1, -2), f"{name} token similarity")
    close(rs.lens.final_prob[pos], lens.final_prob[pos], f"{name} lens in the residual stream")
    # |attn_out| / |x| and |ffn_out| / |h1|: each sublayer's output (before its residual) over what it read.
    steps = hf_steps(name, hf, ids, types)
    close(rs.attn_update, torch.stack([steps[la]["attn_out"][0].norm(dim=-1) / hs[la].norm(dim=-1)
                                       for la in range(L)]), f"{name} attention update size")
    close(rs.ffn_update, torch.stack([steps[la]["ffn_out"][0].norm(dim=-1) / steps[la]["h1"][0].norm(dim=-1)
                                      for la in range(L)]), f"{name} feed-forward update size")


def test_inside_a_layer(fam):
    name, m, hf = fam
    text, pair = text_of(m)
    enc, ids, types = encode(m, text, pair)
    out = hf_out(name, hf, ids, types)
    steps = hf_steps(name, hf, ids, types)
    for layer in range(L):
        s = bert_core.layer_steps(m, text, layer, pair)
        close(s.x, out.hidden_states[layer][0], f"{name} layer {layer} input")
        close(s.probs, out.attentions[layer][0], f"{name} layer {layer} probabilities")
        for step in ("attn_out", "h1", "ffn_out"):
            close(getattr(s, step), steps[layer][step][0], f"{name} layer {layer} {step}")
        close(s.out, out.hidden_states[layer + 1][0], f"{name} layer {layer} output")
        path = inside_layers.follow_token(s, 0, 1)
        assert path is not None


def test_same_word(fam):
    name, m, hf = fam
    text = "the cat and the dog sat on the mat."
    sw = bert_core.same_word(m, text)
    enc, ids, types = encode(m, text)
    hs = torch.cat(hf_out(name, hf, ids, types).hidden_states)
    assert sw.words, f"{name}: no repeated word found in {enc.tokens}"
    for w in sw.words:
        a, b = hs[:, w.first].mean(1), hs[:, w.second].mean(1)
        close(w.cos, torch.cosine_similarity(a, b, dim=-1), f"{name} same word {w.word!r}")


# --- words and sentences: neighbours, senses, probing, pooling ----------------------------------------------


def first_piece_vectors(name, m, hf, words):
    """transformers' hidden states (L+1, W, H) at each word's first piece, one unpadded sentence."""
    enc, ids, types = encode(m, " ".join(words))
    hs = torch.cat(hf_out(name, hf, ids, types).hidden_states)
    firsts = []
    for w in range(len(words)):
        at = [i for i, wid in enumerate(enc.word_ids) if wid == w]
        firsts.append(at[0])
    return hs[:, firsts]


def test_word_vectors_with_padding(fam):
    """The Neighbours page's index and query, and the sense words: a padded batch equals each sentence alone."""
    name, m, hf = fam
    sents = [["the", "cat", "sat", "on", "the", "mat"], ["she", "went"], ["he", "bought", "milk", "and", "cat"]]
    wv = neighbours.word_vectors(m.model.bert, m.tokenizer, sents)
    for s, words in enumerate(sents):
        rows = np.flatnonzero(wv.sentence == s)
        close(wv.vectors[:, rows], first_piece_vectors(name, m, hf, words)[:, wv.word[rows]], f"{name} sentence {s}")
    q = neighbours.query_words(m, "he bought milk")
    close(q.vectors, first_piece_vectors(name, m, hf, ["he", "bought", "milk"]), f"{name} query words")
    idx = neighbours.build_index(m, sents, [[0] * len(s) for s in sents], ["X"])
    assert idx is not None
    sv = probing.sense_vectors(m, probing.sense_rows()[0][2])
    assert sv.vectors.shape[0] == L + 1 and np.isfinite(sv.vectors).all()


def test_probing_runs_on_its_random_twin_too(fam, monkeypatch):
    """The probes' features are `word_vectors` (above); here the whole run, random twin included, on each family.

    The tiny vocabularies split Brown's sentences into many pieces: only the sentences that fit 128 pieces are kept
    (the run refuses words the length limit cuts, which real vocabularies do not).
    """
    name, m, _ = fam
    full = probing.probe_task

    def short(task_name, n_train):
        t = full(task_name, n_train)
        fits = np.array([len(m.tokenizer.encode(" ".join(ws))) <= 120 for ws in t.sentences])
        return dataclasses.replace(t, train=t.train[fits[t.train[:, 0]]], valid=t.valid[fits[t.valid[:, 0]]])

    monkeypatch.setattr(probing, "probe_task", short)
    r = probing.probe_layers(m, probing.POS, probing.POS_SIZES[0], seed=0, store=False)
    assert r.n_train > 100 and r.n_valid > 100
    for row in probing.ROWS:
        assert r.accuracy[row].shape == (L + 1,) and ((0 <= r.accuracy[row]) & (r.accuracy[row] <= 1)).all()
    twin = probing.untrained_encoder(m)
    assert type(twin.embeddings) is type(m.model.bert.embeddings)  # the family's own embeddings (RoBERTa's)


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
def test_sentence_pooling(fam, pooling):
    name, m, hf = fam
    texts = ["the cat sat on the mat.", "she went.", "he bought milk and a cat"]
    ours = sentences.sentence_embedding(m, texts, pooling, normalize=False)
    for i, t in enumerate(texts):
        _, ids, types = encode(m, t)
        h = hf_out(name, hf, ids, types).hidden_states[-1][0]  # (T, H)
        want = {"mean": h.mean(0), "cls": h[0], "max": h.max(0).values}[pooling]
        close(ours[i], want, f"{name} {pooling} pooling, sentence {i}")


def test_pooler_pooling_where_the_checkpoint_has_one(fam, tmp_path):
    """An MLM checkpoint has no pooler (refused, with why); the family's base encoder has one where HF's has."""
    name, m, _ = fam
    with pytest.raises(bert_core.BertCoreError, match="no pooler"):
        sentences.sentence_embedding(m, ["the cat"], "pooler")
    hf = write_family_checkpoint(tmp_path, name, "base", num_hidden_layers=L).eval()
    base = bert_core.load_model(str(tmp_path))
    texts = ["the cat sat on the mat.", "she went."]
    if name in ("distilbert", "electra"):  # neither model has a pooler
        with pytest.raises(bert_core.BertCoreError, match="no pooler"):
            sentences.sentence_embedding(base, texts, "pooler")
        return
    ours = sentences.sentence_embedding(base, texts, "pooler", normalize=False)
    for i, t in enumerate(texts):
        _, ids, types = encode(base, t)
        close(ours[i], hf_out(name, hf, ids, types).pooler_output[0], f"{name} pooler, sentence {i}")


def test_bert_and_gpt_masks_on_the_same_weights(fam):
    """The BERT vs GPT page: attention with every token visible, and with transformers given GPT's causal mask."""
    name, m, hf = fam
    text = "the cat sat on the mat."
    enc, ids, types = encode(m, text)
    T = ids.shape[1]
    future = ~torch.tril(torch.ones(T, T, dtype=torch.bool))
    causal = torch.zeros(1, 1, T, T).masked_fill(future, torch.finfo(torch.float32).min)  # additive, 4-D
    mc = objectives_view.mask_comparison(m, text)
    close(mc.attn_bidirectional, torch.cat(hf_out(name, hf, ids, types).attentions), f"{name} bidirectional maps")
    close(mc.attn_causal, torch.cat(hf_out(name, hf, ids, types, mask=causal).attentions), f"{name} causal maps")


# --- masking and what an MLM head cannot do -----------------------------------------------------------------


def test_masking_draw_loss(fam):
    name, m, hf = fam
    view = masking_view.masking_draw(m, "the cat sat on the mat and she went to the store", "he bought milk",
                                     seed=0, draw=1, mlm_probability=0.5)
    p, loss = masking_view.draw_loss(m, view)
    ids = torch.from_numpy(view.corrupted_ids)[None]
    enc = m.tokenizer.encode("the cat sat on the mat and she went to the store", "he bought milk")
    lp = hf_out(name, hf, ids, torch.from_numpy(enc.token_type_ids)[None]).logits[0].log_softmax(-1)
    sel = np.flatnonzero(view.labels != -100)
    want = lp[sel, view.labels[sel]]
    close(p[sel], want.exp(), f"{name} p(original)")
    close(loss, -want.mean(), f"{name} draw loss")


def test_heads_an_mlm_checkpoint_lacks_are_refused(fam):
    name, m, _ = fam
    for call, says in ((lambda: bert_core.replaced_token_probs(m, "the cat"), "replaced-token"),
                       (lambda: bert_core.generate(m, "the cat"), "bidirectional"),
                       (lambda: bert_core.classify(m, "the cat"), "classifier"),
                       (lambda: bert_core.tag(m, "the cat"), "token-classification")):
        with pytest.raises(bert_core.BertCoreError, match=says):
            call()


def test_electra_discriminator_refuses_every_mlm_feature_and_reads_its_own_head(tmp_path):
    """ELECTRA's discriminator (the checkpoint the hub offers) has no MLM head: each [MASK] feature says so."""
    hf = write_family_checkpoint(tmp_path, "electra", "disc", num_hidden_layers=L)
    m = bert_core.load_model(str(tmp_path))
    text = "the cat [MASK] on the mat."
    for call in (lambda: bert_core.salience(m, text, 3, method="gradient"),
                 lambda: bert_core.salience(m, text, 3, method="occlusion"),
                 lambda: bert_core.knock_out(m, text, heads=[(0, 0)]),
                 lambda: bert_core.pruning_curve(m, text),
                 lambda: bert_core.patch_activations(m, text, text, "cat"),
                 lambda: bert_core.fill_masks(m, text),
                 lambda: bert_core.pseudo_log_likelihood(m, text),
                 lambda: bert_core.logit_lens(m, text)):
        with pytest.raises(bert_core.BertCoreError, match="masked-language-model"):
            call()
    enc, ids, types = encode(m, "the cat sat on the mat")
    r = bert_core.replaced_token_probs(m, "the cat sat on the mat")
    with torch.no_grad():
        close(r.logits, hf(input_ids=ids, token_type_ids=types).logits[0], "ELECTRA discriminator logits")
    rs = bert_core.residual_stream(m, "the cat sat", pca=True)  # the Layers page without a lens
    assert rs.lens is None and math.isfinite(float(rs.norms.sum()))
