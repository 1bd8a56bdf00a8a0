"""Rollout, head statistics, salience, mask filling and PLL against plain loops over transformers' BertForMaskedLM.

Same random weights in both (a tiny HF checkpoint saved with save_pretrained, loaded by our
loader); every batched pass of ours against one-input-at-a-time passes of HF's eager model, fp32, 1e-5.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import bert_core
from bert_core.inspect import attribution

ATOL = 1e-5
TEXT = "the cat [MASK] on the mat, playing."
PAIR = "he went to the store."


@pytest.fixture(scope="module")
def mlm(tiny_dirs):
    path, hf = tiny_dirs["mlm"]
    return bert_core.load_model(str(path)), hf


def hf_probs(hf, ids, types, position) -> torch.Tensor:
    """HF's softmax over the vocabulary at one position, for one input (1, T)."""
    with torch.no_grad():
        return hf(input_ids=ids, token_type_ids=types).logits[0, position].softmax(-1)


def encode(m, text, pair=None):
    enc = m.tokenizer.encode(text, pair)
    return enc, torch.from_numpy(enc.input_ids)[None], torch.from_numpy(enc.token_type_ids)[None]


def non_special_argmax(m, probs) -> int:
    """The top-1 candidate with special tokens skipped, by walking down the sorted list."""
    for i in probs.argsort(descending=True).tolist():
        if i not in m.tokenizer.all_special_ids:
            return i
    raise AssertionError("no candidate")


# ----------------------------------------------------------------------------------------------
# Rollout and head statistics: against the formulas, written as plain loops
# ----------------------------------------------------------------------------------------------


def rollout_loop(att: np.ndarray) -> np.ndarray:
    L, nh, T, _ = att.shape
    out, prev = [], None
    for layer in range(L):
        a = [[sum(float(att[layer, h, i, j]) for h in range(nh)) / nh for j in range(T)] for i in range(T)]
        a = [[0.5 * a[i][j] + (0.5 if i == j else 0.0) for j in range(T)] for i in range(T)]
        a = [[v / sum(row) for v in row] for row in a]
        if prev is None:
            r = a
        else:
            r = [[sum(a[i][k] * prev[k][j] for k in range(T)) for j in range(T)] for i in range(T)]
        out.append(r)
        prev = r
    return np.array(out)


def test_rollout_matches_the_formula(mlm):
    m, _ = mlm
    t = bert_core.analyze(m, TEXT, PAIR)
    r = bert_core.attention_rollout(t.attentions)
    L, T = t.attentions.shape[0], len(t.tokens)
    assert r.shape == (L, T, T) and isinstance(r, np.ndarray)
    np.testing.assert_allclose(r, rollout_loop(t.attentions), atol=ATOL)
    np.testing.assert_allclose(r.sum(-1), 1.0, atol=ATOL)  # every rollout row is a distribution over inputs


def test_rollout_worked_example():
    a = np.array([[[[0.0, 1.0], [1.0, 0.0]]]])  # 1 layer, 1 head: each token reads only the other
    np.testing.assert_allclose(bert_core.attention_rollout(a), [[[0.5, 0.5], [0.5, 0.5]]])
    with pytest.raises(bert_core.BertCoreError):
        bert_core.attention_rollout(np.zeros((2, 3, 4)))


def test_head_stats_match_plain_loops(mlm):
    m, _ = mlm
    t = bert_core.analyze(m, TEXT, PAIR)
    att = t.attentions
    L, nh, T, _ = att.shape
    stats = bert_core.head_stats(t)
    assert [(s["layer"], s["head"]) for s in stats] == [(lay, h) for lay in range(L) for h in range(nh)]
    cls = [0]
    seps = [i for i, tok in enumerate(t.tokens) if tok == "[SEP]"]
    assert len(seps) == 2
    for s in stats:
        a = att[s["layer"], s["head"]].astype(np.float64)
        want = {
            "entropy": sum(-sum(a[i, j] * math.log(a[i, j]) for j in range(T) if a[i, j] > 0) for i in range(T)) / T,
            "distance": sum(sum(a[i, j] * abs(i - j) for j in range(T)) for i in range(T)) / T,
            "cls": sum(sum(a[i, j] for j in cls) for i in range(T)) / T,
            "sep": sum(sum(a[i, j] for j in seps) for i in range(T)) / T,
            "self": sum(a[i, i] for i in range(T)) / T,
            "prev": sum(a[i, i - 1] for i in range(1, T)) / (T - 1),
            "next": sum(a[i, i + 1] for i in range(T - 1)) / (T - 1),
        }
        for k, v in want.items():
            assert s[k] == pytest.approx(v, abs=ATOL), (s["layer"], s["head"], k)


