"""The Lesson's slide-shaped figures and the class's split (bert_core/figures/lesson.py, votes.py): arrays in,
figures out, with what the slide relies on."""

import math

import numpy as np

from bert_core.figures.lesson import hidden_importance_figure, mask_heatmap, pretraining_start_figure
from bert_core.figures.style import contrast
from bert_core.figures.votes import card_split_figure, split_figure


def test_the_pretraining_curve_marks_ln_v_for_the_example_and_a_model_with_another_vocabulary():
    curves = {"step": np.arange(5), "loss": np.linspace(9.0, 4.0, 5)}
    same = pretraining_start_figure(curves, 8000, 8000)
    other = pretraining_start_figure(curves, 8000, 30522)
    assert [s.y0 for s in same.layout.shapes] == [math.log(8000)]
    assert [s.y0 for s in other.layout.shapes] == [math.log(8000), math.log(30522)]
    assert "V = 30,522" in other.layout.annotations[1].text


def test_the_hidden_importance_map_is_relative_to_its_largest_cell_and_shows_no_values():
    imp = np.array([[0.5, -2.0, 1.0]])
    fig = hidden_importance_figure(imp, (0, 1), "wrote")
    heat = next(t for t in fig.data if t.type == "heatmap")
    assert np.nanmax(np.abs(np.asarray(heat.z, dtype=float))) == 1.0 and heat.showscale is False
    assert fig.layout.height <= 380


def test_a_mask_heatmap_saturates_at_0_3_without_numbers():
    fig = mask_heatmap(np.full((3, 3), 0.5), ["[CLS]", "a", "[SEP]"], "BERT: every token")
    assert fig.data[0].zmax == 0.3 and fig.data[0].texttemplate is None and fig.layout.height == 360


def test_the_class_split_colours_only_the_models_answer():
    bars, cols = split_figure(("4", "5"), (1, 2), 1), card_split_figure(("4", "5"), (1, 2), 1)
    assert list(bars.data[0].x) == [1, 2] and list(cols.data[0].y) == [1, 2]
    assert list(bars.data[0].marker.color) == list(cols.data[0].marker.color) == ["#757575", "#2e7d32"]
    assert list(split_figure(("4", "5"), (0, 0), None).data[0].text) == ["", ""]  # no "0" beside an empty bar


def test_the_class_split_marks_the_models_answer_in_text_even_with_no_vote():
    """WCAG 1.4.1: the answer is named on the chart, not only green; its row says 0 when nobody picked it;
    every bar is >= 3:1 on white (1.4.11)."""
    bars = split_figure(("sat", "sent", "ran"), (4, 0, 2), 1)
    cols = card_split_figure(("sat", "sent", "ran"), (4, 0, 2), 1)
    assert list(bars.data[0].y) == ["1. sat", "2. sent ✓ (the model's answer)", "3. ran"]
    assert list(bars.data[0].text) == ["4", "0", "2"] and list(cols.data[0].text) == ["4", "0", "2"]
    assert list(cols.data[0].x) == ["1", "2 ✓", "3"]
    assert all(contrast(c, "#ffffff") >= 3 for c in bars.data[0].marker.color)
    assert not any("✓" in y for y in split_figure(("sat", "sent"), (1, 1), None).data[0].y)  # before the reveal
