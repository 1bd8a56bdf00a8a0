"""Where a Lesson step's link to its full page opens (bert_core.lesson.links.page_view): the head the step's own
question and view pick, 1-based, computed from the model; the NSP section; nothing for the other steps."""

from __future__ import annotations

import pytest

import bert_core
from bert_core.lesson import attention, heads, links, questions
from ui.lesson.content import STEPS

BY_QUESTION = {s.question: s for s in STEPS}


@pytest.fixture(scope="module")
def m():
    return bert_core.load_model("bundled-minilm")


def test_the_attention_step_opens_its_question_head(m):
    s = BY_QUESTION["attention_target"]
    layer, head = questions.attention_head(m, s.text, s.pair)
    assert links.page_view(m, s.question, s.text, s.pair) == {"layer": layer + 1, "head": head + 1}


def test_the_knockout_step_opens_the_head_its_question_knocks_out(m):
    s = BY_QUESTION["knockout_head"]
    layer, head = heads.top_head(bert_core.head_importance(m, s.text, s.pair, layers=heads.last_layer(m)))
    assert links.page_view(m, s.question, s.text, s.pair) == {"layer": layer + 1, "head": head + 1}


def test_the_other_steps_open_their_section_or_the_page_as_it_is(m):
    layer, head = attention.attention_layer_head(m)
    assert links.page_view(m, "learning_signal", "The cat sat.") == {"layer": layer + 1, "head": head + 1}
    assert links.page_view(m, "next_sentence", "The cat sat.", "It slept.") == {"section": "nsp"}
    assert links.page_view(m, "pieces", "The cat sat.") == {}


def test_the_run_it_is_given_computes_what_it_needs(m):
    s = BY_QUESTION["attention_target"]
    asked = []

    def run(fn, *args, **kwargs):
        asked.append(fn.__name__)
        return fn(m, *args, **kwargs)

    links.page_view(m, s.question, s.text, s.pair, run=run)
    assert asked == ["analyze"]  # the step's shared cache, not a computation of its own
