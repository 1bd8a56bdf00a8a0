"""The class store, the same tests on both backends: in-process and a real redis-server (conftest.py here)."""

from __future__ import annotations

import threading
import time

import pytest
from support.wait import until

import classroom
from classroom import ClassError, NoSuchClass, NotTeacher, Question
from classroom.codes import ALPHABET, CODE_LEN, clean_code, clean_nickname, new_code

Q1 = Question("q1", "What does the model put in the gap?", ("wrote", "sent", "read"))
Q2 = Question("q2", "How many tokens?", ("7", "8", "9", "10"))
HOSTILE = ["", " ", "*", "bx:class:*", "ABCDEF\r\nFLUSHALL", "../../etc/passwd", "<script>alert(1)</script>",
           "ABCDE", "ABCDEFG", "abcde0", "ÅBCDEF", "A" * 10_000, "ABC DEF' OR 1=1", "\x00ABCDEF", "ABCDEF\u202e",
           "'; redis.call('FLUSHALL'); --", None, 123456]


def started(store, *students: str):
    """A class on step 4 showing Q1, with these students joined: (code, secret, [sid...])."""
    code, secret = store.create()
    store.publish(code, secret, 4, "She [MASK] the letter.", None, Q1)
    return code, secret, [store.join(code, n) for n in students]


def test_a_class_votes_changes_a_vote_and_reveals(make_store):
    s = make_store()
    code, secret, (a, b, c) = started(s, "Ada", "", "Bo")
    assert clean_code(code) == code and s.is_teacher(code, secret)
    s.vote(code, a, "q1", 0)
    s.vote(code, b, "q1", 1)
    s.vote(code, c, "q1", 1)
    s.vote(code, c, "q1", 2)  # changed before the reveal: replaces the first
    s.vote(code, c, "q1", 2)  # the same again changes nothing
    t = s.view(code, secret=secret)
    assert t.tally == (1, 1, 1) and t.answered == 3 and t.students == 3 and not t.split_shown and not t.revealed
    st = s.view(code, sid=c)
    assert st.joined and st.my_vote == 2 and st.tally is None and st.answer is None  # no split, no answer yet
    assert st.step == 4 and st.text == "She [MASK] the letter." and st.pair is None and st.question == Q1
    s.show_split(code, secret)
    assert s.view(code, secret=secret).split_shown and s.view(code, sid=a).tally is None  # the projector's only
    s.reveal(code, secret, "q1", 0)
    st = s.view(code, sid=b)
    assert st.revealed and st.answer == 0 and st.tally == (1, 1, 1) and st.my_vote == 1
    with pytest.raises(ClassError, match="revealed"):
        s.vote(code, b, "q1", 0)  # closed after the reveal
    assert s.view(code, secret=secret).tally == (1, 1, 1)
    s.reveal(code, secret, "q1", 1)  # a second reveal changes nothing
    assert s.view(code, sid=a).answer == 0
    # The next question starts hidden, with no votes; going back to q1 shows it revealed, as it was.
    s.publish(code, secret, 5, "The [MASK] of France is Paris.", None, Q2)
    v = s.view(code, sid=a)
    assert v.question == Q2 and not v.revealed and v.my_vote is None and v.answered == 0 and v.step == 5
    s.vote(code, a, "q2", 3)
    s.publish(code, secret, 4, "She [MASK] the letter.", None, Q1)
    v = s.view(code, sid=a)
    assert v.revealed and v.answer == 0 and v.my_vote == 0
    rows = s.results(code, secret)
    assert [(r.step, r.answered, r.right, r.tally) for r in rows] == [(4, 3, 1, (1, 1, 1))]  # q2 not revealed
    assert rows[0].model == ""  # published without a model (a class made before classes carried one)
    assert s.students(code, secret) == [{"nickname": "Ada", "answered": 1, "right": 1},
                                       {"nickname": "Bo", "answered": 1, "right": 0},
                                       {"nickname": "Student 2", "answered": 1, "right": 0}]  # nameless: its seat


