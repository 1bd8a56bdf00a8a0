"""Small drawing helpers every page uses: charts with PNG export, tables with CSV export."""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable

import pandas as pd
import streamlit as st

import bert_core
from bert_core.figures.describe import alt_text, data_points, figure_table
from bert_core.figures.style import legible
from bert_core.runs.settings import MAX_TRAIN_SECONDS
from bert_core.runs.status import FINISHED, IDLE, PAUSED, QUEUED, RUNNING, WAITING
from ui import model_choice


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "export"


def numbering_note(n_layers: int, n_heads: int | None = None) -> None:
    """The app's one numbering, said once on each page that shows layers or heads."""
    heads = f"; heads 1–{n_heads}" if n_heads else ""
    st.caption(f"Layers are numbered 1–{n_layers} (layer 0 = the embeddings' output){heads}.")


FAMILY_NAMES = {"bert": "BERT", "roberta": "RoBERTa", "distilbert": "DistilBERT", "albert": "ALBERT",
                "electra": "ELECTRA"}
PAPER_BERT_BASE = "The paper's BERT-base: 12 layers × 768, 12 heads, 110M parameters."


def _minilm_tokens() -> float | None:
    """Word pieces the bundled MiniLM's heads and encoder were trained on here, over all stages (export.json)."""
    try:
        return json.loads((bert_core.MINILM_DIR / "export.json").read_text())["total_tokens_seen"]
    except (OSError, ValueError, KeyError):
        return None


def model_line_text(m: bert_core.LoadedModel) -> str:
    """One line naming the model on screen from its config (and, for the bundled MiniLM, its training record)."""
    c = m.config
    shape = f"{c.num_hidden_layers} layers × {c.hidden_size}, {c.num_attention_heads} heads"
    if m.source == "bundled" and m.name == bert_core.MINILM_NAME:
        n = _minilm_tokens()
        seen = f", {n / 1e6:.0f}M word pieces seen over many passes" if n else ""
        what = (f"MiniLM ({shape}; half the layers of a MiniLM distilled from, i.e. trained to imitate, a "
                f"BERT-base-sized teacher, then trained for sentence similarity; its encoder trained further and "
                f"its fill-in (MLM) and "
                f"next-sentence (NSP) heads trained anew by this project on Brown + WordNet{seen})")
    elif m.source == "bundled":
        what = f"the tiny BERT ({shape}), trained from scratch by this project on WordNet + Brown"
    elif m.source == "session":
        what = f"your model from the Training page ({shape})"
    else:
        heads = [h for h, on in (("fill-in (MLM)", m.has_mlm), ("next-sentence (NSP)", m.has_nsp),
                                 ("replaced-token (ELECTRA discriminator)", getattr(m.model, "has_rtd", False)))
                 if on]
        shared = ", one layer's weights shared by all" if c.model_type == "albert" else ""
        what = (f"{m.name} ({FAMILY_NAMES.get(c.model_type, c.model_type)}: {shape}{shared}; "
                + (" and ".join(heads) + (" heads" if len(heads) > 1 else " head") + " from its checkpoint"
                   if heads else "no pre-training head") + ")")
    base = (c.model_type == "bert" and (c.num_hidden_layers, c.hidden_size, c.num_attention_heads) == (12, 768, 12))
    return f"Model on screen: {what}." + ("" if base else " " + PAPER_BERT_BASE)


def model_line(m: bert_core.LoadedModel) -> None:
    """The model on screen, said once in each page's main area (not only in the sidebar); where BERT-base can be
    had (the hub answers, or it is on disk) and is not on screen, where to get it."""
    offer = m.name != model_choice.BERT_BASE and model_choice.offer_label() is not None
    st.caption(model_line_text(m) + (" BERT-base is one click away: the sidebar's “Use BERT-base”." if offer else ""))


SMALL_TABLE = 60  # numbers: a chart with at most this many has its table drawn with it, in an HTML table
HTML_TABLE = 400  # cells: up to this many an HTML table (read cell by cell); more, the data grid


def chart(fig, name: str, key: str | None = None, point: str | None = None, data: bool = True,
          table: bool = True, **select):
    """A plotly figure that speaks: its text alternative (the chart's role=figure name: its title, `point` when the
    page knows the main point, each series' extremes; bert_core.figures.describe) and, with `data`, a "Data" expander
    under it holding its numbers as a table. `table`: whether a Data table follows the chart (drawn here, or by the
    caller: the Lesson draws its own, a static one in a class's shared drawing); False, the text alternative
    promises none and carries the numbers itself (a chart drawn with no table at all). Its
    toolbar's camera button downloads it as `<name>.png`. `select`: st.plotly_chart's on_select and selection_mode;
    returns what st.plotly_chart returns."""
    key = key or f"chart-{_slug(name)}"
    config = {"displaylogo": False,
              "toImageButtonOptions": {"format": "png", "filename": _slug(name), "scale": 2}}
    alt = alt_text(fig, point, name, table=table)
    out = st.plotly_chart(legible(fig), config=config, key=key, alt=alt, **select)  # text >= 4.5:1 (1.4.3)
    if data:
        chart_data(fig, name, key)
    return out


def chart_data(fig, name: str, key: str) -> None:
    """The numbers behind `fig` in a "Data" expander: one keystroke (Enter on it) away. A few numbers: an HTML
    table (read cell by cell), drawn with the chart, in a plain expander (no widget: the class's split chart is
    drawn inside a cached function, where Streamlit refuses widgets). More: built only while the expander is open
    (a 12-head grid of 128 x 128 maps is 196,608 rows); a large one in the data grid with its CSV button."""
    if data_points(fig) <= SMALL_TABLE:
        with st.expander(f"Data: {name}"):
            row_headed(pd.DataFrame(figure_table(fig)))
        return
    box = st.expander(f"Data: {name}", key=f"{key}-data", on_change="rerun")
    if box.open:
        with box:
            df = pd.DataFrame(figure_table(fig))
            if df.size <= HTML_TABLE:
                row_headed(df)
            else:
                table(df, name, key=f"{key}-csv", hide_index=True, height=min(35 * (len(df) + 1) + 3, 400))


def row_headed(df: pd.DataFrame) -> None:
    """An HTML table whose first column heads its rows (<th scope="row">: a screen reader names each cell by its row
    and its column, WCAG 1.3.1), its name heading that column."""
    st.table(df.set_index(df.columns[0]) if len(df.columns) > 1 else df, hide_index=len(df.columns) <= 1)


def chart_data_static(fig, name: str) -> None:
    """The numbers behind `fig` in a "Data" expander that is no widget, its table built at once: for a chart drawn
    inside a cached function (a class's shared drawing, replayed for every student), where a widget cannot be."""
    df = pd.DataFrame(figure_table(fig))
    with st.expander(f"Data: {name}"):
        if df.size <= HTML_TABLE:
            row_headed(df)
        else:
            st.dataframe(df, hide_index=True, height=min(35 * (len(df) + 1) + 3, 400))


def html_document(doc: str, height: int, alt: str) -> None:
    """A whole HTML document (bertviz's views) in a srcdoc iframe, without leaving a copy of it behind.

    st.iframe first asks whether the string is a URL, through urllib.parse.urlsplit, whose LRU cache (its last
    128 distinct arguments) would keep every document drawn for the life of the server; so the cache is emptied
    after the call, at the cost of a few re-parsed URLs elsewhere in the process.
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
