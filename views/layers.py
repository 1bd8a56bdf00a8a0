"""Layers: the residual stream through the encoder, the logit lens, one word in two contexts, PCA paths, [CLS]."""

import streamlit as st

import bert_core
from bert_core.figures import layers as fl
from bert_core.inspect.residual import pair_spread
from ui import callbacks, page_defaults
from ui.markdown import md_literal
from ui.notebook_ui import notebook_button
from ui.state import model_cached, require_current
from ui.widgets import chart, model_line, numbering_note

TWO_CONTEXTS = ("We walked along the bank of the river.", "She works at the bank in the city.")
ONE_THE_EACH = ("We walked along the bank of a river.", "She works at the bank in town.")  # "the" in A and in B
SAME_SENSE = ("We walked along the bank of a river.", "She sat on the bank of the stream.")  # bank of water twice
LENS_K = 10  # the lens is read once with the slider's largest k; the slider only slices it

cur = require_current()
cfg = cur.model.config
L = cfg.num_hidden_layers
st.header("Layers")
model_line(cur.model)
st.markdown(
    f"Between the embeddings and the prediction, every token's vector passes through {L} layers. Each layer "
    "*adds* to the vector (the **residual stream**) and renormalises: first what attention gathered from the "
    "other tokens, then what the feed-forward block computes from the token alone:"
)
st.latex(r"h_1 = \mathrm{LayerNorm}\big(x + \mathrm{Attention}(x)\big), \qquad "
         r"x' = \mathrm{LayerNorm}\big(h_1 + \mathrm{FFN}(h_1)\big)")
numbering_note(L, cfg.num_attention_heads)
st.caption("State 'emb' is the embeddings' output (layer 0, what layer 1 reads); state 'L3' is what layer 3 hands "
           "on. The *Inside a layer* page follows one token through one of these steps with all its numbers.")


def run(fn, *args, **kwargs):
    """A cached bert_core call; a warning (and None) when the input cannot be analysed."""
    try:
        return model_cached(cur, fn, *args, **kwargs)
    except bert_core.BertCoreError as e:
        st.warning(str(e))
        return None


with st.spinner("Running every layer…"):  # one forward pass: the stream and the lens, no PCA yet
    stream = run(bert_core.residual_stream, cur.text, cur.text_pair, lens_top_k=LENS_K, pca=False)
if stream is None:
    st.stop()
if stream.truncation is not None:
    st.info(stream.truncation.message)
tokens = stream.tokens
T = len(tokens)
n = min(T, fl.STREAM_TOKEN_CAP)
if n < T:
    st.warning(f"This input has {T} tokens. To stay fast, the per-token charts below show the first {n}; "
               f"the token-by-token map the first {fl.PAIR_TOKEN_CAP}, the paths the first {fl.TRAJECTORY_CAP}.")
states = fl.state_labels(L + 1)

st.subheader("The residual stream")
VIEWS = ["Length of each vector", "Change per layer", "Size of each update"]
view = st.segmented_control("Show", VIEWS, default=VIEWS[0], key="lay_view") or VIEWS[0]
if view == VIEWS[0]:
    st.caption("‖h‖ per token after each layer. LayerNorm keeps lengths near √H·(scale of γ); a token whose "
               "length stands out (often [CLS], [SEP] or '.') is one the model treats specially.")
    chart(fl.layer_token_heatmap(stream.norms[:, :n], tokens[:n], states, "‖h‖ per token and state", "‖h‖"),
          "residual stream norms", key="lay-norms")
elif view == VIEWS[1]:
    st.caption("cos(h after layer l, h before it) for each token: 1 means the layer left the direction of the "
               "vector unchanged; lower values show where a layer rewrote a token most.")
    chart(fl.layer_token_heatmap(stream.self_similarity[:, :n], tokens[:n], fl.layer_labels(L),
                                 "Similarity of each token to itself one layer earlier", "cos", "RdBu", -1, 1),
          "self similarity per layer", key="lay-selfsim")
else:
    st.latex(r"\frac{\lVert \mathrm{attn\_out} \rVert}{\lVert x \rVert} \quad\text{and}\quad "
             r"\frac{\lVert \mathrm{ffn\_out} \rVert}{\lVert h_1 \rVert}")
    st.caption("How big each sublayer's addition is next to the vector it is added to: well below 1, the "
               "residual (the token's old vector) dominates and the layer only nudges it.")
    rows = fl.layer_labels(L)
    chart(fl.layer_token_heatmap(stream.attn_update[:, :n], tokens[:n], rows, "Attention update |attn_out| / |x|",
                                 "ratio"), "attention update size", key="lay-attn-upd")
    chart(fl.layer_token_heatmap(stream.ffn_update[:, :n], tokens[:n], rows, "Feed-forward update |ffn_out| / |h1|",
                                 "ratio"), "feed-forward update size", key="lay-ffn-upd")

