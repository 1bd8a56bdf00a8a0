"""A Lesson step as a notebook (bert_core.notebooks.View): its words, its question (computed) and its full page's
view; the side column's "Open as a notebook", and a following student's, which reads the step kept by the fragment."""

from __future__ import annotations

import dataclasses
import functools

import streamlit as st

import bert_core
from bert_core.lesson import links
from bert_core.notebooks import PAGES, View, notebook_bytes
from ui import page_defaults
from ui.lesson.content import STEPS, explain, question_call
from ui.notebook_ui import VIEWS_KEY, download, offer, view_of
from ui.state import Current, model_cached


def page_view(cur: Current, step, text: str, pair: str | None) -> dict:
    """What the step's full page opens on besides the sentence (its link, its notebook), through the shared cache
    the step's question and view use; {} where the sentence does not fit (the step has said what it needs)."""
    try:
        return links.page_view(cur.model, step.question, text, pair, run=functools.partial(model_cached, cur))
    except bert_core.BertCoreError:
        return {}


def step_page_settings(cur: Current, page: str, step, text: str, pair: str | None) -> dict:
    """The settings the step's full page opens with for this model (the layer and head its link carries), for a
    Lesson step's notebook ({} for pages without one)."""
    settings = page_defaults.of(page, cur.model.config)  # what the page itself opens with (its widgets read it)
    at = page_view(cur, step, text, pair)  # the step's head, 1-based as in its link to the page
    if page in ("attention", "heads", "bert_vs_gpt") and "layer" in at:
        settings.update(layer=at["layer"] - 1, head=at.get("head", 1) - 1)
    return settings


def lesson_button(cur: Current, k: int, text: str, pair: str | None) -> None:
    """"Open as a notebook" for Lesson step k: its words, its question (computed), and its full page's view."""
    offer(lesson_view(cur, k, text, pair), f"lesson-step-{k}")


def keep_lesson_view(cur: Current, k: int, text: str, pair: str | None) -> None:
    """A following student's step: the notebook the side column's button offers when clicked (`followed_button`)."""
    st.session_state.setdefault(VIEWS_KEY, {})["lesson"] = lesson_view(cur, k, text, pair)


def followed_button() -> None:
    """"Open as a notebook" in a following student's side column: the step the page shows when it is clicked.

    The button lives outside the step's fragment because a download button inside it would register its file again
    for every student at every step change; so the step keeps its notebook's View (`keep_lesson_view`) and this
    button, drawn by whole runs, reads it at the click."""
    views = st.session_state.setdefault(VIEWS_KEY, {})
    if "lesson" not in views:
        return
    download("This step's notebook", lambda: notebook_bytes(views["lesson"]), "lesson-step",
             key="notebook-lesson-followed", width="stretch",
             help="A Jupyter notebook that recomputes the step on your screen with bert_core: the same model, "
                  "sentence and question. Its first cell installs bert_core where it is missing.")


def lesson_view(cur: Current, k: int, text: str, pair: str | None) -> View:
    """The notebook of Lesson step k: its words, its question (computed), and its full page's view."""
    step = STEPS[k - 1]
    fn, args, kwargs = question_call(step, text, pair, cur.seed)
    page = step.page.replace("-", "_")  # url_path -> PAGES key
    settings = {"step": k, "question": f"{fn.__module__}.{fn.__name__}", "question_args": args,
                "question_kwargs": kwargs, "page": page,
                "page_settings": step_page_settings(cur, page, step, text, pair) if page in PAGES else {}}
    return dataclasses.replace(view_of(cur, "lesson", text), pair=pair, settings=settings,
                               prose={"title": step.title, "explain": explain(step, cur.model),
                                      "formula": step.formula})
