"""Widget callbacks and labels that live in a ui module, never in a page.

Streamlit keeps a widget's `on_click` / `on_change` callback and its selectbox `format_func` in the
session's widget state after the run, and keeps them while the user is on another page. A function
or lambda defined in a page script holds that script's whole namespace (its `__globals__`), and so
every array the page drew, for as long as the session lasts. Callbacks here and labels given as
`list.__getitem__` hold only what they are passed.
tests/app/test_page_namespaces.py checks that no page's namespace outlives its run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import streamlit as st


def put(key: str, value) -> None:
    """Set one session-state value (e.g. the sidebar's text) before the next run draws it."""
    st.session_state[key] = value


def put_many(values: dict) -> None:
    """Set several session-state values at once."""
    st.session_state.update(values)


def put_for_choice(key: str, values_by_choice: dict) -> None:
    """On a choice's change: set the session-state values listed for the option now chosen (e.g. a corpus brings
    its own model size and learning rate)."""
    st.session_state.update(values_by_choice.get(st.session_state[key], {}))


def one_based(i: int) -> str:
    """A selectbox `format_func` for layers and heads: Python counts from 0, users from 1."""
    return str(i + 1)


def next_draw() -> None:
    """Masking page's "Draw again": the next draw number, kept across page visits."""
    st.session_state["mask_draw"] = int(st.session_state.get("mask_draw", 1)) + 1
    st.session_state["mask_draw_n"] = st.session_state["mask_draw"]


def labels(texts: Sequence[str]) -> Callable[[int], str]:
    """A selectbox `format_func` over option indices 0..n-1 that holds only these strings."""
    return list(texts).__getitem__


def number_label(v: float) -> str:
    """A learning rate or other number as the shortest plain form (0.0001 -> "0.0001", 3e-05 -> "3e-05")."""
    return f"{v:g}"