def test_a_result_names_the_model_its_question_was_computed_by(make_store):
    s = make_store()
    code, secret, (a,) = started(s, "Ada")
    s.publish(code, secret, 4, "She [MASK] the letter.", None, Q1, model="bert-base-uncased")
    s.vote(code, a, "q1", 1)
    s.reveal(code, secret, "q1", 1)
    s.publish(code, secret, 4, "She [MASK] the letter.", None, Q2, model="bundled-minilm")  # a new question
    s.reveal(code, secret, "q2", 0)
    assert [(r.model, r.right) for r in s.results(code, secret)] == [("bert-base-uncased", 1), ("bundled-minilm", 0)]


def test_the_step_and_sentence_reach_students_and_seq_moves_only_on_change(make_store):
    s = make_store()
    code, secret, (a,) = started(s, "")
    seq = s.view(code, sid=a).seq
    s.publish(code, secret, 4, "She [MASK] the letter.", None, Q1)
    assert s.view(code, sid=a).seq == seq  # the teacher's rerun with nothing new
    s.publish(code, secret, 4, "He [MASK] a poem.", "And then?", Q1)
    v = s.view(code, sid=a)
    assert v.seq == seq + 1 and (v.text, v.pair) == ("He [MASK] a poem.", "And then?")
    s.publish(code, secret, 9, "x" * 5000, None, None)
    v = s.view(code, sid=a)
    assert v.step == 9 and len(v.text) == 2000 and v.question is None and v.tally is None
    with pytest.raises(ClassError, match="no longer"):
        s.vote(code, a, "q1", 0)
    with pytest.raises(ClassError):
        s.publish(code, secret, 0, "x", None, None)


def test_the_teachers_model_reaches_students_and_a_new_model_is_a_new_screen(make_store):
    """The class carries the teacher's model key: a switch moves seq (the students follow) and, with the question
    id holding the model (ui.lesson.content.question_token), opens a new vote; the same model again changes nothing."""
    s = make_store()
    heard = []
    s.watch(heard.append)
    try:
        code, secret = s.create()
        a = s.join(code, "Ada")
        assert s.view(code, sid=a).model == ""  # nothing published yet
        s.publish(code, secret, 4, "She [MASK] the letter.", None, Q1, model="bundled-minilm")
        s.vote(code, a, "q1", 1)
        v = s.view(code, sid=a)
        assert v.model == "bundled-minilm" and v.my_vote == 1
        seq, following = v.seq, v.following
        s.publish(code, secret, 4, "She [MASK] the letter.", None, Q1, model="bundled-minilm")
        assert s.view(code, sid=a).seq == seq  # nothing new
        # The teacher switches to BERT-base on the same step, sentence and question text: a new screen.
        s.publish(code, secret, 4, "She [MASK] the letter.", None, Q1, model="bert-base-uncased")
        v = s.view(code, sid=a)
        assert v.model == "bert-base-uncased" and v.seq == seq + 1 and v.following != following
        s.publish(code, secret, 4, "She [MASK] the letter.", None, Question("q1b", Q1.prompt, Q1.choices),
                  model="bert-base-uncased")  # the page's question id holds the model: a new question
        v = s.view(code, sid=a)
        assert v.question.qid == "q1b" and v.my_vote is None and v.answered == 0 and not v.revealed
        assert s.view(code, secret=secret).model == "bert-base-uncased"
        s.publish(code, secret, 4, "She [MASK] the letter.", None, Q1, model="x" * 5000)
        assert len(s.view(code, sid=a).model) == 200  # bounded, like the sentence
        if make_store.backend == "redis":
            until(lambda: len(heard) >= 4, 5, "four pushes", every=0.05)
        assert len(heard) == 4  # the first publish, the switch, the new question, the long key: each pushed
        if make_store.backend == "redis":  # a class a server made before classes had a model: publish still works
            s.r.hdel(f"bx:class:{code}", "model")
            assert s.view(code, sid=a).model == ""
            s.publish(code, secret, 4, "She [MASK] the letter.", None, Q1, model="bundled")
            assert s.view(code, sid=a).model == "bundled"
    finally:
        s.unwatch(heard.append)


