"""Property tests: any Unicode text gives a valid result or the documented BertCoreError."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import bert_core
from bert_core import BertCoreError

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
# Text built from any Unicode plus the pieces students type: [MASK] in any case, specials, HTML.
texts = st.lists(
    st.one_of(st.text(max_size=12), st.sampled_from(["[MASK]", "[mask]", "[CLS]", "[SEP]", "[PAD]", "<script>",
                                                     "the", "cat", " ", "\u202e", "😀", "中"])),
    max_size=12,
).map("".join)


@pytest.fixture(scope="module")
def tiny(tiny_dirs):
    return bert_core.load_model(str(tiny_dirs["pretraining"][0]))


def check_trace(m, t):
    T = len(t.tokens)
    L, nh, H = m.config.num_hidden_layers, m.config.num_attention_heads, m.config.hidden_size
    assert 3 <= T <= m.max_length
    assert t.input_ids.shape == t.token_type_ids.shape == (T,)
    assert t.tokens[0] == "[CLS]" and t.tokens[-1] == "[SEP]"
    assert t.hidden_states.shape == (L + 1, T, H) and np.isfinite(t.hidden_states).all()
    assert t.attentions.shape == (L, nh, T, T)
    np.testing.assert_allclose(t.attentions.sum(-1), 1.0, atol=1e-5)
    for pos, preds in t.predictions.items():
        assert t.input_ids[pos] == m.tokenizer.mask_token_id and len(preds) >= 1
        probs = [p for _, p in preds]
        assert probs == sorted(probs, reverse=True) and all(0 <= p <= 1 for p in probs)


@SETTINGS
@given(text=texts, pair=st.one_of(st.none(), texts), k=st.integers(-2, 120))
def test_analyze_any_text(tiny, text, pair, k):
    try:
        t = bert_core.analyze(tiny, text, pair, top_k=k)
    except BertCoreError as e:
        assert str(e)  # a readable message, not an empty one
        return
    assert 1 <= k <= 100
    check_trace(tiny, t)


@SETTINGS
@given(text=texts, pair=st.one_of(st.none(), texts))
def test_tokenization_offsets_stay_inside_the_text(tiny, text, pair):
    try:
        enc = tiny.tokenizer.encode(text, pair)
    except BertCoreError:
        return
    sources = [text, pair]
    for off, seq in zip(enc.offsets, enc.sequence_ids):
        assert (off is None) == (seq is None)
        if off is not None:
            assert 0 <= off[0] <= off[1] <= len(sources[seq])


@SETTINGS
@given(n=st.integers(1, 40), p=st.floats(0, 1), seed=st.integers(0, 2**31 - 1), whole=st.booleans())
def test_masking_any_parameters(n, p, seed, whole):
    ids = torch.randint(5, 50, (n,), generator=torch.Generator().manual_seed(seed))
    special = torch.zeros(n, dtype=torch.long)
    special[0] = 1
    words = torch.arange(n) // 2
    words[0] = -1
    d = bert_core.mask_tokens(ids, special, vocab_size=50, mask_token_id=4, special_ids=[0, 1, 2, 3, 4],
                              generator=torch.Generator().manual_seed(seed), mlm_probability=p,
                              word_ids=words, whole_word=whole)
    assert d.outcome[0] == bert_core.NOT_SELECTED and d.input_ids[0] == ids[0]
    assert ((d.labels == -100) == (d.outcome == bert_core.NOT_SELECTED)).all()
    assert not any(int(i) in (0, 1, 2, 3) for i in d.input_ids[d.outcome == bert_core.RANDOM])


def test_mixed_case_mask_is_read_as_mask(tiny):
    t = bert_core.analyze(tiny, "the [mask] sat on the [Mask].")
    assert len(t.predictions) == 2 and any("[MASK]" in n for n in t.notes)


@pytest.mark.parametrize("text", ["[CLS] [SEP]", "[SEP]", "\u200b\u200b", "", "  "])
def test_inputs_without_words_are_refused_clearly(tiny, text):
    with pytest.raises(BertCoreError, match="type some"):
        bert_core.analyze(tiny, text)
