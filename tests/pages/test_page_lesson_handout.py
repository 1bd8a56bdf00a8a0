"""The Lesson's "Prepare the handout" under AppTest: visit a few steps, guess, reveal, download the file, and check
it against what the Lesson computes (bert_core.lesson's question on each step's sentence, the drawn charts), on
one laptop and after a live class (the class's split of each revealed question)."""

from __future__ import annotations

import html
import re

import pytest
from streamlit.runtime import memory_media_file_storage
from streamlit.testing.v1 import AppTest
from support.apptest import ROOT, assert_ok
from support.handout import IMG, SCRIPT, assert_inert

import bert_core
import classroom
from ui.lesson import content as lesson

N = len(lesson.STEPS)
FILE = "bert-lesson-handout.html"


@pytest.fixture
def downloads(monkeypatch):
    """Every file a download button hands to Streamlit's media storage in this process: [(bytes, file name)]."""
    saved = []
    real = memory_media_file_storage.MemoryMediaFileStorage.load_and_get_id

    def spy(self, path_or_data, mimetype, kind, filename=None):
        saved.append((path_or_data, filename))
        return real(self, path_or_data, mimetype, kind, filename)

    monkeypatch.setattr(memory_media_file_storage.MemoryMediaFileStorage, "load_and_get_id", spy)
    return saved


def handout_of(downloads) -> str:
    files = [d for d, name in downloads if name == FILE]
    assert files, [name for _, name in downloads]
    return files[-1].decode("utf-8")


def open_lesson(query: dict) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert_ok(at)
    return at


def asked(m, i: int, text: str, pair: str | None):
    """Step i's question on this sentence, computed here straight from bert_core.lesson (what lesson.ask runs)."""
    fn, args, kwargs = lesson.question_call(lesson.STEPS[i - 1], text, pair, 0)
    try:
        return fn(m, *args, **kwargs)
    except bert_core.BertCoreError:
        return None


def sections(doc: str) -> dict[int, str]:
    return {int(n): body for n, body in
            re.findall(r'<section class="step" id="step-(\d+)">(.*?)</section>', doc, flags=re.S)}


def test_the_handout_holds_the_visited_steps_their_computed_answers_guesses_and_charts(downloads):
    hostile = f"{SCRIPT} The {IMG} cat sat on the mat."
    at = open_lesson({"model": "bundled", "t2": hostile})
    m = bert_core.load_model("bundled")
    guesses = {1: 0, 2: 1, 4: 2}  # step 3 is passed by without a guess; 1 and 4 are revealed
    for i in range(1, 5):
        if guesses.get(i) is not None:
            at.radio[0].set_value(guesses[i]).run()
        if i in (1, 4):
            at.button(key="lesson_reveal").click().run()
            assert_ok(at)
        if i < 4:
            at.button(key="lesson_next").click().run()
            assert_ok(at)
    assert not [d for d, name in downloads if name == FILE]  # nothing is written before it is asked for
    at.button(key="lesson_handout").click().run()
    assert_ok(at)
    doc = handout_of(downloads)
    assert_inert(doc)
    got = sections(doc)
    assert sorted(got) == [1, 2, 3, 4]  # the visited steps, in order, and no other
    for i, body in got.items():
        s = lesson.STEPS[i - 1]
        text = hostile if i == 2 else s.text
        assert f"Step {i} of {N}: {html.escape(s.title)}</h2>" in body
        assert f'<strong>Sentence:</strong> <span class="user">{html.escape(text)}</span>' in body
        if s.pair is not None:
            assert f'<span class="user">{html.escape(s.pair)}</span>' in body
        q = asked(m, i, text, s.pair)
        if q is None:
            assert "needs another sentence" in body, i
            continue
        assert f'<p class="q"><strong>Question.</strong> {html.escape(q.prompt)}</p>' in body
        label = lesson.answer_label(q, capital=True)  # its source: the model, the tokenizer, the paper
        assert f"{html.escape(label)}:</strong> {html.escape(q.choices[q.answer])}." in body
        assert html.escape(q.reveal) in body
        if guesses.get(i) is None:
            assert "No guess of yours" in body and "your guess</span>" not in body
        else:
            assert body.count("your guess</span>") == 1
            li = re.findall(r"<li[^>]*>(.*?)</li>", body)[guesses[i]]
            assert "your guess</span>" in li and li.startswith(html.escape(q.choices[guesses[i]]))
    # The charts each step drew: step 2 its norms (before the reveal), step 4 the model's top 5 (after it).
    assert got[1].count("<svg") == 0 and got[2].count("<svg") == 1 and got[3].count("<svg") == 0
    t = bert_core.analyze(m, lesson.STEPS[3].text, None, top_k=5)
    top = t.predictions[t.mask_positions[0]]
    assert got[4].count("<svg") == 1 and all(f">{html.escape(w)}<" in got[4] and f">{p:.1%}<" in got[4]
                                              for w, p in top)
    assert html.escape(IMG) in got[2] and "<img" not in doc
    c, n = m.config, sum(p.numel() for p in m.model.parameters())
    assert (f"{c.num_hidden_layers} layers × {c.hidden_size} wide, {c.num_attention_heads} heads, {n:,} parameters"
            in doc)
    assert f"BERT Explorer {bert_core.__version__}" in doc and "4 of 13 steps visited" in doc


