"""The Heads & patching figures: 1-based labels, user text escaped, a clickable point on every importance cell."""

from __future__ import annotations

import numpy as np

from bert_core.figures import heads as fh


def test_importance_map_has_a_clickable_point_per_head_labelled_1_based():
    imp = np.arange(12, dtype=float).reshape(3, 4) - 5  # (L, nh)
    fig = fh.importance_figure(imp, selected=(2, 3), top_token="<b>x</b>")
    heat, points = fig.data
    assert list(heat.y) == ["layer 1", "layer 2", "layer 3"] and list(heat.x)[-1] == "head 4"
    assert len(points.x) == 12 and (points.x[5], points.y[5]) == ("head 2", "layer 2")  # row-major: (1, 1)
    assert points.customdata[5] == imp[1, 1]
    assert heat.zmid == 0 and heat.zmin == -heat.zmax == -6
    assert "<b>" not in points.hovertemplate and "&lt;b&gt;" in points.hovertemplate
    frame = fig.layout.shapes[0]
    assert (frame.x0, frame.y0) == (2.5, 1.5)


def test_patching_map_rows_are_states_and_columns_escaped_tokens():
    grid = np.random.default_rng(0).random((4, 5))
    fig = fh.patching_figure(grid, ["[CLS]", "<img>", "[MASK]", "a", "[SEP]"], "he", 2)
    (heat,) = fig.data
    assert list(heat.y) == ["embeddings", "layer 1", "layer 2", "layer 3"]
    assert heat.x[1] == "1 &lt;img&gt;" and heat.x[2].endswith("←")
    assert np.array_equal(np.asarray(heat.z), grid)


def test_without_head_bars_and_pruning_curve():
    fig = fh.without_head_figure(["sent", "gave"], [0.5, 0.2], [0.1, 0.4], "without layer 6, head 11")
    assert [list(b.y) for b in fig.data] == [[0.5, 0.2], [0.1, 0.4]]
    fig = fh.pruning_figure(np.arange(4), np.array([0.5, 0.4, 0.3, 0.1]), np.array([1, 1, 0, 0]), "sent")
    assert list(fig.data[0].y) == [0.5, 0.4, 0.3, 0.1]
    assert "k = 2" in fig.layout.annotations[0].text
