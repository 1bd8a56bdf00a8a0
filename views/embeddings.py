"""Embeddings: the vector each token starts layer 1 with, term by term."""

import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures.embeddings import embedding_heatmap, norms_figure, position_similarity_figure
from bert_core.inspect import input_tables
from ui import page_defaults
from ui.notebook_ui import notebook_button
from ui.state import analysis, require_current
from ui.widgets import chart, model_line, table

cur = require_current()
cfg = cur.model.config
st.header("Embeddings")
model_line(cur.model)
st.markdown(
    "Before any attention, each token t becomes one vector of size H (here "
    f"H = {cfg.hidden_size}): three rows looked up in three learned tables and added — the token's own "
    "row (which token), a segment row (sentence A or B) and a position row (where it stands; BERT has no "
    "other sense of order) — then normalised:"
)
if cfg.family == "distilbert":
    st.latex(r"x_t = \mathrm{LayerNorm}\big(E_{tok}[\mathrm{id}_t] + E_{pos}[t]\big)")
    st.info("DistilBERT has **no segment table**: it dropped BERT's token-type embeddings (and the pooler), "
            "so sentence A and B differ only by the separator between them. The sum below has two terms.")
elif cfg.family == "albert":
    st.latex(r"x_t = W_{E\to H}\,\mathrm{LayerNorm}\big(E_{tok}[\mathrm{id}_t] + E_{seg}[s_t] + E_{pos}[t]\big)"
             r" + b")
    st.info(f"ALBERT **factorises** the embeddings: its three tables are only E = {cfg.E} wide, and one learned "
            f"E × H matrix (`embedding_hidden_mapping_in`) lifts each vector to H = {cfg.hidden_size}. "
            f"That costs V·E + E·H = {cfg.vocab_size * cfg.E + cfg.E * cfg.hidden_size:,} parameters instead "
            f"of V·H = {cfg.vocab_size * cfg.hidden_size:,}. The last tab shows the projected vectors.")
else:
    st.latex(r"x_t = \mathrm{LayerNorm}\big(E_{tok}[\mathrm{id}_t] + E_{seg}[s_t] + E_{pos}[t]\big)")
if cfg.family == "roberta":
    st.info(f"RoBERTa: one segment row only (type_vocab_size = {cfg.type_vocab_size}), the same for every token, "
            f"and its positions start at padding_idx + 1 = {cfg.position_offset}: row t + {cfg.position_offset} "
            "of E_pos is position t, and padding takes row padding_idx, so padding never shifts real positions.")
st.latex(r"\mathrm{LayerNorm}(v) = \gamma \odot \frac{v - \mathrm{mean}(v)}{\sqrt{\mathrm{var}(v) + \varepsilon}}"
         r" + \beta")
W = "E" if cfg.E != cfg.hidden_size else "H"
st.caption(f"mean and var are taken over the {W} = {cfg.E} numbers of one token; γ and β are learned "
           f"vectors of size {W}; ε = {cfg.layer_norm_eps:g}. Table sizes here: E_tok {cfg.vocab_size:,} × {W}, "
           + (f"E_seg {cfg.type_vocab_size} × {W}, " if cfg.has_segments else "no E_seg, ")
           + f"E_pos {cfg.max_position_embeddings} × {W}.")

with st.spinner("Running the model…"):
    trace = analysis(cur, hidden_states=False, attentions=False)
if trace is None:
    st.stop()
if trace.truncation is not None:
    st.warning(trace.truncation.message)

labels = input_tables.token_labels(trace.tokens)
pair = trace.text_pair is not None
two_segments = cfg.type_vocab_size >= 2 and cur.model.tokenizer.segments  # RoBERTa/DistilBERT: one or none
segments = trace.token_type_ids if pair and two_segments else None

st.subheader("The five steps, token by token")
if cfg.hidden_size > 64:
    n_dims = st.slider("Hidden dimensions shown (the first N)", 8, cfg.hidden_size,
                       page_defaults.of("embeddings", cfg)["n_dims"], key="emb_dims",
                       help="Wide models have hundreds of dimensions; the first N are enough to see the patterns.")
