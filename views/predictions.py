"""Predictions: BERT's top-k guesses at every [MASK], a click puts one into the text; and NSP for a pair."""

import streamlit as st

from bert_core.figures.predictions import candidates_figure, nsp_figure
from bert_core.maskview import default_word, fill_at, mask_context, mask_word, md_literal, rank_of, words_of
from ui.state import analysis, require_current, set_url, url_int
from ui.widgets import chart

cur = require_current()
st.header("Predictions")
st.markdown(
    "At a [MASK] position, BERT turns the final hidden state h (one vector of size H) into a probability "
    "for **every** word piece of its vocabulary:"
)
st.latex(r"p = \mathrm{softmax}\big(W_e\,\mathrm{LN}(\mathrm{gelu}(W h + b)) + b_v\big)")
st.caption(
    f"W, b: a dense H×H layer; LN: LayerNorm; W_e: the word-embedding matrix (V×H, the same one the "
    f"input side uses); b_v: one bias per vocabulary entry. The softmax runs over all "
    f"V = {cur.model.config.vocab_size:,} entries; the bars show the k most likely. One [MASK] is one word "
    "piece, so a guess like ##s continues the word before it."
)

k = st.slider("Candidates per [MASK] (top k)", 1, 20, url_int("k", 5, 1, 20), key="pred_k")
set_url(k=k)
trace = analysis(cur, top_k=k, embeddings=False, hidden_states=False, attentions=False)
if trace is None:
    st.stop()
if trace.truncation is not None:
    st.caption(trace.truncation.message)
specials = set(cur.model.tokenizer.specials.values())


def _put(which: str, value: str) -> None:
    """Write an edited sentence into the sidebar's text box ("text") or sentence B ("pair")."""
    st.session_state[which] = value


def candidate_buttons(t, pos: int, cands: list[tuple[str, float]], per_row: int = 5) -> None:
    """One button per candidate: a click replaces this [MASK] in the sidebar text with it."""
    for start in range(0, len(cands), per_row):
        cols = st.columns(per_row)
        for j, (tok, p) in enumerate(cands[start:start + per_row]):
            which, new = fill_at(t, pos, tok)
            cols[j].button(f"{md_literal(tok)} · {p:.1%}", key=f"fill-{pos}-{start + j}", on_click=_put,
                           args=(which, new), disabled=tok in specials, width="stretch",
                           help="Special tokens cannot be put into the text." if tok in specials else
                           f"Put this into the [MASK] at position {pos}.")


if not cur.model.has_mlm:
    st.warning("Predictions are unavailable: " + " ".join(trace.notes))
elif trace.predictions:
    st.subheader(f"{len(trace.predictions)} [MASK] position{'s' * (len(trace.predictions) != 1)}")
    st.caption("Click a candidate to write it into the text in the sidebar (each [MASK] is filled on its own).")
    for pos, cands in trace.predictions.items():
        seg = "B" if trace.sequence_ids[pos] == 1 else "A"
        title = f"Position {pos} (sentence {seg}): {mask_context(trace.tokens, pos)}"
        chart(candidates_figure(cands, title), f"predictions position {pos}", key=f"chart-pred-{pos}")
        candidate_buttons(trace, pos, cands)
else:
    st.info("There is no [MASK] in the text. Pick a word to hide: BERT then guesses it from both sides.")
    words = words_of(trace, 0)
    i = st.selectbox("Word to mask (sentence A)", range(len(words)), index=default_word(words), key="pred_word",
                     format_func=lambda j: f"{words[j].text}  (word {j + 1}, pieces: {' '.join(words[j].pieces)})")
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
    st.button("Put this [MASK] into the text", key="pred-use-mask", on_click=_put, args=("text", new_text))

st.subheader("Next sentence prediction (NSP)")
st.caption(
    "In pre-training, half of the pairs were real (B follows A) and half random. The NSP head reads the "
    "pooled [CLS] vector: P(IsNext), P(NotNext) = softmax(W_nsp tanh(W_p h_[CLS] + b_p) + b_nsp)."
)
if not cur.model.has_nsp:
    st.info("This model has no NSP head (its checkpoint has no cls.seq_relationship weights), so it "
            "cannot say whether B follows A (models pre-trained with MLM only lack it).")
elif cur.text_pair is None:
    st.info("Add a second sentence (B) in the sidebar to see whether BERT thinks it follows the first.")
else:
    p_is, p_not = trace.nsp
    chart(nsp_figure(p_is, p_not), "next sentence prediction", key="chart-nsp")
