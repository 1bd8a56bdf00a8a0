"""Every page, fed the inputs students really type (and some they shouldn't): a message, never a traceback; on the
same page load, the line naming the model on screen (tests/app/test_model_line.py tests its text)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager
from support.apptest import assert_ok, open_page
from support.hostile import HOSTILE

import bert_core
from bert_core.notebooks import build
from ui.notebook_ui import VIEWS_KEY
from ui.widgets import model_line_text

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


def test_the_list_is_every_page_but_the_lesson():
    """So that every page's model line and hostile-text handling is checked (the Lesson's in its own tests)."""
    views = Path(__file__).resolve().parents[2] / "views"
    assert sorted(PAGES) == sorted(p.stem for p in views.glob("*.py") if p.stem not in ("lesson", "__init__"))


# The Predictions page's sections that run the model once per token or per [MASK] (salience, several masks, PLL):
# switched on before the hostile list, so it reaches them too.
SECTIONS = {"predictions": ("pred_salience", "pred_fill", "pred_pll")}


@pytest.mark.parametrize("page", PAGES)
def test_every_page_names_its_model_and_survives_hostile_text(page):
    at = open_page(page)
    assert_ok(at)
    # The page's main area names the model on screen, before any text is typed.
    assert [c.value for c in at.main.caption if c.value.startswith("Model on screen: MiniLM")] == [
        model_line_text(bert_core.load_model())]
    for key in SECTIONS.get(page, ()):
        at.toggle(key=key).set_value(True).run()
        assert_ok(at)
    for name, text in HOSTILE.items():
        at.sidebar.text_area(key="text").set_value(text).run()
        assert not at.exception, (page, name, [e.value for e in at.exception])
        for md in at.markdown:  # user text never reaches our HTML unescaped
            assert "<script>" not in md.value and "<img" not in md.value, (page, name)
        if page in ("predictions", "attention"):  # their captions and figures quote the text's tokens
            for md in at.caption:
                assert "<script>" not in md.value and "<img" not in md.value, (page, name)
            for el in at.get("plotly_chart"):
                assert "<script>" not in json.dumps(json.loads(el.proto.spec)), (page, name)
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
