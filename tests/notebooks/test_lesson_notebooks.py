"""Each Lesson step's "Open as a notebook": run offline in a shared kernel, it prints the Lesson's own answer.

A file of its own, so that under pytest-xdist it can run beside the pages' notebook tests.
"""

from __future__ import annotations

import time

from support.apptest import assert_ok, open_page
from support.nb_run import TIMES, run

from bert_core.notebooks import notebook_bytes
from ui.notebook_ui import VIEWS_KEY


def test_lesson_steps(kernel, minilm):
    """Every Lesson step's notebook: its question's answer is the one the Lesson computes for the same sentence."""
    from ui.lesson import content as lesson

    at = open_page("lesson")
    for k, step in enumerate(lesson.STEPS, start=1):
        if k > 1:
            at.button(key="lesson_next").click().run()
        assert_ok(at)
        assert any(b.key == "notebook-lesson" for b in at.get("download_button"))
        view = at.session_state[VIEWS_KEY]["lesson"]
        assert view.settings["step"] == k and view.prose["title"] == step.title
        fn, args, kwargs = lesson.question_call(step, view.text, view.pair, view.seed)
        assert view.settings["question_args"] == args
        t = time.perf_counter()
        _, out = run(notebook_bytes(view), kernel)
        TIMES[f"lesson {k}"] = time.perf_counter() - t
        q = fn(minilm, *args, **kwargs)
        assert f"The model's answer: {q.choices[q.answer]}\n{q.reveal}\n" in out, (k, out[-800:])


def test_a_steps_notebook_numbers_each_section_once():
    """The step's own sections (3. the step, 4. the full page) and the page's, numbered on from 5: no two alike."""
    import re

    import nbformat

    at = open_page("lesson")
    for k in range(1, 3):  # step 1 (Tokenization's sections) and step 2 (Embeddings')
        if k > 1:
            at.button(key="lesson_next").click().run()
        nb = nbformat.reads(notebook_bytes(at.session_state[VIEWS_KEY]["lesson"]).decode(), as_version=4)
        numbers = [int(m.group(1)) for c in nb.cells if c.cell_type == "markdown"
                   for m in [re.match(r"## (\d+)\.", c.source)] if m]
        assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 5, numbers
