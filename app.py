"""BERT Explorer: the entry point (minimal for now: the bundled model and its tokens)."""

import streamlit as st

import bert_core

st.set_page_config(page_title="BERT Explorer", layout="wide")


@st.cache_resource(show_spinner="Loading the model…")
def shared_model() -> bert_core.LoadedModel:
    """One read-only model per process, shared by every session."""
    return bert_core.load_model()


st.title("BERT Explorer")
text = st.text_input("Text", "The cat sat on the [MASK].")
try:
    trace = bert_core.analyze(shared_model(), text)
except bert_core.BertCoreError as e:
    st.warning(str(e))
    st.stop()
st.dataframe({"token": trace.tokens, "id": trace.input_ids.tolist()})
