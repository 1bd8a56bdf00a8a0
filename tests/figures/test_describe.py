"""A chart in words and as a table (bert_core.figures.describe): read from the figure's own arrays, so the words and
the numbers are the ones drawn; and no page draws a chart without them."""

from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go
from apptest_util import ROOT

from bert_core.figures import attention as fa
from bert_core.figures.describe import MAX_ALT, alt_text, figure_table
from bert_core.figures.tokens import pieces_per_word_figure


def test_bars_are_said_one_by_one_and_tabled():
    fig = pieces_per_word_figure({1: 7, 2: 3, 3: 1})
    alt = alt_text(fig)
    assert alt.startswith("Chart: Pieces per word.")
    assert "3 bars of words: 1: 7, 2: 3, 3: 1" in alt
    assert figure_table(fig) == (["pieces in the word", "words"], [["1", 7.0], ["2", 3.0], ["3", 1.0]])


def test_a_map_names_its_highest_and_lowest_cell_and_tables_every_cell():
    rng = np.random.default_rng(0)
    tokens = ["[CLS]", "the", "cat", "the", "[SEP]"]
    att = rng.random((5, 5))
    att /= att.sum(-1, keepdims=True)
    fig = fa.head_heatmap(att, tokens, "Layer 2, head 3")
    alt = alt_text(fig, fa.attended_text(att, tokens))
    hi, lo = np.unravel_index(att.argmax(), att.shape), np.unravel_index(att.argmin(), att.shape)
    assert f"highest {att[hi]:.3g} at row {hi[0]} {tokens[hi[0]]}, column {hi[1]} {tokens[hi[1]]}" in alt
    assert f"lowest {att[lo]:.3g} at row {lo[0]} {tokens[lo[0]]}" in alt
    best = att.argmax(1)
    assert f"2 cat → {best[2]} {tokens[best[2]]} ({att[2, best[2]]:.2f})" in alt
    cols, rows = figure_table(fig)
    assert cols == ["query (attending)", "0 [CLS]", "1 the", "2 cat", "3 the", "4 [SEP]"]
    assert [r[0] for r in rows] == cols[1:]
    np.testing.assert_allclose(np.array([r[1:] for r in rows], dtype=float), att, rtol=1e-3)


def test_lines_say_start_end_and_peak_and_table_every_point():
    fig = go.Figure([go.Scatter(x=[1, 2, 3], y=[4.0, 9.0, 2.5], mode="lines", name="MLM"),
                     go.Scatter(x=[1, 2, 3], y=[1.0, 0.5, 0.25], mode="lines", name="NSP")])
    fig.update_layout(title="Loss", xaxis_title="step", yaxis_title="loss")
    alt = alt_text(fig)
    assert "MLM: a line over step 1 to 3, from 4 to 2.5, highest 9 at 2" in alt
    assert "NSP: a line over step 1 to 3, from 1 to 0.25, highest 1 at 1" in alt
    cols, rows = figure_table(fig)
    assert cols == ["series", "step", "loss"]
    assert rows[:2] == [["MLM", 1.0, 4.0], ["MLM", 2.0, 9.0]] and len(rows) == 6


def test_a_long_description_stops_short_and_points_to_the_table():
    name = "a rather long series name, number {} of this chart, to say"
    fig = go.Figure([go.Bar(x=[f"w{i}" for i in range(9)], y=list(range(9)), name=name.format(k)) for k in range(10)])
    alt = alt_text(fig)
    assert len(alt) <= MAX_ALT and alt.endswith("(every number is in the Data table below it).")


def test_no_page_draws_a_chart_past_the_helper():
    """Every plotly chart goes through ui.widgets.chart (its alt and Data table), every frame through html_document
    (its title): no bare st.plotly_chart or st.iframe elsewhere in the pages or the ui."""
    bare = []
    for path in [*sorted((ROOT / "views").glob("*.py")), *sorted((ROOT / "ui").glob("*.py"))]:
        if path.name == "widgets.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\bst\.(plotly_chart|iframe)\(|\.plotly_chart\(", line):
                bare.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bare, "\n".join(bare)