def test_a_new_sentence_replaces_the_steps_old_charts(downloads):
    at = open_lesson({"model": "bundled", "step": "4"})
    at.radio[0].set_value(0).run()
    at.button(key="lesson_reveal").click().run()  # the top-5 chart of the lesson's own sentence
    at.button(key="lesson_try").click().run()  # another sentence: a new question, not revealed, no chart
    assert_ok(at)
    at.button(key="lesson_handout").click().run()
    body = sections(handout_of(downloads))[4]
    assert "<svg" not in body
    assert html.escape(lesson.STEPS[3].try_text) in body


@pytest.fixture
def memory_store(monkeypatch):
    monkeypatch.delenv(classroom.ENV, raising=False)
    return classroom.open_store()


def step_1_split(downloads, code: str, votes: list[int]) -> list[tuple[str, str]]:
    """The last handout's split of step 1's question: its heading and counts are the class's `votes`, the model's
    answer is marked, the file names the class; its rows, (choice cell, votes)."""
    doc = handout_of(downloads)
    assert_inert(doc)
    body = sections(doc)[1]
    q = asked(bert_core.load_model("bundled"), 1, lesson.STEPS[0].text, None)
    assert f"The class's guesses</strong> ({len(votes)} answered): {html.escape(q.prompt)}" in body
    rows = re.findall(r"<tr><td>(.*?)</td><td class=\"num\">(\d+)</td>", body)
    assert [int(n) for _, n in rows] == [votes.count(i) for i in range(len(q.choices))]
    assert "the answer" in rows[q.answer][0]
    assert f"live class {code}" in doc
    return rows


def test_after_a_class_the_handout_has_the_class_split(downloads, memory_store):
    at = open_lesson({"model": "bundled"})
    at.button(key="class_start").click().run()
    code = at.session_state["class_code"]
    view = memory_store.view(code, secret=at.session_state["class_secret"])
    votes = [1, 1, 0]
    for k, choice in enumerate(votes):
        memory_store.vote(code, memory_store.join(code, f"s{k}"), view.question.qid, choice)
    at.button(key="lesson_reveal").click().run()
    assert_ok(at)
    at.button(key="class_handout").click().run()  # in the teacher's results, at the end of the class
    assert_ok(at)
    rows = step_1_split(downloads, code, votes)
    assert "your vote" not in "".join(c for c, _ in rows)  # the teacher did not vote


def test_a_students_handout_has_the_class_split_and_their_vote(downloads, memory_store):
    """A student who followed the class: each split they saw revealed, their own vote marked; kept after leaving."""
    teacher_at = open_lesson({"model": "bundled"})
    teacher_at.button(key="class_start").click().run()
    code, secret = teacher_at.session_state["class_code"], teacher_at.session_state["class_secret"]
    at = open_lesson({"class": code})
    at.text_input(key="class_nick").set_value("Ada").run()
    at.button(key="class_join").click().run()
    assert_ok(at)
    view = memory_store.view(code, secret=secret)
    memory_store.vote(code, at.session_state["class_sid"], view.question.qid, 2)  # the student's vote
    for k, choice in enumerate([0, 2]):
        memory_store.vote(code, memory_store.join(code, f"s{k}"), view.question.qid, choice)
    at.button(key="lesson_handout").click().run()
    assert "The class's guesses" not in handout_of(downloads)  # not revealed yet: no split
    teacher_at.button(key="lesson_reveal").click().run()
    assert_ok(teacher_at)
    at.run()  # the reveal reaches the student's page
    at.button(key="class_leave").click().run()  # the split stays in the student's session
    assert_ok(at)
    at.button(key="lesson_handout").click().run()
    rows = step_1_split(downloads, code, [2, 0, 2])
    assert [i for i, (c, _) in enumerate(rows) if "your vote" in c] == [2]
