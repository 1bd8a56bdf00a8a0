"""The Lesson's own controls: a step's sentence boxes, presenter mode's keys, corner and style."""

from __future__ import annotations

import streamlit as st

import bert_core
from ui.lesson.content import Step
from ui.lesson.state import (
    exit_present,
    go,
    keep_text,
    pair_key,
    pick,
    restore,
    reveal,
    text_key,
    try_this,
    widget_key,
)
from ui.markdown import escape_markdown
from ui.state import FELL_BACK


def sentence_ui(i: int, s: Step) -> None:
    """Step i's sentence (and sentence B) as input boxes, its one-click change, and a way back."""
    keys = [text_key(i)] + ([pair_key(i)] if s.pair is not None else [])
    for key, label in zip(keys, ("This step's sentence", "Sentence B")):
        st.session_state[widget_key(key)] = st.session_state[key]  # the box shows the stored sentence
        st.text_input(label, key=widget_key(key), on_change=keep_text, args=(key,),
                      max_chars=bert_core.MAX_TEXT_CHARS,
                      help="Change it and the step recomputes; your sentences go into the link, so a teacher "
                           "can prepare a lesson once and share it.")
    c1, c2 = st.columns(2)
    if s.try_text:
        c1.button(f"Try this: {s.try_label}", key="lesson_try", on_click=try_this, args=(i,), width="stretch")
    else:  # a step whose change is a setting, not a sentence (the anatomy table: this model or BERT-large)
        c1.toggle(f"Try this: {s.try_label}", key="lesson_large")
    c2.button("Back to the lesson's sentence", key="lesson_restore", on_click=restore, args=(i,), width="stretch",
              disabled=all(st.session_state[key] == default for key, default in zip(keys, (s.text, s.pair))))


def more_keys(k: int, n: int, reveal_args: tuple | None, n_choices: int = 0) -> None:
    """Presenter mode's second keys (Page Down / Page Up, as clickers send, and Enter), on buttons kept out of sight;
    with `n_choices` (and a guess still open), the number keys 1-9 pick the guess (steps 1-3 have five choices).

    Each is a Streamlit button with its own shortcut: Streamlit listens on the whole document, so a key works
    whatever was clicked last (a guess, a chart), except while typing in a text box.
    """
    with st.container(key="lesson_keys"):  # hidden by PRESENTER_CSS (.st-key-lesson_keys)
        st.button("Next", key="lesson_next_pd", disabled=k == n, on_click=go, args=(k + 1,), shortcut="PageDown")
        st.button("Back", key="lesson_back_pu", disabled=k == 1, on_click=go, args=(k - 1,), shortcut="PageUp")
        if reveal_args is not None:
            st.button("Reveal", key="lesson_reveal_enter", on_click=reveal, args=reveal_args, shortcut="Enter")
            token, _, guess_key, _ = reveal_args
            for i in range(min(n_choices, 9)):
                st.button(f"Guess {i + 1}", key=f"lesson_pick_{i + 1}", on_click=pick, args=(guess_key, token, i),
                          shortcut=str(i + 1))


def model_summary(cur) -> str:
    """"6 layers × 384 wide, 12 heads": the shape of the model the slides are computed on, never its parameter count
    (step 10 asks BERT-base's: on BERT-base the count would give the answer away on every slide before it)."""
    c = cur.model.config
    return f"{c.num_hidden_layers} layers × {c.hidden_size} wide, {c.num_attention_heads} heads"


def presenter_corner(cur) -> None:
    """Presenter mode's bottom-right corner: the model on screen (its shape), and the way out."""
    with st.container(key="lesson_corner"):  # placed by PRESENTER_CSS
        shown = cur.model_key.removeprefix("bundled-").replace("minilm", "MiniLM")
        st.markdown(f"Model: **{escape_markdown(shown)}**, {model_summary(cur)}")
        if failed := st.session_state.get(FELL_BACK):
            st.markdown(f":red[Could not load **{escape_markdown(failed)}**: these slides are computed on the model "
                        "above.]")
        st.button("Exit presenter mode", key="lesson_exit", on_click=exit_present, icon=":material/close:",
                  type="tertiary", shortcut="Escape")


