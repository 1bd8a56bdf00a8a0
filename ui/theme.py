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
Focus (WCAG 2.4.7, 1.4.11): Streamlit shows a focused radio, toggle or sidebar link as a grey tint (~1.1:1) and a
button as a ring of ~2.3:1; a heading's anchor and a data grid's toolbar not at all. Every focusable control gets
one ring instead: 3 px of FOCUS_RING, 2 px clear of the control, so it is measured against the page's own background
(6.7:1 on white, 6.0:1 on the sidebar's grey; tests/browser/test_browser_a11y.py checks it is drawn). A widget
whose real input is hidden under a drawing (radio, checkbox, toggle) or sits inside a box (text, select, number)
draws the ring on the label or box that holds the focused input.
"""

from typing import NamedTuple

import streamlit as st


class Colour(NamedTuple):
    hex: str

    @property
    def css_rgb(self) -> str:
        """As a browser's computed style reports it: `rgb(r,g,b)` (no spaces)."""
        h = self.hex.lstrip("#")
        return "rgb({},{},{})".format(*(int(h[i:i + 2], 16) for i in (0, 2, 4)))


FOCUS_RING = Colour("#1d4ed8")


_BOXES = ':is([data-baseweb="input"], [data-baseweb="textarea"], [data-baseweb="select"] > div)'
# Streamlit 1.67's text fields and selects (react-aria): the ring on the box that holds the focused field.
_FIELDS = (':is([data-testid="stSelectbox"], [data-testid="stMultiSelect"], [data-testid="stTextInput"], '
           '[data-testid="stTextArea"], [data-testid="stNumberInput"], [data-testid="stDateInput"])')
_RING = f"outline: 3px solid {FOCUS_RING.hex} !important; outline-offset: 2px !important;"
# Whatever has the keyboard's focus (links, buttons, expanders, tabs, sliders, the data grid and its toolbar, a
# scrolling formula: chromium lets the keyboard scroll it); the holder where the focused input is hidden or boxed.
# :focus-visible: a keyboard's focus (and a text field's), not a mouse click on a button.
FOCUS_CSS = f"""
:focus-visible {{{_RING}}}
label:has(input:is([type="radio"], [type="checkbox"]):focus-visible) {{{_RING} border-radius: 4px;}}
{_BOXES}:has(:is(input, textarea):focus-visible) {{{_RING}}}
{_FIELDS} div:has(> :is(input, textarea):focus-visible) {{{_RING}}}
[data-baseweb="input"] :is(input):focus-visible, [data-baseweb="textarea"] textarea:focus-visible,
  [data-baseweb="select"] input:focus-visible, {_FIELDS} :is(input, textarea):focus-visible
  {{outline: none !important;}}
[data-testid="stHeaderActionElements"]:focus-within, [data-testid="stHeaderActionElements"]:focus-within * {{
  visibility: visible !important; opacity: 1 !important;}}
"""

# No "<" inside the style but its own tags: st.html's sanitizer drops a style element whose text holds "<" and a letter.
CSS = """<style>
[data-testid="stCaptionContainer"] code {color: inherit !important;}
[data-testid="stTextArea"] textarea {padding-bottom: 1.5rem !important;}  /* clear of the character counter */
[data-testid="stWidgetLabel"][disabled], [data-testid="stWidgetLabel"][disabled] * {
  color: rgba(20, 18, 15, 0.6) !important;  /* config.toml's textColor #14120f at 60% */
}
[data-testid="stColumn"]:has(> div > .st-key-lesson_side), [data-testid="stColumn"]:has(.st-key-lesson_side)
  {min-width: 8rem;}
.st-key-lesson_side .stMarkdownEllipsis {white-space: normal !important; text-overflow: clip !important;}
/* The class panel's heading, focused after Start a class, Join and Leave (ui/lesson/roles.py; scrolled to "nearest"):
   the ~250 px under it count as its own, so the class's code and QR code (or the join box) come on screen with it,
   not just below a heading at the screen's bottom edge. */
.st-key-lesson_side h3 {scroll-margin-bottom: 17rem;}
/* An image's caption (the join link under the QR code) is drawn at full opacity in the caption colour, its link in
   FOCUS_RING's blue, so that both meet WCAG AA contrast (Streamlit's 60% opacity would not). */
[data-testid="stImageCaption"] [data-testid="stCaptionContainer"] {opacity: 1 !important;
  color: rgba(20, 18, 15, 0.6) !important;}
[data-testid="stImageCaption"] a {color: #1d4ed8 !important;}
/* The Lesson's side column (~170 px at 1280 px): a note's ordinary words never break inside (Streamlit's alerts set
   word-break: break-word); a code span in it (an address, an option, BERT_EXPLORER_PUBLIC_URL) may break anywhere;
   the join link under the QR code breaks only after its punctuation (join.breakable), in the caption's
   colours above. */
.st-key-lesson_side [data-testid="stAlertContainer"] p {word-break: normal !important;
  overflow-wrap: normal !important;}
.st-key-lesson_side [data-testid="stAlertContainer"] code {overflow-wrap: anywhere; word-break: normal;}
.bx-side-link {margin: 0; font-size: 0.875rem; color: rgba(20, 18, 15, 0.6);
  word-break: normal; overflow-wrap: normal;}
.bx-side-link a {color: #1d4ed8;}
/* Chart text in the page's ink (WCAG 1.4.3): Streamlit's chart theme draws ticks, axis and colour-bar titles, legends
   and annotations in rgb(128, 132, 149), 3.7:1 on white; an annotation given its own colour keeps it. A heatmap's
   cell numbers are black or white by their cell (bert_core.figures.style.legible). */
[data-testid="stPlotlyChart"] :is(.xaxislayer-above, .yaxislayer-above, .cbaxis, .cbtitle, .g-xtitle, .g-ytitle,
  .legend) text, [data-testid="stPlotlyChart"] svg text[style*="fill: rgb(128, 132, 149)"]
  {fill: #14120f !important;}
/* A collapsed sidebar is moved off the screen, yet its links and fields were still reached by Tab and read by screen
   readers (20 links and 2 fields on a phone before the join box: WCAG 2.4.3, 2.4.7): out of both while collapsed. */
[data-testid="stSidebar"][data-collapsed="true"], [data-testid="stSidebar"][data-collapsed="true"] *
  {visibility: hidden !important;}
.bx-focus-target:focus {outline: none !important;}  /* a heading or answer focused after an action (ui/a11y.py) */
.st-key-bx_moves {display: none !important;}  /* ui/a11y.py's component draws nothing */
@media (max-width: 640px) {  /* a phone: a map's cell numbers would be 6 px; its Data table has them */
  [data-testid="stPlotlyChart"] .heatmaplayer text,
  [data-testid="stPlotlyChart"]:has(.heatmaplayer .hm) .scatterlayer .textpoint {display: none;}
  /* No text under 12 px on a phone: inline code in a caption (0.75 of 14 px) and a formula's scripts (KaTeX's
     0.7 and 0.5 of the formula's size) are kept at 12 px at least. */
  [data-testid="stMain"] code {font-size: max(12px, 0.75em);}
  [data-testid="stMain"] .katex .sizing.reset-size6.size3 {font-size: max(12px, 0.7em);}
  [data-testid="stMain"] .katex .sizing.reset-size6.size1 {font-size: max(12px, 0.5em);}
  [data-testid="stMain"] .katex .sizing.reset-size3.size1 {font-size: max(12px, 0.71428571em);}
  /* A display formula wider than the column wraps at its relations and operators (KaTeX's .base pieces): one
     that scrolled sideways was a scroll region the keyboard cannot reach (WCAG 2.1.1; 12 pages at 390 px). */
  [data-testid="stMain"] .katex-display > .katex {white-space: normal;}
  [data-testid="stMain"] .katex-display > .katex > .katex-html {display: flex; flex-wrap: wrap;
    justify-content: center; row-gap: 0.4em;}
  /* What wrapping leaves (a piece a few px wider than the column) runs into the page's margin: no scroll region. */
  [data-testid="stMain"] .katex-display {overflow: visible !important;}  /* x alone: auto, beside y hidden */
}
""" + FOCUS_CSS + """</style>"""


def apply() -> None:
    st.html(CSS)