else:
    n_dims = cfg.hidden_size
parts = input_tables.embedding_parts(trace.embeddings)
tabs = st.tabs([input_tables.EMBEDDING_TITLES[p] for p in parts])
notes = {
    "word": "One row per token id: a repeated token gets the very same row.",
    "segment": "Only two rows exist: every A token gets one, every B token the other.",
    "position": "Row t depends only on the position, not on the token: it is the same for every input.",
    "sum": "What the three lookups add up to; its scale differs from token to token.",
    "normed": "LayerNorm gives each row mean 0 and spread 1, then scales each dimension by γ and shifts it by β.",
    "projected": f"ALBERT only: each E = {cfg.E} vector times the learned E × H matrix, plus a bias: "
                 f"H = {cfg.hidden_size} numbers, the input of layer 1.",
}
for tab, part in zip(tabs, parts):
    with tab:
        st.caption(notes[part])
        fig = embedding_heatmap(parts[part], labels, n_dims, input_tables.EMBEDDING_TITLES[part], segments)
        chart(fig, f"embedding {part}", key=f"chart-emb-{part}")

if pair and two_segments:
    st.subheader("Sentence A and sentence B")
    st.markdown(
        "The strip left of each heatmap marks each token's segment. All A tokens (with [CLS] and the first "
        "[SEP]) share **one** segment vector E_seg[0] and all B tokens (with the last [SEP]) share E_seg[1]. "
        "BERT tells the two sentences apart in two ways (the paper, Sec. 3): the [SEP] token between them and "
        "this segment vector added to every token. Next-sentence prediction and the fine-tuning tasks on "
        "pairs (question and passage, premise and hypothesis) rely on both."
    )
    table(pd.DataFrame(input_tables.segment_rows(trace)), "segments", key="csv-segments", hide_index=True)

st.subheader("How long is each vector?")
normed_norms = [r["|normed|"] for r in input_tables.norm_rows(trace)]
st.caption(f"L2 norm ‖v‖ = sqrt(Σ v_i²) per token for each of the five. LayerNorm first shifts and scales each "
           f"token's {W} = {cfg.E} numbers to mean 0 and variance 1 (so every token's length is then √{cfg.E} "
           f"≈ {cfg.E ** 0.5:.1f}, up to ε, whatever the sum's length was); the learned γ then rescales each "
           f"dimension and β shifts it, so the lengths after LayerNorm differ again (here "
           f"{min(normed_norms):.1f} to {max(normed_norms):.1f}). The table also shows each row's mean and "
           "standard deviation over its numbers before (sum) and after (normed, γ and β included) LayerNorm.")
chart(norms_figure(input_tables.token_norms(trace.embeddings), labels, input_tables.EMBEDDING_TITLES, segments),
      "embedding norms", key="chart-emb-norms")
table(pd.DataFrame(input_tables.norm_rows(trace)), "embedding norms", key="csv-emb-norms", hide_index=True)

st.subheader("What the position embeddings learned")
st.markdown(
    "The cosine similarity cos(E_pos[i], E_pos[j]) of the learned position rows, for the first n positions. "
    "These rows are how order enters the model. BERT learns them (the Transformer paper used fixed sine "
    "waves); a trained BERT shows a bright band along the diagonal: nearby positions get similar vectors."
)
max_pos = cfg.max_position_embeddings - cfg.position_offset  # RoBERTa: its first 2 rows are no position
n_pos = st.slider("Positions n", 2, max_pos, page_defaults.of("embeddings", cfg)["n_pos"], key="pos_n")
notebook_button(cur, "embeddings", n_dims=n_dims, n_pos=n_pos)
chart(position_similarity_figure(bert_core.position_similarity(cur.model, n_pos)), "position similarity",
      key="chart-pos-sim")
