"""Chart text contrast (WCAG 1.4.3) where the figure decides it: a heatmap's cell numbers black or white by the colour
plotly fills their cell with (bert_core.figures.style.legible), and that colour computed as plotly.js does."""

from __future__ import annotations

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go
import pytest

from bert_core.figures import attention, finetuning, layers, objectives, predictions, similarity, style

RNG = np.random.default_rng(0)
TOKENS = "[CLS] she sent the letter to her mother . [SEP]".split()


def _plain_fill(scale, z, lo, hi, mid=None, reverse=False) -> list[str]:
    """Each cell's colour by plotly.js's rules, one cell at a time: both ends from the data unless both are set
    (zauto), widened about zmid; then plotly's own sampling of the scale."""
    flat = [v for row in z for v in row if np.isfinite(v)]
    if lo is None or hi is None:
        lo, hi = min(flat), max(flat)
        if mid is not None:
            half = max(hi - mid, mid - lo)
            lo, hi = mid - half, mid + half
    out = []
    for row in z:
        for v in row:
            at = min(max((v - lo) / (hi - lo), 0.0), 1.0) if np.isfinite(v) else 0.0
            out.append(pc.sample_colorscale([list(s) for s in scale], [1 - at if reverse else at])[0])
    return out


@pytest.mark.parametrize("lo, hi, mid, reverse", [(0.0, 1.0, None, False), (None, None, None, False),
                                                  (0.0, None, None, False), (None, None, 0.0, True),
                                                  (-1.0, 1.0, None, True)])
def test_cell_colours_are_plotly_fills(lo, hi, mid, reverse):
    z = RNG.normal(0.2, 0.4, size=(6, 7))
    fig = go.Figure(go.Heatmap(z=z, zmin=lo, zmax=hi, zmid=mid, colorscale="RdBu", reversescale=reverse))
    tr = fig.data[0]
    got = style._cell_colours(fig, tr, z).reshape(-1, 3)
    want = np.array([pc.unlabel_rgb(c) for c in _plain_fill(tr.colorscale, z, lo, hi, mid, reverse)])
    assert np.abs(got - want).max() <= 0.5, np.abs(got - want).max()


def test_a_colour_axis_spans_all_its_maps():
    a, b = np.full((2, 2), 0.1), np.full((2, 2), 0.9)
    fig = go.Figure([go.Heatmap(z=a, coloraxis="coloraxis", texttemplate="%{z:.1f}"),
                     go.Heatmap(z=b, coloraxis="coloraxis", texttemplate="%{z:.1f}")])
    fig.update_layout(coloraxis={"colorscale": "Greys"})
    low = style._cell_colours(fig, fig.data[0], a)[0, 0]  # 0.1 is the low end of 0.1..0.9, not of 0.1..0.1
    scale = [list(s) for s in fig.layout.coloraxis.colorscale]
    assert tuple(np.round(low)) == pc.unlabel_rgb(pc.sample_colorscale(scale, [0.0])[0])


def _text_heatmaps() -> dict[str, go.Figure]:
    m = RNG.dirichlet(np.ones(len(TOKENS)) * 0.3, size=len(TOKENS))
    states = [[("gave", 0.62), ("sent", 0.2)], [("gave", 0.3), ("a", 0.1)], [("x", 0.9), ("y", 0.05)]]
    conf = RNG.integers(0, 30, size=(4, 4))
    return {
        "attention head": attention.head_heatmap(m, TOKENS, "t"),
        "special share": attention.special_share_figure(RNG.random((6, 12))),
        "logit lens": layers.lens_figure(states, "t", answer="gave"),
        "cosine": similarity.cosine_heatmap(np.corrcoef(RNG.normal(size=(4, 8))), list("abcd"), "t"),
        "confusion": finetuning.confusion_figure(conf, list("ABCD")),
        "loss positions": objectives.loss_positions_figure(
            {"MLM": np.array([0, 1, 0, 1]), "causal": np.array([1, 1, 1, 0])},
            {"MLM": ["", "cat", "", "sat"], "causal": ["the", "cat", "sat", ""]}, ["the", "cat", "sat", "."]),
        "occlusion": predictions.token_strip_figure(TOKENS, RNG.normal(size=len(TOKENS)), "t", diverging=True),
        "salience": predictions.token_strip_figure(TOKENS, RNG.random(len(TOKENS)), "t", diverging=False),
    }


