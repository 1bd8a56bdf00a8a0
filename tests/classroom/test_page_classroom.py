"""A live class on the Lesson page under AppTest: a teacher and students as separate sessions on one store.

Each flow runs on both stores (in this process, and a real redis-server through BERT_EXPLORER_CLASS_STORE).
"""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest
from support.apptest import ROOT, assert_ok
from support.apptest import lesson_session as session
from support.hostile import HOSTILE
from support.wait import until

import bert_core
import classroom
from bert_core.figures.votes import split_figure
from ui.lesson import content as lesson
from ui.lesson import handout, handout_svg
from ui.lesson.live_class import join as live_join
from ui.lesson.live_class import results as live_results
from ui.lesson.live_class import session as live_session
from ui.lesson.live_class import shared as live_shared
from ui.lesson.live_class import student as live_student
from ui.lesson.live_class import teacher as live_teacher
from ui.lesson.state import text_key
from ui.markdown import escape_markdown


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.server)])
def backend(request, monkeypatch):
    """The store the app opens: BERT_EXPLORER_CLASS_STORE unset, or the test session's redis-server."""
    if request.param == "redis":
        monkeypatch.setenv(classroom.ENV, request.getfixturevalue("redis_url"))
    else:
        monkeypatch.delenv(classroom.ENV, raising=False)
    return classroom.open_store()


def teacher() -> tuple[AppTest, str, str]:
    at = session()
    at.button(key="class_start").click().run()
    assert_ok(at)
    code, secret = at.session_state["class_code"], at.session_state["class_secret"]
    assert at.query_params["class"] == code and at.query_params["teacher"] == secret
    return at, code, secret


def student(code: str, nick: str = "", by_link: bool = True) -> AppTest:
    at = session({"class": code} if by_link else None)
    if by_link:
        assert at.text_input(key="class_join_code").value == code  # the link fills in the code
    else:
        at.text_input(key="class_join_code").set_value(code)
    at.text_input(key="class_nick").set_value(nick)
    at.button(key="class_join").click().run()
    assert_ok(at)
    assert not at.warning, [w.value for w in at.warning]
    assert at.query_params["class"] == classroom.clean_code(code) and "teacher" not in at.query_params
    return at


def vote_radio(at: AppTest):
    return next(r for r in at.radio if (r.key or "").startswith("class_vote_"))


def computed(i: int):
    """Step i's question on its own sentence with the bundled model, straight from bert_core.lesson."""
    s = lesson.STEPS[i - 1]
    fn, args, kwargs = lesson.question_call(s, s.text, s.pair, 0)
    return fn(bert_core.load_model(), *args, **kwargs)


def test_teacher_and_three_students_vote_split_reveal_follow_and_results(backend):
    t, code, secret = teacher()
    assert any(m.label == "Students present" and m.value == "0" for m in t.metric)
    s1 = student(code, "Ada")
    s2 = student(f" {code[:3].lower()}-{code[3:]} ", "=HYPERLINK(\"x\")", by_link=False)  # typed, sloppily
    s3 = student(code)
    q = computed(1)
    for at, guess in ((s1, q.answer), (s2, (q.answer + 1) % len(q.choices)), (s3, q.answer)):
        assert [escape_markdown(c) for c in vote_radio(at).options] == [escape_markdown(c) for c in q.choices]
        vote_radio(at).set_value(guess).run()
        assert_ok(at)
    vote_radio(s3).set_value((q.answer + 2) % len(q.choices)).run()  # changed before the reveal: replaces
    t.run()
    assert any(m.value == "**3 of 3** students have answered." for m in t.markdown)
    assert any(m.label == "Students present" and m.value == "3" for m in t.metric)
    assert not t.get("plotly_chart")  # the split waits for the teacher
    t.button(key="class_split").click().run()
    assert len(t.get("plotly_chart")) == 1
    for at in (s1, s2, s3):
        at.run()
        assert not at.get("plotly_chart") and not at.success and not at.error  # nothing shown before the reveal
    t.button(key="lesson_reveal").click().run()
    assert_ok(t)
    assert any(escape_markdown(q.choices[q.answer]) in i.value for i in t.info)
    v = backend.view(code, secret=secret)
    assert v.revealed and v.answer == q.answer and sum(v.tally) == 3 and v.tally[q.answer] == 1
    for at, right in ((s1, True), (s2, False), (s3, False)):
        at.run()
        assert_ok(at)
        assert len(at.success) == int(right) and len(at.error) == int(not right)
        assert escape_markdown(q.choices[q.answer]) in (at.success or at.error)[0].value
        assert len(at.get("plotly_chart")) == 1  # the split beside the answer
    # The teacher moves on and types a hostile sentence: every student follows, and it stays plain text.
    t.button(key="lesson_next").click().run()
    text = HOSTILE["html"]
    t.text_input(key=f"w_{text_key(2)}").set_value(text).run()
    assert_ok(t)
    for at in (s1, s2, s3):
        at.run()
        assert_ok(at)
        assert at.header[0].value.startswith("Step 2 of")
        assert at.session_state[text_key(2)] == text
        assert all("<script>" not in md.value and "<img" not in md.value for md in at.markdown)
        # The teacher's sentence, as text (no box to type in and see it revert), and why; no Back / Next of its own.
        # One element: the step's words, its formula (markdown's $$ block, as st.latex draws it) and the sentence.
        note = next(md.value for md in at.markdown if "**This step's sentence:**" in md.value)
        assert escape_markdown(text) in note and live_student.FOLLOWING_NOTE in note
        step2 = lesson.STEPS[1]
        assert note.startswith(lesson.explain(step2, t.session_state["current"].model))
        assert (f"$$\n{step2.formula}\n$$" in note) == bool(step2.formula) and not at.latex
        assert not [b for b in at.button if b.key in ("lesson_next", "lesson_back")]
        assert not [w for w in at.text_input if w.key and w.key.startswith("w_")]
    # The end-of-lesson table: one revealed question, one of three right; the CSV names only who gave a name.
    rows = live_results.results_rows(backend.results(code, secret))
    assert [(r["step"], r["answered"], r["right"], r["share right"]) for r in rows] == [(1, 3, 1, "33%")]
    assert rows[0]["model"] == t.session_state["current"].model_key != ""  # a question is its model too
    csv_text = live_results.results_csv(rows, backend.students(code, secret))
    assert "Ada,1,1" in csv_text and "'=HYPERLINK" in csv_text and "Student 3,1,0" in csv_text  # nameless: its seat
    assert csv_text.count("\n") == 7
    assert any(e.label.startswith("Results: 1 question") for e in t.expander)


