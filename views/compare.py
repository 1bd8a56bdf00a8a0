"""Compare: one text through two or three models side by side (tokens, guesses at each [MASK], agreement)."""

import pandas as pd
import streamlit as st

import bert_core
from bert_core.inspect.compare import agreement_rows, run_model, summary_rows, token_table
from ui.markdown import md_literal
from ui.notebook_ui import notebook_button
from ui.state import (
    ALLOW_HUB,
    BUNDLED_LABEL,
    MINILM_LABEL,
    SESSION_LABEL,
    Current,
    model_cached,
    name_of,
    require_current,
    shared_model,
)
from ui.widgets import FAMILY_NAMES, model_line, table

cur = require_current()
st.header("Compare models")
model_line(cur.model)
st.markdown(
    "The same text through two or three models of BERT's family. Each reads it through its **own** tokenizer "
    "(WordPiece `##`, byte-level BPE `Ġ`, SentencePiece `▁`), so the pieces and their number can differ (the two "
    "bundled models both use WordPiece on lower-cased text, so on everyday words they mostly agree); each "
    "[MASK] you type becomes that model's mask token. The k-th [MASK] of the text is compared across "
    "models as a word (marks removed, lower-cased), and named by its position in the Tokens table below (from "
    "0, as the other pages count positions; two models that split the text differently give two positions)."
)
st.caption(
    "Top-k overlap = |A ∩ B| / |A ∪ B| of the models' top-k word sets: 1 when they propose the same "
    "candidates, 0 when they share none. Time per analysis is the wall time of one tokenize + forward "
    "pass + top-k on this server (best of two runs, measured the first time a model sees this text)."
)

# Offline: the bundled model and a model trained on the Training page; with the hub, the suggested ids.
CURRENT = f"sidebar model ({cur.model.name})"
options = [CURRENT, MINILM_LABEL, BUNDLED_LABEL]
if st.session_state.get("session_model") is not None:
    options.append(SESSION_LABEL)
if ALLOW_HUB:
    options += list(bert_core.SUGGESTED_HUB_IDS)
# Beside the sidebar's model: the session's, else the bundled model the sidebar is not showing.
other = MINILM_LABEL if cur.model_key == bert_core.BUNDLED_NAME else BUNDLED_LABEL
default = [CURRENT, SESSION_LABEL if SESSION_LABEL in options else other]
picked = st.multiselect("Models (two or three)", options, default=default, max_selections=3, key="cmp_models",
                        help="Hub models download on first use (hundreds of MB).")
if SESSION_LABEL not in options:
    st.caption("Train a model on the Training page and press “Use this model” to compare it here too.")
k = st.slider("Candidates per [MASK] (top k)", 1, 10, 5, key="cmp_k")


def resolve(label: str) -> Current | None:
    """The model behind a choice, as a `Current` (so its results are cached per model and text)."""
    if label == CURRENT:
        return cur
    if label == SESSION_LABEL:
        key = f"session:{st.session_state.get('session_model_version', 0)}"
        return Current(st.session_state["session_model"], key, cur.text, None, cur.seed)
    name = name_of(label)
    try:
        with st.spinner(f"Loading {name}…"):
            return Current(shared_model(name), name, cur.text, None, cur.seed)
    except bert_core.BertCoreError as e:
        st.warning(f"Could not load {name}: {e}")
        return None


chosen = [c for c in (resolve(label) for label in dict.fromkeys(picked)) if c is not None]
keys = list(dict.fromkeys(c.model_key for c in chosen))  # the same model picked twice counts once
chosen = [next(c for c in chosen if c.model_key == key) for key in keys]
if len(chosen) < 2:
    st.info("Pick at least two different models to compare.")
    st.stop()

runs = []
with st.spinner("Running each model on the text…"):
    for c in chosen:
        try:
            runs.append(model_cached(c, run_model, cur.text, top_k=k))
        except bert_core.BertCoreError as e:
            st.warning(f"{c.model.name}: {e}")
if len(runs) < 2:
    st.stop()
notebook_button(cur, "compare", models=["session" if key.startswith("session:") else key for key in keys], k=k)
# Two models may share a display name (e.g. two local folders called "model"): number them.
names = [r.name for r in runs]
for i, r in enumerate(runs):
    if names.count(r.name) > 1:
        runs[i] = type(r)(**{**r.__dict__, "name": f"{r.name} #{i + 1}"})

st.subheader("The models")
table(pd.DataFrame(summary_rows(runs)), "models compared", key="csv-cmp-models", hide_index=True)
for r in runs:
    for note in r.notes:
        st.caption(f"{r.name}: {note}")

st.subheader("Tokens side by side")
st.caption("Position t of each model; a model with fewer tokens leaves its column blank below its last one.")
table(pd.DataFrame(token_table(runs)), "tokens compared", key="csv-cmp-tokens", hide_index=True)

st.subheader("Guesses at each [MASK]")
n_masks = min((len(r.predictions) for r in runs if r.has_mlm), default=0)
without = [r.name for r in runs if not r.has_mlm]
if without:
    st.info(f"No masked-language-model head, so no guesses: {', '.join(without)}.")
kept = {r.name: len(r.predictions) for r in runs if r.has_mlm}
if len(set(kept.values())) > 1:  # a model whose input was truncated lost the [MASK]s past its last position
    which = f"the first {n_masks}, which every model read, are compared" if n_masks else "so none can be compared"
    st.info("Not every model kept every [MASK] (see the truncation notes above): "
            + ", ".join(f"{name} kept {n}" for name, n in kept.items()) + f"; {which}.")
if n_masks == 0 and not any(kept.values()):
    st.info("Type [MASK] in the text (sidebar) where the models should guess a word.")
elif n_masks > 0:
    guessing = [r for r in runs if r.has_mlm]  # a model without an MLM head has no guesses to show
    cols = st.columns(len(guessing))
    for col, r in zip(cols, guessing):
        col.markdown(f"**{md_literal(r.name)}**")
        col.caption(f"{FAMILY_NAMES.get(r.family, r.family)} family")
        for j in range(n_masks):
            col.caption(f"{md_literal(r.mask_token)} at position {r.mask_positions[j]}")
            df = pd.DataFrame([{"candidate": t, "p": round(p, 4)} for t, p in r.predictions[j]])
            col.dataframe(df, hide_index=True, key=f"cmp-pred-{r.name}-{j}")
    st.subheader("Agreement")
    table(pd.DataFrame(agreement_rows(runs)), "agreement", key="csv-cmp-agree", hide_index=True)
