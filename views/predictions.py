"""Predictions: BERT's top-k guesses at every [MASK], a click puts one into the text; and NSP for a pair."""

import numpy as np
import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures.predictions import candidates_figure, nsp_figure, pll_figure, token_strip_figure
from bert_core.inspect.masking_view import default_word, fill_at, mask_context, mask_word, rank_of, words_of
from ui import callbacks, page_defaults
from ui.markdown import md_literal
from ui.notebook_ui import notebook_button
from ui.state import analysis, model_cached, require_current, set_url, url_int
from ui.widgets import chart, model_line, table

cur = require_current()
NSP_FIRST = st.query_params.get("section") == "nsp"  # the Lesson's NSP step links here for the pair's verdict
st.header("Predictions")
model_line(cur.model)
st.markdown(
    "At a [MASK] position, BERT turns the final hidden state h (one vector of size H) into a probability "
    "for **every** word piece of its vocabulary:"
)
st.latex(r"p = \mathrm{softmax}\big(W_e\,\mathrm{LN}(\mathrm{gelu}(W h + b)) + b_v\big)")
_cfg = cur.model.config
if _cfg.E != _cfg.hidden_size:
    st.caption(f"ALBERT: W maps H = {_cfg.hidden_size} down to its embedding width E = {_cfg.E}, so the tied "
               f"W_e is V×E.")
if cur.model.tokenizer.mask_token != "[MASK]":
    st.caption(f"This model's mask token is {cur.model.tokenizer.mask_token}: each typed [MASK] is read as it.")
st.caption(
    f"W, b: a dense H×H layer; gelu: the Gaussian error linear unit x·Φ(x), a smooth ReLU (Φ: the standard "
    f"normal's CDF); LN: LayerNorm; W_e: the word-embedding matrix (V×H, the same one the "
    f"input side uses); b_v: one bias per vocabulary entry. The softmax runs over all "
    f"V = {cur.model.config.vocab_size:,} entries; the bars show the k most likely. One [MASK] is one word "
    "piece, so a guess like ##s continues the word before it."
)

k = st.slider("Candidates per [MASK] (top k)", 1, 20,
              url_int("k", page_defaults.of("predictions", cur.model.config)["k"], 1, 20), key="pred_k")
set_url(k=k)
trace = analysis(cur, top_k=k, embeddings=False, hidden_states=False, attentions=False)
if trace is None:
    st.stop()
if trace.truncation is not None:
    st.caption(trace.truncation.message)
specials = set(cur.model.tokenizer.specials.values())


def nsp_section(trace) -> None:
    """The NSP head's verdict on the pair: at the end of the page, or first when the link asks (?section=nsp)."""
    st.subheader("Next sentence prediction (NSP)")
    st.caption(
        "In the paper's pre-training, half of the pairs were real (B is the sentence that follows A) and half had "
        "a random sentence of the corpus as B (Sec. 3.1). The NSP head reads the "
        "pooled [CLS] vector: P(IsNext), P(NotNext) = softmax(W_nsp tanh(W_p h_[CLS] + b_p) + b_nsp)."
    )
    if cur.model_key == bert_core.MINILM_NAME:
        st.caption("The model on screen learned its NSP head here, on Brown sentence pairs: B was A's real next "
                   "sentence half of the time; the other B was a random sentence at first, and in its last stage "
                   "half came from A's own text and half from another text of A's genre, so that topic and style "
                   "alone could not give a NotNext away.")
    if not cur.model.has_nsp:
        st.info("This model has no NSP head (its checkpoint has no cls.seq_relationship weights), so it "
                "cannot say whether B follows A (models pre-trained with MLM only lack it).")
    elif cur.text_pair is None:
        st.info("Add a second sentence (B) in the sidebar to see whether the model thinks it follows the first.")
    else:
        p_is, p_not = trace.nsp
        chart(nsp_figure(p_is, p_not), "next sentence prediction", key="chart-nsp")


if NSP_FIRST:
    nsp_section(trace)
    st.subheader("Masked-word predictions")