def test_hostile_and_wrong_codes_get_a_message(backend):
    for bad in ("*", "<script>alert(1)</script>", "ABC", "ZZZZZZ", "bx:class:*", "A" * 5000, "ÅBCDEF"):
        at = session({"class": bad})
        assert any("No class with this code" in w.value for w in at.warning), bad
        assert "class" not in at.query_params
        at.text_input(key="class_join_code").set_value(bad[:12])
        at.button(key="class_join").click().run()
        assert_ok(at)
        assert any("No class with this code" in w.value for w in at.warning), bad
        assert "class_code" not in at.session_state


def test_an_ended_class_tells_its_students(backend):
    t, code, _ = teacher()
    s = student(code, "Bo")
    t.button(key="class_end").click().run()
    assert_ok(t)
    assert "class" not in t.query_params and "class_code" not in t.session_state
    s.run()
    assert_ok(s)
    assert any(live_session.ENDED in w.value for w in s.warning)
    assert "class" not in s.query_params and "me" not in s.query_params


def test_the_teacher_link_survives_a_reload_and_nobody_else_drives_the_class(backend):
    t, code, secret = teacher()
    s = student(code)
    again = session({"class": code, "teacher": secret})  # the teacher's tab, reloaded
    assert again.session_state["class_secret"] == secret
    assert again.button(key="class_split") is not None and again.button(key="lesson_reveal") is not None
    for forged in ("x" * 22, s.session_state["class_sid"], secret[:-2]):
        at = session({"class": code, "teacher": forged})
        assert "class_secret" not in at.session_state and "teacher" not in at.query_params
        assert not [b for b in at.button if b.key in ("class_split", "class_end")]
    assert not [b for b in s.button if b.key in ("class_split", "class_end", "lesson_reveal")]
    # A student's own link (a closed laptop, reopened) is the same student, with the same vote.
    vote_radio(s).set_value(1).run()
    sid = s.session_state["class_sid"]
    back = session({"class": code, "me": sid})
    assert back.session_state["class_sid"] == sid and vote_radio(back).value == 1
    assert backend.view(code, secret=secret).students == 1


def test_a_student_can_explore_and_come_back(backend):
    t, code, _ = teacher()
    s = student(code)
    s.toggle(key="class_follow").set_value(False).run()
    s.button(key="lesson_next").click().run()
    s.button(key="lesson_next").click().run()
    assert s.header[0].value.startswith("Step 3 of")
    assert any("exploring" in i.value for i in s.info)
    t.button(key="lesson_next").click().run()
    s.toggle(key="class_follow").set_value(True).run()
    assert s.header[0].value.startswith("Step 2 of") and vote_radio(s) is not None


def _reveal_offered(at: AppTest) -> bool:
    return any(b.key == "lesson_reveal" for b in at.get("button"))


def test_a_student_in_a_class_sees_the_answer_with_the_class_not_before(backend):
    """A rehearsal's spoiler: Follow off, the step's own Reveal on the class's open question, Follow on, vote the
    answer. Exploring on their own, a student of a class is offered no Reveal and told why; out of the class, the
    Lesson's own Reveal is back."""
    t, code, _ = teacher()
    s = student(code)
    assert not _reveal_offered(s)  # following: the class's vote, no Reveal of one's own
    s.toggle(key="class_follow").set_value(False).run()
    assert_ok(s)
    assert s.header[0].value.startswith("Step 1 of") and not _reveal_offered(s)
    assert live_session.EXPLORING_WITHHELD in [i.value for i in s.info]
    s.button(key="lesson_next").click().run()  # another step, the class's next question: the same
    assert not _reveal_offered(s)
    s.button(key="class_leave").click().run()
    assert_ok(s)
    assert _reveal_offered(s) and live_session.EXPLORING_WITHHELD not in [i.value for i in s.info]


def test_a_following_student_in_presenter_mode_has_no_back_next_or_keys_that_do_nothing(backend):
    """A student's own address with present=1 (a rehearsal's attacker): the projector's slide of the class's step,
    without Back / Next or a keys note (the teacher moves the steps; those buttons did nothing and "space or Enter
    reveals" revealed nothing)."""
    t, code, _ = teacher()
    s = student(code)
    p = session({"class": code, "me": s.session_state["class_sid"], "present": "1"})
    assert p.header[0].value.startswith("Step 1 of")
    assert not any(b.key in ("lesson_next", "lesson_back", "lesson_reveal") for b in p.get("button"))
    assert not [c.value for c in p.caption if c.value.startswith("Keys:")]
    t.button(key="lesson_next").click().run()
    p.run()
    assert_ok(p)
    assert p.header[0].value.startswith("Step 2 of")  # it follows the teacher