@pytest.mark.parametrize("name", list(_text_heatmaps()))
def test_every_cell_number_is_legible_on_its_cell(name):
    """Each builder that prints numbers in cells: after legible(), every number is black or white at >= 4.5:1 on its
    cell's fill (plotly's own #444 was 3.48:1 on a mid blue), the text the same as plotly would print, and the
    caller's figure untouched (its Data table reads it)."""
    fig = _text_heatmaps()[name]
    before = fig.to_json()
    out = style.legible(fig)
    assert fig.to_json() == before
    heat = [tr for tr in out.data if tr.type == "heatmap"]
    layers = [tr for tr in out.data if tr.name == style.CELL_TEXT]
    moved = [tr for tr in heat if tr.texttemplate is None and _original(fig, tr).texttemplate]
    assert heat and layers and len(moved) == len([tr for tr in fig.data if tr.type == "heatmap" and tr.texttemplate])
    for tr in moved:
        z = np.asarray(tr.z, dtype=float)
        fills = style._cell_colours(out, tr, z)
        where = {(x, y): (i, j) for i, y in enumerate(tr.y if tr.y is not None else range(z.shape[0]))
                 for j, x in enumerate(tr.x if tr.x is not None else range(z.shape[1]))}
        mine = [t for t in layers if (t.xaxis, t.yaxis) == (tr.xaxis, tr.yaxis)]
        assert sum(len(t.x) for t in mine) == sum(1 for i, j in where.values() if np.isfinite(z[i, j]) and
                                                  str(style._cell_text(_original(fig, tr))[i, j]))
        for t in mine:
            for x, y in zip(t.x, t.y):
                i, j = where[(x, y)]
                fill = "rgb({:.0f}, {:.0f}, {:.0f})".format(*fills[i, j])
                assert style.contrast(t.textfont.color, fill) >= 4.5, (name, x, y, t.textfont.color, fill)


def _original(fig: go.Figure, drawn):
    return next(t for t in fig.data if t.type == "heatmap" and (t.xaxis, t.yaxis) == (drawn.xaxis, drawn.yaxis))


def test_a_figure_without_cell_text_is_returned_as_it_is():
    fig = go.Figure(go.Bar(x=[1, 2], y=[3, 4]))
    assert style.legible(fig) is fig


@pytest.mark.parametrize("colour", [predictions.BAR, predictions.HIGHLIGHT, predictions.IS_NEXT, predictions.NOT_NEXT])
def test_bar_colours_hold_white_numbers(colour):
    """Predictions and NSP print a bar's number white inside it: >= 4.5:1 (text), and the bar >= 3:1 on the page."""
    assert style.contrast(colour, "#ffffff") >= 4.5


def test_nsp_numbers_are_white_inside_and_ink_outside():
    fig = predictions.nsp_figure(0.929, 0.071)
    assert fig.data[0].insidetextfont.color == "#ffffff" and fig.data[0].outsidetextfont.color == style.INK


def test_the_class_split_draws_the_answer_s_zero():
    """Plotly draws no text inside an empty bar: the split's counts go beside the bars, so the answer's 0 shows."""
    from bert_core.figures.votes import split_figure

    fig = split_figure(("IsNext", "NotNext"), (0, 3), answer=0)
    assert list(fig.data[0].text) == ["0", "3"] and fig.data[0].textposition == "outside"
    assert fig.layout.xaxis.range[1] > 3


@pytest.mark.parametrize("colour", ["rgb(90,162,207)", "rgb(46,126,187)", "#08306b", "#f7fbff", "#fdae6b",
                                    "rgb(44,123,182)", "#777777"])
def test_the_handout_picks_the_same_ink(colour):
    from ui.lesson.handout_svg import cell_ink

    assert cell_ink(colour) == style.cell_ink(colour)
