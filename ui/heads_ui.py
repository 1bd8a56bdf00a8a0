"""The Heads & patching page's callbacks (kept out of the page script: see ui/callbacks.py for why)."""

from __future__ import annotations

import re

import streamlit as st

LAYER_KEY, HEAD_KEY = "heads_layer", "heads_head"  # the page's selectboxes: 0-based values, 1-based labels


def clicked_head(selection) -> tuple[int, int] | None:
    """The 0-based (layer, head) of a clicked importance-map cell, from a plotly selection, or None.

    The map's clickable layer is a scatter whose points sit on the cells, labelled "head h" / "layer l"
    (1-based). Example: {"points": [{"x": "head 3", "y": "layer 2"}]} -> (1, 2).
    """
    points = (selection or {}).get("points") or []
    if not points:
        return None
    p = points[-1]
    x, y = re.search(r"\d+", str(p.get("x", ""))), re.search(r"\d+", str(p.get("y", "")))
    if not (x and y):
        return None
    return int(y.group()) - 1, int(x.group()) - 1


def pick_clicked_head(chart_key: str, n_layers: int, n_heads: int) -> None:
    """on_select of the importance map: the clicked cell becomes the layer and head the page knocks out."""
    event = st.session_state.get(chart_key)
    head = clicked_head(getattr(event, "selection", None) or (event or {}).get("selection"))
    if head is not None and 0 <= head[0] < n_layers and 0 <= head[1] < n_heads:
        st.session_state[LAYER_KEY], st.session_state[HEAD_KEY] = head


def pick_head(layer: int, head: int) -> None:
    """"Knock out the most important head": put it in the selectboxes."""
    st.session_state[LAYER_KEY], st.session_state[HEAD_KEY] = int(layer), int(head)
