"""Attention page: token labels, token caps, and plotly figures of attention maps (arrays in, figures out).

Every map is A = softmax(Q K^T / sqrt(d_k)) of one head: row i is how query token i spreads its
attention over the key tokens j, so each full row sums to 1.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

# The plotly views draw at most this many tokens (a T x T heatmap per head gets slow beyond it).
ATTENTION_TOKEN_CAP = 128
# bertviz draws one SVG line per (query, key) pair: it gets heavy sooner than plotly.
BERTVIZ_TOKEN_CAP = 64
# At most this many attention weights (layers x heads x T x T) go into one bertviz view; more
# layers than that fit are shown as a window around the chosen layer (bert-large: 24 x 16 heads).
BERTVIZ_MAX_WEIGHTS = 200_000

COLORSCALE = "Blues"
HOVER = "query %{y} → key %{x}: %{z:.3f}<extra></extra>"


def token_labels(tokens: list[str]) -> list[str]:
    """Unique, markup-free axis labels: the position, then the token with & < > escaped.

    Plotly reads labels as a small HTML subset (and decodes &lt; &gt; &amp;), so escaped user
    text is shown literally and never becomes markup. The position keeps repeated tokens apart.
    Example: ["[CLS]", "the", "<b>", "the"] -> ["0 [CLS]", "1 the", "2 &lt;b&gt;", "3 the"]
    """
    return [f"{i} {html.escape(t, quote=False)}" for i, t in enumerate(tokens)]


def capped(n_tokens: int, cap: int) -> int:
    """How many tokens a view draws: all of them, or the first `cap`."""
    return min(int(n_tokens), int(cap))


def sentence_b_start(token_type_ids: np.ndarray, n_tokens: int | None = None) -> int | None:
    """Index of the first sentence-B token (first token_type_id == 1), or None for one sentence.

    With `n_tokens` (a capped view), None also when B starts at or after the cut, so bertviz
    gets a split with both sentences non-empty.
    Example: [0, 0, 0, 0, 1, 1] -> 4; with n_tokens=4 -> None
    """
    ids = np.asarray(token_type_ids)[: n_tokens]
    hits = np.flatnonzero(ids == 1)
    if hits.size == 0 or hits[0] == 0:
        return None
    return int(hits[0])


def crop(attentions: np.ndarray, tokens: list[str], n: int) -> tuple[np.ndarray, list[str]]:
    """The first `n` tokens' block of every map: (L, nh, T, T) -> (L, nh, n, n), and their tokens.

    A cropped row sums to less than 1 when the cut-off tokens received some of its attention.
    """
    return np.asarray(attentions)[:, :, :n, :n], list(tokens[:n])


def head_average(layer_attention: np.ndarray) -> np.ndarray:
    """Mean attention over the heads of one layer: (nh, T, T) -> (T, T); rows still sum to 1."""
    return np.asarray(layer_attention).mean(axis=0)


def special_share(attentions: np.ndarray, special_mask: np.ndarray) -> np.ndarray:
    """Share of each head's attention that lands on [CLS]/[SEP], averaged over queries. (L, nh)."""
    keys = np.asarray(special_mask).astype(bool)  # (T,)
    return np.asarray(attentions)[..., keys].sum(axis=-1).mean(axis=-1)  # (L, nh, T, S) -> (L, nh)


