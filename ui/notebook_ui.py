"""The "Open as a notebook" button: the page's view (bert_core.notebooks.View) as a .ipynb download."""

from __future__ import annotations

import os
import re

import streamlit as st

import bert_core
from bert_core.notebooks import View, notebook_bytes
from ui.state import Current

# Where the project's code lives, for the notebook's install cell; a placeholder the reader fills in otherwise.
REPO_URL = os.environ.get("BERT_EXPLORER_REPO_URL", "").strip()
VIEWS_KEY = "notebook_views"  # page -> the View its button offers (read by the tests, which run the notebook)


def model_size(m: bert_core.LoadedModel) -> str:
    """The model's shape and parameter count, in the words the pages use."""
    c = m.config
    n = sum(p.numel() for p in m.model.parameters())
    return (f"{c.num_hidden_layers} layers, {c.hidden_size} wide, {c.num_attention_heads} heads; "
            f"{n:,} parameters")


def view_of(cur: Current, page: str, text: str | None = None, **settings) -> View:
    """The View a page shows: the sidebar's model and input (or the page's own text) and its settings."""
    source = "session" if cur.model_key.startswith("session:") else cur.model.source
    return View(page, cur.model_key if source != "session" else "session", source, model_size(cur.model),
                cur.text if text is None else text, cur.text_pair, cur.seed,
                settings, bert_core.__version__, REPO_URL)


def notebook_button(cur: Current, page: str, text: str | None = None, **settings) -> None:
    """"Open as a notebook": a .ipynb that recomputes this view (written only when clicked)."""
    view = view_of(cur, page, text, **settings)
    st.session_state.setdefault(VIEWS_KEY, {})[page] = view
    st.download_button("Open as a notebook (.ipynb)", lambda: notebook_bytes(view),
                       file_name=f"bert-explorer-{re.sub('[^a-z0-9]+', '-', page)}.ipynb",
                       mime="application/x-ipynb+json", key=f"notebook-{page}", on_click="ignore",
                       icon=":material/download:",
                       help="A Jupyter notebook that recomputes this view with bert_core: the same model, text and "
                            "settings, the same figures and numbers. Runs offline next to the app's code.")
