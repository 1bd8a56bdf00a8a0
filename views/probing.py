"""Probing: a linear probe on every layer's frozen word vectors (part of speech, word sense), beside two floors."""

import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures.probing import accuracy_by_layer_figure, layer_names
from bert_core.probe.probing import POS, POS_SIZES, ROWS, SENSE, TASKS, probe_layers, probe_task
from ui.notebook_ui import notebook_button
from ui.state import model_cached, require_current
from ui.widgets import chart, model_line, table

cur = require_current()
L = cur.model.config.num_hidden_layers
st.header("Probing")
model_line(cur.model)
st.markdown(
    "What does each layer *know*? Freeze the model, take every word's vector at one layer (its first piece's "
    "hidden state), and train the simplest possible reader on it: a **linear probe** (multinomial logistic "
    "regression). If a linear probe can read a word's part of speech or sense off layer l on sentences it never "
    "saw, that information is laid out plainly there. Tenney et al. 2019 (*BERT rediscovers the classical NLP "
    "pipeline*) probed BERT's layers this way, with small classifiers on spans, and found part of speech read "
    "best in lower layers than coreference and semantic roles. It matters because it turns \"BERT understands "
    "grammar\" into a number per layer that you can check against two floors."
)
st.latex(r"p(y = c \mid h^{l}_w) = \operatorname{softmax}(W h^{l}_w + b)_c,\qquad "
         r"\min_{W,b}\; -\frac{1}{N}\sum_{w}\log p(y_w \mid h^{l}_w) + \frac{\lambda}{2}\lVert W\rVert^2")
st.caption(f"Layers are numbered 1–{L} (layer 0 = the embeddings' output). The two floors: **random weights** — "
           "the same architecture with fresh random weights (whatever a probe finds there comes from the word's "
           "identity and its neighbours mixed by random layers, not from pretraining); **control task** "
           "(Hewitt & Liang 2019) — the pretrained vectors, but "
           "every word type given a random tag: a probe that does well there is memorising words. Fitted by L-BFGS (a "
           "quasi-Newton optimiser: no learning rate to tune) on standardised features, λ = 0.01, held-out accuracy.")

c1, c2, c3 = st.columns(3)
task_name = c1.radio("Task", TASKS, key="pr_task", horizontal=True,
                     help="Part of speech: the 12 universal tags of the Brown corpus. Word sense: the same WordNet "
                          "word in example sentences of its different senses; the probe picks among the word's "
                          "own senses.")
n_train = POS_SIZES[1]
if task_name == POS:
    n_train = c2.select_slider("Training sentences", POS_SIZES, value=POS_SIZES[1], key="pr_n",
                               help="~20 words each; tested on 300 held-out Brown sentences (about 6,400 words).")
task = probe_task(task_name, n_train)
c3.caption(task.description)
notebook_button(cur, "probing", task=task_name, n_train=n_train)

key = (cur.model_key, task_name, n_train, cur.seed)
done: dict = st.session_state.setdefault("pr_results", {})
if st.button("Fit the probes", type="primary", key="pr_fit",
             help=f"One forward pass of the model and one of its random twin over the sentences, then {L + 1} "
                  "probes for each row: under a minute on the default model, minutes on a bert-base-sized one."):
    bar = st.progress(0.0, text="Starting…")
    try:
        done[key] = model_cached(cur, probe_layers, task_name, n_train, cur.seed,
                                 progress=lambda what, frac: bar.progress(min(max(frac, 0.0), 1.0), text=what))
    except bert_core.BertCoreError as e:
        st.warning(f"Cannot probe this model: {e}")
    bar.empty()

r = done.get(key)
if r is None:
    st.info("Press **Fit the probes** to read every layer of "
            f"**{cur.model.name}** (the result is kept for this model and these settings).")
    st.stop()

baselines = {}
title = f"{task_name}: held-out accuracy of a linear probe at each layer ({cur.model.name})"
chart(accuracy_by_layer_figure({k: r.accuracy[k] for k in ROWS if k in r.accuracy}, r.majority, title, baselines),
      "probing accuracy by layer", key="pr-chart")
best = int(r.accuracy["pretrained"].argmax())
names = layer_names(L + 1)
floor = float(r.accuracy["random weights"].max())
st.markdown(
    f"Best layer: **{names[best]}** ({r.accuracy['pretrained'][best]:.1%}); the random-weights twin peaks at "
    f"{floor:.1%}, the majority label (always answering the label most frequent in training, as a model "
    f"that learned nothing but counts would) gets {r.majority:.1%}. "
    + ("" if r.selectivity is None else
       f"Selectivity (pretrained − control task) is largest at layer {names[int(r.selectivity.argmax())]} "
       f"({r.selectivity.max():.1%} points).")
)
if task_name == SENSE:
    st.caption("Majority label here = each word's most frequent sense in the training sentences (the classic "
               "most-frequent-sense baseline). Both bundled models read WordNet's example sentences in "
               "pretraining (never their sense labels).")
df = pd.DataFrame({"layer": names})
for k in ROWS:
    if k in r.accuracy:
        df[f"{k} (held-out)"] = r.accuracy[k].round(4)
        df[f"{k} (training)"] = r.train_accuracy[k].round(4)
if r.selectivity is not None:
    df["selectivity"] = r.selectivity.round(4)
df["majority label"] = round(r.majority, 4)
table(df, "probing accuracy by layer", key="pr-csv", hide_index=True)
st.caption(f"{r.n_train:,} training words, {r.n_valid:,} held-out words. Time of the run on this server: "
           + ", ".join(f"{k} {v:.1f} s" for k, v in r.seconds.items()) + " (kept on its disk for this model and "
           "these settings: the notebook of this page reads the same run back).")
