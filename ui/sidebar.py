"""The shared sidebar: the model, the text, an optional second sentence and the seed, drawn by app.py on every page
run; it returns the `Current` choice (ui/state.py), which the pages read with `require_current()`.

The deployment's settings (state.DEFAULT_MODEL, ALLOW_HUB, ALLOW_FREE_HUB) are read from ui.state at each run, not
copied at import: a test sets them there.
"""

from __future__ import annotations

import logging

import streamlit as st

import bert_core
from ui import hub_download, state
from ui.state import (
    BUNDLED_LABEL,
    FELL_BACK,
    MINILM_LABEL,
    MODELS,
    OTHER_LABEL,
    PENDING_MODEL,
    SESSION_LABEL,
    Current,
    init_from_url,
    label_of,
    name_of,
    set_url,
    shared_model,
)

log = logging.getLogger("bert_explorer.models")


def _model_options() -> list[str]:
    opts = [MINILM_LABEL, BUNDLED_LABEL, *(bert_core.SUGGESTED_HUB_IDS if state.ALLOW_HUB else ())]
    if label_of(state.DEFAULT_MODEL) not in opts:  # the server's default is always offered, first
        opts.insert(0, label_of(state.DEFAULT_MODEL))
    if st.session_state.get("session_model") is not None:
        opts.append(SESSION_LABEL)
    if state.ALLOW_HUB and state.ALLOW_FREE_HUB:
        opts.append(OTHER_LABEL)
    return opts


def _load_with_progress(name: str) -> bert_core.LoadedModel:
    """Load a shared model, showing progress only when it is not loaded (a hub download can take minutes: a bar)."""
    if name in MODELS:
        return shared_model(name)
    box = st.empty()  # the box goes once the model is there: it would sit over slide 1 of the Lesson
    if hub_download.needs_download(name, state.ALLOW_HUB):
        hub_download.fetch_with_bar(name, box)
    with box.status(f"Loading {name}…", expanded=False):
        m = shared_model(name)
    box.empty()
    return m


def sidebar_ui(lesson_page: bool = False) -> Current | None:
    """The shared sidebar: model, text, optional second sentence, seed. Returns the current choice.

    On the Lesson (`lesson_page`) each step has its own sentence, so the Text boxes are not shown there: two
    sentence boxes, one of which did nothing, confused students. What was typed in them is kept for the other pages.
    """
    init_from_url()
    sb = st.sidebar
    opts = _model_options()
    if PENDING_MODEL in st.session_state:  # a button (ui/model_choice.py) or the class's teacher chose it
        pending = st.session_state.pop(PENDING_MODEL)
        if label_of(pending) not in opts and OTHER_LABEL in opts:  # a hub id of no option: the hub id box holds it
            st.session_state.update({"model_choice": OTHER_LABEL, "other_model": pending[:200]})
        else:
            st.session_state["model_choice"] = label_of(pending)
    if st.session_state.get("model_choice") not in opts:
        st.session_state["model_choice"] = label_of(state.DEFAULT_MODEL)
    choice = sb.selectbox("Model", opts, key="model_choice",
                          help="Two models ship with the app and work offline: MiniLM (6 layers, 384 wide, "
                               "bert-base-uncased's 30,522-piece vocabulary: half the layers of a MiniLM distilled "
                               "from a BERT-base-sized teacher, trained on a billion sentence pairs for sentence "
                               "similarity; its encoder trained further and its MLM and NSP heads trained anew by this "
                               "project on Brown + WordNet) and a "
                               "tiny BERT (4 layers, 256 wide, 12,000 pieces) this project trained from scratch on "
                               "WordNet and the Brown corpus, as the Training page does. Hub models download on "
                               "first use.")
    if choice == OTHER_LABEL:
        name = sb.text_input("Hub id (BERT, RoBERTa, DistilBERT or ALBERT; safetensors)", key="other_model",
                             placeholder="e.g. google-bert/bert-base-multilingual-cased").strip()
    elif choice == SESSION_LABEL:
        name = "session"
    else:
        name = name_of(choice)
    if lesson_page:
        for key in ("text", "use_pair", "pair"):  # a widget not drawn in a run loses its value: keep these
            st.session_state[key] = st.session_state[key]
        sb.caption("Each step of the Lesson has its own sentence, on the step itself. The Text box is on the "
                   "other pages.")
        pair = st.session_state["pair"] if st.session_state["use_pair"] else None
    else:
        sb.text_area("Text", key="text", height=100, max_chars=bert_core.MAX_TEXT_CHARS,
                     help="Use [MASK] where the model should guess a word.")
        use_pair = sb.checkbox("Add a second sentence (B)", key="use_pair")
        pair = (sb.text_area("Sentence B", key="pair", height=70, max_chars=bert_core.MAX_TEXT_CHARS)
                if use_pair else None)
    sb.number_input("Seed", min_value=0, max_value=2**31 - 1, step=1, key="seed",
                    help="Drives the masking draws and training; same seed, same draw.")

    model, key = _resolve_model(name)
    if model is None:
        return None
    for note in model.notes:
        sb.caption(note)
    set_url(text=st.session_state["text"][:2000], pair=pair[:2000] if pair else None,
            model=None if key == state.DEFAULT_MODEL else ("session" if key.startswith("session:") else key),
            seed=st.session_state["seed"] or None)
    return Current(model, key, st.session_state["text"], pair, int(st.session_state["seed"]))


def _resolve_model(name: str) -> tuple[bert_core.LoadedModel | None, str]:
    """The chosen model; on a failed load, a message and the last model that worked."""
    if name == "session":
        # A snapshot the Training page stored with "Use this model" (eval mode, this session only).
        return st.session_state["session_model"], f"session:{st.session_state.get('session_model_version', 0)}"
    if not name:
        st.sidebar.info("Type a hub id, e.g. bert-base-multilingual-cased.")
        name = st.session_state.get("last_good_model", state.DEFAULT_MODEL)
    try:
        m = _load_with_progress(name)
        st.session_state["last_good_model"] = name
        st.session_state.pop(FELL_BACK, None)
        return m, name
    except bert_core.BertCoreError as e:
        log.warning("could not load %r: %s", name[:80], e)  # the server's log says why a page fell back
        st.sidebar.error(f"Could not load {name[:80]}: {e}")
        # The last model that worked, else the site's default, else the offline default (MiniLM, not the tiny one)
        fallback = next(f for f in (st.session_state.get("last_good_model"), state.DEFAULT_MODEL,
                                    bert_core.DEFAULT_BUNDLED) if f and f != name)
        try:
            st.sidebar.caption(f"Still showing: {fallback}")
            m = shared_model(fallback)
            # Presenter mode hides the sidebar: its corner says it too (a long path by its end, where its name is)
            st.session_state[FELL_BACK] = name if len(name) <= 80 else "…" + name[-79:]
            return m, fallback
        except bert_core.BertCoreError as e2:
            st.error(f"No model could be loaded: {e2}")
            return None, ""
