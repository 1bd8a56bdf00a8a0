"""A class's results: the class's split of each question (drawn once and replayed for every screen), the
end-of-lesson table and its CSV."""

from __future__ import annotations

import csv
import io

import streamlit as st

import classroom
from bert_core.figures.describe import strip_html
from bert_core.figures.style import projector
from bert_core.figures.votes import card_split_figure, split_figure
from classroom import ClassError
from ui.lesson import handout
from ui.lesson.live_class.session import RETRY, Live, store
from ui.widgets import chart, chart_data_static

SHARED_SPLITS_MB = 1.0


def results_ui(live: Live) -> None:
    """The end-of-lesson table (whole runs only). A store that does not answer here is tried again on a timer, in
    place: an error drawn by a whole run would stay on screen after the store is back, until the teacher's next
    click."""
    if _results_table(live):
        return

    @st.fragment(run_every=RETRY)
    def results_later() -> None:  # until the page's next whole run
        if not _results_table(live):
            st.caption("Results: reconnecting to the class…")

    results_later()


def _results_table(live: Live) -> bool:
    """The table and its downloads; False, with nothing drawn, when the store does not answer."""
    try:
        rows = store().results(live.code, live.secret)
        named = store().students(live.code, live.secret)
    except classroom.StoreUnavailable:
        return False
    except ClassError as e:
        st.warning(str(e))
        return True
    if not rows:
        st.caption("The end-of-lesson table fills in as you reveal answers.")
        return True
    table = results_rows(rows)
    with st.expander(f"Results: {len(rows)} question(s)", expanded=False):
        st.dataframe(table, hide_index=True)
        st.download_button("Download the results (CSV)", results_csv(table, named), file_name="class_results.csv",
                           mime="text/csv", key="class_csv")
        handout.button(live, "class_handout")  # the Lesson's handout, with the class's split of each question
    return True


def results_rows(rows: list[classroom.Result]) -> list[dict]:
    """The end-of-lesson table: each revealed question (its step, model and sentence), the share of the class that
    guessed the model's answer."""
    return [{"step": r.step, "model": r.model, "sentence": r.text, "question": r.prompt,
             "model's answer": r.choices[r.answer], "answered": r.answered, "right": r.right,
             "share right": f"{r.right / r.answered:.0%}" if r.answered else "–"} for r in rows]


def results_csv(table: list[dict], named: list[dict]) -> str:
    """The table as CSV; then, if any student gave a nickname, one row per named student (no names otherwise)."""
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=list(table[0]))
    w.writeheader()
    w.writerows([{k: _cell(v) for k, v in r.items()} for r in table])
    if named:
        out.write("\n")
        w = csv.DictWriter(out, fieldnames=["nickname", "answered", "right"])
        w.writeheader()
        w.writerows([{k: _cell(v) for k, v in r.items()} for r in named])
    return out.getvalue()


def _cell(v):
    """A CSV cell a spreadsheet will not run as a formula (a nickname or sentence starting with = + - @)."""
    return "'" + v if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r") else v


@st.cache_data(max_size=int(SHARED_SPLITS_MB * 2**20), show_spinner=False)
def split_chart(choices: tuple[str, ...], tally: tuple[int, ...], answer: int | None, key: str,
                large: bool = False) -> None:
    """The class's split as a chart, drawn once per (choices, tally, answer) and replayed for every screen that
    shows the same split (Streamlit's cached-element replay): a reveal is one figure, not one per student.
    `large`: on the projector, every text at least 18 px (bert_core.figures.style.projector)."""
    fig = split_figure(choices, tally, answer)
    # replayed: no widget in it; on the projector no Data table either, so its text alternative promises none
    chart(projector(fig) if large else fig, "class split", key=key, data=False, table=not large,
          point=split_point(choices, answer))
    if not large:
        chart_data_static(fig, "class split")


@st.cache_data(max_size=int(SHARED_SPLITS_MB * 2**20), show_spinner=False)
def card_split_chart(choices: tuple[str, ...], tally: tuple[int, ...], answer: int | None) -> None:
    """The split in the projector's join card: a column per choice, numbered as on the slide, every text >= 18 px."""
    chart(projector(card_split_figure(choices, tally, answer)), "class split", key="class-split-card",
          data=False, table=False,  # replayed (no widget in it), no table: its text alternative names every count
          point=split_point(choices, answer, numbered=True))


def split_point(choices: tuple[str, ...], answer: int | None, numbered: bool = False) -> str:
    """What the split's colours and numbers stand for, in words: the model's answer (green and marked ✓, once
    revealed); `numbered`: the bars are labelled by number only (the join card), so each number's choice is named.
    Plain text (an aria-label), not Markdown: a Markdown escape would be read aloud ("no backslash, a different
    word")."""
    names = "; ".join(f"{i}. {strip_html(c)}" for i, c in enumerate(choices, 1)) if numbered else ""
    said = f"Choices {names}" if names else ""
    if answer is not None:
        said += ("; " if said else "") + f"the model's answer, in green and marked ✓: {answer + 1}. " \
            + strip_html(choices[answer])
    return said


# Plotly builds a trace type's validators the first time one is made: on a reveal 30 students' pages would all
# make their first Bar at once. Made once here, when the module is imported (a process's first Lesson run).
split_figure(("a", "b"), (1, 0), 0).to_json()