def test_a_student_whose_class_store_is_away_is_offered_no_reveal(monkeypatch):
    """While the class's store does not answer, a student's page is drawn without the class (the Lesson on its own):
    its Reveal is withheld and the note says why (a rehearsal: a phone tapped a guess during a Redis outage and read
    the answer before the class). The teacher's own Reveal is not withheld; the class back, the vote is back."""
    t, code, _ = teacher()
    s = student(code)
    store = classroom.open_store()
    real_view = store.view

    def away(*a, **kw):
        raise classroom.StoreUnavailable("ConnectionError")

    monkeypatch.setattr(store, "view", away)
    s.run()
    assert_ok(s)
    assert s.session_state["class_code"] == code and not _reveal_offered(s)
    assert live_session.AWAY_WITHHELD in [i.value for i in s.info]
    t.run()
    assert_ok(t)
    assert _reveal_offered(t) and live_session.AWAY_WITHHELD not in [i.value for i in t.info]
    monkeypatch.setattr(store, "view", real_view)
    s.run()
    assert_ok(s)
    assert vote_radio(s) is not None and live_session.AWAY_WITHHELD not in [i.value for i in s.info]


def test_a_join_link_to_no_class_says_so_in_the_join_box_at_the_top(backend):
    """A phone opening a join link with a wrong or ended class's code: the refusal in the join box above the step,
    where a phone looks first (it was in the side column, two screens down, under the step's own guess)."""
    at = session({"class": "ABCDEF"})
    assert str(classroom.NoSuchClass()) in [w.value for w in at.warning]
    assert at.text_input(key="class_join_code").value == "ABCDEF"  # the code to correct, in the box at the top
    assert "Join the class with the box at the top of the page." in [c.value for c in at.caption]
    assert "class" not in at.query_params


def test_a_full_class_says_so(backend, monkeypatch):
    monkeypatch.setattr(backend, "max_students", 2)
    _, code, _ = teacher()
    student(code)
    student(code)
    at = session({"class": code})
    at.button(key="class_join").click().run()
    assert any("full (2 students)" in w.value for w in at.warning)


def test_the_teacher_presents_a_class_and_space_reveals_to_everyone(backend):
    """Presenter mode with a class: the class's reveal button holds the Space key (no personal guess, no error)."""
    t, code, secret = teacher()
    s = student(code)
    present = session({"class": code, "teacher": secret, "present": "1"})  # the projector's tab
    reveal = present.button(key="lesson_reveal")
    assert reveal.proto.shortcut.lower() == "space"  # what a presenter's space bar clicks
    assert not [r for r in present.radio if (r.key or "").startswith("lesson_guess_")]  # the class votes instead
    vote_radio(s).set_value(0).run()
    reveal.click().run()
    assert_ok(present)
    s.run()
    assert_ok(s)
    assert backend.view(code, secret=secret).revealed
    # On the projector the class's split is readable from the back row: its fonts at least 18 px.
    split = next(json.loads(c.proto.spec) for c in present.get("plotly_chart")
                 if "Guesses (" in c.proto.spec)  # in the join card
    assert split["layout"]["font"]["size"] >= 18 and split["layout"]["title"]["font"]["size"] >= 18


def test_a_reveal_pressed_right_after_next_is_taken_for_a_slip(backend, monkeypatch):
    """In presenter mode the class's Reveal can be drawn where Next was: a press within REVEAL_AFTER_MOVE_S of the
    teacher's move reveals nothing and says why (a lecturer's second click on Next revealed step 9's answer to every
    phone before anyone voted); pressed again later, it reveals. On a laptop (no presenter mode) it reveals at once."""
    t, code, secret = teacher()
    s = student(code)
    present = session({"class": code, "teacher": secret, "present": "1"})
    monkeypatch.setattr(live_teacher, "REVEAL_AFTER_MOVE_S", 3600.0)  # every press counts as "right after"
    present.button(key="lesson_next").click().run()
    present.button(key="lesson_reveal").click().run()
    assert_ok(present)
    v = backend.view(code, secret=secret)
    assert v.step == 2 and not v.revealed
    assert any("Not revealed" in x.value for x in present.toast)
    monkeypatch.setattr(live_teacher, "REVEAL_AFTER_MOVE_S", 0.0)
    present.button(key="lesson_reveal").click().run()
    assert_ok(present)
    assert backend.view(code, secret=secret).revealed
    s.run()
    assert_ok(s)
    laptop = session({"class": code, "teacher": secret})  # off the projector, Reveal is not where Next was
    monkeypatch.setattr(live_teacher, "REVEAL_AFTER_MOVE_S", 3600.0)
    laptop.button(key="lesson_next").click().run()  # step 2, revealed above
    laptop.button(key="lesson_next").click().run()
    laptop.button(key="lesson_reveal").click().run()
    assert_ok(laptop)
    assert backend.view(code, secret=secret).step == 3 and backend.view(code, secret=secret).revealed


def _teacher_on(step: int) -> tuple[AppTest, str, str]:
    at = session({"step": str(step)})
    at.button(key="class_start").click().run()
    assert_ok(at)
    return at, at.session_state["class_code"], at.session_state["class_secret"]


def _answered(t: AppTest) -> str:
    return next(m.value for m in t.markdown if "students have answered" in m.value)


@pytest.mark.parametrize("how", ["sentence", "try-pair"])
def test_a_new_sentence_or_pair_is_a_new_question(backend, how):
    """Step 4's new sentence, or step 7's "Try this" pair (IsNext -> NotNext, the same prompt and choices): the
    votes, the split and the reveal start empty on every screen, and the CSV has one row per question."""
    k = 4 if how == "sentence" else 7
    t, code, secret = _teacher_on(k)
    s = student(code, "Ada")
    assert s.header[0].value.startswith(f"Step {k} of")
    vote_radio(s).set_value(0).run()
    t.button(key="class_split").click().run()
    t.button(key="lesson_reveal").click().run()
    first = backend.view(code, secret=secret)
    assert first.revealed and first.answered == 1
    s.run()
    assert s.success or s.error  # the answer is on the student's screen
    if how == "sentence":
        t.text_input(key=f"w_{text_key(k)}").set_value("The boy [MASK] the ball to his friend.").run()
    else:
        t.button(key="lesson_try").click().run()
    assert_ok(t)
    v = backend.view(code, secret=secret)
    assert v.question.qid != first.question.qid
    assert not v.revealed and not v.split_shown and v.answered == 0 and sum(v.tally) == 0
    assert _answered(t) == "**0 of 1** students have answered."
    assert t.button(key="lesson_reveal") is not None and not t.get("plotly_chart")  # no split, no answer's chart
    s.run()
    assert_ok(s)
    assert not s.success and not s.error and vote_radio(s).value is None  # a fresh vote, no old answer
    vote_radio(s).set_value(1).run()
    t.button(key="lesson_reveal").click().run()
    rows = live_results.results_rows(backend.results(code, secret))
    assert len(rows) == 2 and rows[0]["sentence"] != rows[1]["sentence"]
    csv_text = live_results.results_csv(rows, backend.students(code, secret))
    assert "Ada,2," in csv_text


