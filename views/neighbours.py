"""Neighbours: the corpus words whose vectors at a layer are nearest a word of your sentence (exBERT's search)."""

import html

import numpy as np
import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures.probing import layer_names, projection_figure, tag_histogram_figure
from bert_core.finetune.tagging import UNIVERSAL_TAGS, builtin_pos_task
from bert_core.inspect.neighbours import (
    INDEX_MAX_BYTES,
    build_index,
    index_bytes_per_word,
    nearest_words,
    neighbour_rows,
    occurrences,
    pca_2d,
    query_words,
    sentences_within,
)
from bert_core.probe.probing import sense_rows, sense_vectors
from ui import callbacks
from ui.notebook_ui import notebook_button
from ui.state import model_cached, require_current, url_int
from ui.widgets import chart, model_line, table

CORPUS_SIZES = (200, 500, 1_106)  # held-out Brown sentences (~20 words each); capped by the index's byte budget
K_MAX = 50

cur = require_current()
m = cur.model
L = m.config.num_hidden_layers
names = layer_names(L + 1)
st.header("Neighbours")
model_line(cur.model)
st.markdown(
    "Which words of a corpus does the model put **closest** to a word of your sentence? Every word of the "
    "corpus is read once, in its own sentence, and its vector kept at every layer; your word's vector is "
    "compared with all of them by cosine (exBERT's search, Hoover et al. 2020). It matters because it shows "
    "what a layer groups together. At layer 0 (the embeddings' output, before any context) a word the corpus "
    "holds finds itself first, its vectors differing only by position and segment, then the words whose "
    "embedding rows pretraining put close. *mother* is not in the corpus, so on the bundled MiniLM (click "
    "*mother* and set Layer to 0) its nearest are related forms and family words: mothers, parents, father's, "
    "daughter, sister. Higher up, the "
    "neighbours also depend on each word's sentence, so one word's uses can part."
)
st.latex(r"\cos(q, w) = \frac{h^{l}_q \cdot h^{l}_w}{\lVert h^{l}_q\rVert\,\lVert h^{l}_w\rVert},\qquad "
         r"\text{neighbours} = \operatorname{top\text{-}k}_{w \in \text{corpus}} \cos(q, w)")
st.caption(f"Layers are numbered 1–{L} (layer 0 = the embeddings' output). A word's vector is its first "
           "piece's hidden state, as the Tagging page reads it.")

# --- the index ------------------------------------------------------------------------------------
pos = builtin_pos_task()
fits = sentences_within(m, pos.valid_words)
sizes = sorted({min(n, fits) for n in CORPUS_SIZES if min(n, fits) > 0})
per_word = index_bytes_per_word(m)
c1, c2 = st.columns([2, 3])
size_labels = [f"{n:,} sentences (~{sum(map(len, pos.valid_words[:n])):,} words)" for n in sizes]
n_sent = sizes[c1.selectbox("Corpus: held-out Brown sentences", range(len(sizes)), index=min(1, len(sizes) - 1),
                            key="nb_n_i", format_func=callbacks.labels(size_labels))]  # a ui callback: ui/callbacks.py
n_words = sum(map(len, pos.valid_words[:n_sent]))
c2.caption(f"The index keeps every word's unit vector at all {L + 1} states in float16: {per_word:,} bytes a word, "
           f"{n_words * per_word / 2**20:.1f} MB for this corpus (at most {INDEX_MAX_BYTES / 2**20:.0f} MB, counted "
           "in the app's result cache). Sentences: the Brown part-of-speech task's held-out ones, tagged.")
index_key = (cur.model_key, n_sent)
built: set = st.session_state.setdefault("nb_built", set())


def get_index(bar=None):
    """The index (cached process-wide per model and size; built with progress when missing)."""
    def progress(what, frac):
        if bar is not None:
            bar.progress(min(max(frac, 0.0), 1.0), text=what)

    return model_cached(cur, build_index, pos.valid_words[:n_sent], pos.valid_tags[:n_sent], UNIVERSAL_TAGS,
                        progress=progress)


if st.button("Build the index", type="primary", key="nb_build",
             help="One forward pass over the corpus; a few seconds on the default model.") or index_key in built:
    bar = st.progress(0.0, text="Looking for the index…")
    try:
        index = get_index(bar)
        built.add(index_key)
    except bert_core.BertCoreError as e:
        st.warning(f"Cannot build the index: {e}")
        index = None
    bar.empty()
else:
    index = None
    st.info(f"Press **Build the index** to read {n_sent:,} corpus sentences with **{html.escape(m.name)}** "
            "(once per model and size; every session of this server shares it).")

# --- your word's neighbours -------------------------------------------------------------------------
st.subheader("A word of your sentence")
text = cur.text
if not text.strip():
    st.warning("The sidebar's text is empty: type a sentence there, then pick one of its words.")
    st.stop()