def candidate_buttons(t, pos: int, cands: list[tuple[str, float]], per_row: int = 5) -> None:
    """One button per candidate: a click replaces this [MASK] in the sidebar text with it."""
    for start in range(0, len(cands), per_row):
        cols = st.columns(per_row)
        for j, (tok, p) in enumerate(cands[start:start + per_row]):
            which, new = fill_at(t, pos, tok)
            cols[j].button(f"{md_literal(tok)} · {p:.1%}", key=f"fill-{pos}-{start + j}", on_click=callbacks.put,
                           args=(which, new), disabled=tok in specials, width="stretch",
                           help="Special tokens cannot be put into the text." if tok in specials else
                           f"Put this into the [MASK] at position {pos}.")


def salience_ui(text: str, pair: str | None, masks: dict, tokens: list[str], hidden: str | None) -> None:
    """Pick a [MASK] and a candidate; draw occlusion and gradient salience side by side."""
    positions = list(masks)
    pos = positions[0]
    c1, c2, c3 = st.columns(3)
    if len(positions) > 1:
        shown = {q: f"position {q}: {mask_context(tokens, q)}" for q in positions}
        pos = c1.selectbox("[MASK] to explain", positions, key="pred_sal_pos", format_func=shown.get)
    cands = [tok for tok, _ in masks[pos] if tok not in specials]
    if hidden is not None and hidden not in cands:
        cands.insert(0, hidden)
    cand = c2.selectbox("Candidate", cands, key="pred_sal_cand",
                        help="The top-k candidates at this [MASK] (special tokens are never candidates)."
                        + (" The first is the hidden word's first piece." if hidden is not None else ""))
    typed = c3.text_input("…or type a word", key="pred_sal_word", max_chars=100,
                          help="Any vocabulary entry, or a word that is one word piece.")
    token = typed.strip() or cand
    if token is None:
        st.info("This [MASK] has no candidate that is a word piece.")
        return
    try:
        with st.spinner("Occluding every token in one batched pass, and one backward pass…"):
            occ = model_cached(cur, bert_core.salience, text, pos, token, pair, method="occlusion")
            grad = model_cached(cur, bert_core.salience, text, pos, token, pair, method="gradient")
    except bert_core.BertCoreError as e:
        st.warning(str(e))
        return
    shown = md_literal(token)
    left, right = st.columns(2)
    with left:
        chart(token_strip_figure(tokens, occ, f"Occlusion: p drop when a token is masked ({token})", True),
              "salience occlusion", key="chart-sal-occ")
    with right:
        chart(token_strip_figure(tokens, grad, f"Gradient × input ({token})", False),
              "salience gradient", key="chart-sal-grad")
    st.caption(
        f"Both explain p(**{shown}** at position {pos}). Occlusion measures it: mask one token, run the model, see "
        "how far p falls (red: the token helped, blue: without it the candidate became *more* likely). "
        "Gradient × input estimates it from one backward pass: how strongly p reacts to a small change of each "
        "token's input vector, so it has no sign and can miss tokens whose effect is not linear. Where the two "
        "agree you can trust the picture more. Special tokens get 0."
    )
    skipped = int(np.isnan(occ).sum())
    if skipped:
        cap = bert_core.inspect.attribution.MAX_WORK_TOKENS
        st.info(f"This input is long: occlusion masked only the word pieces nearest the [MASK] (one model pass "
                f"each, {len(tokens)} tokens per pass, at most {cap:,} tokens of "
                f"work in all); the {skipped} farther ones stay blank.")


# What the salience section explains: (text, pair, {[MASK] position: candidates}, tokens, the hidden word's piece).
explain = None
if not cur.model.has_mlm:
    st.warning("Predictions are unavailable: " + " ".join(trace.notes))
elif trace.predictions:
    explain = (cur.text, cur.text_pair, trace.predictions, trace.tokens, None)
    st.subheader(f"{len(trace.predictions)} [MASK] position{'s' * (len(trace.predictions) != 1)}")
    st.caption("Click a candidate to write it into the text in the sidebar (each [MASK] is filled on its own).")
    for pos, cands in trace.predictions.items():
        seg = "B" if trace.sequence_ids[pos] == 1 else "A"
        title = f"Position {pos} (sentence {seg}): {mask_context(trace.tokens, pos)}"
        chart(candidates_figure(cands, title), f"predictions position {pos}", key=f"chart-pred-{pos}")
        candidate_buttons(trace, pos, cands)