def test_head_stats_on_known_maps():
    """A head that reads only the previous token, and one that parks everything on [SEP]."""

    class T:
        pass

    n = 5
    prev = np.zeros((n, n))
    prev[0, 0] = 1.0
    for i in range(1, n):
        prev[i, i - 1] = 1.0
    sink = np.zeros((n, n))
    sink[:, n - 1] = 1.0
    t = T()
    t.attentions = np.stack([prev, sink])[None]  # (1 layer, 2 heads, 5, 5)
    t.special_tokens_mask = np.array([1, 0, 0, 0, 1])
    a, b = bert_core.head_stats(t)
    assert a["prev"] == 1.0 and a["entropy"] == 0.0 and a["next"] == 0.0 and a["distance"] == pytest.approx(0.8)
    assert b["sep"] == 1.0 and b["cls"] == 0.0 and b["self"] == pytest.approx(0.2)


def test_sink_heads_name_cls_sep_or_punctuation():
    """Three heads, each parking 0.9 of every row on one kind of sink, and one that reads the previous token."""

    class T:
        pass

    n = 6
    t = T()
    t.tokens = ["[CLS]", "the", "cat", "##,", "sat", "[SEP]"]
    t.special_tokens_mask = np.array([1, 0, 0, 0, 0, 1])
    heads = []
    for col in (0, 5, 3):  # [CLS], [SEP], the comma piece
        a = np.full((n, n), 0.1 / (n - 1))
        a[:, col] = 0.9
        heads.append(a)
    heads.append(np.eye(n, k=-1) + np.eye(n)[0] * np.eye(n)[:, :1])  # previous token (row 0 on itself)
    t.attentions = np.stack(heads)[None]  # (1 layer, 4 heads, 6, 6)
    found = attribution.sink_heads(t)
    assert [(s["head"], s["sink"]) for s in found] == [(0, "[CLS]"), (1, "[SEP]"), (2, "punctuation")]
    assert all(s["share"] == pytest.approx(0.9) for s in found)
    assert attribution.is_punctuation("Ġ.") and not attribution.is_punctuation("cat")


def test_sink_finder_names_cls_in_layers_2_to_6_of_the_bundled_minilm():
    """The Attention page's words: MiniLM parks on [CLS] (not [SEP]) from layer 2 on, for the page's default."""
    from ui.state import DEFAULT_TEXT

    m = bert_core.load_model()
    t = bert_core.analyze(m, DEFAULT_TEXT)
    found = attribution.sink_heads(t)
    assert {(s["layer"] + 1, s["sink"]) for s in found} == {(layer, "[CLS]") for layer in range(2, 7)}
    rollout = bert_core.attention_rollout(t.attentions)
    assert attribution.common_source(rollout[-1]) == (0, len(t.tokens))  # the rollout caption: every row on [CLS]


# ----------------------------------------------------------------------------------------------
# Salience
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pair", [None, PAIR])
def test_occlusion_matches_one_pass_per_occluded_token(mlm, pair):
    m, hf = mlm
    enc, ids, types = encode(m, TEXT, pair)
    pos = enc.tokens.index("[MASK]")
    base = hf_probs(hf, ids, types, pos)
    target = non_special_argmax(m, base)
    ours = bert_core.salience(m, TEXT, pos, text_pair=pair)  # token=None: the top-1 non-special candidate
    assert ours.shape == (len(enc),) and not np.isnan(ours).any()
    for i in range(len(enc)):
        if enc.special_tokens_mask[i]:
            assert ours[i] == 0.0
            continue
        occluded = ids.clone()
        occluded[0, i] = m.tokenizer.mask_token_id
        want = float(base[target] - hf_probs(hf, occluded, types, pos)[target])
        assert ours[i] == pytest.approx(want, abs=ATOL), i
    # Naming the candidate gives the same numbers; another candidate gives others.
    np.testing.assert_allclose(bert_core.salience(m, TEXT, pos, m.tokenizer.id_to_token(target), pair), ours)


def test_gradient_salience_matches_autograd_on_transformers(mlm):
    m, hf = mlm
    enc, ids, types = encode(m, TEXT)
    pos = enc.tokens.index("[MASK]")
    token = "cat"
    target = m.tokenizer.vocab[token]
    emb = hf.bert.embeddings
    T = ids.shape[1]
    # HF adds the position and segment embeddings to `inputs_embeds`, so d p / d(sum) = d p / d(word).
    word = emb.word_embeddings(ids).detach().requires_grad_(True)
    p = hf(inputs_embeds=word, token_type_ids=types).logits[0, pos].softmax(-1)[target]
    (g,) = torch.autograd.grad(p, word)
    e = (word + emb.token_type_embeddings(types) + emb.position_embeddings(torch.arange(T))[None]).detach()
    want = (g * e).detach()[0].norm(dim=-1).numpy()
    want[enc.special_tokens_mask.astype(bool)] = 0.0
    ours = bert_core.salience(m, TEXT, pos, token, method="gradient")
    np.testing.assert_allclose(ours, want, atol=ATOL)
    assert (ours[1:-1] > 0).all()