def test_the_question_token_holds_the_sentence_and_the_pair():
    q = computed(7)
    tok, qid = lesson.question_token, live_teacher.question_id
    a = tok("m", 7, "A.", "B.", q)
    assert a != tok("m", 7, "A.", "C.", q) != tok("m", 7, "A.", None, q)
    assert a != tok("m", 7, "A2.", "B.", q) != tok("n", 7, "A.", "B.", q) != tok("m", 8, "A.", "B.", q)
    assert qid(a) != qid(tok("m", 7, "A.", "C.", q)) and tok("m", 7, "A.", "B.", None) == ""


def heard_again(timeout: float = 10) -> None:
    """Until the Redis store's own ping hears its redis-server again (within about FAIL_FAST once it answers)."""
    until(lambda: classroom.open_store()._down is None, timeout, "the store to hear its redis-server again",
          every=0.05)


@pytest.mark.server
def test_the_class_survives_its_store_frozen_killed_and_restarted_empty(monkeypatch):
    """A real redis-server frozen (SIGSTOP), then killed, then restarted empty on its port: the teacher keeps the
    class's key in the session and the address throughout and the page says it is reconnecting; a frozen store
    that comes back resumes the class; one that comes back empty tells the teacher (a new class in one click) and
    the students (ask for the new code)."""
    import shutil
    import signal

    from support.appserver import free_port, redis_server
    from support.paths import worker_suffix

    d, port = ROOT / "tests" / "output" / f"redis-restart{worker_suffix()}", free_port()
    try:
        with redis_server(d, port=port) as (url, proc):
            monkeypatch.setenv(classroom.ENV, url)
            t, code, secret = teacher()
            s = student(code, "Ada")
            proc.send_signal(signal.SIGSTOP)  # frozen: every call times out
            try:
                t.button(key="lesson_next").click().run()
                assert_ok(t)
                assert t.header[0].value.startswith("Step 2 of")  # the Lesson works on
                assert (t.query_params["class"], t.query_params["teacher"]) == (code, secret)
                assert t.session_state["class_secret"] == secret
                assert any("Reconnecting to the class" in i.value for i in t.info)
                # The teacher's tab reloaded, on the projector: the short note in the join card's place.
                again = session({**{k: t.query_params[k] for k in t.query_params}, "present": "1"})
                assert (again.query_params["class"], again.query_params["teacher"]) == (code, secret)
                assert any(f"Reconnecting to class {code}" in i.value for i in again.info)
            finally:
                proc.send_signal(signal.SIGCONT)
            heard_again()
            t.run()  # the store answers again: the class resumes on the teacher's step
            assert_ok(t)
            assert classroom.open_store().view(code, secret=secret).step == 2
            again.run()
            assert again.session_state["class_secret"] == secret
            s.run()
            assert s.header[0].value.startswith("Step 2 of")
            proc.kill()  # killed: the same, and nothing is dropped
            proc.wait()
            t.button(key="lesson_next").click().run()
            assert (t.query_params["class"], t.query_params["teacher"]) == (code, secret)
            assert any("Reconnecting to the class" in i.value for i in t.info)
            s.run()
            assert s.query_params["class"] == code and s.session_state["class_sid"]
        with redis_server(d, port=port):  # back, empty
            heard_again()
            t.run()
            assert_ok(t)
            assert any(f"Your class {code} was lost" in e.value for e in t.error)
            again.run()
            assert any(f"Class {code} was lost" in e.value for e in again.error)
            assert again.button(key="class_restart") is not None
            t.button(key="class_restart").click().run()  # one click: a new class, this session its teacher
            assert_ok(t)
            new = t.session_state["class_code"]
            assert new != code and t.query_params["class"] == new and not t.error
            assert classroom.open_store().view(new, secret=t.session_state["class_secret"]).step == 3
            s.run()
            assert any(live_session.ENDED in w.value for w in s.warning) and "class" not in s.query_params
    finally:
        shutil.rmtree(d, ignore_errors=True)


def test_a_store_that_fails_the_results_table_says_reconnecting_and_tries_again_in_place(monkeypatch):
    """Only the teacher's whole runs draw the results table: a store that did not answer there (Redis just thawed,
    busy with its backlog: scripts/class_outage.py) must not leave its error on screen after the store is back; the
    table says it is reconnecting and a timer of its own tries again."""
    t, code, secret = teacher()
    store = classroom.open_store()
    real = store.results
    failing = True

    def results(*a, **kw):
        if failing:
            raise classroom.StoreUnavailable("TimeoutError")
        return real(*a, **kw)

    monkeypatch.setattr(store, "results", results)
    t.run()
    assert_ok(t)
    assert not [w.value for w in t.warning if "does not answer" in w.value]
    assert "Results: reconnecting to the class…" in [c.value for c in t.caption]
    failing = False
    t.run()  # what the table's timer does once the store answers (its fragment, here drawn by a whole run)
    assert "Results: reconnecting to the class…" not in [c.value for c in t.caption]
    assert "The end-of-lesson table fills in as you reveal answers." in [c.value for c in t.caption]


