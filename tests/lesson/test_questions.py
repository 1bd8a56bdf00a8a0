"""Every lesson answer against transformers (or a plain loop) on the same weights: the bundled MiniLM folder,
read by transformers' BertForPreTraining, fp32, eager attention, 1e-5."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import bert_core
from bert_core.inspect.objectives_view import loss_targets, mask_comparison
from bert_core.lesson import attention
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


BANK = ("I sat on the bank of the river.", "Then I went to the bank to get money.")  # step 2's pair
BANK_SAME = ("I went to the bank to get money.", "Then I went back to the bank to pay.")  # its Try-this


@pytest.mark.parametrize("text, pair, word, effect", [
    (*BANK, "bank", "pulled them apart"),
    (*BANK_SAME, "bank", "stay about as alike"),  # "went" repeats too: the pair is about "bank"
    ("The bat flew out of the dark cave.", "He swung the bat at the ball.", "bat", None),  # "the": four times
])
def test_input_cosine_is_transformers_hidden_states_of_the_word_the_pair_is_about(m, hf, hf_tok, text, pair, word,
                                                                                  effect):
    q = Q.input_cosine(m, text, pair)
    assert q.prompt.startswith(f"“{word}” occurs twice")
    enc, out = run(hf, hf_tok, text, pair)
    toks = hf_tok.convert_ids_to_tokens(enc["input_ids"][0])
    a, b = [i for i, t in enumerate(toks) if t == word][:2]
    cos = [float(torch.nn.functional.cosine_similarity(h[0, a], h[0, b], dim=0)) for h in out.hidden_states]
    assert f"cos = {cos[0]:.3f} at the input" in q.reveal and f"(layer 6) cos = {cos[-1]:.3f}" in q.reveal
    assert q.answer == Q._band(cos[0])
    # The conclusion follows the numbers: "pulled apart" only when the last layer's cosine is clearly lower.
    want = Q.context_effect(cos[0], cos[-1])
    assert want in q.reveal and (effect is None or effect in want)
    assert ("pulled them apart" in q.reveal) == (cos[-1] < cos[0] - Q.MOVED)


def test_the_lessons_pair_makes_its_point_on_the_bundled_model(m):
    """Two senses of "bank" end further apart than one sense twice (the step's own sentences and its Try-this)."""
    from ui.lesson import content as lesson

    s = lesson.STEPS[lesson.KEYS.index("embeddings")]
    assert (s.text, s.pair) == BANK and (s.try_text, s.try_pair) == BANK_SAME
    two = Q.topic_word(Q.same_word(m, *BANK))
    one = Q.topic_word(Q.same_word(m, *BANK_SAME))
    assert two.word == one.word == "bank" and two.cos[-1] < one.cos[-1] - Q.MOVED


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
    assert f"{sel:,} tokens selected" in q.reveal and f"{kept / sel:.1%} unchanged" in q.reveal


def test_top_guess_and_right_context_are_transformers_argmax(m, hf, hf_tok):
    q = Q.top_guess(m, TEXT)
    enc, out = run(hf, hf_tok, TEXT)
    pos = int((enc["input_ids"][0] == hf_tok.mask_token_id).nonzero()[0])
    p = out.prediction_logits[0, pos].softmax(-1)
    best = hf_tok.convert_ids_to_tokens(int(p.argmax()))
    assert q.choices[q.answer] == best
    assert f"{best} {float(p.max()):.1%}" in q.reveal
    assert "for the [MASK]," in q.prompt and "first [MASK]" not in q.prompt  # one [MASK]: not "the first"
    assert "the first [MASK]," in Q.top_guess(m, "She [MASK] the [MASK] to her mother.").prompt

    text = "The [MASK] of France is Paris."
    r = Q.right_context(m, text)
    _, full = run(hf, hf_tok, text)
    _, left = run(hf, hf_tok, "The [MASK]")
    a = hf_tok.convert_ids_to_tokens(int(full.prediction_logits[0, 2].argmax()))
    b = hf_tok.convert_ids_to_tokens(int(left.prediction_logits[0, 2].argmax()))
    assert r.answer == (0 if a == b else 1)
    assert f"“{a}”" in r.reveal and f"“{b}”" in r.reveal


@pytest.mark.parametrize("text", ["My brother bought a new car yesterday.",
                                  "After dinner my brother bought a new car yesterday.",
                                  "The farmer sold his cows at the market yesterday."])
def test_attention_target_is_transformers_attention_of_a_head_that_links_content_words(m, hf, hf_tok, text):
    """A plain loop over transformers' heads: from the last word, the head whose largest weight among the other
    words is on a content word not next to it, with at least 20% there and 1.5 times any other such word, the most
    such weight of all heads; the choices are such content words only, each a possible answer to the prompt."""
    from bert_core.finetune.qa import STOPWORDS

    q = Q.attention_target(m, text)
    enc, out = run(hf, hf_tok, text)
    toks = hf_tok.convert_ids_to_tokens(enc["input_ids"][0])
    qi = len(toks) - 3  # the last word, before "." and [SEP]
    other = [j for j, tk in enumerate(toks) if tk.isalnum() and j != qi and tk not in ("[CLS]", "[SEP]")]
    far = [j for j in other if toks[j] not in STOPWORDS and abs(j - qi) > 1]
    best_w, pick = -1.0, None
    for layer, att in enumerate(out.attentions):
        for head in range(att.shape[1]):
            row = att[0, head, qi]
            top_other = max(other, key=lambda j: float(row[j]))
            w = float(row[top_other])
            runner = max(float(row[j]) for j in far if j != top_other)
            if top_other in far and w >= 0.2 and w >= 1.5 * runner and w > best_w + 1e-6:
                best_w, pick = w, (layer, head)
    layer, head = pick
    assert Q.attention_head(m, text) == pick
    assert f"layer {layer + 1}, head {head + 1} links “{toks[qi]}”" in q.prompt
    row = out.attentions[layer][0, head, qi]
    best = max(other, key=lambda j: float(row[j]))
    assert best in far and float(row[best]) >= 0.2  # a clear link by meaning or syntax, not by position
    assert q.choices[q.answer] == f"{toks[best]} (position {best})"
    assert f"{toks[best]} ({best}) gets the most, {float(row[best]):.1%}" in q.reveal
    assert 2 <= len(q.choices) <= 4
    assert all(int(c.split("(position ")[1].rstrip(")")) in far for c in q.choices)  # every choice possible


def test_attention_target_refuses_a_sentence_where_no_head_links_clearly(m):
    # The step's old sentence: its best head gave "gave" 17.0% beside 44.1% on [CLS].
    with pytest.raises(bert_core.BertCoreError, match="no head of this model links “mother” clearly"):
        Q.attention_target(m, "She gave the letter to her mother.")


def test_attention_target_needs_two_content_words_away_from_the_last_word(m):
    with pytest.raises(bert_core.BertCoreError, match="needs two content words"):
        Q.attention_target(m, "She drove the car.")  # only "drove" is a content word away from "car"


@pytest.mark.parametrize("model", ["bundled-minilm", "bundled"])
def test_the_attention_steps_sentences_have_a_clear_link(model):
    """The step's own and its Try-this sentence each have a head that links the last word ("yesterday") clearly
    to a content word on both bundled models; on MiniLM, to its verb (syntax, not position)."""
    from ui.lesson.content import STEPS

    m = bert_core.load_model(model)
    s = next(s for s in STEPS if s.question == "attention_target")
    for text, verb in ((s.text, "wrote"), (s.try_text, "sold")):
        q = Q.attention_target(m, text)
        t = bert_core.analyze(m, text)
        layer, head = Q.attention_head(m, text)
        qi = len(t.tokens) - 3
        row = t.attentions[layer, head, qi]
        weight = max(row[i] for i in range(len(row)) if attention.far_content(t, qi)[i])
        assert weight >= attention.MIN_LINK and len(q.choices) >= 3, (model, text, q.reveal)
        if model == "bundled-minilm":
            assert q.choices[q.answer].startswith(verb), (text, q.reveal)


def test_next_sentence_is_transformers_nsp(m, hf, hf_tok):
    a, b = "She opened the door of the house.", "Penguins cannot fly but they swim very well."
    q = Q.next_sentence(m, a, b)
    _, out = run(hf, hf_tok, a, b)
    p = out.seq_relationship_logits[0].softmax(-1)
    assert q.answer == int(p.argmax()) and f"p(IsNext) = {float(p[0]):.1%}" in q.reveal
    # The paper's number, and how the model on screen differs from it.
    assert "97-98%" in q.reveal and "MiniLM" in q.reveal and "often wrong" not in q.reveal


@pytest.mark.parametrize("text", [TEXT, "He drove the [MASK] to work."])
def test_lens_layer_reads_transformers_hidden_states_with_its_head(m, hf, hf_tok, text):
    q = Q.lens_layer(m, text)
    enc, out = run(hf, hf_tok, text)
    pos = int((enc["input_ids"][0] == hf_tok.mask_token_id).nonzero()[0])
    with torch.no_grad():
        logits = [hf.cls.predictions(h[0, pos]) for h in out.hidden_states]  # (V,) per state
    final = int(logits[-1].argmax())
    ranks = [int((lg > lg[final]).sum()) + 1 for lg in logits]
    first = len(ranks) - 1
    while first > 0 and ranks[first - 1] == 1:
        first -= 1
    half = (len(ranks) - 1) // 2
    band = next(i for i, hi in enumerate((1, 10, 100, math.inf)) if ranks[half] <= hi)
    assert q.answer == band and f"after layer {half} of 6" in q.prompt
    assert f"After layer {half}: rank {ranks[half]:,}." in q.reveal
    assert f"the embeddings: {ranks[0]:,}," in q.reveal and f"layer 6: {ranks[-1]:,};" in q.reveal
    assert f"top guess from {'the embeddings' if first == 0 else f'layer {first}'} on" in q.reveal


def test_lens_layer_answers_differ_across_sentences(m):
    """The halfway rank is read from the sentence: not one answer for every sentence."""
    answers = {Q.lens_layer(m, t).answer for t in (TEXT, "[MASK] wrote the letter to her mother.",
                                                   "She put the [MASK] in the oven to bake.")}
    assert len(answers) >= 2, answers


def test_bert_base_size_is_transformers_parameter_count(m):
    from transformers import BertConfig, BertModel

    n = BertModel(BertConfig()).num_parameters()
    q = Q.bert_base_size(m)
    assert f"{n:,}" in q.reveal and q.choices[q.answer] == "about 110 million"
    ours = sum(p.numel() for p in m.model.parameters())  # the tied decoder is counted once
    assert f"this model (MiniLM: 6 layers, 384 wide, distilled from a BERT-base-sized teacher) has " \
           f"{ours / 1e6:.1f} million" in q.prompt  # asked as BERT-base's fact, with the model on screen beside it
    assert f"MiniLM: {ours:,} in all" in q.reveal
    assert q.answered_by == "the paper" and "The paper: 110M" in q.reveal
    # Its pre-training heads are the difference between its total and the encoder's (with the pooler).
    from transformers import BertForPreTraining

    hf = BertForPreTraining.from_pretrained(bert_core.MINILM_DIR)
    heads = hf.num_parameters() - hf.bert.num_parameters()
    assert heads > 0 and f"of which {heads:,} are the pre-training heads" in q.reveal
    assert f"{ours - heads:,} without them" in q.reveal


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
    assert "mean of its tokens' vectors" in q.reveal and "first piece" in q.reveal  # MiniLM's and the paper's


def test_head_sizes_right_choice_moves_with_seed_and_sentence(m):
    texts = ("Ada Lovelace worked with Charles Babbage in London.", "The cat sat on the mat.", "Paris is big.")
    places = {Q.head_sizes(m, t, seed=s).answer for t in texts for s in range(4)}
    assert len(places) >= 3, places
    q, again = Q.head_sizes(m, texts[0], seed=1), Q.head_sizes(m, texts[0], seed=1)
    assert q == again  # seeded: the same question for the whole class


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
    assert f"learns from all {T}:" in q.reveal and "ELECTRA" in q.reveal
    # The count is in this model's WordPiece pieces, not GPT's own BPE tokens (Radford 2018).
    assert f"{n} WordPiece pieces here" in q.prompt and "its BPE splits differently" in q.prompt


def test_learning_signal_counts_a_typed_mask_and_an_unknown_piece(m, hf_tok):
    text = "The [MASK] sat on the ☃ mat."
    n = len(hf_tok(text, add_special_tokens=False)["input_ids"])  # [MASK] and [UNK] are pieces of the text
    T = len(hf_tok(text)["input_ids"])
    q = Q.learning_signal(m, text)
    assert f"Your sentence is {n} WordPiece pieces here ({T} with [CLS] and [SEP];" in q.prompt
    assert T == n + 2


def test_the_lesson_draws_the_bert_vs_gpt_pages_maps_which_are_transformers_attention(m, hf, hf_tok):
    from transformers import BertConfig, BertModel

    text = "The cat sat on the mat."
    r = mask_comparison(m, text)
    enc = hf_tok(text, return_tensors="pt")
    cfg = BertConfig.from_pretrained(bert_core.MINILM_DIR, is_decoder=True, attn_implementation="eager")
    dec = BertModel(cfg, add_pooling_layer=False).eval()
    dec.load_state_dict(hf.bert.state_dict(), strict=False)
    layer, head = attention.attention_layer_head(m)
    with torch.no_grad():
        causal = dec(**enc, output_attentions=True).attentions[layer][0, head].numpy()
        both = hf.bert(**enc, output_attentions=True).attentions[layer][0, head].numpy()
    np.testing.assert_allclose(r.attn_causal[layer, head], causal, atol=1e-5)
    np.testing.assert_allclose(r.attn_bidirectional[layer, head], both, atol=1e-5)
    assert np.all(np.triu(r.attn_causal[layer, head], 1) == 0)


def test_kept_share_gives_the_papers_reason_and_its_ablation(m):
    q = Q.kept_share(m, TEXT, n_draws=50)
    assert "never appears at fine-tuning, a mismatch with pre-training" in q.reveal and "Table 8" in q.reveal
    # Table 8 as printed: 80/10/10 first, then 100% [MASK]; MNLI barely moves, NER pays.
    assert "MNLI 84.2 vs 84.3" in q.reveal and "NER 95.4 vs 94.9 fine-tuned" in q.reveal
    assert "94.9 vs 94.0 feature-based" in q.reveal and "costs little" not in q.reveal
    # Appendix A.1's reasons: every input token's representation kept; 1.5% random does no harm.
    assert "distributional representation of every input token" in q.reveal and "1.5%" in q.reveal


def test_model_names_come_from_the_config(m, tiny_dirs):
    from bert_core.lesson.naming import model_name

    n = model_name(m)
    assert n.short == "MiniLM"
    assert n.long == "this model (MiniLM: 6 layers, 384 wide, distilled from a BERT-base-sized teacher)"
    tiny = bert_core.load_model("bundled")
    assert model_name(tiny).long.startswith("this model (a tiny BERT: 4 layers, 256 wide")
    base = bert_core.load_model(str(tiny_dirs["base"][0]))
    c = base.config
    assert model_name(base).long == f"this model (a BERT: {c.num_hidden_layers} layers, {c.hidden_size} wide)"


def test_a_bert_base_shaped_model_is_called_bert_base(tmp_path):
    from support.checkpoints import write_base_sized_checkpoint as make_checkpoint

    from bert_core.lesson.naming import model_name

    make_checkpoint(tmp_path)
    big = bert_core.load_model(str(tmp_path), local_roots=[str(tmp_path)])
    assert model_name(big).short == model_name(big).long == "BERT-base" and model_name(big).paper
    q = Q.bert_base_size(big)
    assert "BERT-base is the model on screen" in q.prompt and "million." not in q.prompt


def test_a_question_that_cannot_be_asked_says_what_to_change(m):
    for fn, args in ((Q.pieces, ("...",)), (Q.input_cosine, ("No word repeats here.",)),
                     (Q.top_guess, ("No mask here.",)), (Q.lens_layer, ("No mask here.",)),
                     (Q.next_sentence, ("Only one sentence.", None))):
        with pytest.raises(bert_core.BertCoreError):
            fn(m, *args)


def test_the_lessons_sentences_make_their_point_on_the_bundled_model(m):
    """Each step's own sentence and its Try-this show what the slide says, on the model that ships."""
    from ui.lesson import content as lesson

    step = {s.key: s for s in lesson.STEPS}
    both = step["both-sides"]
    q, q_try = Q.right_context(m, both.text), Q.right_context(m, both.try_text)
    assert q.choices[q.answer] == "no, a different word"  # cut after the gap, the guess changes
    guess = Q.top_guess(m, both.text)
    guess_try = Q.top_guess(m, both.try_text)
    # Changing only the words after the gap changes the guess: "bread" for the oven, "car" for the garage.
    assert (guess.choices[guess.answer], guess_try.choices[guess_try.answer]) == ("bread", "car"), (q_try.reveal,)
    nsp = step["nsp"]
    assert Q.next_sentence(m, nsp.text, nsp.pair).answer == 0  # the real next sentence: IsNext
    assert Q.next_sentence(m, nsp.try_text, nsp.try_pair).answer == 1  # the penguins: NotNext
    for s in (step["predictions"], step["layers"], step["knockout"]):
        for text in (s.text, s.try_text):
            q = Q.top_guess(m, text)
            assert q.choices[q.answer] in ("sent", "she", "car", "coffee"), (text, q.reveal)


def test_the_model_line_names_the_model_and_the_papers_bert(m, tiny_dirs):
    """A slide of the model's guesses says what model they are from, and where it differs from the paper's BERT."""
    import json

    from bert_core.lesson.naming import model_line

    tokens = json.loads((bert_core.MINILM_DIR / "export.json").read_text())["total_tokens_seen"]
    line = model_line(m, bert_base_offered=True)
    assert line.startswith("On screen: MiniLM, 6 layers × 384 (the paper's BERT-base: 12 × 768)")
    assert "distilled from a BERT-base-sized teacher" in line and f"{tokens / 1e6:.1f}M pieces of Brown" in line
    # The project trained the encoder too, not only the heads (docs/models.md).
    assert "then its encoder and new fill-in and NSP heads trained here" in line
    assert "3.3B words" in line and line.endswith("BERT-base: one click away (“Use BERT-base”).")
    assert "one click" not in model_line(m, bert_base_offered=False)
    base = bert_core.load_model(str(tiny_dirs["base"][0]))
    assert "(the paper's BERT-base: 12 × 768)" in model_line(base) and "Brown" not in model_line(base)


def test_a_typed_mask_or_unk_is_not_the_pairs_topic_word(m):
    q = Q.input_cosine(m, "The [MASK] sat on the bank of the river.", "Then the [MASK] went to the bank.")
    assert q.prompt.startswith("“bank” occurs twice")
    with pytest.raises(bert_core.BertCoreError, match="do not count"):
        Q.input_cosine(m, "[MASK] here.", "[MASK] there.")