def test_gradient_salience_leaves_the_shared_model_untouched(mlm):
    m, _ = mlm
    before = {k: v.clone() for k, v in m.model.state_dict().items()}
    for p in m.model.parameters():
        p.grad = None
    bert_core.salience(m, TEXT, 3, "cat", method="gradient")
    assert all(p.grad is None for p in m.model.parameters())
    assert all(torch.equal(before[k], v) for k, v in m.model.state_dict().items())
    # A read-only model (the app's shared one, requires_grad off) and inference-mode caches work too.
    bert_core.analyze(m, TEXT)
    for p in m.model.parameters():
        p.requires_grad_(False)
    try:
        g = bert_core.salience(m, TEXT, 3, "cat", method="gradient")
        assert np.isfinite(g).all()
    finally:
        for p in m.model.parameters():
            p.requires_grad_(True)


def test_salience_bad_input(mlm):
    m, _ = mlm
    with pytest.raises(bert_core.BertCoreError, match="special token"):
        bert_core.salience(m, TEXT, 0)
    with pytest.raises(bert_core.BertCoreError, match="between"):
        bert_core.salience(m, TEXT, 99)
    with pytest.raises(bert_core.BertCoreError, match="3 word pieces"):
        bert_core.salience(m, TEXT, 3, "unaffable")
    with pytest.raises(bert_core.BertCoreError, match="special token"):
        bert_core.salience(m, TEXT, 3, "[SEP]")
    with pytest.raises(bert_core.BertCoreError, match="method"):
        bert_core.salience(m, TEXT, 3, method="lime")
    # A word that is one piece after lower-casing is accepted.
    np.testing.assert_allclose(bert_core.salience(m, TEXT, 3, "Cat"), bert_core.salience(m, TEXT, 3, "cat"))
    # One word: nothing else to rely on but itself.
    s = bert_core.salience(m, "[MASK]", 1)
    assert s.tolist() == [0.0, 0.0, 0.0]


def test_candidates_never_special(mlm):
    """Make [SEP] the model's favourite at the [MASK]: the top-1 candidate must still be a word piece."""
    m, _ = mlm
    enc, ids, types = encode(m, TEXT)
    pos = enc.tokens.index("[MASK]")
    bias = m.model.cls.predictions.bias
    saved = bias.detach().clone()
    try:
        with torch.no_grad():
            bias[m.tokenizer.sep_token_id] += 100.0
            bias[m.tokenizer.mask_token_id] += 90.0
        r = bert_core.fill_masks(m, TEXT)
        assert r.steps[0][1] not in m.tokenizer.specials.values()
        s = bert_core.salience(m, TEXT, pos)  # explains a word piece, not [SEP]
        assert np.isfinite(s).all()
    finally:
        with torch.no_grad():
            bias.copy_(saved)


def test_batched_work_is_capped_and_chunked(mlm, monkeypatch):
    m, hf = mlm
    text = "the cat sat on the mat . " * 4 + "[MASK] ."
    enc, ids, types = encode(m, text)
    T = len(enc)
    pos = enc.tokens.index("[MASK]")
    monkeypatch.setattr(attribution, "MAX_WORK_TOKENS", 5 * T)  # room for 5 rows of T tokens
    monkeypatch.setattr(attribution, "CHUNK_TOKENS", 2 * T)  # 2 rows per chunk
    s = bert_core.salience(m, text, pos, "cat")
    scored = np.flatnonzero(~np.isnan(s) & (enc.special_tokens_mask == 0))
    assert len(scored) == 5 and set(scored) == {pos - 2, pos - 1, pos, pos + 1, pos - 3}  # the nearest five
    base = hf_probs(hf, ids, types, pos)[m.tokenizer.vocab["cat"]]
    for i in scored:
        occluded = ids.clone()
        occluded[0, i] = m.tokenizer.mask_token_id
        assert s[i] == pytest.approx(float(base - hf_probs(hf, occluded, types, pos)[m.tokenizer.vocab["cat"]]),
                                     abs=ATOL)
    pll = bert_core.pseudo_log_likelihood(m, text)
    assert pll.capped and len(pll.per_token) == 5 and any("first 5 of 29" in n for n in pll.notes)  # [MASK] not scored


