"""What .streamlit/config.toml's [theme] cannot say: style rules every page gets (WCAG AA contrast, legibility).

Streamlit draws a caption at 60% opacity of the text colour and a code span in its own green: a code span
inside a caption ends up green at 60%, 3:1 on white, whatever the theme's colours. Inside a caption, code
takes the caption's colour (4.8:1 with the theme's text colour), set apart by its monospace and background.
A text box's character counter sits inside its bottom edge: the text stops short of it. A disabled widget's label
is Streamlit's faded grey (a slider's 2.6:1 on white): it takes the caption's 60% of the text colour (4.8:1), still
lighter than an enabled label.
The Lesson's side column (its buttons and toggles: "Follow the teacher", "Leave the class", the notebook and the
handout) is a quarter of the page: in a window 900-1024 px wide Streamlit cut every label to "Follo…", "Leave
the cl…". There the labels wrap onto a second line.
"""

import streamlit as st

CSS = """<style>
[data-testid="stCaptionContainer"] code {color: inherit !important;}
[data-testid="stTextArea"] textarea {padding-bottom: 1.5rem !important;}  /* clear of the character counter */
[data-testid="stWidgetLabel"][disabled], [data-testid="stWidgetLabel"][disabled] * {
  color: rgba(20, 18, 15, 0.6) !important;  /* config.toml's textColor #14120f at 60% */
}
[data-testid="stColumn"]:has(> div > .st-key-lesson_side), [data-testid="stColumn"]:has(.st-key-lesson_side)
  {min-width: 8rem;}
.st-key-lesson_side .stMarkdownEllipsis {white-space: normal !important; text-overflow: clip !important;}
</style>"""


def apply() -> None:
    st.html(CSS)