# Presenter mode: no sidebar or header, large type, tight spacing, so one step fits 1280 x 720.
PRESENTER_CSS = """
<style>
section[data-testid="stSidebar"], div[data-testid="stSidebarCollapsedControl"],
button[data-testid="stExpandSidebarButton"], header[data-testid="stHeader"] {display: none !important;}
div[data-testid="stMainBlockContainer"], .block-container {padding: 0.6rem 1.5rem 0.4rem 1.5rem !important;
  max-width: 100% !important;}
[data-testid="stMain"] p, [data-testid="stMain"] li, [data-testid="stMain"] label,
[data-testid="stMain"] label p, [data-testid="stMain"] [role="radiogroup"] p,
[data-testid="stMain"] button p {font-size: 22px !important; line-height: 1.3 !important;}
[data-testid="stMain"] [data-testid="stCaptionContainer"] p {font-size: 20px !important; line-height: 1.3 !important;}
[data-testid="stMain"] p code, [data-testid="stMain"] li code {font-size: 0.9em !important;}  /* [CLS] at 19.8 px */
[data-testid="stMain"] .katex-display {margin: 0.3em 0 0.45em 0 !important;}
[data-testid="stMain"] h2 {font-size: 34px !important; padding: 0 0 0.2rem 0 !important;}
[data-testid="stMain"] .katex {font-size: 23px !important;}
/* KaTeX draws a script at 0.7 of its formula (16 px): 0.79 of 23 px keeps every sub- and superscript at 18 px. */
[data-testid="stMain"] .katex .reset-size6.size3, [data-testid="stMain"] .katex .reset-size6.size1
  {font-size: 0.79em !important;}
[data-testid="stMain"] .katex .reset-size3.size1 {font-size: 1em !important;}
[data-testid="stMain"] button kbd, .st-key-lesson_corner kbd {font-size: 18px !important;}
/* Token chips (steps 1, 3, 7: bert_core's chips_html and tokens_html) and their labels at 22 px. */
.bx-tokens, .bx-tokens *, .bx-chips .bx-chip, .bx-chips .bx-chip * {font-size: 22px !important;}
.bx-legend span {font-size: 18px !important;}
div[data-testid="stVerticalBlock"] {gap: 0.35rem !important;}
.st-key-lesson_keys {display: none !important;}
/* The page's h1 for screen readers only (the sidebar's is hidden): out of the flow, so it takes no room or gap. */
/* overflow: clip, not hidden: no scroll container (a reader of the slide's overflow finds nothing cut off there). */
.st-key-lesson_h1 {position: absolute !important; width: 1px !important; height: 1px !important;
  clip-path: inset(50%); white-space: nowrap; margin: -1px; padding: 0;}
.st-key-lesson_h1, .st-key-lesson_h1 * {overflow: clip !important;}
[data-testid="stMain"] button kbd {color: inherit !important; opacity: 1 !important;}  /* AA on a red button */
[data-testid="stMain"] [data-testid="stTable"] td, [data-testid="stMain"] [data-testid="stTable"] th
  {font-size: 18px !important; padding: 0.2rem 0.5rem !important;}
.st-key-lesson_corner {position: fixed; bottom: 0.2rem; right: 2.5rem; z-index: 100; width: max-content !important;
  flex-direction: row !important; align-items: center; gap: 0.8rem !important; background: #ffffff;
  white-space: nowrap;}
.st-key-lesson_corner p, .st-key-lesson_corner button p {font-size: 18px !important;}
/* A chart's Data expander, collapsed under it: one short line (18 px, a projector's least), so a step still fits. */
[data-testid="stMain"] [data-testid="stExpander"] summary {padding: 0 0.6rem !important; min-height: 0 !important;}
[data-testid="stMain"] [data-testid="stExpander"] summary p {font-size: 18px !important; line-height: 1 !important;}
[data-testid="stMain"] [data-testid="stExpander"] details {margin-top: -0.35rem;}  /* into the column's gap */
/* Reflow (WCAG 1.4.10): at 200% zoom (640 x 360) or 320 px wide the fixed corner, the class's card and the
   "Class and sentence" popover would cover the step: they join the page's flow, after or before it, and wrap. */
@media (max-width: 900px), (max-height: 480px) {
  .st-key-lesson_corner, .st-key-class_tools, .st-key-class_card {position: static !important;
    width: auto !important; max-width: 100% !important; max-height: none !important; white-space: normal !important;
    flex-wrap: wrap !important;}
  .st-key-lesson_corner p {white-space: normal !important;}
  div[data-testid="stMainBlockContainer"], .block-container {padding: 0.6rem 0.8rem 0.4rem 0.8rem !important;}
  [data-testid="stMain"] h2 {font-size: 26px !important;}
  [data-testid="stMain"] [data-testid="stHorizontalBlock"] {flex-wrap: wrap !important;}
  [data-testid="stMain"] [data-testid="stColumn"] {min-width: min(100%, 16rem) !important;}
  /* A display formula wider than the column wraps at its relations and operators (KaTeX's .base pieces), as on a
     phone (PHONE_CSS): a sideways-scrolling formula is a scroll region the keyboard cannot reach (WCAG 2.1.1). */
  [data-testid="stMain"] .katex-display > .katex {white-space: normal !important;}
  [data-testid="stMain"] .katex-display > .katex > .katex-html {display: flex; flex-wrap: wrap;
    justify-content: center; row-gap: 0.4em;}
}
/* The Lesson's fit at 1280 x 720 (ui/lesson/views.py): the model line at 18 px; the step's sentence and the
   choices after the reveal in dark ink (Streamlit draws a caption and a disabled radio at 60% / 40%); choices close. */
.bx-model-line {font-size: 18px !important; line-height: 1.25 !important; display: block;}
.st-key-lesson_sentence p {color: #14120F !important;}
.st-key-lesson_sentence [data-testid="stCaptionContainer"] {opacity: 1 !important;}
.st-key-lesson_right_top {margin-top: 0.9rem;}  /* below the "Class and sentence" button at the slide's top right */
/* A heading over the inline [MASK] chip of the text below it: its descenders are painted over the chip, not under. */
[data-testid="stMain"] h2 {position: relative; z-index: 1;}
[data-testid="stMain"] [data-testid="stRadioOption"][data-disabled="true"],
[data-testid="stMain"] [data-testid="stRadioOption"][data-disabled="true"] * {color: #14120F !important;}
[data-testid="stMain"] [data-testid="stRadioGroup"] {row-gap: 0.1rem !important;}
</style>
"""