def test_a_class_action_that_meets_a_store_down_says_reconnecting_until_it_answers(monkeypatch):
    """A teacher's action on the class (here the lock toggle) when the store does not answer: the panel says it is
    reconnecting, with the timer that reruns the page once the store answers (here at once: only the lock fails),
    not a warning that would stay on screen after the store is back (seen in chromium: Streamlit ran the toggle's
    callback with no click while Redis was down, and "... its store does not answer" stayed for minutes)."""
    t, code, secret = teacher()
    store = classroom.open_store()

    def lock(*a, **kw):
        raise classroom.StoreUnavailable("ConnectionError")

    monkeypatch.setattr(store, "lock", lock)
    t.toggle(key="class_lock").set_value(True).run()  # the rest of the store answers: the page has rerun itself
    assert_ok(t)
    assert not [w.value for w in t.warning if "does not answer" in w.value]
    assert not any("Reconnecting" in i.value for i in t.info)
    assert any(f"Code: **{code}**" in m.value for m in t.markdown)  # the class's card, not a stale message
    assert (t.query_params["class"], t.query_params["teacher"]) == (code, secret)


def test_leave_and_join_again_is_one_seat_and_the_teacher_removes_and_locks(backend):
    """Leave then Join in the same browser (its seat token): the same seat, its vote kept, "1 of 1". A second
    student cannot take the same nickname; the teacher removes a seat and locks the class."""
    t, code, secret = teacher()
    s = student(code, "Bob")
    sid = s.session_state["class_sid"]
    vote_radio(s).set_value(1).run()  # the vote's run reruns the step and count fragments only
    s.run()  # AppTest's tree after a fragment-scoped run holds those fragments alone; a browser keeps the side column
    s.button(key="class_leave").click().run()
    assert "class_sid" not in s.session_state and "me" not in s.query_params
    assert s.text_input(key="class_nick").value == "Bob"  # the join box keeps the nickname joined with
    s.text_input(key="class_join_code").set_value(code)
    s.button(key="class_join").click().run()
    assert_ok(s)
    assert s.session_state["class_sid"] == sid and vote_radio(s).value == 1  # the same seat, its vote
    t.run()
    assert _answered(t) == "**1 of 1** students have answered."
    assert any(m.label == "Students present" and m.value == "1" for m in t.metric)
    twin = session({"class": code})  # another browser
    twin.text_input(key="class_nick").set_value("ＢＯＢ").run()
    twin.button(key="class_join").click().run()
    assert any("already has the nickname" in w.value for w in twin.warning) and "class_sid" not in twin.session_state
    long = "Ada " + "x" * 60  # pasted, longer than a nickname
    twin.text_input(key="class_nick").set_value(long).run()
    twin.button(key="class_join").click().run()
    assert_ok(twin)
    assert [r["nickname"] for r in backend.seats(code, secret)] == ["Bob", long[:24]]
    t.run()
    # The pick is a form's: it reaches the server with the press that submits it.
    t.multiselect(key="class_remove_pick").set_value([twin.session_state["class_sid"]])
    t.button(key="class_remove").click().run()
    t.toggle(key="class_lock").set_value(True).run()
    assert_ok(t)
    assert [r["nickname"] for r in backend.seats(code, secret)] == ["Bob"] and backend.view(code).locked
    twin.run()
    assert any(str(classroom.SeatRemoved()) in w.value for w in twin.warning)  # why, where the vote was
    assert any(str(classroom.SeatRemoved()) in t_.value for t_ in twin.toast)  # and wherever it is scrolled
    twin.button(key="class_join").click().run()
    assert any("locked" in w.value for w in twin.warning)
    s.button(key="class_leave").click().run()
    s.button(key="class_join").click().run()  # a seat there comes back into a locked class
    assert s.session_state["class_sid"] == sid


def test_the_teachers_remove_press_acts_on_its_own_run_in_the_seats_panel(backend):
    """Remove with nothing picked says so in the Seats panel on the press's run (a refusal kept for the page's next
    whole run was a press that did nothing); a pick and its press are one form's submit, the seat gone on that run."""
    t, code, secret = teacher()
    s = student(code, "Ada")
    t.run()
    t.button(key="class_remove").click().run()  # nothing picked
    assert_ok(t)
    seats_panel = next(e for e in t.expander if e.label.startswith("Seats"))
    assert [w.value for w in seats_panel.warning] == ["Pick the seats to remove first."]
    t.multiselect(key="class_remove_pick").set_value([s.session_state["class_sid"]])
    t.button(key="class_remove").click().run()
    assert_ok(t)
    assert backend.seats(code, secret) == []
    seats_panel = next(e for e in t.expander if e.label.startswith("Seats"))
    assert not seats_panel.warning and "0 seats in the class." in [c.value for c in seats_panel.caption]


def test_the_projector_card_link_presenter_tools_and_the_smaller_confusions(backend, monkeypatch):
    """The join link uses BERT_EXPLORER_PUBLIC_URL; presenter mode has "Start a class" and the sentence box (a
    popover); a projector's join link (present=1) shows the join box; an exploring student's note of the
    teacher's step is read again on its timer; the split's labels are categories ("4. 4" is no number)."""
    monkeypatch.setenv(live_join.PUBLIC_URL, "https://bert.school.example/")
    p = session({"present": "1"})
    assert p.button(key="class_start") is not None and p.text_input(key=f"w_{text_key(1)}") is not None
    p.button(key="class_start").click().run()
    assert_ok(p)
    code = p.session_state["class_code"]
    card = " ".join(m.value for m in p.markdown) + " ".join(c.value for c in p.caption)
    assert f"Join: code **{code}**" in card
    link = f"https://bert.school.example/lesson?class={code}"  # it wraps after its punctuation, not mid-word
    assert any(live_join.breakable(link) in h.proto.body for h in p.get("html"))
    assert live_join.breakable(link).replace("<wbr>", "") == link
    s = session({"class": code, "present": "1"})  # the projector's address, opened by a student
    assert s.text_input(key="class_join_code").value == code and not s.session_state["lesson_present"]
    s.button(key="class_join").click().run()
    s.toggle(key="class_follow").set_value(False).run()
    assert any("the teacher is on step 1" in i.value for i in s.info)
    p.button(key="lesson_next").click().run()
    s.run()  # the student's page, as its timer reruns it
    assert any("the teacher is on step 2" in i.value for i in s.info)
    fig = split_figure(("4", "5"), (1, 2), None)
    assert fig.layout.yaxis.type == "category"