def test_wrong_and_hostile_codes_get_a_clear_refusal(make_store):
    s = make_store()
    code, secret, (a,) = started(s, "Ada")
    missing = next(c for c in iter(new_code, None) if c != code)
    for bad in [*HOSTILE, missing]:
        for call in (lambda b=bad: s.join(b, "x"), lambda b=bad: s.view(b, sid=a),
                     lambda b=bad: s.vote(b, a, "q1", 0), lambda b=bad: s.publish(b, secret, 1, "x", None, None),
                     lambda b=bad: s.view(b, secret=secret)):
            with pytest.raises(NoSuchClass, match="No class with this code"):
                call()
        assert not s.is_teacher(bad, secret)
    # The real class is untouched, and a code typed with spaces, dashes or lower case still finds it.
    assert s.view(f" {code[:3].lower()}-{code[3:]} ", sid=a).students == 1


def test_only_the_teacher_secret_drives_the_class(make_store):
    s = make_store()
    code, secret, (a,) = started(s, "Ada")
    other_code, other_secret = s.create()
    for bad in (None, "", a, other_secret, secret[:-1] + ("A" if secret[-1] != "A" else "B"), "x" * 22, "*"):
        assert not s.is_teacher(code, bad)
        for call in (lambda b=bad: s.publish(code, b, 2, "hijacked", None, None),
                     lambda b=bad: s.show_split(code, b), lambda b=bad: s.reveal(code, b, "q1", 0),
                     lambda b=bad: s.fields(code, b), lambda b=bad: s.end(code, b)):
            with pytest.raises(NotTeacher):
                call()
        if bad is not None:
            with pytest.raises(NotTeacher):
                s.view(code, secret=bad)
    v = s.view(code, sid=a)
    assert v.step == 4 and v.text == "She [MASK] the letter." and not v.revealed and not v.split_shown


def test_no_vote_on_another_class_and_nothing_of_one_class_in_another(make_store):
    s = make_store()
    code_a, secret_a, (ann,) = started(s, "Ann")
    code_b, secret_b = s.create()
    s.publish(code_b, secret_b, 2, "Another class's sentence.", None, Question("qb", "B's question?", ("x", "y")))
    bob = s.join(code_b, "Bob")
    for sid, code, qid in ((ann, code_b, "qb"), (bob, code_a, "q1"), (bob, code_b, "q1"), ("not-an-id", code_a, "q1"),
                           ("A" * 22, code_a, "q1")):
        with pytest.raises(ClassError):
            s.vote(code, sid, qid, 0)
    for sid, code in ((ann, code_a), (bob, code_b)):
        s.vote(code, sid, "q1" if code == code_a else "qb", 1)
    a, b = s.view(code_a, secret=secret_a), s.view(code_b, secret=secret_b)
    assert a.tally == (0, 1, 0) and b.tally == (1 - 1, 1) and a.students == b.students == 1
    assert not s.view(code_b, sid=ann).joined and s.view(code_b, sid=ann).my_vote is None
    fa, fb = s.fields(code_a, secret_a), s.fields(code_b, secret_b)
    assert "Bob" not in repr(fa) and "Another" not in repr(fa) and bob not in repr(fa)
    assert "Ann" not in repr(fb) and "She [MASK]" not in repr(fb) and ann not in repr(fb)
    assert not any("qb" in k.split(":")[:2] for k in fa) and not any("q1" in k.split(":")[:2] for k in fb)
    s.end(code_a, secret_a)
    with pytest.raises(NoSuchClass):
        s.view(code_a, sid=ann)
    assert s.view(code_b, sid=bob).my_vote == 1


def test_caps_on_students_questions_and_votes(make_store):
    s = make_store()
    s.max_students, s.max_questions, s.max_actions = 3, 2, 5
    code, secret, sids = started(s, "a", "b", "c")
    with pytest.raises(ClassError, match=r"full \(3 students\)"):
        s.join(code, "d")
    for i in range(5):
        s.vote(code, sids[i % 3], "q1", i % 2)  # 5 votes or changes
    with pytest.raises(ClassError, match="cap of changed votes"):
        s.vote(code, sids[2], "q1", 2)
    s.publish(code, secret, 5, "x", None, Q2)  # question 2 of 2
    with pytest.raises(ClassError, match="its 2 questions"):
        s.publish(code, secret, 6, "y", None, Question("q3", "?", ("a", "b")))
    s.publish(code, secret, 4, "x", None, Q1)  # an earlier question is no new one
    with pytest.raises(ClassError, match="No such choice"):
        s.reveal(code, secret, "q1", 3)
    for bad in (-1, 3, 99, "0", None, 1.5):
        with pytest.raises(ClassError):
            s.vote(code, sids[0], "q1", bad)