else:
    st.info("There is no [MASK] in the text. Pick a word to hide: the model then guesses it from both sides."
            + (" The pair's next-sentence prediction is at the end of this page." if cur.text_pair is not None
               and not NSP_FIRST else ""))
    words = words_of(trace, 0)
    i = st.selectbox("Word to mask (sentence A)", range(len(words)), index=default_word(words), key="pred_word",
                     format_func=callbacks.labels(f"{w.text}  (word {j}, pieces: {' '.join(w.pieces)})"
                                                  for j, w in enumerate(words)))
    w = words[i]
    new_text = mask_word(cur.text, w.span, cur.model.tokenizer.mask_token)
    st.code(new_text, language=None, wrap_lines=True)
    t2 = analysis(cur, top_k=k, text=new_text, embeddings=False, hidden_states=False, attentions=False)
    if t2 is None:
        st.stop()
    masks = [q for q in t2.mask_positions if t2.sequence_ids[q] == 0]
    if not masks:
        st.info("The [MASK] fell beyond the model's maximum length: pick an earlier word.")
        st.stop()
    pos = masks[0]
    target, rank, prob = rank_of(t2.predictions[pos], w.pieces)
    chart(candidates_figure(t2.predictions[pos], f"Position {pos}: {mask_context(t2.tokens, pos)}", highlight=target),
          f"predictions for {w.text[:30]}", key="chart-pred-word")
    if len(w.pieces) > 1:
        st.caption(f"The word is {len(w.pieces)} word pieces ({md_literal(' '.join(w.pieces))}); one [MASK] "
                   f"predicts one piece, so the bars are compared with its first piece, {md_literal(target)}.")
    if rank is not None:
        st.success(f"The hidden word was **{md_literal(w.text)}**: it is candidate {rank} of {k}, "
                   f"p = {prob:.1%}.")
    else:
        st.info(f"The hidden word was **{md_literal(w.text)}**: it is not among the top {k}. "
                "Raise k to look further down the list.")
    st.button("Put this [MASK] into the text", key="pred-use-mask", on_click=callbacks.put, args=("text", new_text))
    explain = (new_text, cur.text_pair, {pos: t2.predictions[pos]}, t2.tokens, target)

notebook_button(cur, "predictions", k=k, word=None if trace.predictions else st.session_state.get("pred_word"))

st.subheader("Which words did the prediction rely on? (salience)")
st.markdown("For a [MASK] and one candidate w, salience gives every input token i a number: how much "
            "p(w) depends on it. Two ways, the first exact and slow, the second one pass and approximate:")
st.latex(r"\text{occlusion}_i = p(w \mid x) - p(w \mid x \text{ with } x_i \to \texttt{[MASK]}) \qquad "
         r"\text{gradient}_i = \Big\lVert \frac{\partial p(w \mid x)}{\partial e_i} \odot e_i \Big\rVert_2")
st.caption("e_i: token i's summed input embedding (word + position + segment). Occlusion runs the model once per "
           "word piece (all in one batched pass), so it is off until you turn it on.")
if explain is None:
    st.info("Salience needs a model with a masked-language-model head and a [MASK] (or a word picked above).")
elif st.toggle("Compute salience", key="pred_salience"):
    salience_ui(*explain)

st.subheader("Several masks: does the order matter?")
st.markdown(
    "With two or more [MASK]s, each is guessed from both sides, but the others are still blanks. "
    "**independent** (what HF's fill-mask does): one pass, every [MASK] gets its own top-1 and none sees the "
    "others' answers. **left to right**: fill the leftmost [MASK], run the model again, repeat. "
    "**confident first**: fill the [MASK] whose top-1 is most probable, run again, repeat. The last two let "
    "later guesses fit the earlier ones, at one model pass per [MASK]."
)
n_masks = len(trace.mask_positions) if cur.model.has_mlm else 0
if not cur.model.has_mlm:
    st.info("This model has no masked-language-model head, so it cannot fill a [MASK].")