def test_a_teachers_second_tab_on_an_old_step_does_not_take_the_class_back(backend):
    """The teacher's laptop tab (step 1, revealed) reruns after the projector's tab moved the class to step 2:
    the class stays on step 2 (its students' votes stay open), and the laptop says where the class is."""
    t, code, secret = teacher()
    s = student(code)
    laptop = session({"class": code, "teacher": secret})
    laptop.button(key="lesson_reveal").click().run()  # step 1's question, revealed from the laptop
    t.run()
    t.button(key="lesson_next").click().run()  # the projector moves on
    laptop.run()  # the laptop reruns on its old step
    assert_ok(laptop)
    v = backend.view(code, secret=secret)
    assert v.step == 2 and not v.revealed
    assert any("Another tab of yours has the class on step 2" in i.value for i in laptop.info)
    s.run()
    vote_radio(s).set_value(0).run()  # the vote is open, not "closed"
    assert not s.warning and backend.view(code, secret=secret).answered == 1


def test_students_follow_the_teachers_model_and_not_a_session_trained_one(backend):
    """The teacher switches model: every following student's page switches to it (the charts under the class's
    answer are the same model's), and the vote reopens. A model trained in the teacher's session cannot be
    followed: the students stay on theirs and their page says so."""
    from ui import state

    t, code, secret = _teacher_on(4)
    s = student(code, "Ada")
    assert s.session_state["current"].model_key == state.DEFAULT_MODEL == bert_core.DEFAULT_BUNDLED
    vote_radio(s).set_value(0).run()
    first = backend.view(code, secret=secret)
    assert first.model == state.DEFAULT_MODEL and first.answered == 1
    t.selectbox(key="model_choice").set_value(state.BUNDLED_LABEL).run()  # the tiny model, offline
    assert_ok(t)
    v = backend.view(code, secret=secret)
    assert v.model == bert_core.BUNDLED_NAME and v.question.qid != first.question.qid and v.answered == 0
    s.run()
    assert_ok(s)
    assert s.session_state["current"].model_key == bert_core.BUNDLED_NAME  # the student's page runs it
    assert s.selectbox(key="model_choice").value == state.BUNDLED_LABEL
    assert vote_radio(s).value is None and not s.warning  # a new vote; nothing to warn of
    # The student picks another model while following: the class takes the page back to the teacher's.
    s.selectbox(key="model_choice").set_value(state.MINILM_LABEL).run()
    assert_ok(s)
    assert s.session_state["current"].model_key == bert_core.BUNDLED_NAME
    # A model the teacher trained in their own session: the students stay on theirs, and are told.
    t.session_state["session_model"] = bert_core.load_model(bert_core.BUNDLED_NAME)
    t.run()
    t.selectbox(key="model_choice").set_value(state.SESSION_LABEL).run()
    assert_ok(t)
    assert backend.view(code, secret=secret).model.startswith("session:")
    s.run()
    assert_ok(s)
    assert s.session_state["current"].model_key == bert_core.BUNDLED_NAME
    assert any("trained in the teacher's own session" in w.value for w in s.warning)
    assert vote_radio(s) is not None  # the class's question still reaches the student


def test_class_load_counts_every_reveal_whoever_answers(monkeypatch):
    """benchmarks/class_load.py reads a reveal off each page: the teacher's and every student's, right, wrong or
    not voted, on a step the tokenizer answers (1) and one a rule answers (3), not only the model's."""
    from support.wsclient import REVEALED

    monkeypatch.delenv(classroom.ENV, raising=False)
    for k in (1, 3):
        t, code, _ = _teacher_on(k)
        q = computed(k)
        right, wrong, silent = student(code, "Ada"), student(code, "Bo"), student(code, "Cy")
        vote_radio(right).set_value(q.answer).run()
        vote_radio(wrong).set_value((q.answer + 1) % len(q.choices)).run()
        t.button(key="lesson_reveal").click().run()
        assert_ok(t)
        shown = escape_markdown(q.choices[q.answer])

        def answer_on(at: AppTest) -> str | None:
            bodies = [a.value for a in (*at.info, *at.success, *at.error)]
            return next((m.group(1) for b in bodies for m in [REVEALED.search(b)] if m), None)

        assert answer_on(t) == shown
        for at in (right, wrong, silent):
            at.run()
            assert_ok(at)
            assert answer_on(at) == shown, [a.value for a in (*at.info, *at.success, *at.error)]
        assert wrong.error and "model's answer" not in wrong.error[0].value  # what the old count looked for


def _cached_bytes(name: str) -> int:
    """Bytes st.cache_data holds now for the cached function `name` (its pickled entries, replay messages included)."""
    from streamlit.runtime.caching import cache_data_api

    return sum(s.byte_length for family in cache_data_api._data_caches.get_stats().values() for s in family
               if s.cache_name.endswith(name))