def test_nicknames_are_bounded_plain_text(make_store):
    s = make_store()
    code, secret = s.create()
    hostile = ["<img src=x onerror=alert(1)>", "**bold** [link](javascript:alert(1))", "A\u202eevil\u202c",
               "x" * 10_000, "\x00\x07\x1b[31mred", "   ", "Zoë\r\nLine", "$$\\frac{1}{0}$$", "{{7*7}}"]
    for n in hostile:
        s.join(code, n)
    names = {r["nickname"] for r in s.students(code, secret)}
    for n in names:
        assert len(n) <= 24 and n == n.strip() and not any(c in n for c in "\x00\x07\x1b\r\n\u202e\u202c"), n
    assert "<img src=x onerror=alert(1)>"[:24] in names and "Zoë Line" in names  # kept as text (escaped on screen)
    assert len(names) == len(hostile) and "Student 6" in names  # the blank one is the sixth seat


def test_an_idle_class_expires_and_activity_keeps_it(make_store):
    s = make_store(idle_seconds=1.0)
    code, secret, (a,) = started(s, "a")
    for _ in range(3):  # 1.5 s in all, each write renews the class
        time.sleep(0.5)  # wall-clock time, on purpose: half the idle limit passes before each write
        s.vote(code, a, "q1", 0)
    time.sleep(1.3)  # wall-clock time, on purpose: the 1 s idle limit passes with no write
    with pytest.raises(NoSuchClass):
        s.view(code, sid=a)
    with pytest.raises(NoSuchClass):
        s.publish(code, secret, 1, "x", None, None)