elif st.toggle("Compare the three strategies", key="pred_fill"):
    if n_masks < 2:
        st.info(f"The text has {n_masks} [MASK]{'s' * (n_masks != 1)}: the strategies can only differ with two or "
                "more. A word of several pieces needs one [MASK] per piece, so it is a good test.")
        st.button("Try “The [MASK] [MASK] sat on the mat.”", key="pred-fill-example", on_click=callbacks.put,
                  args=("text", "The [MASK] [MASK] sat on the mat."))
    if n_masks:
        with st.spinner("Filling the [MASK]s three ways…"):
            fills = [model_cached(cur, bert_core.fill_masks, cur.text, cur.text_pair, strategy=s)
                     for s in bert_core.inspect.mask_filling.FILL_STRATEGIES]
        for col, r in zip(st.columns(3), fills):
            with col:
                st.markdown(f"**{r.strategy.replace('_', ' ')}** · {r.passes} pass{'es' * (r.passes != 1)}")
                st.code(r.text + (f"\n{r.text_pair}" if r.text_pair is not None else ""), language=None,
                        wrap_lines=True)
                st.dataframe(pd.DataFrame([{"step": i + 1, "position": q, "token": tok, "p": round(p, 4)}
                                           for i, (q, tok, p) in enumerate(r.steps)]), hide_index=True)
                for note in r.notes:
                    st.caption(md_literal(note))
        answers = {tuple(tok for _, tok, _ in sorted(r.steps)) for r in fills}
        st.caption("All three strategies give the same words here." if len(answers) == 1 else
                   f"The strategies give {len(answers)} different answers: the steps show which [MASK] each filled "
                   "first and how sure it was then. A [MASK] filled later sees the earlier answers, which can "
                   "raise (or change) its guess.")

st.subheader("Which sentence is more natural?")
st.markdown("BERT cannot give a sentence a probability directly, but it can score each token with only that token "
            "masked and add up the log-probabilities: the pseudo-log-likelihood (Salazar et al., 2020).")
st.latex(r"\mathrm{PLL}(S) = \sum_{i} \log p\big(w_i \mid S \text{ with } w_i \to \texttt{[MASK]}\big)")
st.caption("Logs are natural logs, so scores are in nats. Closer to 0 is more natural to the model. Longer "
           "sentences have more terms, so compare sentences of "
           "similar length (or the mean per token). A word of several pieces is scored piece by piece with the "
           "other pieces visible, which makes it look easy. One model pass per token, so it is off until turned on.")
if not cur.model.has_mlm:
    st.info("This model has no masked-language-model head, so it cannot score sentences.")
elif st.toggle("Compare sentences", key="pred_pll"):
    st.session_state.setdefault("pred_pll_text", "The cat sat on the mat.\nThe mat sat on the cat.")
    lines = [ln.strip() for ln in st.text_area("Sentences, one per line (2 to 6)", key="pred_pll_text",
                                              max_chars=4000).splitlines() if ln.strip()][:6]
    scored = []
    with st.spinner("Scoring every token of every sentence…"):
        for i, line in enumerate(lines, start=1):
            try:
                scored.append((i, line, model_cached(cur, bert_core.pseudo_log_likelihood, line)))
            except bert_core.BertCoreError as e:
                st.warning(f"Sentence {i}: {e}")
    if len(lines) < 2:
        st.info("Type at least two sentences, one per line, to compare them.")
    if scored:
        chart(pll_figure([(f"sentence {i}", r.per_token, r.total) for i, _, r in scored]),
              "pseudo log likelihood", key="chart-pll")
        table(pd.DataFrame([{"sentence": i, "text": line, "PLL": round(r.total, 3), "mean per token": round(r.mean, 3),
                             "tokens scored": len(r.per_token)} for i, line, r in scored]),
              "pseudo log likelihood", key="pll-csv", hide_index=True)
        for i, _, r in scored:
            for note in r.notes:
                st.caption(f"Sentence {i}: {md_literal(note)}")
        ranked = [x for x in sorted(scored, key=lambda x: -x[2].total) if x[2].per_token]
        if len(ranked) >= 2:
            (a, _, ra), (b, _, rb) = ranked[:2]
            st.success(f"The model finds sentence {a} the most natural: PLL {ra.total:.2f} against {rb.total:.2f} for "
                       f"sentence {b} (a difference of {ra.total - rb.total:.2f} nats).")

if not NSP_FIRST:
    nsp_section(trace)