st.markdown("**Token by token at one layer.** cos(h_i, h_j) between every pair of tokens. In the embedding "
            "output a token is alike only to itself and to tokens its embedding row is already close to, such as "
            "she and her in the default sentence; layer by layer, context mixes every token with the others. "
            "Ethayarajh (2019) found that in BERT-base's upper layers the vectors of all words crowd into a narrow "
            "cone, so that even unrelated words score well above 0; a small model need not show it as strongly, "
            "and the line under the map says what this one does at the state you pick.")
state = st.select_slider("Hidden state", options=list(range(L + 1)), value=L, key="lay_sim_state",
                         format_func=callbacks.labels(states))
n_pair = min(T, fl.PAIR_TOKEN_CAP)
chart(fl.similarity_heatmap(stream.token_similarity[state, :n_pair, :n_pair], tokens[:n_pair],
                            f"Token similarity at state {states[state]}"), "token similarity", key="lay-tok-sim")
spread = pair_spread(stream.token_similarity[state, :n_pair, :n_pair])
if spread is not None:
    below = (f"{spread.at_most_zero} of them at or below 0" if spread.at_most_zero
             else "none of them at or below 0")
    st.caption(f"At {states[state]} on {md_literal(cur.model.name)}: the {spread.pairs} pairs of different tokens "
               f"shown score from {spread.low:.2f} to {spread.high:.2f} (median {spread.median:.2f}), {below}.")

st.subheader("The logit lens: when does the answer form?")
st.markdown(
    f"The MLM head (dense → {md_literal(cfg.hidden_act)} → LayerNorm → the word-embedding matrix, tied) turns a "
    "[MASK]'s **last** hidden state into a probability for every vocabulary entry (BERT uses gelu, the Gaussian "
    "error linear unit x·Φ(x), a smooth ReLU; Φ is the standard normal's CDF). The lens applies that same "
    "head to every earlier state too. **The head was trained on the last layer only**, so it reads early "
    "layers imperfectly: a poor early guess means the head cannot read the answer there yet, not that the "
    "information is absent."
)
if not cur.model.has_mlm:
    st.info("This model has no masked-language-model head (its checkpoint has no cls.predictions weights, "
            "e.g. a plain BertModel or a fine-tuned classifier), so there is nothing to read the hidden states "
            "with: the logit lens is not available for it.")
elif tokens.count(cur.model.tokenizer.mask_token) == 0:
    st.info("There is no [MASK] in the text. Put [MASK] where a word should be guessed to see the lens.")
else:
    k = st.slider("Candidates per state (top k)", 1, LENS_K, page_defaults.of("layers", cfg)["k"], key="lay_k")
    lens = stream.lens
    if lens.skipped:
        st.info(f"The lens reads the first {len(lens.predictions)} [MASK] positions; {lens.skipped} more "
                "are not shown.")
    show_rank = st.toggle("Show the final answer's probability and rank at each state", key="lay_lens_rank")
    for pos in lens.mask_positions:
        ans = lens.final_token[pos]
        top = [cands[:k] for cands in lens.predictions[pos]]  # (L+1) x k of the stored top LENS_K
        chart(fl.lens_figure(top, f"[MASK] at position {pos}: top {k} per state", ans),
              f"logit lens position {pos}", key=f"lay-lens-{pos}")
        if show_rank:
            chart(fl.answer_trajectory(lens.final_rank[pos], lens.final_prob[pos], ans,
                                       f"The final answer {fl.esc(ans)!s} at each state"),
                  f"logit lens answer position {pos}", key=f"lay-lens-ans-{pos}")
        first = next((i for i, r in enumerate(lens.final_rank[pos]) if r == 1), L)
        st.caption(f"Position {pos}: the final answer **{md_literal(ans)}** is the lens's top guess from state "
                   f"{states[first]} on.")
notebook_button(cur, "layers", state=state, k=st.session_state.get("lay_k", page_defaults.of("layers", cfg)["k"]))