def test_votes_from_many_threads_are_all_counted(make_store):
    s = make_store(join_rate=1000)
    code, secret, sids = started(s, *[f"s{i}" for i in range(40)])
    sent = [0, 0, 0]
    for i in range(40):
        sent[(i * 7) % 3] += 1

    def vote(part):
        for i in part:
            s.vote(code, sids[i], "q1", (i + 1) % 3)  # a first vote ...
            s.vote(code, sids[i], "q1", (i * 7) % 3)  # ... changed

    threads = [threading.Thread(target=vote, args=(range(k, 40, 8),)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    v = s.view(code, secret=secret)
    assert v.tally == tuple(sent) and v.answered == 40


def test_memory_store_is_bounded_in_bytes():
    s = classroom.MemoryStore(max_bytes=60_000)
    code, secret = s.create()
    s.join(code, "Ada")
    s.publish(code, secret, 1, "x" * 2000, None, Q1)
    used = s.bytes_used
    assert 2000 < used < 6000
    made = 1
    with pytest.raises(ClassError, match="memory allows"):
        for _ in range(100):
            code, secret = s.create()
            s.join(code, "Ada")
            s.publish(code, secret, 1, "x" * 2000, None, Q1)
            made += 1
    assert 5 < made < 60 and s.bytes_used <= 60_000


def test_memory_store_forgets_idle_classes_by_its_clock():
    now = [0.0]
    s = classroom.MemoryStore(idle_seconds=3 * 3600, clock=lambda: now[0])
    code, secret = s.create()
    s.join(code, "Ada")  # a class with a student: the idle hours (an empty one: minutes, test_limits.py)
    now[0] = 3 * 3600 - 1
    assert s.view(code, secret=secret).students == 1
    now[0] += 3 * 3600 + 1
    assert len(s) == 0
    with pytest.raises(NoSuchClass):
        s.view(code)


def test_open_store_follows_the_environment(monkeypatch, redis_url):
    monkeypatch.delenv(classroom.ENV, raising=False)
    assert isinstance(classroom.open_store(), classroom.MemoryStore)
    assert classroom.open_store() is classroom.open_store()
    from classroom.redis_store import RedisStore

    monkeypatch.setenv(classroom.ENV, redis_url)
    assert isinstance(classroom.open_store(), RedisStore)
    with pytest.raises(ValueError):
        classroom.open_store("mysql://x")


def test_an_unreachable_redis_gives_a_clear_message():
    from support.appserver import free_port

    from classroom.redis_store import RedisStore

    s = RedisStore(f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(classroom.StoreUnavailable, match="Reconnecting to the class"):
        s.create()
    with pytest.raises(classroom.StoreUnavailable):
        s.view(new_code())


@pytest.mark.server
def test_a_frozen_redis_is_waited_for_once_then_every_caller_hears_at_once(tmp_path):
    """Redis frozen (SIGSTOP): a call waits out its tries (about 3 s); after it, every call says the store is
    unavailable at once (the store's own thread pings it), not after seconds each; continued, the store answers."""
    import signal

    from support.appserver import redis_server

    from classroom import redis_store

    with redis_server(tmp_path) as (url, proc):
        s = redis_store.RedisStore(url)
        code, secret = s.create()
        proc.send_signal(signal.SIGSTOP)
        try:
            t = time.monotonic()
            with pytest.raises(classroom.StoreUnavailable, match="TimeoutError"):
                s.view(code)
            waited = time.monotonic() - t
            assert 2 * redis_store.SOCKET_TIMEOUT <= waited < 6 * redis_store.SOCKET_TIMEOUT, waited  # tried again
            t = time.monotonic()
            for call in (lambda: s.view(code), lambda: s.vote(code, secret, "q", 0),
                         lambda: s.is_teacher(code, secret), lambda: s.publish(code, secret, 2, "A.", None, None)):
                with pytest.raises(classroom.StoreUnavailable):
                    call()
            assert time.monotonic() - t < 0.5 * redis_store.SOCKET_TIMEOUT
        finally:
            proc.send_signal(signal.SIGCONT)
        # The store's own ping hears it again within about FAIL_FAST.
        until(lambda: s._down is None, 10, "the store to hear its redis-server again", every=0.05)
        assert s.view(code, secret=secret).step == 1 and s.is_teacher(code, secret)


def test_codes_and_nicknames():
    for _ in range(200):
        c = new_code()
        assert len(c) == CODE_LEN and set(c) <= set(ALPHABET) and clean_code(c) == c
    for bad in HOSTILE:
        assert clean_code(bad) is None, bad
    assert clean_nickname("  Ada\u202e\n  <b>L</b> ") == "Ada <b>L</b>"
    assert clean_nickname(None) == "" and clean_nickname(42) == ""


def test_watchers_hear_every_change_a_student_follows_and_only_those(make_store):
    """watch(): the step, sentence, question, reveal and end of a class; not votes, joins, the split or a
    publish that changes nothing. With Redis the watcher sits on a second store (another process's)."""
    a = make_store()
    b = make_store() if make_store.backend == "redis" else a
    heard = []

    def hear(code):
        heard.append(code)

    def expect(n: int, what: str):
        until(lambda: len(heard) >= n, 5, f"{what}: {n} changes heard", every=0.05)
        time.sleep(0.3 if make_store.backend == "redis" else 0)  # on purpose: nothing more arrives late
        assert len(heard) == n, f"{what}: heard {heard}"

    b.watch(hear)
    try:
        code, secret, (sid,) = started(a, "Ada")  # the first publish moves seq: heard
        expect(1, "the first step")
        a.publish(code, secret, 4, "She [MASK] the letter.", None, Q1)  # the same screen again: nothing
        a.vote(code, sid, "q1", 1)
        a.join(code, "Bo")
        a.show_split(code, secret, True)
        expect(1, "a vote, a join, the split")
        a.publish(code, secret, 5, "She [MASK] the letter.", None, Q1)
        expect(2, "the next step")
        a.publish(code, secret, 5, "He [MASK] the letter.", None, Q2)
        expect(3, "a new sentence and question")
        a.reveal(code, secret, "q2", 1)
        a.reveal(code, secret, "q2", 1)  # a second reveal changes nothing
        expect(4, "the reveal")
        a.end(code, secret)
        expect(5, "the end")
        assert set(heard) == {code}
    finally:
        b.unwatch(hear)


def test_one_browser_one_seat_present_removed_locked_and_rate_limited(make_store):
    """A seat token gives back its seat (Leave/Join, a reload, a second tab); the count of present seats drops
    when a tab has been gone a minute (its votes kept); the teacher removes a seat (its open vote withdrawn) and
    locks the class; a burst of new seats is slowed; nicknames are unique, folded."""
    now = [1000.0]
    s = make_store(clock=lambda: now[0], join_rate=3)
    code, secret = s.create()
    s.publish(code, secret, 4, "She [MASK] the letter.", None, Q1)
    seat = "S" * 22
    a = s.join(code, "Bob", seat=seat)
    assert s.join(code, "Bob", seat=seat) == a and s.join(code, "", seat=seat) == a  # the same browser: one seat
    s.vote(code, a, "q1", 1)
    assert s.view(code, secret=secret).students == 1 and s.view(code, secret=secret).answered == 1
    for twin in ("bob", "ＢＯＢ", " B\u200bob ", "Bob\u3164"):  # case, width, invisible characters
        with pytest.raises(ClassError, match="already has the nickname"):
            s.join(code, twin)
    b = s.join(code, "\u3164\u115f\u1160\uffa0\u200b")  # nothing visible: a numbered seat
    assert [r["nickname"] for r in s.seats(code, secret)] == ["Bob", "Student 2"]
    s.join(code, "Cy")
    with pytest.raises(classroom.RateLimited, match=r"try again in 4 seconds"):  # 3 new seats in 10 s: the 4th waits
        s.join(code, "Di")
    assert s.join(code, "x", seat=seat) == a  # a seat coming back is never slowed
    now[0] += 11
    s.vote(code, b, "q1", 0)
    assert s.view(code, secret=secret).present == 3
    now[0] += 50
    s.view(code, sid=a)  # Bob's tab still reads the class; b's and c's are gone a minute
    v = s.view(code, secret=secret)
    assert (v.students, v.present, v.answered) == (3, 1, 2)  # their votes kept
    assert {r["nickname"]: r["present"] for r in s.seats(code, secret)} == {"Bob": True, "Student 2": False,
                                                                           "Cy": False}
    s.remove(code, secret, b)
    v = s.view(code, secret=secret)
    assert (v.students, v.answered, v.tally) == (2, 1, (0, 1, 0))  # the removed seat's open vote withdrawn
    with pytest.raises(classroom.SeatRemoved, match="Your teacher removed your seat"):
        s.vote(code, b, "q1", 1)
    assert not s.view(code, sid=b).joined and s.view(code, sid=b).removed and not s.view(code, sid=a).removed
    s.lock(code, secret)
    assert s.view(code, secret=secret).locked
    with pytest.raises(ClassError, match="locked"):
        s.join(code, "Eve")
    assert s.join(code, "", seat=seat) == a  # a seat there may come back
    s.lock(code, secret, False)
    assert s.join(code, "Student 2") != a  # a freed nickname is free
    with pytest.raises(ClassError):
        s.remove(code, "x" * 22, a)
    with pytest.raises(ClassError):
        s.lock(code, "x" * 22)


def test_views_reads_the_class_for_many_students_as_view_does(make_store):
    """A step change reads the class once for all of a process's students (ui/lesson/live_class/reads.py): each
    student's view is what `view` gives that student (own vote, joined or not), and marks the seat present."""
    s = make_store()
    code, secret, (a, b, c) = started(s, "Ada", "Bo", "Cy")
    s.vote(code, a, "q1", 1)
    s.vote(code, c, "q1", 2)
    s.remove(code, secret, c)
    many = s.views(code, [a, b, c, "not-a-seat", ""])
    assert set(many) == {a, b, c, "not-a-seat", ""}
    for sid, v in many.items():
        one = s.view(code, sid=sid)
        assert v == one, (sid, v, one)
    assert (many[a].my_vote, many[b].my_vote, many[c].my_vote) == (1, None, None)
    assert many[a].joined and many[b].joined and not many[c].joined and not many["not-a-seat"].joined
    assert s.view(code, secret=secret).present == 2  # a and b read: present; c removed
    s.end(code, secret)
    assert s.views(code, [a, b]) == {}  # the class is gone: each run reads it and says so
    assert s.views("AB", [a]) == {} and s.views(None, [a]) == {}
