"""Small drawing helpers every page uses: charts with PNG export, tables with CSV export."""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable

import pandas as pd
import streamlit as st

from bert_core.figures.describe import alt_text, figure_table
from bert_core.runs.settings import MAX_TRAIN_SECONDS
from bert_core.runs.status import FINISHED, IDLE, PAUSED, QUEUED, RUNNING, WAITING


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "export"


def numbering_note(n_layers: int, n_heads: int | None = None) -> None:
    """The app's one numbering, said once on each page that shows layers or heads."""
    heads = f"; heads 1–{n_heads}" if n_heads else ""
    st.caption(f"Layers are numbered 1–{n_layers} (layer 0 = the embeddings' output){heads}.")


TABLE_CELLS = 400  # a Data table up to this many cells is an HTML table (read cell by cell); larger, the data grid


def chart(fig, name: str, key: str | None = None, point: str | None = None, data: bool = True, **select):
    """A plotly figure that speaks: its text alternative (the chart's role=figure name: its title, `point` when the
    page knows the main point, each series' extremes; bert_core.figures.describe) and, with `data`, a "Data" expander
    under it holding its numbers as a table. Its toolbar's camera button downloads it as `<name>.png`. `select`:
    st.plotly_chart's on_select and selection_mode; returns what st.plotly_chart returns."""
    key = key or f"chart-{_slug(name)}"
    config = {"displaylogo": False,
              "toImageButtonOptions": {"format": "png", "filename": _slug(name), "scale": 2}}
    out = st.plotly_chart(fig, config=config, key=key, alt=alt_text(fig, point, name), **select)
    if data and not presenting():  # presenter mode is one step per screen: its tables are the Lesson's part
        chart_data(fig, name, key)
    return out


def chart_data(fig, name: str, key: str) -> None:
    """The numbers behind `fig` in a "Data" expander: one keystroke (Enter on it) away. Built only while it is open
    (a 12-head grid of 128 x 128 maps is 196,608 rows): a closed one costs the page's rerun nothing."""
    box = st.expander(f"Data: {name}", key=f"{key}-data", on_change="rerun")
    if not box.open:
        return
    df = pd.DataFrame(figure_table(fig))
    with box:
        if df.size <= TABLE_CELLS:
            st.table(df, hide_index=True)
        else:
            table(df, name, key=f"{key}-csv", hide_index=True, height=min(35 * (len(df) + 1) + 3, 400))


def presenting() -> bool:
    """The Lesson's presenter mode: one step per 1280 x 720 screen, so views keep to one chart."""
    return bool(st.session_state.get("lesson_present"))


def html_document(doc: str, height: int, alt: str) -> None:
    """A whole HTML document (bertviz's views) in a srcdoc iframe, without leaving a copy of it behind.

    st.iframe first asks whether the string is a URL, through urllib.parse.urlsplit, which keeps its
    last 128 distinct arguments in an LRU cache (Python 3.11): every bertviz document drawn (about 5 MB
    each on bert-base, and its split pieces) stayed in memory for the life of the server: about 10 MB
    per student who opened Attention (benchmarks/class_memory.py). Emptying that cache after the
    call costs the rest of the process a few re-parsed URLs.
    """
    try:
        st.iframe(doc, height=height, alt=alt)  # alt: the frame's title, its accessible name
    finally:
        urllib.parse.urlsplit.cache_clear()


def table(df: pd.DataFrame, name: str, key: str | None = None, **kwargs) -> None:
    """A dataframe with a button that downloads it as `<name>.csv`.

    The CSV is written only when the button is clicked (a deferred download), not on every rerun.
    That also matters on the live Training page: a download stored as a file was replaced at every
    tick, and the browser's check of a replaced file's address failed with a 404.
    """
    st.dataframe(df, **kwargs)
    st.download_button(f"Download {name} (CSV)", lambda: df.to_csv(index=False).encode("utf-8"),
                       file_name=f"{_slug(name)}.csv", mime="text/csv", key=key or f"csv-{_slug(name)}",
                       on_click="ignore")


def run_controls(session, start: bool, ten: bool, pause: bool, reset: bool) -> None:
    """Act on a training session's Start / 10 steps / Pause / Reset buttons (Training and Fine-tuning pages)."""
    if start:
        session.start()
        st.rerun()
    if ten and session.state == WAITING:
        st.info("Your run is waiting for memory (see below); press Start to train it as soon as it is built.")
        return
    if ten:
        with st.spinner("Running 10 steps…"):
            done = session.run_steps(10)
        if done is None:
            st.warning("All training slots are busy right now: try again in a moment.")
            return
        st.rerun()
    if pause:
        session.pause()
        st.rerun()
    if reset:
        session.reset()
        st.rerun()


def run_buttons(session, prefix: str, what: str) -> tuple[bool, bool, bool, bool]:
    """Start (Resume) / Pause / Run 10 steps / Reset for a fine-tuning session; returns (start, ten, pause, reset)."""
    live = session.state in (RUNNING, QUEUED)
    c1, c2, c3, c4 = st.columns(4)
    start = c1.button("Resume" if session.state == PAUSED and session.step else "Start", key=f"{prefix}_start",
                      type="primary", disabled=live or session.state == FINISHED, width="stretch")
    pause = c2.button("Pause", key=f"{prefix}_pause", disabled=not live, width="stretch")
    ten = c3.button("Run 10 steps", key=f"{prefix}_ten", disabled=live or session.state == FINISHED, width="stretch")
    reset = c4.button("Reset", key=f"{prefix}_reset", disabled=session.state == IDLE, width="stretch",
                      help=f"Forget this {what} and its history.")
    return start, ten, pause, reset


def queued_info(session) -> None:
    """The run's place in line for a training slot."""
    st.info(f"All training slots on this server are in use: you are number {session.queue_position() or 1} in line. "
            f"Fine-tuning starts by itself when a slot frees up (each run trains for at most "
            f"{MAX_TRAIN_SECONDS / 60:g} minutes). Keep this page open.")


def live_run(session, draw: Callable[[], None], tick: float, queued_tick: float, train_seconds: float) -> None:
    """Train a little, then `draw()`: a fragment on a timer while the run is live (running or queued)."""

    @st.fragment(run_every={RUNNING: tick, QUEUED: queued_tick}.get(session.state))
    def live() -> None:
        before = session.state
        session.advance(train_seconds)
        if before in (RUNNING, QUEUED) and session.state != before:
            st.rerun()  # finished (redraw the buttons, stop the timer) or got a slot
        draw()

    live()


def memory_wait_ui(session, every: float, train_seconds: float) -> None:
    """While a run waits for the server's memory: its place in line, renewed on a timer; a full rerun once built."""

    @st.fragment(run_every=every)
    def waiting() -> None:
        session.advance(train_seconds)  # renews the place in line; builds (and starts) the run when its turn comes
        if session.state != WAITING:
            st.rerun()
        then = "starts training" if session.starts_when_built else "waits for you to press Start"
        st.info(
            f"This server's memory for users' runs is full: your run is number {session.memory_position() or 1} "
            f"in line for memory. It is built and {then} by itself as soon as there is room (when other runs "
            f"finish or are reset, their tabs close, or runs untouched for {session.memory.idle_seconds / 60:g} "
            f"minutes are dropped). Keep this page open; Reset leaves the line. Memory: {session.memory_usage()}."
        )

    waiting()
