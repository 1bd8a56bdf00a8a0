"""A chart in words and as a table (bert_core.figures.describe): read from the figure's own arrays, so the words and
the numbers are the ones drawn; and no page draws a chart without them."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
from support.apptest import ROOT

from bert_core.figures import attention as fa
from bert_core.figures.describe import MAX_ALT, alt_text, figure_table
from bert_core.figures.tokens import pieces_per_word_figure


def test_bars_are_said_one_by_one_and_tabled():
    fig = pieces_per_word_figure({1: 7, 2: 3, 3: 1})
    alt = alt_text(fig)
    assert alt.startswith("Chart: Pieces per word.")
    assert "3 bars of words: 1: 7, 2: 3, 3: 1" in alt
    table = figure_table(fig)
    assert list(table) == ["pieces in the word", "words"]
    assert list(table["pieces in the word"]) == ["1", "2", "3"] and list(table["words"]) == [7, 3, 1]


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
    table = figure_table(fig)
    cols = list(table)
    assert cols == ["query (attending)", "0 [CLS]", "1 the", "2 cat", "3 the", "4 [SEP]"]
    assert list(table[cols[0]]) == cols[1:]
    np.testing.assert_allclose(np.array([table[c] for c in cols[1:]]).T, att, rtol=1e-3)


def test_lines_say_start_end_and_peak_and_table_every_point():
    fig = go.Figure([go.Scatter(x=[1, 2, 3], y=[4.0, 9.0, 2.5], mode="lines", name="MLM"),
                     go.Scatter(x=[1, 2, 3], y=[1.0, 0.5, 0.25], mode="lines", name="NSP")])
    fig.update_layout(title="Loss", xaxis_title="step", yaxis_title="loss")
    alt = alt_text(fig)
    assert "MLM: a line over step 1 to 3, from 4 to 2.5, highest 9 at 2" in alt
    assert "NSP: a line over step 1 to 3, from 1 to 0.25, highest 1 at 1" in alt
    table = figure_table(fig)
    assert list(table) == ["series", "step", "loss"]
    assert list(table["series"]) == ["MLM"] * 3 + ["NSP"] * 3
    assert list(table["step"]) == [1, 2, 3] * 2 and list(table["loss"]) == [4, 9, 2.5, 1, 0.5, 0.25]


def test_a_long_description_stops_short_and_points_to_the_table():
    name = "a rather long series name, number {} of this chart, to say"
    fig = go.Figure([go.Bar(x=[f"w{i}" for i in range(9)], y=list(range(9)), name=name.format(k)) for k in range(10)])
    alt = alt_text(fig)
    assert len(alt) <= MAX_ALT and alt.endswith("(every number is in the Data table below it).")


def bare_media(root) -> list[str]:
    """Every st.plotly_chart / st.iframe call outside ui/widgets.py, and every st.image call without alt=, in the
    .py files under `root`'s views/ and ui/ (all depths: ui/lesson/live_class too), read as Python, not as lines
    (a call over several lines is one call)."""
    bare = []
    for path in sorted([*(root / "views").rglob("*.py"), *(root / "ui").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            where = f"{path.relative_to(root)}:{node.lineno}: .{node.func.attr}("
            if node.func.attr in ("plotly_chart", "iframe") and path.relative_to(root) != Path("ui/widgets.py"):
                bare.append(where)
            elif node.func.attr == "image" and not any(k.arg == "alt" for k in node.keywords):
                bare.append(where + " without alt=")
    return bare


def test_no_page_draws_a_chart_past_the_helper():
    """Every plotly chart goes through ui.widgets.chart (its alt and Data table), every frame through html_document
    (its title), every image has its alt: no bare st.plotly_chart, st.iframe or alt-less st.image in the pages or
    the ui, at any depth."""
    bare = bare_media(ROOT)
    assert not bare, "\n".join(bare)


def test_the_media_check_looks_everywhere(tmp_path):
    """The check itself: a chart two folders down and an image without alt over two lines are both found."""
    (tmp_path / "views").mkdir()
    (tmp_path / "ui" / "lesson" / "live_class").mkdir(parents=True)
    (tmp_path / "ui" / "lesson" / "live_class" / "x.py").write_text("st.plotly_chart(fig)\n")
    (tmp_path / "views" / "y.py").write_text("st.image(png,\n         width=20)\nst.image(png, alt='a QR code')\n")
    assert bare_media(tmp_path) == ["ui/lesson/live_class/x.py:1: .plotly_chart(",
                                    "views/y.py:1: .image( without alt="]


def test_a_similarity_map_is_said_off_its_diagonal_with_its_tick_names():
    sim = np.array([[1.0, 0.2, 0.9], [0.2, 1.0, -0.1], [0.9, -0.1, 1.0]])
    fig = go.Figure(go.Heatmap(z=sim))
    names = ["cat", "car", "kitten"]
    fig.update_xaxes(tickmode="array", tickvals=[0, 1, 2], ticktext=names)
    fig.update_yaxes(tickmode="array", tickvals=[0, 1, 2], ticktext=names)
    alt = alt_text(fig, name="similarity")
    assert alt.startswith("Chart: similarity. ")
    assert "off the diagonal, highest 0.9 between cat and kitten; lowest -0.1 between car and kitten" in alt
    assert list(figure_table(fig)) == ["row", "cat", "car", "kitten"]


def test_points_on_category_axes_are_said_where_they_are():
    fig = go.Figure(go.Scatter(x=["head 3"], y=["layer 2"], mode="markers", name="picked"))
    assert "1 point at head 3, layer 2" in alt_text(fig)


def test_a_grid_of_maps_is_one_row_per_cell():
    rng = np.random.default_rng(1)
    tokens = ["[CLS]", "a", "b", "[SEP]"]
    att = rng.random((3, 4, 4))
    table = figure_table(fa.layer_grid(att, tokens, 0))
    assert list(table) == ["series", "x", "y", "value"] and len(table["value"]) == 3 * 16
    k = 16 + 4 * 2 + 3  # head 2, query row 2, key column 3
    assert (table["series"][k], table["y"][k], table["x"][k]) == ("head 2", "2 b", "3 [SEP]")
    assert abs(table["value"][k] - att[1, 2, 3]) <= 1e-3 * abs(att[1, 2, 3])


def test_data_points_counts_what_the_table_will_hold():
    from bert_core.figures.describe import data_points

    fig = fa.layer_grid(np.full((3, 4, 4), 0.25), ["[CLS]", "a", "b", "[SEP]"], 0)
    assert data_points(fig) == len(figure_table(fig)["value"]) == 48
    assert data_points(pieces_per_word_figure({1: 7, 2: 3, 3: 1})) == 3


def test_a_table_of_mixed_series_is_one_kind_per_column_for_arrow():
    """A histogram has no y and a bar chart's x are words beside a line's numbers: each column is one kind, so the
    Data table converts to Arrow without Streamlit's "automatic fixes" (an ArrowTypeError in the server's log)."""
    import pandas as pd
    import pyarrow as pa

    fig = go.Figure([go.Scatter(x=[1, 2], y=[0.5, 0.25], name="line"), go.Histogram(x=[1, 2, 2], name="counts"),
                     go.Bar(x=["cat", "dog"], y=[3, 4], name="bars")])
    table = figure_table(fig)
    pa.Table.from_pandas(pd.DataFrame(table))  # raised ArrowTypeError: "Expected bytes, got a 'float' object"
    assert table["y"].dtype == float and np.isnan(table["y"][2])
    assert list(table["x"][:2]) == ["1", "2"] and list(table["x"][-2:]) == ["cat", "dog"]