def test_the_followers_shared_step_views_are_bounded_in_bytes(monkeypatch):
    """draw_step's shared drawings stay under their byte budget (BERT_EXPLORER_CLASS_VIEWS_MB) while a class walks
    12 steps, the least recently used dropped; a step whose drawing was dropped is drawn again, whole."""
    import importlib

    monkeypatch.delenv(classroom.ENV, raising=False)
    # bytes: above any one step's drawing on the bundled model (46 KB since a heatmap's cell numbers are a text layer
    # with each cell's place and ink: style.legible), below steps 3-13's together
    budget = 60_000
    monkeypatch.setenv("BERT_EXPLORER_CLASS_VIEWS_MB", str(budget / 2**20))
    importlib.reload(live_shared)
    try:
        live_shared._shared_view.clear()
        t, code, _ = _teacher_on(2)
        s = student(code, "Ada")
        charts_on_step_2 = len(s.get("plotly_chart"))
        assert charts_on_step_2 > 0
        peak = 0
        for k in range(3, 14):
            t.button(key="lesson_next").click().run()
            s.run()
            assert_ok(s)
            assert s.header[0].value.startswith(f"Step {k} of")
            peak = max(peak, _cached_bytes("_shared_view"))
        assert 0 < peak <= budget
        t.selectbox(key="lesson_goto").set_value(2).run()  # back to step 2: its drawing was dropped
        s.run()
        assert_ok(s)
        assert s.header[0].value.startswith("Step 2 of") and len(s.get("plotly_chart")) == charts_on_step_2
        assert _cached_bytes("_shared_view") <= budget
    finally:
        monkeypatch.delenv("BERT_EXPLORER_CLASS_VIEWS_MB")
        importlib.reload(live_shared)


def _masking(at: AppTest) -> list[str]:
    """The masking step's drawing as the page shows it: its chips, legend and caption."""
    return [m.value for m in at.markdown if "bx-chip" in m.value or "legend" in m.value.lower()] + \
        [c.value for c in at.caption if c.value.startswith("Draw ")]


def test_followers_share_the_masking_drawing_and_keep_their_own_draw(backend):
    """Step 3 (masking) is drawn once for the class's followers and replayed: each follower's chips are exactly what
    the step draws in a session of its own for the same draw and seed; "Draw again" is each student's own (a new
    draw for that student only, still with its button)."""
    k = lesson.KEYS.index("masking") + 1
    t, code, _ = _teacher_on(k)
    s1, s2 = student(code, "Ada"), student(code, "Bo")
    solo = session({"step": str(k)})  # no class: the view itself
    assert _masking(solo) and _masking(s1) == _masking(solo) == _masking(s2)
    s1.button(key="lesson_draw_again").click().run()
    assert_ok(s1)
    s2.run()
    solo.button(key="lesson_draw_again").click().run()  # the same draw 2, alone
    assert any(c.startswith("Draw 2 of seed") for c in _masking(s1)), _masking(s1)
    assert _masking(s1) == _masking(solo) != _masking(s2)
    assert any(c.startswith("Draw 1 of seed") for c in _masking(s2))
    for at in (s1, s2):
        assert at.button(key="lesson_draw_again") is not None and not at.exception


def test_a_teachers_model_that_cannot_load_here_is_tried_once_and_said(monkeypatch, no_network):
    """A hub id of no option goes to the sidebar's hub id box; where it cannot load (no network here), the student's
    page stays on its model, says why, and is not rerun again and again."""
    from ui import state

    monkeypatch.delenv(classroom.ENV, raising=False)
    t, code, secret = _teacher_on(4)
    s = student(code, "Ada")
    v = classroom.open_store().view(code, secret=secret)
    classroom.open_store().publish(code, secret, 4, v.text, v.pair, v.question, model="nobody/no-such-bert")
    s.run()
    assert_ok(s)
    assert s.session_state["model_choice"] == state.OTHER_LABEL
    assert s.session_state["other_model"] == "nobody/no-such-bert"
    assert s.session_state["current"].model_key == state.DEFAULT_MODEL  # the model that worked
    assert any("could not be loaded here" in w.value for w in s.warning)
    s.run()  # the next run does not switch (and rerun) again
    assert_ok(s)
    assert s.session_state[live_session.MODEL_TRIED] == "nobody/no-such-bert"
    assert any("could not be loaded here" in w.value for w in s.warning) and vote_radio(s) is not None


def test_a_students_timer_slows_in_steps_of_two_as_the_class_grows():
    # At most TICKS_PER_SECOND reads a second for the whole class; the interval doubles (a page sets its timer when
    # drawn whole, and slowed in place by its count's run once its class outgrows it).
    ticks = {n: live_session.student_tick(n) for n in (0, 1, 30, 31, 60, 61, 120, 121, 200)}
    assert ticks == {0: 2.0, 1: 2.0, 30: 2.0, 31: 4.0, 60: 4.0, 61: 8.0, 120: 8.0, 121: 16.0, 200: 16.0}
    assert all(n / t <= live_session.TICKS_PER_SECOND for n, t in ticks.items())


def test_students_timers_spread_over_half_a_tick_by_seat():
    # A room that joins at once must not tick at once all lesson long: each seat's interval is its own, in
    # [tick, 1.5 tick), the same on every run of that seat's page.
    seats = [classroom.codes.new_id() for _ in range(400)]
    spread = [live_session.spread_tick(16.0, s) for s in seats]
    assert all(16.0 <= t < 24.0 for t in spread)
    assert len({round(t, 3) for t in spread}) > 200  # not a handful of shared intervals
    assert min(spread) < 17.0 and max(spread) > 23.0  # the whole half tick is used
    assert [live_session.spread_tick(16.0, s) for s in seats] == spread
    assert all(n / live_session.spread_tick(live_session.student_tick(n), "x") <= live_session.TICKS_PER_SECOND
               for n in (1, 30, 60, 120, 200))  # never faster than the class's bound


