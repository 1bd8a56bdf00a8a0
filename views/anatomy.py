"""Model anatomy: where BERT's parameters live, computed from the config alone."""

import pandas as pd
import streamlit as st

from bert_core.inspect.anatomy import KNOWN_CONFIGS, anatomy_rows
from ui.state import require_current
from ui.widgets import model_line, table

cur = require_current()
st.header("Model anatomy")
model_line(cur.model)
st.caption("Parameter counts follow from the config alone: no weights are needed to count them. The counts include "
           "the pre-training heads (the MLM head's transform and biases, the NSP head) where the checkpoint has "
           "them, so bert-base-uncased comes to 110.1M here and 109.5M without them; the papers round (BERT-base "
           "110M, BERT-large 340M, ALBERT-base 12M).")

cfg = cur.model.config
rows = {f"{cur.model.name} (loaded)": anatomy_rows(cfg, cur.model.has_mlm, cur.model.has_nsp,
                                                 cur.model.model.bert.pooler is not None)}
rows.update({name: anatomy_rows(c) for name, c in KNOWN_CONFIGS.items()})
summary = pd.DataFrame([{"model": n, "total parameters": r[-1]["parameters"]} for n, r in rows.items()])
summary["millions"] = (summary["total parameters"] / 1e6).round(1)
table(summary, "model sizes", key="csv-sizes", hide_index=True)

distil = {r["component"]: r["parameters"] for r in rows["distilbert-base-uncased"]}
distil_mlm = distil["MLM head (transform + bias; decoder tied)"]
st.markdown(
    f"**BERT's family.** DistilBERT (66M in its paper: the encoder alone, {(distil['total'] - distil_mlm) / 1e6:.1f}M "
    f"here; the table's {distil['total'] / 1e6:.1f}M adds its MLM head's {distil_mlm / 1e6:.1f}M) keeps BERT-base's "
    "width but half its layers (6), and drops the "
    "segment table and the pooler; it starts from every other layer of BERT-base and is trained to imitate it "
    "(distillation: BERT's output probabilities as soft targets, plus MLM and a loss aligning the hidden "
    "states). RoBERTa (125M) is BERT-base's "
    "shape with a 50,265-piece byte-level BPE vocabulary (the extra 15M parameters are word embeddings), "
    "ten times the data, bigger batches, longer training, dynamic masking (a new choice of masked words each "
    "time a sentence is read, where BERT masked each sentence once before training) and no NSP. ALBERT-base "
    "(12M) embeds "
    "in E = 128 and projects to H = 768, its 12 layers **share one set of weights**, so attention and "
    "feed-forward are counted once, and it replaces NSP with sentence-order prediction (two consecutive "
    "segments: are they in their original order or swapped?)."
)
pick = st.selectbox("Break down", list(rows), key="anatomy_model")
df = pd.DataFrame(rows[pick])
df["share"] = (100 * df["share"]).round(2).astype(str) + " %"
table(df, f"anatomy {pick.split(' ')[0]}", key="csv-anatomy", hide_index=True)
c = cfg if pick.endswith("(loaded)") else KNOWN_CONFIGS[pick]
st.markdown(
    f"**{c.num_hidden_layers} layers × {c.num_attention_heads} heads**, hidden size H = {c.hidden_size}, "
    f"head size d_k = {c.hidden_size // c.num_attention_heads}, feed-forward size F = {c.intermediate_size}, "
    f"vocabulary V = {c.vocab_size:,}, positions P = {c.max_position_embeddings}."
    + (f" Embedding width E = {c.E}; one layer's weights shared by all {c.num_hidden_layers}."
       if c.model_type == "albert" else "")
    + (f" {c.position_offset} of the P positions are never used (RoBERTa's offset)." if c.position_offset else "")
)
