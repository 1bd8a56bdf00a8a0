"""Layers / Inside a layer figure builders: the one-pass builds equal the step-by-step plotly builds."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from bert_core.figures import layers as fl


def reference_vector_strip(vectors, title, boundaries=None, zmax=None):
    """vector_strip built the plain way (figure, then add_vline and update_* calls)."""
    names = list(vectors)
    n = max(len(np.asarray(v)) for v in vectors.values())
    z = np.full((len(names), n), np.nan)
    for i, v in enumerate(vectors.values()):
        z[i, : len(v)] = np.asarray(v)
    lim = zmax if zmax is not None else float(np.nanmax(np.abs(z))) if np.isfinite(z).any() else 1.0
    fig = go.Figure(go.Heatmap(z=z, y=[fl.esc(s) for s in names], colorscale="RdBu", reversescale=True,
                               zmin=-lim, zmax=lim, colorbar=dict(title="value"),
                               hovertemplate="%{y}<br>dim %{x}: %{z:.4f}<extra></extra>"))
    if boundaries:
        for b in range(boundaries, n, boundaries):
            fig.add_vline(x=b - 0.5, line_width=1, line_color="black")
    fig.update_yaxes(type="category", autorange="reversed")
    fig.update_xaxes(title_text="dimension")
    fig.update_layout(title=title, height=fl._height(len(names), 40, 200, 600), margin=fl.MARGIN)
    return fig


@pytest.mark.parametrize("boundaries", [None, 16, 64])
@pytest.mark.parametrize("zmax", [None, 2.0])
def test_vector_strip_equals_step_by_step_build(boundaries, zmax):
    rng = np.random.default_rng(0)
    vecs = {"x": rng.normal(size=128), "<b>attn</b>": rng.normal(size=128), "short": rng.normal(size=100)}
    fast = fl.vector_strip(vecs, "A title", boundaries=boundaries, zmax=zmax)
    ref = reference_vector_strip(vecs, "A title", boundaries=boundaries, zmax=zmax)
    np.testing.assert_array_equal(np.asarray(fast.data[0].z, float), np.asarray(ref.data[0].z, float))
    a, b = fast.to_dict(), ref.to_dict()
    a["data"][0].pop("z"), b["data"][0].pop("z")
    assert a == b
    assert len(fast.layout.shapes) == (len(range(boundaries, 128, boundaries)) if boundaries else 0)