# ----------------------------------------------------------------------------------------------
# Several masks
# ----------------------------------------------------------------------------------------------


def fill_loop(m, hf, text, pair, strategy):
    """The three strategies as plain loops over HF, one input at a time."""
    enc, ids, types = encode(m, text, pair)
    ids = ids.clone()
    remaining = [i for i, tok in enumerate(enc.tokens) if tok == "[MASK]"]
    steps = []
    if strategy == "independent":
        for pos in remaining:
            p = hf_probs(hf, ids, types, pos)
            best = non_special_argmax(m, p)
            steps.append((pos, m.tokenizer.id_to_token(best), float(p[best])))
        return steps
    while remaining:
        cands = []
        for pos in remaining:
            p = hf_probs(hf, ids, types, pos)
            best = non_special_argmax(m, p)
            cands.append((pos, best, float(p[best])))
        pick = cands[0] if strategy == "left_to_right" else max(cands, key=lambda c: c[2])
        ids[0, pick[0]] = pick[1]
        remaining.remove(pick[0])
        steps.append((pick[0], m.tokenizer.id_to_token(pick[1]), pick[2]))
    return steps


@pytest.mark.parametrize("strategy", bert_core.inspect.mask_filling.FILL_STRATEGIES)
@pytest.mark.parametrize("pair", [None, "he [MASK] to the [MASK]."])
def test_fill_masks_match_loops_over_transformers(mlm, strategy, pair):
    m, hf = mlm
    text = "the [MASK] [MASK] on the [MASK], playing."
    r = bert_core.fill_masks(m, text, pair, strategy=strategy)
    want = fill_loop(m, hf, text, pair, strategy)
    assert [(p, t) for p, t, _ in r.steps] == [(p, t) for p, t, _ in want]
    np.testing.assert_allclose([q for *_, q in r.steps], [q for *_, q in want], atol=ATOL)
    assert r.passes == (1 if strategy == "independent" else len(want))
    assert "[MASK]" not in r.text and (pair is None or "[MASK]" not in r.text_pair)
    for _, tok, _ in r.steps:
        assert tok not in m.tokenizer.specials.values()
        assert tok.removeprefix("##") in r.text + (r.text_pair or "")


def test_fill_masks_text_and_bad_input(mlm, tiny_dirs):
    m, _ = mlm
    r = bert_core.fill_masks(m, "the cat sat.")
    assert r.steps == [] and r.text == "the cat sat." and any("no [MASK]" in n for n in r.notes)
    r = bert_core.fill_masks(m, "The [mask] sat.", strategy="left_to_right")  # a differently-cased [MASK]
    assert len(r.steps) == 1 and "[mask]" not in r.text.lower()
    with pytest.raises(bert_core.BertCoreError, match="strategy"):
        bert_core.fill_masks(m, TEXT, strategy="random")
    base = bert_core.load_model(str(tiny_dirs["base"][0]))
    with pytest.raises(bert_core.BertCoreError, match="masked-language-model"):
        bert_core.fill_masks(base, TEXT)


# ----------------------------------------------------------------------------------------------
# Pseudo-log-likelihood
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text,pair", [("The cat sat on the mat.", None), ("the cat is playing.", PAIR)])
def test_pll_matches_one_pass_per_token(mlm, text, pair):
    m, hf = mlm
    enc, ids, types = encode(m, text, pair)
    r = bert_core.pseudo_log_likelihood(m, text, pair)
    want = []
    for i in range(len(enc)):
        if enc.special_tokens_mask[i]:
            continue
        masked = ids.clone()
        masked[0, i] = m.tokenizer.mask_token_id
        want.append((enc.tokens[i], float(hf_probs(hf, masked, types, i)[ids[0, i]].log())))
    assert [t for t, _ in r.per_token] == [t for t, _ in want]
    np.testing.assert_allclose([v for _, v in r.per_token], [v for _, v in want], atol=ATOL)
    assert r.total == pytest.approx(sum(v for _, v in want), abs=1e-4)
    assert not r.capped and r.mean == pytest.approx(r.total / len(want))


def test_pll_skips_special_tokens_typed_in_the_text(mlm):
    m, _ = mlm
    r = bert_core.pseudo_log_likelihood(m, "the [MASK] sat.")
    assert [t for t, _ in r.per_token] == ["the", "sat", "."] and any("[MASK]" in n for n in r.notes)
    r = bert_core.pseudo_log_likelihood(m, "[MASK]")
    assert r.per_token == [] and r.total == 0.0