def bertviz_layers(n_layers: int, n_heads: int, n_tokens: int, layer: int,
                   max_weights: int = BERTVIZ_MAX_WEIGHTS) -> list[int]:
    """The layers a bertviz view shows: all if they fit `max_weights`, else a window holding `layer`.

    Example: 24 layers, 16 heads, 64 tokens -> 65,536 weights per layer -> 3 layers, e.g. [10, 11, 12].
    """
    per_layer = n_heads * n_tokens * n_tokens
    k = max(1, min(n_layers, max_weights // max(per_layer, 1)))
    start = min(max(layer - k // 2, 0), n_layers - k)
    return list(range(start, start + k))


def _top(z: np.ndarray, zmax: float | None) -> float:
    """The top of the colour scale: `zmax`, or the largest weight (0 stays white either way)."""
    return float(zmax) if zmax is not None else max(float(np.max(z)), 1e-6)


def head_heatmap(matrix: np.ndarray, tokens: list[str], title: str = "", zmax: float | None = 1.0) -> go.Figure:
    """One attention map (T, T) as a heatmap: rows = query tokens, columns = key tokens.

    `zmax=1.0` fixes the colour scale at 0..1 so maps compare; None runs it from 0 to this map's largest weight.
    """
    z = np.asarray(matrix)
    t = len(tokens)
    if z.shape != (t, t):
        raise ValueError(f"attention map has shape {z.shape}, expected ({t}, {t}) for {t} tokens")
    labels = token_labels(tokens)
    small = t <= 16  # few enough cells to print the weights in them
    side = int(min(max(18 * t + 160, 420), 900))
    return heatmap_figure(
        {"z": np.asarray(z, dtype=np.float32), "x": labels, "y": labels, "hovertemplate": HOVER, "zmin": 0.0,
         "zmax": _top(z, zmax), "colorscale": COLORSCALE, "colorbar": {"title": {"text": "weight"}},
         "texttemplate": "%{z:.2f}" if small else None},
        title, side,
        # dtick 1: every token labelled (plotly's own ticks skip every other one past ~25 tokens).
        xaxis={"type": "category", "title": {"text": "key (attended to)"}, "side": "top", "tickangle": -60,
               "tickmode": "linear", "dtick": 1},
        yaxis={"type": "category", "title": {"text": "query (attending)"}, "autorange": "reversed",
               "tickmode": "linear", "dtick": 1,
               "scaleanchor": "x", "constrain": "domain"})


def attended(matrix: np.ndarray, tokens: list[str], k: int = 3) -> list[tuple[str, str]]:
    """Each query token (T, T rows) and the `k` key tokens it attends to most, as text: the attention map in words,
    for a reader who cannot see the map or bertviz's lines. Example row: ("2 cat", "4 [SEP] 0.46, 2 cat 0.20, …")."""
    z = np.asarray(matrix, dtype=np.float64)
    out = []
    for i, row in enumerate(z):
        top = np.argsort(-row, kind="stable")[:k]
        out.append((f"{i} {tokens[i]}", ", ".join(f"{j} {tokens[j]} {row[j]:.2f}" for j in top)))
    return out


def attended_text(matrix: np.ndarray, tokens: list[str]) -> str:
    """The map's main point in one sentence: which key each query token attends to most."""
    z = np.asarray(matrix, dtype=np.float64)
    best = z.argmax(axis=1)
    pairs = "; ".join(f"{i} {tokens[i]} → {j} {tokens[j]} ({z[i, j]:.2f})" for i, j in enumerate(best))
    return f"Each token's strongest key: {pairs}"


def head_average_figure(layer_attention: np.ndarray, tokens: list[str], layer: int,
                        zmax: float | None = 1.0) -> go.Figure:
    """The mean over all heads of one layer (nh, T, T), drawn like a single head."""
    return head_heatmap(head_average(layer_attention), tokens, f"Layer {layer + 1}, average of all heads", zmax)


def grid_domains(n: int, spacing: float) -> list[tuple[float, float]]:
    """The [start, end] paper fractions of `n` equal cells with `spacing` between them, as make_subplots lays them.

    Example: grid_domains(2, 0.1) -> [(0.0, 0.45), (0.55, 1.0)]
    """
    width = (1.0 - spacing * (n - 1)) / n
    return [(i * (width + spacing), i * (width + spacing) + width) for i in range(n)]


def _template() -> dict:
    """Plotly's default template as a plain dict (what a validated figure carries)."""
    global _TEMPLATE
    if _TEMPLATE is None:
        _TEMPLATE = pio.templates[pio.templates.default].to_plotly_json()
    return _TEMPLATE


_TEMPLATE: dict | None = None


def heatmap_figure(trace: dict, title: str, height: int, xaxis: dict, yaxis: dict, margin_top: int = 50) -> go.Figure:
    """One heatmap, written out in the form plotly's validation gives it, and built without validating again.

    Validation costs 10-20 ms per figure and a page draws several per rerun (the Attention page's
    budget is 150 ms). `trace` holds the heatmap's properties (None values are left out, a named
    colour scale is spelled out); tests/figures check that validating the result changes nothing.
    """
    tr = {"type": "heatmap", **{k: v for k, v in trace.items() if v is not None}}
    if isinstance(tr.get("colorscale"), str):
        tr["colorscale"] = _colorscale(tr["colorscale"])
    layout = {"template": _template(), "title": {"text": title}, "height": height,
              "margin": {"l": 10, "r": 10, "t": margin_top, "b": 10}, "xaxis": xaxis, "yaxis": yaxis}
    return go.Figure({"data": [tr], "layout": layout}, _validate=False)


def layer_grid(layer_attention: np.ndarray, tokens: list[str], layer: int, cols: int = 4,
               zmax: float | None = 1.0) -> go.Figure:
    """Small multiples: every head of one layer (nh, T, T), one shared colour scale (0..1, or 0..largest).

    The query tokens label the first column's rows and the key tokens the bottom row's columns (small type),
    so a pattern in any head can be read off against the words without opening it.
    The figure is written out as make_subplots would lay it (tests/figures compare the two) but built
    unvalidated, because plotly's per-property validation of a dozen subplots would take most of a rerun's budget.
    """
    att = np.asarray(layer_attention)
    nh, t = att.shape[0], len(tokens)
    if att.shape[1:] != (t, t):
        raise ValueError(f"layer attention has shape {att.shape}, expected (heads, {t}, {t})")
    cols = min(cols, nh)
    rows = -(-nh // cols)  # ceil
    labels = token_labels(tokens)
    xdom = grid_domains(cols, 0.03)
    ydom = grid_domains(rows, 0.06 if rows > 1 else 0.1)[::-1]  # row 1 at the top
    data, layout = [], {}
    small = {"showticklabels": True, "tickfont": {"size": 12}}  # 12 px: a phone's least readable text
    annotations = []
    for h in range(nh):
        r, c, k = h // cols, h % cols, ("" if h == 0 else str(h + 1))
        data.append({"type": "heatmap", "z": np.asarray(att[h], dtype=np.float32), "x": labels, "y": labels,
                     "coloraxis": "coloraxis", "name": f"head {h + 1}", "hovertemplate": f"head {h + 1}<br>" + HOVER,
                     "xaxis": "x" + k, "yaxis": "y" + k})
        xa = {"anchor": "y" + k, "domain": list(xdom[c]), "type": "category", "showticklabels": False}
        ya = {"anchor": "x" + k, "domain": list(ydom[r]), "type": "category", "showticklabels": False,
              "autorange": "reversed"}
        if c == 0:  # the first column: which token is asking (rows)
            ya.update(small)
        if h + cols >= nh:  # the lowest plot of its column: which token is looked at (columns)
            xa.update({**small, "tickangle": -60})
        layout["xaxis" + k], layout["yaxis" + k] = xa, ya
        annotations.append({"font": {"size": 16}, "showarrow": False, "text": f"head {h + 1}",
                            "x": (xdom[c][0] + xdom[c][1]) / 2, "xanchor": "center", "xref": "paper",
                            "y": ydom[r][1], "yanchor": "bottom", "yref": "paper"})
    layout.update(annotations=annotations, template=_template(), title={"text": f"Layer {layer + 1}: all {nh} heads"},
                  height=int(250 * rows + 130), margin={"l": 10, "r": 10, "t": 70, "b": 10},
                  coloraxis={"colorscale": _colorscale(COLORSCALE), "cmin": 0.0, "cmax": _top(att, zmax),
                             "colorbar": {"title": {"text": "weight"}}})
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def _colorscale(name: str) -> list:
    """A named plotly colour scale as the [[fraction, colour], ...] list validation turns it into."""
    return [list(x) for x in go.layout.Coloraxis(colorscale=name).colorscale]


def special_share_figure(share: np.ndarray) -> go.Figure:
    """(L, nh) shares of attention on [CLS]/[SEP] as a layers x heads heatmap."""
    s = np.asarray(share)
    return heatmap_figure(
        {"z": s.astype(np.float32), "x": list(range(1, s.shape[1] + 1)), "y": list(range(1, s.shape[0] + 1)),
         "zmin": 0.0,
         "zmax": 1.0, "colorscale": "Oranges", "texttemplate": "%{z:.2f}", "colorbar": {"title": {"text": "share"}},
         "hovertemplate": "layer %{y}, head %{x}: %{z:.2f} on [CLS]/[SEP]<extra></extra>"},
        "Share of attention on [CLS] and [SEP]", int(min(max(28 * s.shape[0] + 140, 260), 800)),
        xaxis={"title": {"text": "head"}, "dtick": 1},
        yaxis={"title": {"text": "layer"}, "dtick": 1, "autorange": "reversed"})


# ----------------------------------------------------------------------------------------------
# Head statistics and attention rollout
# ----------------------------------------------------------------------------------------------

# What each head statistic means, in the words the page uses (keys of bert_core.head_stats' dicts).
STAT_LABELS = {
    "prev": "weight on the previous token",
    "next": "weight on the next token",
    "self": "weight on the token itself",
    "sep": "weight on [SEP]",
    "cls": "weight on [CLS]",
    "entropy": "entropy (nats): how spread out",
    "distance": "mean distance read (tokens)",
}


def stat_grid(stats: list[dict], stat: str) -> np.ndarray:
    """One statistic of `bert_core.head_stats` as a (layers, heads) array.

    Example: [{"layer": 0, "head": 0, "prev": 0.1}, {"layer": 0, "head": 1, "prev": 0.9}], "prev" -> [[0.1, 0.9]]
    """
    n_layers = max(s["layer"] for s in stats) + 1
    n_heads = max(s["head"] for s in stats) + 1
    z = np.zeros((n_layers, n_heads), dtype=np.float32)
    for s in stats:
        z[s["layer"], s["head"]] = s[stat]
    return z


def head_stats_figure(stats: list[dict], stat: str) -> go.Figure:
    """Layers x heads grid coloured by one head statistic (weights 0..1; entropy and distance 0..largest).

    Axes count as users do: layers 1..L, heads 1..nh (the stats' "layer" and "head" are 0-based indices).
    """
    z = stat_grid(stats, stat)
    share = stat in ("prev", "next", "self", "sep", "cls")
    return heatmap_figure(
        {"z": z, "x": list(range(1, z.shape[1] + 1)), "y": list(range(1, z.shape[0] + 1)), "zmin": 0.0,
         "zmax": 1.0 if share else max(float(z.max()), 1e-6), "colorscale": "Viridis",
         "texttemplate": "%{z:.2f}" if z.size <= 400 else None, "colorbar": {"title": {"text": stat}},
         "hovertemplate": f"layer %{{y}}, head %{{x}}: {STAT_LABELS[stat]} = %{{z:.3f}}<extra></extra>"},
        f"Every head: {STAT_LABELS[stat]}", int(min(max(28 * z.shape[0] + 140, 260), 800)),
        xaxis={"title": {"text": "head"}, "dtick": 1},
        yaxis={"title": {"text": "layer"}, "dtick": 1, "autorange": "reversed"})


def rollout_row_figure(rollout: np.ndarray, tokens: list[str], query: int) -> go.Figure:
    """What one token has drawn from after each layer: row `query` of every R_l, (L, T) as layers x tokens."""
    z = np.asarray(rollout)[:, query, :]  # (L, T)
    labels = token_labels(tokens)
    return heatmap_figure(
        {"z": z.astype(np.float32), "x": labels, "y": list(range(1, z.shape[0] + 1)), "zmin": 0.0,
         "zmax": max(float(z.max()), 1e-6), "colorscale": "Purples", "colorbar": {"title": {"text": "share"}},
         "hovertemplate": f"after layer %{{y}}, {labels[query]} draws %{{z:.3f}} from %{{x}}<extra></extra>"},
        f"What {labels[query]} draws from, layer by layer (rollout)", int(min(max(26 * z.shape[0] + 200, 280), 800)),
        xaxis={"type": "category", "tickangle": -60},
        yaxis={"title": {"text": "after layer"}, "dtick": 1, "autorange": "reversed"})
