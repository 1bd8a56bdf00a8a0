"""Every page, fed the inputs students really type (and some they shouldn't): a message, never a traceback."""

from __future__ import annotations

import ast

import pytest
from IPython.core.inputtransformer2 import TransformerManager
from support.apptest import assert_ok, open_page
from support.hostile import HOSTILE

from bert_core.notebooks import build
from ui.notebook_ui import VIEWS_KEY

PAGES = ["tokenization", "embeddings", "masking", "attention", "predictions", "anatomy", "training"]
PAGES += ["layers", "inside_layer"]
PAGES.append("compare")
PAGES.append("finetuning")
PAGES.append("similarity")
# Not the Lesson: it has no sidebar Text box (each step has its own sentence, which gets the same list in
# tests/pages/test_page_lesson.py).
PAGES.append("tagging")
PAGES.append("qa")
PAGES.append("bert_vs_gpt")
PAGES.append("heads")
PAGES += ["probing", "neighbours"]


@pytest.mark.parametrize("page", PAGES)
def test_every_page_survives_hostile_text(page):
    at = open_page(page)
    assert_ok(at)
    for name, text in HOSTILE.items():
        at.sidebar.text_area(key="text").set_value(text).run()
        assert not at.exception, (page, name, [e.value for e in at.exception])
        for md in at.markdown:  # user text never reaches our HTML unescaped
            assert "<script>" not in md.value and "<img" not in md.value, (page, name)
        for view in at.session_state[VIEWS_KEY].values() if VIEWS_KEY in at.session_state else ():
            notebook_is_safe(view)  # the page's "Open as a notebook" holds the text as data
    # Pages that analyse the text say what is wrong with an empty one (Compare needs two models first).
    # qa and lesson read their own passages and sentences (tested on their pages); probing reads only its corpora.
    if page not in ("anatomy", "training", "compare", "finetuning", "qa", "lesson", "probing"):
        at.sidebar.text_area(key="text").set_value("").run()
        assert any("empty" in w.value for w in at.warning), (page, [w.value for w in at.warning])


def notebook_is_safe(view) -> None:
    """The view's notebook: every code cell is valid Python holding the text as a literal; no raw HTML in Markdown."""
    cells = build(view).cells
    for c in cells:
        if c.cell_type == "code":
            ast.parse(TransformerManager().transform_cell(c.source))  # IPython's %pip line as Jupyter runs it
        else:
            assert "<script" not in c.source and "<img" not in c.source, view.page
    assert f"TEXT = {view.text!r}" in "\n".join(c.source for c in cells)