try:
    q = model_cached(cur, query_words, text)
except bert_core.BertCoreError as e:
    st.warning(f"Cannot read this text: {e}")
    st.stop()
choices = [i for i in range(len(q.words)) if q.has_vector[i]]
if not choices:
    st.warning("None of these words fits the model's length limit.")
    st.stop()
default_word = next((i for i in choices if q.words[i].isalpha() and len(q.words[i]) > 3), choices[0])
seen: dict[str, int] = {}
labels = {}
for i in choices:  # a repeated word gets its occurrence number: the widget tells options apart by their labels
    seen[q.words[i]] = seen.get(q.words[i], 0) + 1
    labels[i] = q.words[i] if seen[q.words[i]] == 1 else f"{q.words[i]} ({seen[q.words[i]]})"
by_label = {lab: i for i, lab in labels.items()}
picked = st.pills("Click a word", list(by_label), default=labels[default_word], key="nb_word")
word_ix = by_label.get(picked, default_word)
layer = st.slider("Layer", 0, L, url_int("nb_layer", L, 0, L), key="nb_layer_slider",
                  help="0 = the embeddings' output")
k = st.slider("Neighbours", 5, K_MAX, 20, key="nb_k")
notebook_button(cur, "neighbours", n_sent=n_sent, word=word_ix, layer=layer, k=k)
if index is None:
    st.stop()
res = nearest_words(index, q.vectors[layer, word_ix], layer, k)
word = q.words[word_ix]
rows = neighbour_rows(index, res)
df = pd.DataFrame(rows)
same = float(np.mean([r["word"].lower() == word.lower() for r in rows]))
st.markdown(f"The {k} corpus words nearest **{html.escape(word)}** at layer **{names[layer]}**: "
            f"{same:.0%} of them are the same word. Each in its sentence:")
st.markdown("\n".join(
    f"{r['rank']}. …{html.escape(r['left'])} **{html.escape(r['word'])}** {html.escape(r['right'])}… "
    f"<span style='color:#666'>({html.escape(r['tag'])}, cos {r['cosine']:.3f})</span>" for r in rows[:20]),
    unsafe_allow_html=True)
chart(tag_histogram_figure(index.tag_names, res.tag_counts, f"Parts of speech of the {k} neighbours "
                           f"(layer {names[layer]})"), "neighbour tags", key="nb-hist")
table(df, f"neighbours of {word} at layer {layer}", key="nb-csv", hide_index=True)

# --- one word across the corpus, in 2-D ----------------------------------------------------------
st.subheader("One word's vectors across the corpus, layer by layer")
st.markdown("Every occurrence of one word, projected onto its first two **principal components** at the layer "
            "you pick (PCA of those vectors only). Coloured by sense (WordNet's example sentences of the word) or "
            "by part of speech (the Brown index): when the colours separate, the layer tells the uses apart.")
SENSES, TAGS = "WordNet senses", "Brown tags (the index)"
source = st.radio("Colour by", (SENSES, TAGS), horizontal=True, key="nb_source")
p_layer = st.slider("Projection layer", 0, L, L, key="nb_p_layer", help="0 = the embeddings' output")
if source == SENSES:
    rows_s = sense_rows()
    counts = pd.Series([r[2] for r in rows_s]).value_counts()
    words = sorted(counts.index[counts >= 6])
    pick = st.selectbox("Word", words, index=words.index("line") if "line" in words else 0, key="nb_sense_word")
    try:
        sv = model_cached(cur, sense_vectors, pick)
    except bert_core.BertCoreError as e:
        st.warning(str(e))
        st.stop()
    vecs, groups, hover = sv.vectors[p_layer], list(sv.senses), list(sv.sentences)
else:
    if index is None:
        st.stop()
    pick = st.text_input("Word (as in the corpus)", value=word, key="nb_tag_word", max_chars=50)
    ids = occurrences(index, pick.strip())
    vecs = index.units[p_layer, ids].astype(np.float32)
    groups = [index.tag_names[int(index.tags[i])] for i in ids]
    hover = [" ".join(index.sentences[int(index.sentence[i])]) for i in ids]
if len(vecs) < 3:
    st.info(f"“{html.escape(str(pick))}” occurs {len(vecs)} time(s) here: a projection needs at least 3.")
    st.stop()
coords, share = pca_2d(vecs)
chart(projection_figure(coords, groups, hover, share, f"“{pick}” at layer {names[p_layer]}: {len(vecs)} "
                        "occurrences"), "word projection", key="nb-pca")
table(pd.DataFrame({"sentence": hover, "colour": groups, "pc1": coords[:, 0].round(4), "pc2": coords[:, 1].round(4)}),
      f"projection of {pick} at layer {p_layer}", key="nb-pca-csv", hide_index=True)
st.caption("PCA, not UMAP: umap-learn pulls numba and llvmlite, too slow and big here (docs/benchmarks.md).")
