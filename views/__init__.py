"""The app's pages: each module is a Streamlit page script (app.py's st.Page, by file path), run afresh on every
rerun and never imported by the app; a package so that import-linter checks the pages' contracts (no tensor math,
no page importing another)."""
