"""BERT Explorer: page config, the shared sidebar, and navigation over the pages."""

import streamlit as st

from ui import classroom_push, housekeeping, model_choice, theme
from ui.state import sidebar_ui
from ui.threads import fit_torch_threads

st.set_page_config(page_title="BERT Explorer", page_icon="🔎", layout="wide")
theme.apply()  # AA contrast where config.toml's theme cannot reach (ui/theme.py)
fit_torch_threads()  # this run's torch threads: every core when the machine is free, one when busy
housekeeping.start()  # once per process: gives memory back when the class has left (ui/housekeeping.py)
housekeeping.note_run()

PAGES = [
    st.Page("views/lesson.py", title="Lesson", url_path="start", default=True),  # the landing page, at the root...
    st.Page("views/lesson.py", title="Lesson", url_path="lesson", visibility="hidden"),  # ...and at /lesson
    st.Page("views/tokenization.py", title="Tokenization", url_path="tokenization"),
    st.Page("views/embeddings.py", title="Embeddings", url_path="embeddings"),
    st.Page("views/masking.py", title="Masking", url_path="masking"),
    st.Page("views/attention.py", title="Attention", url_path="attention"),
    st.Page("views/predictions.py", title="Predictions", url_path="predictions"),
    st.Page("views/layers.py", title="Layers", url_path="layers"),
    st.Page("views/inside_layer.py", title="Inside a layer", url_path="inside-layer"),
    st.Page("views/heads.py", title="Heads & patching", url_path="heads"),
    st.Page("views/anatomy.py", title="Model anatomy", url_path="anatomy"),
    st.Page("views/training.py", title="Training", url_path="training"),
    st.Page("views/compare.py", title="Compare", url_path="compare"),
    st.Page("views/bert_vs_gpt.py", title="BERT vs GPT", url_path="bert-vs-gpt"),
    st.Page("views/finetuning.py", title="Fine-tuning", url_path="finetuning"),
    st.Page("views/tagging.py", title="Tagging", url_path="tagging"),
    st.Page("views/qa.py", title="Question answering", url_path="question-answering"),
    st.Page("views/similarity.py", title="Sentence similarity", url_path="similarity"),
    st.Page("views/probing.py", title="Probing", url_path="probing"),
    st.Page("views/neighbours.py", title="Neighbours", url_path="neighbours"),
]

nav = st.navigation(PAGES, expanded=True)  # every page in the menu: no "View 3 more" hiding some
st.set_page_config(page_title=f"{nav.title} · BERT Explorer")  # each page its own title (WCAG 2.4.2)
if nav.url_path not in ("", "start", "lesson"):
    classroom_push.forget_here()  # a student exploring another page is not redrawn by the class's steps
    st.sidebar.title("BERT Explorer", anchor=False)  # the page's one h1: its own headings are h2, h3 (WCAG 1.3.1)
st.session_state["current"] = sidebar_ui(lesson_page=nav.url_path in ("", "start", "lesson"))
model_choice.bert_base_offer(st.sidebar, key="sidebar")  # where the hub is reachable or it is on disk already
nav.run()  # a following student's step is a fragment of the Lesson page, rerun alone when the teacher moves
