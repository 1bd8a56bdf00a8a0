"""Figures for the Tagging page: the text with each word coloured by its label, and accuracy per label.

Words and labels are user text (a typed sentence, a CoNLL file's labels): every one goes through
html.escape, in the HTML and in plotly's tick, legend and hover text.
"""

from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from .finetuning import PALETTE

# Label colours: light backgrounds so dark text stays readable; the palette repeats past 20 labels.
LIGHT = ("#aec7e8", "#ffbb78", "#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5",
         "#d9d9d9", "#fdd0a2", "#c7e9c0", "#dadaeb", "#fcbba1", "#c6dbef", "#e5d8bd", "#fde0ef", "#e6f5d0",
         "#ccebc5", "#f2f2f2")


def label_color(i: int) -> str:
    return LIGHT[i % len(LIGHT)]


def tagged_html(text: str, words: list[tuple[str, int, int]], labels: list[str | None],
                label_names: list[str]) -> str:
    """`text` as HTML: each word a coloured box with its label under it; what lies between words kept, escaped.

    Example: tagged_html("a cat", [("a", 0, 1), ("cat", 2, 5)], ["DET", "NOUN"], [...]) -> two boxes.
    """
    index = {lab: i for i, lab in enumerate(label_names)}
    out, cursor = [], 0
    for (word, a, b), lab in zip(words, labels):
        out.append(html.escape(text[cursor:a]))
        color = "#ffffff" if lab is None else label_color(index.get(lab, 0))
        shown = "–" if lab is None else html.escape(lab)
        out.append(f'<span style="display:inline-block;text-align:center;background:{color};border-radius:4px;'
                   f'padding:1px 4px;margin:2px 1px;line-height:1.2">{html.escape(word)}<br>'
                   f'<span style="font-size:max(12px,0.7em);color:#333">{shown}</span></span>')
        cursor = b
    out.append(html.escape(text[cursor:]))
    return f'<div style="line-height:2.6;font-size:1.05em">{"".join(out)}</div>'


def legend_html(label_names: list[str]) -> str:
    """One coloured chip per label, in label-id order."""
    chips = [f'<span style="background:{label_color(i)};border-radius:4px;padding:1px 6px;margin:2px;'
             f'display:inline-block;font-size:max(12px,0.85em)">{html.escape(lab)}</span>'
             for i, lab in enumerate(label_names)]  # 12 px at least: a phone's least readable text
    return "<div>" + "".join(chips) + "</div>"


def per_label_figure(labels: list[str], model_acc: np.ndarray, baseline_acc: np.ndarray | None,
                     counts: np.ndarray, model_name: str = "fine-tuned tagger", height: int = 360) -> go.Figure:
    """Accuracy per true label: the tagger's bars beside the baseline's; hover gives the label's word count."""
    names = [html.escape(lab) for lab in labels]
    fig = go.Figure()
    hover = [f"{n}: {int(c):,} validation words" for n, c in zip(names, counts)]
    fig.add_trace(go.Bar(x=names, y=model_acc, name=html.escape(model_name), marker_color=PALETTE[0],
                         hovertext=hover))
    if baseline_acc is not None:
        fig.add_trace(go.Bar(x=names, y=baseline_acc, name="baseline: most frequent tag of the word",
                             marker_color="#bbbbbb", hovertext=hover))
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", title_text="words tagged right")
    fig.update_xaxes(title_text="true label", type="category")
    fig.update_layout(barmode="group", height=height, margin=dict(l=10, r=10, t=30, b=10),
                      legend=dict(orientation="h", y=1.1, x=0))
    return fig
