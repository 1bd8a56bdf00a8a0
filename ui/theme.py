"""What .streamlit/config.toml's [theme] cannot say: one style rule every page gets, for WCAG AA contrast.

Streamlit draws a caption at 60% opacity of the text colour and a code span in its own green: a code span
inside a caption ends up green at 60%, 3:1 on white, whatever the theme's colours. Inside a caption, code
takes the caption's colour (4.8:1 with the theme's text colour), set apart by its monospace and background.
"""

import streamlit as st

CSS = """<style>
[data-testid="stCaptionContainer"] code {color: inherit !important;}
</style>"""


def apply() -> None:
    st.html(CSS)