def test_a_following_students_notebook_is_the_step_on_screen(backend):
    # The class's push redraws only the step: its notebook button sits in the side column (drawn by whole runs) and
    # offers the step the page shows when clicked, not the step of the last whole run.
    from ui.notebook_ui import VIEWS_KEY

    t, code, _ = teacher()
    s = student(code, "Nb")
    buttons = [b for b in s.get("download_button") if b.key == "notebook-lesson-followed"]
    assert len(buttons) == 1 and not [b for b in s.get("download_button") if b.key == "notebook-lesson"]
    assert s.session_state[VIEWS_KEY]["lesson"].settings["step"] == 1
    views = s.session_state[VIEWS_KEY]
    t.button(key="lesson_next").click().run()
    t.button(key="lesson_next").click().run()
    s.run()
    assert_ok(s)
    assert s.header[0].value.startswith("Step 3 of")
    assert s.session_state[VIEWS_KEY] is views  # the dict the button's download reads at the click
    view = views["lesson"]
    assert view.settings["step"] == 3 and view.text == s.session_state[text_key(3)]
    assert "step" not in s.query_params  # a follower's address has no step of its own (a reload takes the class's)


def test_every_follower_keeps_the_shared_steps_charts_for_the_handout():
    """Two followers in one process: the first draws the shared step view, the second replays it; both keep the
    step's charts for their handouts (the replay brings the charts' records, not only the elements)."""
    live_shared._shared_view.clear()
    k = lesson.KEYS.index("embeddings") + 1  # its view draws a chart before the answer
    t, code, _ = _teacher_on(k)
    s1, s2 = student(code, "Ada"), student(code, "Bo")
    for s in (s1, s2):
        s.run()
        assert_ok(s)
        assert s.header[0].value.startswith(f"Step {k} of") and s.get("plotly_chart")
    kept = [s.session_state[handout.CHARTS].get("embeddings", ()) for s in (s1, s2)]
    assert kept[0] and [handout_svg.svg(r, "x") for r in kept[0]] == [handout_svg.svg(r, "x") for r in kept[1]]


@pytest.mark.parametrize("refusal", [classroom.RateLimited(classroom.store.VOTE_SLOW, 1.5), classroom.SeatRemoved(),
                                     classroom.VoteCap(classroom.store.SEAT_CAP.format(n=240)),
                                     classroom.StoreUnavailable("ConnectionError")],
                         ids=lambda e: type(e).__name__)
def test_a_refused_vote_is_said_beside_it_on_the_run_that_refused_it(backend, monkeypatch, refusal):
    """The run of a refused vote shows why beside the vote, and the radio back on the vote the class counts (none,
    or the earlier one): no tick on what was not counted. The next vote that counts clears the message."""
    t, code, secret = teacher()
    s = student(code, "Ada")
    vote_radio(s).set_value(1).run()  # counted
    real = backend.vote

    def refuse(*a, **kw):
        raise refusal

    monkeypatch.setattr(backend, "vote", refuse)
    vote_radio(s).set_value(2).run()
    assert_ok(s)
    said = [e.value for e in s.error]
    assert said and str(refusal) in said[0] or isinstance(refusal, classroom.StoreUnavailable) and \
        "Your vote was not sent" in said[0], said
    assert vote_radio(s).value == 1  # back on the counted vote
    assert backend.view(code, sid=s.session_state["class_sid"]).my_vote == 1
    monkeypatch.setattr(backend, "vote", real)
    vote_radio(s).set_value(2).run()
    assert_ok(s)
    assert not s.error and vote_radio(s).value == 2
    fresh = student(code, "Bo")  # a first vote refused: the radio back to no choice
    monkeypatch.setattr(backend, "vote", refuse)
    vote_radio(fresh).set_value(0).run()
    assert vote_radio(fresh).value is None and len(fresh.error) == 1


def test_starts_past_a_browsers_bucket_are_refused_and_said_and_the_live_class_works_on(backend, monkeypatch):
    """"Start a class" again and again from one browser (its seat token): past the browser's bucket (here 1, to keep
    the test short; 5 by default) the page says why and how long to wait, starts no class and sets no teacher key;
    the live class beside it still takes votes and joins."""
    from classroom.limits import Rate

    monkeypatch.setattr(backend, "starts", Rate(1, 1 / 300))
    t, code, _ = teacher()
    s = student(code, "Ada")
    token = t.session_state[live_session.SEAT]
    for _ in range(2):  # the same browser, a new tab (its cookie): refused both times
        again = session()
        again.session_state[live_session.SEAT] = token
        again.button(key="class_start").click().run()
        assert_ok(again)
        said = [w.value for w in again.warning]
        assert any(w.startswith("Classes are being started very often from your network or browser: try again in ")
                   and w.endswith("minutes.") for w in said), said
        assert live_session.CODE not in again.session_state and "class" not in again.query_params
        assert "teacher" not in again.query_params
    vote_radio(s).set_value(1).run()  # the live class works on
    assert_ok(s)
    student(code, "Bo")
    t.run()
    assert _answered(t) == "**1 of 2** students have answered."


def test_a_teacher_s_control_pressed_after_the_class_ended_acts_on_no_class(monkeypatch):
    """Streamlit runs a widget's callback in the rerun its change arrives with, also when End the class came first
    (a clean-clone run's server log: lock_class raised KeyError 'class_code'): each teacher callback then touches no
    store and raises nothing."""
    import streamlit as st

    def no_store():
        raise AssertionError("a callback reached the store with no class")

    monkeypatch.setattr(live_teacher, "store", no_store)
    st.session_state.pop(live_session.CODE, None)
    live_teacher.lock_class()
    live_teacher.show_split(True)
    live_teacher.reveal("q", 1, "tok", "step", projector=False)
    live_teacher.end()
    st.session_state["class_remove_pick"] = ["seat"]
    live_teacher.remove_seats()
    st.session_state.pop("class_remove_pick", None)
