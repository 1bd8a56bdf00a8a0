"""Step 6 on a projector says its numbers in more than colour (WCAG 1.4.1): with the step's own sentence, its
Try-this sentence and a short one, the revealed view is a chart whose every weight is written on it (the map's cell
numbers) or the question's row as labelled bars; never a map of shades alone."""

from __future__ import annotations

import pytest

import bert_core
from bert_core.lesson import questions
from ui.lesson import views
from ui.lesson.content import STEPS

STEP6 = next(s for s in STEPS if s.key == "attention")


@pytest.fixture(scope="module")
def m():
    return bert_core.load_model("bundled-minilm")


@pytest.mark.parametrize("text", [STEP6.text, "The cat sat on the mat.", STEP6.try_text])
def test_projector_map_is_never_colour_alone(m, monkeypatch, text):
    drawn = []
    monkeypatch.setattr(views, "lesson_chart", lambda fig, name, key, large: drawn.append(fig))
    monkeypatch.setattr(views, "_analysis", lambda cur, t, p, **keep: bert_core.analyze(m, t, p, **keep))

    class Cur:
        model = m
    views.view_attention(Cur(), text, None, True, large=True)
    n = len(bert_core.analyze(m, text, None, **questions.ATTENTION).tokens)
    assert len(drawn) == 1, n
    (trace,) = drawn[0].data
    if trace.type == "heatmap":
        assert trace.texttemplate, f"{n} tokens: a map of shades with no numbers"
    else:
        assert trace.type == "bar" and len(trace.x) == n and all(str(x).split(" ", 1)[1] for x in trace.x)
