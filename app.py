"""BERT Explorer: the server (its routes and lifespan) and, as the script each page run runs, page config, the shared
sidebar and navigation over the pages.

`streamlit run app.py` reads this file for an `st.App` and imports it as the module `app`: that import builds the
server (server/app.py: the class's event route, housekeeping started with the server). Streamlit then runs this same
file as each page run's script, as `__main__`: the pages.
"""

import streamlit as st

if __name__ != "__main__":  # imported by `streamlit run` (or uvicorn app:app): the server, built once per process
    from server.app import lifespan, routes

    app = st.App(__file__, routes=routes(), lifespan=lifespan)
else:  # a page run
    from server.housekeeping import note_run
    from server.threads import fit_torch_threads
    from ui import model_choice, theme
    from ui.lesson.live_class import reads
    from ui.sidebar import sidebar_ui

    st.set_page_config(page_title="BERT Explorer", page_icon="🔎", layout="wide")
    theme.apply()  # AA contrast where config.toml's theme cannot reach (ui/theme.py)
    fit_torch_threads()  # this run's torch threads: every core when the machine is free, one when busy
    note_run()  # the idle housekeeping waits until page runs stop (server/housekeeping.py)

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
        reads.forget_here()  # a student exploring another page is not redrawn by the class's steps
    # The page's one h1: its headings are h2, h3 (WCAG 1.3.1). Presenter mode hides the sidebar: the Lesson draws a
    # visually hidden one of its own there (ui/lesson/roles.py).
    st.sidebar.title("BERT Explorer", anchor=False)
    st.session_state["current"] = sidebar_ui(lesson_page=nav.url_path in ("", "start", "lesson"))
    model_choice.bert_base_offer(st.sidebar, key="sidebar")  # where the hub is reachable or it is on disk already
    nav.run()  # a following student's step is a fragment of the Lesson page, rerun alone when the teacher moves
