"""Every lesson answer against transformers (or a plain loop) on the same weights: the bundled MiniLM folder,
read by transformers' BertForPreTraining, fp32, eager attention, 1e-5."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import bert_core
from bert_core.inspect.objectives_view import loss_targets, mask_comparison
from bert_core.lesson import questions as Q

TEXT = "She [MASK] the letter to her mother."


@pytest.fixture(scope="module")
def m():
    return bert_core.load_model("bundled-minilm")


@pytest.fixture(scope="module")
def hf():
    from transformers import BertForPreTraining

    return BertForPreTraining.from_pretrained(bert_core.MINILM_DIR, dtype=torch.float32,
                                              attn_implementation="eager").eval()


@pytest.fixture(scope="module")
def hf_tok():
    from transformers import BertTokenizerFast

    return BertTokenizerFast.from_pretrained(bert_core.MINILM_DIR)


def run(hf, hf_tok, text, pair=None):
    enc = hf_tok(text, pair, return_tensors="pt")
    with torch.no_grad():
        out = hf(**enc, output_hidden_states=True, output_attentions=True)
    return enc, out


def test_pieces_as_transformers_tokenizer_cuts_the_word(m, hf_tok):
    q = Q.pieces(m, "The unaffordable rent upset everyone.")
    n = len(hf_tok.tokenize("unaffordable"))
    assert q.choices[q.answer] == str(n) and "unaffordable" in q.prompt


def test_input_cosine_is_transformers_embedding_output(m, hf, hf_tok):
    text, pair = "I sat on the bank of the river.", "Then I went to the bank to get money."
    q = Q.input_cosine(m, text, pair)
    word = q.prompt.split("”")[0].lstrip("“")
    enc, out = run(hf, hf_tok, text, pair)
    toks = hf_tok.convert_ids_to_tokens(enc["input_ids"][0])
    a, b = [i for i, t in enumerate(toks) if t == word][:2]
    h0 = out.hidden_states[0][0]
    cos = float(torch.nn.functional.cosine_similarity(h0[a], h0[b], dim=0))
    assert f"cos = {cos:.3f}" in q.reveal
    assert q.answer == Q._band(cos)


def test_kept_share_counts_a_plain_loop_of_draws(m):
    from bert_core.inspect.masking_view import draw_seed, mask_input
    from bert_core.objectives.masking import KEPT, NOT_SELECTED, mask_tokens

    q = Q.kept_share(m, TEXT, seed=3, n_draws=200)
    inp = mask_input(m, TEXT)
    g = torch.Generator().manual_seed(draw_seed(3, 0))
    ids = torch.from_numpy(inp.input_ids).expand(200, -1)
    d = mask_tokens(ids, torch.from_numpy(inp.special).expand(200, -1), vocab_size=m.config.vocab_size,
                    mask_token_id=m.tokenizer.mask_token_id, special_ids=m.tokenizer.all_special_ids, generator=g)
    kept, sel = 0, 0
    for row in d.outcome.tolist():  # a plain loop over the draws
        for o in row:
            sel += o != NOT_SELECTED
            kept += o == KEPT
    assert f"{sel:,} tokens were selected" in q.reveal and f"{kept / sel:.1%} stayed unchanged" in q.reveal


def test_top_guess_and_right_context_are_transformers_argmax(m, hf, hf_tok):
    q = Q.top_guess(m, TEXT)
    enc, out = run(hf, hf_tok, TEXT)
    pos = int((enc["input_ids"][0] == hf_tok.mask_token_id).nonzero()[0])
    p = out.prediction_logits[0, pos].softmax(-1)
    best = hf_tok.convert_ids_to_tokens(int(p.argmax()))
    assert q.choices[q.answer] == best
    assert f"{best} {float(p.max()):.1%}" in q.reveal

    text = "The [MASK] of France is Paris."
    r = Q.right_context(m, text)
    _, full = run(hf, hf_tok, text)
    _, left = run(hf, hf_tok, "The [MASK]")
    a = hf_tok.convert_ids_to_tokens(int(full.prediction_logits[0, 2].argmax()))
    b = hf_tok.convert_ids_to_tokens(int(left.prediction_logits[0, 2].argmax()))
    assert r.answer == (0 if a == b else 1)
    assert f"“{a}”" in r.reveal and f"“{b}”" in r.reveal


def test_attention_target_is_transformers_attention_argmax(m, hf, hf_tok):
    text = "She gave the letter to her mother."
    q = Q.attention_target(m, text)
    layer, head = Q.attention_layer_head(m)
    enc, out = run(hf, hf_tok, text)
    toks = hf_tok.convert_ids_to_tokens(enc["input_ids"][0])
    row = out.attentions[layer][0, head, toks.index("mother")]
    best = int(row.argmax())
    assert q.choices[q.answer] == f"{toks[best]} (position {best})"
    assert f"{toks[best]} ({best}) {float(row[best]):.1%}" in q.reveal


def test_next_sentence_is_transformers_nsp(m, hf, hf_tok):
    a, b = "She opened the door of the house.", "Penguins cannot fly but they swim very well."
    q = Q.next_sentence(m, a, b)
    _, out = run(hf, hf_tok, a, b)
    p = out.seq_relationship_logits[0].softmax(-1)
    assert q.answer == int(p.argmax()) and f"p(IsNext) = {float(p[0]):.1%}" in q.reveal


def test_lens_layer_reads_transformers_hidden_states_with_its_head(m, hf, hf_tok):
    q = Q.lens_layer(m, TEXT)
    enc, out = run(hf, hf_tok, TEXT)
    pos = int((enc["input_ids"][0] == hf_tok.mask_token_id).nonzero()[0])
    with torch.no_grad():
        logits = [hf.cls.predictions(h[0, pos]) for h in out.hidden_states]  # (V,) per state
    final = int(logits[-1].argmax())
    ranks = [int((lg > lg[final]).sum()) + 1 for lg in logits]
    first = len(ranks) - 1
    while first > 0 and ranks[first - 1] == 1:
        first -= 1
    assert q.answer == first
    assert q.reveal.endswith(f"layer {len(ranks) - 1}: {ranks[-1]}.") and f"the embeddings: {ranks[0]}," in q.reveal


def test_bert_base_size_is_transformers_parameter_count(m):
    from transformers import BertConfig, BertModel

    n = BertModel(BertConfig()).num_parameters()
    q = Q.bert_base_size(m)
    assert f"{n:,}" in q.reveal and q.choices[q.answer] == "about 110 million"
    ours = sum(p.numel() for p in m.model.parameters())  # the tied decoder is counted once
    assert f"This model: {ours:,}," in q.reveal


def test_initial_loss_is_a_plain_cross_entropy_of_the_fresh_model(m):
    import torch.nn.functional as F

    from bert_core.objectives.masking import mask_tokens
    from bert_core.train.trainer import PRESETS, new_model

    text = "The cat sat on the mat."
    loss, n = Q.untrained_loss(m, text, seed=0, repeats=20)
    fresh = new_model(m.tokenizer, PRESETS["tiny (2 layers, 64 wide)"], seed=0).eval()
    row = [m.tokenizer.cls_token_id, *m.tokenizer.encode_plain(text), m.tokenizer.sep_token_id]
    ids = torch.tensor([row] * 20)
    special = ((ids == row[0]) | (ids == row[-1])).long()
    g = torch.Generator().manual_seed(0)
    d = mask_tokens(ids, special, vocab_size=fresh.config.vocab_size, mask_token_id=m.tokenizer.mask_token_id,
                    generator=g, special_ids=m.tokenizer.all_special_ids)
    with torch.no_grad():
        hidden = fresh(d.input_ids, None, torch.ones_like(ids))
        sel = d.labels != -100
        plain = F.cross_entropy(fresh.mlm_logits(hidden[sel]), d.labels[sel]).item()
    assert n == int(sel.sum()) and loss == pytest.approx(plain, abs=1e-5)
    assert abs(loss - math.log(m.tokenizer.vocab_size)) < 0.5  # a model that knows nothing: about ln V
    q = Q.initial_loss(m, text)
    assert q.choices[q.answer] == f"about {math.log(m.tokenizer.vocab_size):.1f}"
    assert "ln V" not in " ".join(q.choices)  # no choice names itself the right one
    assert f"{n} masked tokens in all" in q.reveal


def test_head_sizes_are_transformers_head_shapes(m, hf_tok):
    from transformers import BertForSequenceClassification, BertForTokenClassification

    text = "Ada Lovelace worked with Charles Babbage in London."
    T, n_clf, n_tag = Q.head_outputs(m, text)
    enc = hf_tok(text, return_tensors="pt")
    clf = BertForSequenceClassification.from_pretrained(bert_core.MINILM_DIR, num_labels=2).eval()
    tag = BertForTokenClassification.from_pretrained(bert_core.MINILM_DIR, num_labels=9).eval()
    with torch.no_grad():
        assert clf(**enc).logits.numel() == n_clf
        assert tag(**enc).logits.shape == (1, T, 9) and tag(**enc).logits.numel() == n_tag
    q = Q.head_sizes(m, text)
    assert q.choices[q.answer] == f"classifier {n_clf}, tagger {n_tag}"


def test_learning_signal_counts_each_objectives_labels(m, hf_tok):
    text = "The cat sat on the mat because it was warm."
    t = loss_targets(m, text, seed=0)
    enc = hf_tok(text)
    T = len(enc["input_ids"])
    assert len(t.tokens) == T
    # GPT reads the pieces alone (no [CLS] / [SEP]); shifted by one, as transformers' causal LMs shift their
    # labels, every piece but the first is a target.
    n = len(hf_tok(text, add_special_tokens=False)["input_ids"])
    clm = n - 1
    mlm = int(t.mlm.sum())
    assert 0 < mlm < T - 2
    q = Q.learning_signal(m, text)
    assert q.choices[q.answer] == f"BERT {mlm}, GPT {clm}", (q.choices, q.answer)
    assert f"each of its {T} input tokens" in q.reveal and "ELECTRA" in q.reveal


def test_the_lesson_draws_the_bert_vs_gpt_pages_maps_which_are_transformers_attention(m, hf, hf_tok):
    from transformers import BertConfig, BertModel

    text = "The cat sat on the mat."
    r = mask_comparison(m, text)
    enc = hf_tok(text, return_tensors="pt")
    cfg = BertConfig.from_pretrained(bert_core.MINILM_DIR, is_decoder=True, attn_implementation="eager")
    dec = BertModel(cfg, add_pooling_layer=False).eval()
    dec.load_state_dict(hf.bert.state_dict(), strict=False)
    layer, head = Q.attention_layer_head(m)
    with torch.no_grad():
        causal = dec(**enc, output_attentions=True).attentions[layer][0, head].numpy()
        both = hf.bert(**enc, output_attentions=True).attentions[layer][0, head].numpy()
    np.testing.assert_allclose(r.attn_causal[layer, head], causal, atol=1e-5)
    np.testing.assert_allclose(r.attn_bidirectional[layer, head], both, atol=1e-5)
    assert np.all(np.triu(r.attn_causal[layer, head], 1) == 0)


def test_a_question_that_cannot_be_asked_says_what_to_change(m):
    for fn, args in ((Q.pieces, ("...",)), (Q.input_cosine, ("No word repeats here.",)),
                     (Q.top_guess, ("No mask here.",)), (Q.lens_layer, ("No mask here.",)),
                     (Q.next_sentence, ("Only one sentence.", None))):
        with pytest.raises(bert_core.BertCoreError):
            fn(m, *args)