st.subheader("Same word, two contexts")
st.markdown(
    "The same word piece starts from the same embedding row (only its position and segment differ), so its two "
    "occurrences begin close. The layers then mix in each one's context. On the bundled MiniLM (cos about 0.9 "
    "at emb), in the default pair, *bank* of a river and *bank* that employs people, one in each sentence, fall "
    "to about 0.6 in the middle layers and end near 0.75, while the two *the*s, both in sentence A, stay near "
    "0.9. That contrast mixes two things, a change of meaning and a change of sentence: put *the* once in each "
    "sentence and it drifts as far as *bank* does, because every word's vector takes on its sentence, function "
    "words included (Ethayarajh, 2019, found stopwords among the most context-specific words). A change of sense "
    "shows against the same sense: *bank* of a river and *bank* of a stream end near 0.9."
)
# Off at first: its own two sentences are not the page's, so a page opened on a sentence (a Lesson step's link)
# shows that sentence only until the reader asks for this pair.
if st.toggle("Compare one word in two sentences", key="lay_two",
             help="Two sentences of this section's own, not the Text above; off at first."):
    t1, t2 = st.columns(2)
    t1.button("Try: “the” once in each sentence", key="lay_two_one_the", on_click=callbacks.put_many,
              args=({"lay_two_a": ONE_THE_EACH[0], "lay_two_b": ONE_THE_EACH[1]},), width="stretch")
    t2.button("Try: the same sense of “bank”", key="lay_two_same", on_click=callbacks.put_many,
              args=({"lay_two_a": SAME_SENSE[0], "lay_two_b": SAME_SENSE[1]},), width="stretch")
    c1, c2 = st.columns(2)
    st.session_state.setdefault("lay_two_a", TWO_CONTEXTS[0])  # defaults through state: the Try buttons write it
    st.session_state.setdefault("lay_two_b", TWO_CONTEXTS[1])
    a = c1.text_input("Sentence A", key="lay_two_a", max_chars=500)
    b = c2.text_input("Sentence B", key="lay_two_b", max_chars=500)
    sw = run(bert_core.same_word, a, b or None) if a.strip() else None
    if not a.strip():
        st.info("Type sentence A (and B): this view needs a word that occurs twice.")
    elif sw is not None:
        if not sw.words:
            st.info("No word occurs twice here. This view needs one word that appears twice: once in A and once in "
                    f"B, or twice in A — e.g. '{TWO_CONTEXTS[0]}' and '{TWO_CONTEXTS[1]}'.")
        else:
            chart(fl.same_word_figure(sw.words, "cos(first occurrence, second occurrence) at each state"),
                  "same word two contexts", key="lay-same-word")
            st.caption("Both sentences run together as one input ([CLS] A [SEP] B [SEP]). A word of several word "
                       "pieces is the mean of its pieces. Lines: "
                       + "; ".join(f"{md_literal(w.word)} at positions {w.first} and {w.second}" for w in sw.words))

st.subheader("Every token through the layers (PCA)")
st.markdown(
    "All hidden states of all tokens, projected on the two directions along which they vary most (principal "
    "component analysis over every token at every state). Each line is one token's path from the embedding "
    "(small dots) to the last layer (big dot): tokens start apart by identity and move by context."
)
if st.toggle("Show the PCA paths", key="lay_pca",
             help="Off at first: the PCA decomposes every token at every state (costly on big models)."):
    hide_special = st.toggle("Hide [CLS] and [SEP]", value=True, key="lay_hide_special",
                             help="They often sit far from the words and squeeze the rest of the picture.")
    with st.spinner("Projecting every token at every layer…"):
        paths = run(bert_core.residual_stream, cur.text, cur.text_pair, pca=True)
    if paths is not None:
        shown = [i for i in range(T) if not (hide_special and stream.special_tokens_mask[i])][: fl.TRAJECTORY_CAP]
        if shown:
            chart(fl.pca_figure(paths.pca, tokens, shown, paths.pca_explained), "pca trajectories", key="lay-pca")
        else:
            st.info("Only [CLS] and [SEP] here: turn off 'Hide [CLS] and [SEP]' to see them.")
        st.caption(f"Together the two axes hold {float(paths.pca_explained.sum()):.0%} of the variance: a flat "
                   "picture of a space with many more dimensions, so nearby dots may still differ.")

st.subheader("The [CLS] vector and the pooler")
st.markdown("[CLS] can attend to every token in every layer; its last hidden state (the paper's C, Fig. 1) is what "
            "BERT's classifiers read when fine-tuned (the paper's classifier reads C itself; its released code reads C "
            "through the pooler). The pooler turns it into the vector the next-sentence head reads:")
st.latex(r"\mathrm{pooled} = \tanh\big(W_p\, h^{(L)}_{[\mathrm{CLS}]} + b_p\big)")
if cur.model_key == bert_core.MINILM_NAME:
    st.caption("On the model on screen the pooler comes from MiniLM's own pre-training and was trained further here "
               "with the new NSP head; as a sentence encoder (all-MiniLM-L6-v2) it never used it: its sentence "
               "vector was the mean of the last layer's vectors.")
if st.toggle("Show the [CLS] and pooler vectors", key="lay_cls"):
    vecs = {"[CLS], last layer": stream.cls}
    if stream.pooled is not None:
        vecs["pooler output"] = stream.pooled
    chart(fl.vector_strip(vecs, f"The {cfg.hidden_size} numbers of each vector"), "cls and pooler", key="lay-cls")
    if stream.pooled is None:
        st.info("This checkpoint has no pooler (no bert.pooler weights), so only the [CLS] vector is shown.")
    else:
        st.caption("tanh squeezes every pooled number into (-1, 1).")
