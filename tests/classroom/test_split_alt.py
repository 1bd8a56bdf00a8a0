"""The class's split as a screen reader meets it: a chart drawn with no Data table (the projector's join card, the
teacher's projector split) promises none in its text alternative and names every count and the model's answer
itself; the split drawn with its Data table says so."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from bert_core.figures.describe import alt_text
from bert_core.figures.votes import split_figure


def _app() -> None:
    from ui.lesson.live_class.results import card_split_chart, split_chart

    card_split_chart(("the bank", "a river", "money, [CLS] (position 0)"), (2, 0, 5), 2)
    split_chart(("the bank", "a river", "money"), (2, 0, 5), None, "split-projector", large=True)
    split_chart(("the bank", "a river", "money"), (2, 0, 5), 1, "split-laptop")


def test_a_chart_without_a_table_promises_none_and_says_its_numbers():
    at = AppTest.from_function(_app).run()
    assert not at.exception, at.exception
    card, projector, laptop = (e.proto.alt for e in at.get("plotly_chart"))
    assert [x.label for x in at.expander] == ["Data: class split"]  # the laptop's split only
    for alt in (card, projector):
        assert "Data table" not in alt, alt
    assert "1. the bank; 2. a river; 3. money, [CLS] (position 0)" in card  # no Markdown escapes read aloud
    assert "the model's answer, in green and marked ✓: 3. money, [CLS] (position 0)" in card
    assert "1: 2, 2: 0, 3 ✓: 5" in card  # the answer marked on the chart, as in its text
    assert "3. money: 5, 1. the bank: 2, 2. a river: 0" in projector
    assert laptop.endswith("Its numbers are in the Data table below it.")
    assert "The model's answer, in green and marked ✓: 2. a river" in laptop


def test_a_long_description_without_a_table_stops_short_without_pointing_to_one():
    fig = split_figure(tuple(f"choice number {i} " * 20 for i in range(5)), (1, 2, 3, 4, 5), None)
    assert "Data table" not in alt_text(fig, table=False)
    assert "Data table" in alt_text(fig)
